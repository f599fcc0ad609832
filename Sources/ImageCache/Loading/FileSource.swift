// `file:` URLs in one folder an app names: opt-in, since a URL a server supplies must never read the
// device's files.

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
    /// Loads `file:` URLs of files inside one folder: images in the app's bundle, or a folder of its
    /// own. Opt-in: without it a `file:` URL fails with ``ImageCache/Error/unsupportedURL(_:)``, so
    /// that a URL a server supplies never reads the device's files; with it, only files inside
    /// `folder` load (`..` and symbolic links are resolved first), any other `file:` URL still fails
    /// so.
    ///
    /// ```swift
    /// let cache = ImageCache(uniqueName: "Bundled",
    ///                        plugins: .init(sources: [ImageCache.FileSource(folder: Bundle.main.resourceURL!)]))
    /// ```
    ///
    /// A missing file fails with ``ImageCache/Error/network(_:_:)`` `.fileDoesNotExist`. The file is
    /// read where the source runs (a task of its own, off the cache's disk queue, which stays free
    /// for the cache's folder); it is not copied into the cache's folder unless `writesToDisk`.
    public struct FileSource: ImageSource {
        /// The folder whose files it loads, its path resolved.
        public let folder: URL
        /// Whether what it loads is also written to the cache's folder: false by default (the file
        /// is on the device already).
        public let writesToDisk: Bool
        private let prefix: String

        /// A source of the files inside `folder` (and its subfolders).
        public init(folder: URL, writesToDisk: Bool = false) {
            self.folder = folder.standardizedFileURL.resolvingSymlinksInPath()
            self.writesToDisk = writesToDisk
            prefix = self.folder.path.hasSuffix("/") ? self.folder.path : self.folder.path + "/"
        }

        /// Whether `url` is a `file:` URL of a file inside ``folder``.
        public func loads(_ url: URL) -> Bool {
            guard url.isFileURL else { return false }
            return url.standardizedFileURL.resolvingSymlinksInPath().path.hasPrefix(prefix)
        }

        /// The file's bytes (mapped: pages are read as the decoder touches them).
        public func data(for url: URL, progress: @escaping @Sendable (Int, Int?) -> Void) async throws -> Data {
            let path = url.standardizedFileURL.resolvingSymlinksInPath().path
            guard path.hasPrefix(prefix) else {
                throw Error.unsupportedURL(url.absoluteString)  // moved out of the folder meanwhile
            }
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
                progress(data.count, data.count)
                return data
            } catch {
                let exists = FileManager.default.fileExists(atPath: path)
                throw Error.network(exists ? .noPermissionsToReadFile : .fileDoesNotExist,
                                    exists ? "cannot read \(path): \(error)" : "no file at \(path)")
            }
        }
    }
}
