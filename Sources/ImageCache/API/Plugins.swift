// What an app plugs into a cache at `init`: its sources of bytes, its decoders, its encoder.

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
    /// What an app plugs into a cache when it makes one: where bytes come from besides HTTP(S)
    /// (``ImageSource``), what decodes formats the platform does not (``ImageDecoder``), and what
    /// encodes an image `store(_:for:)` must write without bytes of its own (``ImageEncoder``).
    ///
    /// ```swift
    /// let cache = ImageCache(uniqueName: "Photos", plugins: .init(
    ///     sources: [PhotoLibrarySource(), ImageCache.FileSource(folder: bundleImages)],
    ///     decoders: [WebPDecoder()]))
    /// ```
    ///
    /// Parts are fixed when the cache is made: a cache's plugins never change under a load. It grows
    /// in 1.x by new properties with defaults only.
    public struct Plugins: Sendable {
        /// Sources asked in order, before HTTP(S), whether they load a request's URL (see
        /// ``ImageSource/loads(_:)``). `data:` URLs load without one; `file:` URLs only through a
        /// ``FileSource`` given here. Empty by default.
        public var sources: [any ImageSource]
        /// Decoders asked in order, before the platform's, whether they decode an image's bytes (see
        /// ``ImageDecoder/decodes(_:mimeType:)``): for downloads, disk hits, large bodies and stored
        /// data alike. Empty by default.
        public var decoders: [any ImageDecoder]
        /// What makes the bytes `store(_:for:)` writes for an image that has none in hand; nil (the
        /// default) for the platform's own encoding (on Linux, the image's own bytes).
        public var encoder: (any ImageEncoder)?

        /// Plugins with the given parts; none by default.
        public init(sources: [any ImageSource] = [], decoders: [any ImageDecoder] = [],
                    encoder: (any ImageEncoder)? = nil) {
            (self.sources, self.decoders, self.encoder) = (sources, decoders, encoder)
        }
    }
}
