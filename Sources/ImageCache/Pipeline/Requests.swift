// The cache's side of a request: routed through the ledger (`Ledger.route`), then answered from
// memory, joined to a download under way, looked up on disk as a new download (`DiskLookUp`), read
// from disk alone (`onlyFromCache`), or made by a variant's job (`VariantJob`); its cancellation or
// lowering (a view gone), and the end of the downloads that a cancellation or a removal stopped.

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
    internal func request(_ load: consuming Load, queue: DispatchQueue? = nil,
                         completion: @escaping @Sendable (Result<Delivery, Error>) -> Void,
                         onCancel: (@Sendable () -> Void)? = nil, followUp: FollowUp? = nil) -> FetchTask {
        if let alternative = load.alternative, !load.isOriginal, followUp == nil {  // Alternatives.swift
            return request(load, falling: alternative, queue: queue, completion: completion, onCancel: onCancel)
        }
        let now = currentTime()
        // Made outside the lock, so that the load moves into it without a copy.
        let task = FetchTask(consume load, cache: self, queue: queue ?? callbackQueue, completion: completion,
                             onCancel: onCancel, followUp: followUp)
        let (route, handler): (Route, (@Sendable (Event) -> Void)?) = locked { ledger in
            (ledger.route(task, task.load, now: now), ledger.settings.onEvent)
        }
        switch consume route {
        case .answered(let result, let bytes):
            let event = handler == nil ? nil : Self.event(result, task.url, from: .memory, bytes: bytes)
            deliver(task, result, event: event, handler: handler)
        case .joined(let started, let hurried):
            if let hurried { lookUps.hurry(hurried) }
            startNetwork(started)
        case .lookUp(let download, let maxBytes, let fast):
            DiskLookUp(cache: self, download: download, maxBytes: maxBytes).start(fast: fast)
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
        if !cancelled { task.followUp?.cancel() }  // answered: its alternative's load, if any, is what waits
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
}
