// A new download's look-up on disk (`DiskLookUp`): its file read on the disk queue and decoded on
// a decode worker (or there, when that is cheap), then what it comes to in the ledger: a fresh entry
// goes to memory and the waiters; anything else queues the download for the network, with an
// expired entry to revalidate. Beside it, the read of a request that may not use the network
// (`onlyFromCache`), which ends at the disk either way.

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
    /// The look-up on disk that every new download begins with (routed by `Ledger.route`). A
    /// reload's (`maxBytes` nil) reads nothing and ends at once.
    internal struct DiskLookUp: @unchecked Sendable {  // its download is guarded by the cache's lock
        let cache: ImageCache
        let download: Download
        let maxBytes: Int?  // the largest file read; nil: not read (a reload)

        /// Begins it: on the disk queue, in the order `LookUpQueue` gives a download of the fast
        /// lane or the slow; or at once for a reload.
        func start(fast: Bool) {
            guard maxBytes != nil else { return end(nil, now: cache.currentTime()) }
            cache.lookUps.start(self, fast: fast)
        }

        /// Runs it, unless its download is no longer looked up (a prefetch cancelled while its
        /// look-up waited in the `LookUpQueue`): then nothing is read.
        func runIfWanted() {
            guard cache.locked({ $0.isCheckingDisk(download) }) else { return }
            run()
        }

        /// Reads the file (on the disk queue); a hit ends the look-up, a miss queues the download on
        /// its lane; a look-up of a key whose stored image is being encoded waits for its file (the
        /// store runs it again then). The file is decoded on a decode worker, so that no decode holds
        /// the disk queue's writes and look-ups; but here when its decoder is cheap (Linux's check of
        /// an image), or when the workers already have a backlog (the files read ahead, each holding
        /// its bytes, stay within `DecodeWorkers.width` times two). A download no longer wanted is not
        /// decoded.
        func run() {
            let (disk, decodes, now) = (cache.disk, cache.decodes, cache.currentTime())
            let id = DiskStore.fileID(for: download.key.string)
            // A stored image whose file is not written yet: the key's older file is not it.
            if !disk.storing.isEmpty, let store = disk.storing[id] { return store.park(self) }
            let found = disk.read(id, now: now, maxBytes: maxBytes ?? 0)
            // Asked here, by a name the kernel has cached, not by `PartialBody.claim`'s path.
            let partsKept = found != nil || disk.holdsParts()
            cache.learnSize(of: download.key, from: found?.data)
            guard let found, !download.decoder.isCheap(download.limits), decodes.backlog < DecodeWorkers.width * 2 else {
                return end(found.map(decode), now: now, partsKept: partsKept)
            }
            decodes.async {
                guard cache.locked({ $0.isCheckingDisk(download) }) else { return end(nil, now: now) }
                end(decode(found), now: now)
            }
        }

        /// What a file read holds: a fresh entry, an expired one (kept for revalidation), or nothing
        /// usable. A broken image (a torn write) is discarded; bytes of another kind stay until a
        /// download replaces them.
        private func decode(_ found: DiskStore.Found) -> FoundOnDisk {
            switch download.decoder.decode(found.data, download.limits) {
            case .success(let payload) where found.expired: return .stale(payload, found)
            case .success(let payload):
                return .fresh(payload, downloadedAt: found.file.downloadedAt, receivedAt: found.receivedAt)
            case .failure(let error):
                switch error {
                case .corruptImage, .emptyBody: cache.diskQueue.async { cache.disk.discard(found, because: "\(error)") }
                default: break
                }
                return .unusable
            }
        }

        /// Ends it: a fresh entry goes to memory and the waiters, anything else queues the download on
        /// its lane (with an expired entry to revalidate). Without `partsKept` (no folder of kept parts
        /// then), its first attempt claims no part.
        private func end(_ found: FoundOnDisk?, now: TimeInterval, partsKept: Bool = true) {
            let (settled, handler) = cache.locked { ledger in
                if !partsKept { download.foundNoParts() }
                return (ledger.lookedUp(download, found, now: now), ledger.settings.onEvent)
            }
            guard let settled else { return }
            if case .fresh(let payload, _, _)? = found {
                let delivery = Delivery(payload: payload, source: .disk, limits: download.limits, misses: download.misses)
                cache.deliver(entryOf: download.key, to: settled.waiters, .success(delivery),
                              event: .served(download.url, from: .disk, bytes: payload.bytes?.count ?? 0),
                              handler: handler, downloaded: true)
            }
            cache.startNetwork(settled.started)
        }
    }

    internal enum FoundOnDisk {
        case fresh(Payload, downloadedAt: TimeInterval, receivedAt: TimeInterval)
        case stale(Payload, DiskStore.Found)
        case unusable
    }

    /// Answers a request that may not use the network (`onlyFromCache`) from disk (on `diskQueue`):
    /// the file's entry, an expired one marked stale unless its server forbade that, kept in memory
    /// unless the request asks not or memory has the key meanwhile; else a failure, remembered
    /// nowhere. Decoded here: a request that chose not to wait for the network.
    internal func readOnly(_ task: FetchTask, maxBytes: Int) {
        let now = currentTime()
        let load = task.load
        let found = disk.read(DiskStore.fileID(for: load.key.string), now: now, maxBytes: maxBytes)
        let limits = locked { $0.decodeLimits }
        let usable = found.flatMap { found -> (Payload, DiskStore.Found)? in
            if found.expired, HTTP.CacheControl(found.headers?.cacheControl).forbidsStale { return nil }
            return (try? load.decoder.decode(found.data, limits).get()).map { ($0, found) }
        }
        locked { $0.read(usable, under: load.key, keeps: !load.options.contains(.notKeptInMemory), now: now) }
        guard let (payload, found) = usable else {
            let miss = Error.network(.resourceUnavailable, "not in the cache, and the load may not use the network "
                                     + "(onlyFromCache)")
            return deliver(task, .failure(miss), event: nil, handler: nil)
        }
        deliver(task, .success(Delivery(payload: payload, source: .disk, isStale: found.expired, limits: limits)),
                event: nil, handler: nil)
    }
}

