// The cache's side of a request: routed through the ledger (`Ledger.route`), then answered from
// memory, joined to a download under way, or looked up on disk as a new download (the look-up, on
// the disk queue, ends it or queues it for the network), or read from disk alone (`onlyFromCache`);
// its cancellation or lowering (a view gone), and the end of the downloads that a cancellation or a
// removal stopped.

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
    /// The one path of every fetch: memory, a download under way, then a new download (which
    /// looks on disk first); or for a variant, a job that makes it from its original. `completion` runs on `queue` (``callbackQueue`` by default).
    internal func request(_ load: Load, queue: DispatchQueue? = nil,
                         completion: @escaping @Sendable (Result<Delivery, Error>) -> Void,
                         onCancel: (@Sendable () -> Void)? = nil) -> FetchTask {
        let now = currentTime()
        let (task, route, handler): (FetchTask, Route, (@Sendable (Event) -> Void)?) = locked { ledger in
            let task = FetchTask(load, cache: self, queue: queue ?? ledger.settings.callbackQueue,
                                 completion: completion, onCancel: onCancel)
            return (task, ledger.route(task, load, now: now), ledger.settings.onEvent)
        }
        switch consume route {
        case .answered(let result, let bytes):
            let event = handler == nil ? nil : Self.event(result, task.url, from: .memory, bytes: bytes)
            deliver(task, result, event: event, handler: handler)
        case .joined(let started):
            startNetwork(started)
        case .lookUp(let download, let maxBytes?):
            diskQueue.async { self.lookUpOnDisk(download, maxBytes: maxBytes) }
        case .lookUp(let download, nil):  // a reload: not read
            lookedUpOnDisk(download, nil, now: now)
        case .readFromDisk(let maxBytes):
            diskQueue.async { self.readOnly(task, maxBytes: maxBytes) }
        case .process(let job):
            makeVariant(job)
        case .processFromCache:
            makeVariantFromCache(task)
        case .none:
            break
        }
        return task
    }

    internal func cancel(_ task: FetchTask) {
        let (cancelled, stopped, started) = locked { $0.cancel(task) }
        if let stopped { finishStopped([stopped]) }
        startNetwork(started)
        if cancelled, let onCancel = task.onCancel { task.queue.async { onCancel() } }
    }

    /// Lowers `task`'s want of its download (`lowered`), or raises it again; then starts what that
    /// allows. See ``Ledger/lower(_:_:)``.
    internal func lower(_ task: FetchTask, _ lowered: Bool) {
        startNetwork(locked { $0.lower(task, lowered) })
    }

    /// Cancels the network tasks of stopped downloads, delivers `result` (a cancellation by
    /// default, or the entry a store put under `key`, which waiters of its other keys decode for
    /// themselves) to whoever still waits, and starts what the freed slots allow.
    internal func finishStopped(_ stopped: [Stopped], with result: Result<Delivery, Error> = .failure(.cancelled),
                                entryOf key: Key? = nil) {
        guard !stopped.isEmpty else { return }
        let started = locked { $0.startReady() }
        for item in stopped {
            item.task?.cancel()
            if let download = item.download, download.source != nil { sourceLoads.cancel(download) }
            item.original?.cancel()
            if let key { deliver(entryOf: key, to: item.waiters, result) } else { deliver(item.waiters, result) }
        }
        startNetwork(started)
    }

    /// Looks a download up on disk (on `diskQueue`); a hit ends it, a miss queues it on its lane; one
    /// of a key whose stored image is being encoded waits for its file. The file is read here, and
    /// decoded on a decode worker, so that no decode holds the disk queue's writes and look-ups; but
    /// here when its decoder is cheap (Linux's check of an image), or when the workers already have a
    /// backlog (the files read ahead, each holding its bytes, stay within `Decodes.width` times two).
    /// A download no longer wanted is not decoded.
    internal func lookUpOnDisk(_ download: Download, maxBytes: Int) {
        let now = currentTime()
        let id = DiskStore.fileID(for: download.key.string)
        // A stored image whose file is not written yet: the key's older file is not it.
        if !disk.storing.isEmpty, let store = disk.storing[id] { return store.park(download, maxBytes: maxBytes) }
        let found = disk.read(id, now: now, maxBytes: maxBytes)
        learnSize(of: download.key, from: found?.data)
        guard let found, !download.decoder.isCheap(download.limits), decodes.backlog < Decodes.width * 2 else {
            return lookedUpOnDisk(download, found.map { decodeFromDisk($0, download) }, now: now)
        }
        decodes.async {
            guard self.locked({ $0.isCheckingDisk(download) }) else {
                return self.lookedUpOnDisk(download, nil, now: now)
            }
            self.lookedUpOnDisk(download, self.decodeFromDisk(found, download), now: now)
        }
    }

    /// What a file read for `download` holds: a fresh entry, an expired one (kept for revalidation),
    /// or nothing usable. A broken image (a torn write) is discarded; bytes of another kind stay
    /// until a download replaces them.
    private func decodeFromDisk(_ found: DiskStore.Found, _ download: Download) -> FoundOnDisk {
        switch download.decoder.decode(found.data, download.limits) {
        case .success(let payload) where found.expired: return .stale(payload, found)
        case .success(let payload):
            return .fresh(payload, downloadedAt: found.file.downloadedAt, receivedAt: found.receivedAt)
        case .failure(let error):
            switch error {
            case .corruptImage, .emptyBody: diskQueue.async { self.disk.discard(found, because: "\(error)") }
            default: break
            }
            return .unusable
        }
    }

    /// Answers a request that may not use the network (`onlyFromCache`) from disk (on `diskQueue`):
    /// the file's entry, an expired one marked stale unless its server forbade that, kept in memory
    /// unless the request asks not or memory has the key meanwhile; else a failure, remembered
    /// nowhere. Decoded here: a request that chose not to wait for the network.
    private func readOnly(_ task: FetchTask, maxBytes: Int) {
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

    internal enum FoundOnDisk {
        case fresh(Payload, downloadedAt: TimeInterval, receivedAt: TimeInterval)
        case stale(Payload, DiskStore.Found)
        case unusable
    }

    /// Ends a look-up on disk: a fresh entry goes to memory and the waiters, anything else queues
    /// the download on its lane (with an expired entry to revalidate).
    private func lookedUpOnDisk(_ download: Download, _ found: FoundOnDisk?, now: TimeInterval) {
        let (settled, handler) = locked { ($0.lookedUp(download, found, now: now), $0.settings.onEvent) }
        guard let settled else { return }
        if case .fresh(let payload, _, _)? = found {
            deliver(entryOf: download.key, to: settled.waiters,
                    .success(Delivery(payload: payload, source: .disk, limits: download.limits, misses: download.misses)),
                    event: .served(download.url, from: .disk, bytes: payload.bytes?.count ?? 0), handler: handler,
                    downloaded: true)
        }
        startNetwork(settled.started)
    }
}
