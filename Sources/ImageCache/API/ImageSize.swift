// The size before the image: `ImageSize`, and the calls that give a cached image's size and
// orientation without decoding it (`peekSize`, `size(of:)`), from an index in memory (`SizeIndex`)
// fed by every decode and by every file the disk reads, else from the file's header.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// An image's size in pixels and its EXIF orientation, as its file's header says: what a list
    /// needs to reserve a row's height, or a SwiftUI view to take an aspect ratio, before the image
    /// comes. Grows in 1.x by new properties only.
    public struct ImageSize: Sendable, Hashable {
        /// Width and height in pixels, as stored (before the orientation turns them).
        public let width: Int, height: Int
        /// The EXIF orientation, 1 (up, also when the file has none) to 8; 5 to 8 are a quarter
        /// turn, so the image shows `height` wide.
        public let orientation: Int

        /// A size of `width` x `height` pixels (each at least 1) in EXIF `orientation` (1...8; 1
        /// otherwise).
        public init(width: Int, height: Int, orientation: Int = 1) {
            (self.width, self.height) = (max(1, width), max(1, height))
            self.orientation = (1...8).contains(orientation) ? orientation : 1
        }

        /// The width as shown, in pixels: `height` for orientations 5 to 8.
        public var displayWidth: Int { (5...8).contains(orientation) ? height : width }
        /// The height as shown, in pixels: `width` for orientations 5 to 8.
        public var displayHeight: Int { (5...8).contains(orientation) ? width : height }
        /// Width over height, as shown: the aspect ratio a view takes.
        public var aspectRatio: Double { Double(displayWidth) / Double(displayHeight) }
    }

    #if canImport(UIKit) || canImport(AppKit)
    /// What ``size(of:completion:)`` calls with the size, or nil; on the main actor.
    public typealias SizeCallback = @MainActor @Sendable (ImageSize?) -> Void
    #else
    /// What ``size(of:completion:)`` calls with the size, or nil; on ``callbackQueue``.
    public typealias SizeCallback = @Sendable (ImageSize?) -> Void
    #endif

    /// The size of the image `request` loads (its original: processors may change it, a circle is
    /// square) if this process has seen it: decoded it, read its file, or read its header (see
    /// ``size(of:completion:)``); else nil. Never reads the disk or waits for it: for a list's
    /// `heightForRow`, beside ``peek(_:)-(Request)``.
    ///
    /// - Complexity: O(1): one lock (the index's own, not the cache's), one dictionary lookup.
    public func peekSize(_ request: Request) -> ImageSize? {
        sizes.size(of: request.cacheKey.string)
    }

    /// The size of the image `request` loads, as ``peekSize(_:)`` finds it, else from the header
    /// of its file on disk (the first 64 KiB, up to 1 MiB for a JPEG with large metadata; nothing
    /// is decoded, no request is sent, the file's dates stay), then kept in memory for `peekSize`;
    /// nil when neither has it. `completion` runs on the main actor on Apple platforms, else on
    /// ``callbackQueue``, after the disk work queued before it.
    ///
    /// - Complexity: O(1) from memory; one file opened and read from the disk queue otherwise.
    public func size(of request: Request, completion: @escaping SizeCallback) {
        size(ofKey: request.cacheKey.string, completion: completion)
    }

    /// The size of the image of `key` (a key's string), as ``size(of:completion:)`` finds it.
    internal func size(ofKey key: String, completion: @escaping SizeCallback) {
        let queue = Self.callbackActorQueue ?? callbackQueue
        if let known = sizes.size(of: key) {
            return queue.async { Self.onCallbackActor(known) { completion($0) } }
        }
        diskQueue.async {
            let size = self.sizes.size(of: key) ?? self.disk.header(of: DiskStore.fileID(for: key)).flatMap { header in
                ImageSize(header: header).map { self.sizes.learn($0, for: key) }
            }
            queue.async { Self.onCallbackActor(size) { completion($0) } }
        }
    }

    /// The size of the image `request` loads, as ``size(of:completion:)`` finds it, with Swift
    /// concurrency.
    public func size(of request: Request) async -> ImageSize? {
        await withCheckedContinuation { continuation in
            size(of: request) { continuation.resume(returning: $0) }
        }
    }

    /// Learns the size the header of `bytes`, an image of `key` just read or decoded, says (see
    /// `SizeIndex`). Cheap: a few fixed offsets, or a JPEG's markers up to its frame header.
    internal func learnSize(of key: Key, from bytes: Data?) {
        guard let bytes, let size = ImageSize(header: bytes) else { return }
        sizes.learn(size, for: key.string)
    }
}

nonisolated extension ImageCache.DiskStore {
    /// The first bytes of file `id`, if it is there and a regular file: 64 KiB, or up to 1 MiB
    /// when 64 KiB hold no size (see `ImageSize.init(header:)`). Its dates stay as they were.
    func header(of id: UInt64) -> Data? {
        guard let directory = openFolder(create: false) else { return nil }
        let fd = Foundation.openat(directory, Self.name(id), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Foundation.close(fd) }
        guard let file = File(id, { Foundation.fstat(fd, $0) }) else { return nil }
        var count = min(Int(file.size), ImageCache.ImageSize.headerBytes)
        while true {
            guard let bytes = ImageCache.POSIX.readAll(fd, count: count) else { return nil }
            if count >= min(Int(file.size), ImageCache.ImageSize.maxHeaderBytes) || ImageCache.ImageSize(header: bytes) != nil {
                return bytes
            }
            guard Foundation.lseek(fd, 0, SEEK_SET) == 0 else { return nil }
            count = min(Int(file.size), ImageCache.ImageSize.maxHeaderBytes)
        }
    }
}