nonisolated extension ImageCache.Ledger {
    /// Ends a look-up on disk: a fresh entry goes to memory and its waiters are returned; anything
    /// else queues the download on its lane (with an expired entry to revalidate) and returns no
    /// waiters. Nil when the download was forgotten or replaced meanwhile.
    mutating func lookedUp(_ download: Download, _ found: ImageCache.FoundOnDisk?,
                           now: TimeInterval) -> (waiters: [FetchTask], started: [Download])? {
        guard isCurrent(download), case .checkingDisk = download.phase else { return nil }
        guard case .fresh(let payload, let downloadedAt, let receivedAt)? = found, !download.ignoresCache else {
            if case .stale(let payload, let file)? = found { download.revalidate(payload, file) }
            missedOnDisk(download, found)
            lanes.move(download, to: .queued)  // a miss once it is sent (`sent`), not before
            return ([], startReady())
        }
        counts.add(.diskHits)
        log(download, from: .disk)
        lanes.move(download, to: .done)
        let kept = payload.with(bytes: nil)  // they are on disk
        if download.keepsInMemory {
            keepOnDisk(insert(download.key, kept, size: payload.bytes?.count, downloadedAt: downloadedAt,
                              receivedAt: receivedAt), usedAt: now)
        } else {
            entries[download.key] = nil
        }
        return (download.takeWaiters(), startReady())
    }

    /// Counts what a request that may not use the network read from disk (`readOnly`): a hit, or
    /// a failure (not a miss: nothing went to the network); a fresh hit is kept in memory if `keeps`, unless memory has `key` meanwhile (a
    /// download's, a store's).
    mutating func read(_ found: (payload: Payload, file: ImageCache.DiskStore.Found)?, under key: ImageCache.Key,
                       keeps: Bool, now: TimeInterval) {
        guard let found else { return counts.add(.failures) }
        counts.add(.diskHits)
        switch entries[key] {
        case .loaded?, .loading?, .processing?, .decodingStore?: return
        case .failed?, nil: break
        }
        guard keeps, !found.file.expired else { return }
        let kept = found.payload.with(bytes: nil)  // they are on disk
        keepOnDisk(insert(key, kept, size: found.payload.bytes?.count, downloadedAt: found.file.file.downloadedAt,
                          receivedAt: found.file.receivedAt), usedAt: now)
    }

    /// Whether `download` is still current and looking on disk (not cancelled or replaced meanwhile).
    func isCheckingDisk(_ download: Download) -> Bool {
        guard isCurrent(download), case .checkingDisk = download.phase else { return false }
        return true
    }
}
