// What the release-built benchmarks reach inside the cache, as SPI: the package's own builds only
// (Package.swift defines IMAGECACHE_TESTING); `.ci/amalgamate` leaves this file out of the file
// that apps copy. The tests' hooks are in the test target (ImageCacheTests/TestHooks.swift).

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

#if IMAGECACHE_TESTING
nonisolated extension ImageCache {
    /// How many images memory holds now.
    @_spi(Testing) public var memoryCount: Int { locked { $0.memory.count } }

    /// The file name the disk tier uses for `url`.
    @_spi(Testing) public static func diskFileName(for url: URL) -> String {
        DiskStore.fileName(for: url.absoluteString)
    }

    /// Puts `image` in memory as if it had just been read from disk, with the count cap and batch
    /// eviction: the memory tier alone. Evicted images are marked as used on disk, as they are
    /// when their files exist (here they do not, and are not written).
    @_spi(Testing) public func benchmarkInsert(_ url: URL, image: Image, data: Data) {
        let key = Key(url)
        let now = currentTime()
        locked { ledger in
            let evicted = ledger.insert(key, Payload(image: image), size: data.count, downloadedAt: now).map(\.item)
            if !evicted.isEmpty { ledger.queueOnDisk(.touch(evicted.map(\.url), at: now)) }
        }
    }

    /// Holds the disk queue (after the work queued so far) until `gate` is signalled.
    @_spi(Testing) public func holdDiskQueue(until gate: DispatchSemaphore) {
        diskQueue.async { gate.wait() }
    }

    /// Binds `binder` to `url` at `pixelSize` for a screen of `scale`, as a view on that screen does.
    @_spi(Testing) public static func bind(_ binder: Binder, _ url: URL, pixelSize: CGSize, scale: Double,
                                           cache: ImageCache) {
        binder.bind(Load(url, key: nil), nil, nil, pixelSize, cache, .none, scale: scale)
    }

    /// Waits until every disk operation queued so far has run, and every look-up on disk that
    /// waited for its turn (see `LookUpQueue`). Each pass over the queue runs the look-ups on it,
    /// which bring on as many that waited: a pass that leaves the counts as they were means a
    /// look-up was lost, and it returns then (for the caller to find), rather than wait forever.
    @_spi(Testing) public func drainDisk() {
        var counts = lookUps.counts
        while true {
            diskQueue.sync {}
            let now = lookUps.counts
            if now == (0, 0) || now == counts { return }
            counts = now
        }
    }
}
#endif
