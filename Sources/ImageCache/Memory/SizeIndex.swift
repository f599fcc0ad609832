// The index of image sizes kept in memory: what `peekSize` answers from, fed by every decode and by
// every file the disk reads or whose header `size(of:)` reads.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// The pixel size and orientation of each key seen, by the key's string (every size and
    /// variant of a key shares its original's). Bounded: past ``capacity`` keys, the oldest
    /// learned half is forgotten (an entry is about a hundred bytes). It is not the memory tier:
    /// an image evicted, or never kept (`notKeptInMemory`), keeps its size here.
    ///
    /// **Thread safety.** Any thread; one lock of its own, never taken with the cache's.
    internal final class SizeIndex: @unchecked Sendable {
        static let capacity = 10_000
        private let lock = NSLock()
        private var sizes: [String: ImageSize] = [:]
        private var order: [String] = []  // the order keys were first learned in

        func size(of key: String) -> ImageSize? {
            lock.withLock { sizes[key] }
        }

        /// Keeps `size` for `key`, and returns it.
        @discardableResult
        func learn(_ size: ImageSize, for key: String) -> ImageSize {
            lock.withLock {
                guard sizes.updateValue(size, forKey: key) == nil else { return }
                order.append(key)
                guard order.count > Self.capacity else { return }
                let forgotten = order.prefix(Self.capacity / 2)
                for key in forgotten { sizes[key] = nil }
                order.removeFirst(forgotten.count)
            }
            return size
        }
    }
}
