// Where an image's bytes come from besides HTTP(S): the protocol an app's source implements.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif
#if canImport(ImageIO)
import ImageIO
#endif
#if canImport(SwiftUI)
import SwiftUI
#endif


nonisolated extension ImageCache {
    /// Where the bytes of some URLs come from, instead of HTTP(S): the photo library, an app's own
    /// database, a test double, or the built-ins (``FileSource``, and `data:` URLs, which load
    /// without one). Given in ``Plugins/sources``, sources are asked in order, before HTTP(S),
    /// whether they load a request's URL; a load they take gets everything a download gets: one
    /// load per key however many fetches wait, the lanes and their priorities, cancellation,
    /// progress, the memory tier, processors and sizes, the views, and errors that say why.
    ///
    /// ```swift
    /// struct LibrarySource: ImageCache.ImageSource {
    ///     func loads(_ url: URL) -> Bool { url.scheme == "library" }
    ///     func data(for url: URL, progress: @escaping @Sendable (Int, Int?) -> Void) async throws -> Data {
    ///         try await Library.shared.imageData(id: url.lastPathComponent)
    ///     }
    /// }
    /// let cache = ImageCache(uniqueName: "Library", plugins: .init(sources: [LibrarySource()]))
    /// cache.fetch(URL(string: "library:///42")!) { url, image in ... }
    /// ```
    ///
    /// It grows in 1.x by requirements with default implementations only.
    public protocol ImageSource: Sendable {
        /// Whether it loads `url`. Cheap: asked for each load that neither memory nor a download
        /// under way answers.
        func loads(_ url: URL) -> Bool
        /// The bytes at `url`, or an error that says why not: an ``ImageCache/Error`` is passed on
        /// as it is, a `URLError` as ``ImageCache/Error/network(_:_:)`` with its code, any other as
        /// `.network(.resourceUnavailable, ...)` describing it (retried as ``ImageCache/retryPolicy``
        /// says, as a transient network failure is). Runs in a task of its own, which is cancelled
        /// when no fetch waits any more (check `Task.isCancelled` in a long load). `progress`
        /// tells the fetches' `onProgress` how far it is: bytes received, and the whole length if
        /// known. Bytes over ``ImageCache/maxImageBytes`` fail the load with
        /// ``ImageCache/Error/tooLarge(limit:)``.
        func data(for url: URL, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void)
            async throws -> Data
        /// Whether what it loads is written to the disk tier too, as a download is (and read from
        /// there before it is asked again): true by default. A source whose bytes are already on
        /// the device says false.
        var writesToDisk: Bool { get }
    }
}

nonisolated extension ImageCache.ImageSource {
    /// True: what it loads is written to the disk tier, as a download is.
    public var writesToDisk: Bool { true }
}
