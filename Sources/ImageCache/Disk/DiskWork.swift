// What the disk is told to do (`DiskWork`), queued under the lock in the order the bookkeeping
// changed, and the cache's side of running it on the disk queue.

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
    /// What the disk is told to do: every change to the disk goes through `Ledger.queueOnDisk`.
    internal enum DiskWork: @unchecked Sendable {  // its images and data are not used until it runs
        // A new entry: memory then drops its bytes. With a spool, its body streamed to disk is renamed into place.
        case write(DiskStore.Item, key: Key, usedAt: TimeInterval, spool: Spool? = nil)
        case keep([DiskStore.Item], usedAt: TimeInterval)
        case touch([String], at: TimeInterval)
        case renew(DiskStore.Found, downloadedAt: TimeInterval, receivedAt: TimeInterval, HTTP.FreshnessHeaders)
        case remove(String)
        case removeAll
        case reduce(recency: [String], maxCount: Int, maxBytes: Int, now: TimeInterval)
        case setting(@Sendable (DiskStore) -> Void)
        case store(ImageStore)  // a stored image whose bytes are copied or encoded first (see `ImageStore`)
    }

    /// Does `work`, on the disk queue, where `Ledger.queueOnDisk` sends it with the lock held, so
    /// that disk work runs in the order the bookkeeping changed: no write of an entry that `remove`
    /// or `removeAll` forgot can follow them. (Reads, `lookUpOnDisk` and `statistics(completion:)`,
    /// and the waits for queued work are not changes, and are queued as they are.) Keys are hashed
    /// into file names here, not under the lock. A write or a removal of a file ends a store of it
    /// still encoding (`settle`).
    internal func run(_ work: DiskWork) {
        switch work {
        case .write(let item, let key, let now, let spool):
            if disk.write(item, usedAt: now, spool: spool) == .written {
                locked { $0.bytesAreOnDisk(key, downloadedAt: item.downloadedAt) }
            }
            if !disk.storing.isEmpty { settle(item.id) }
        case .keep(let items, let now):
            disk.keep(items, usedAt: now)
        case .touch(let keys, let now):
            disk.touch(keys.map(DiskStore.fileID(for:)), at: now)
        case .renew(let found, let downloadedAt, let receivedAt, let headers):
            disk.renew(found, downloadedAt: downloadedAt, receivedAt: receivedAt, headers: headers)
        case .remove(let key):
            disk.remove(DiskStore.fileID(for: key))
            if !disk.storing.isEmpty { settle(DiskStore.fileID(for: key)) }
        case .removeAll:
            disk.removeAll()
            settleAll()
        case .reduce(let recency, let maxCount, let maxBytes, let now):
            disk.touch(recency.map(DiskStore.fileID(for:)), at: now)
            disk.reduce(maxCount: maxCount, maxBytes: maxBytes, now: now)
        case .setting(let apply):
            apply(disk)
        case .store(let job):
            storeOnDisk(job)
        }
    }
}
