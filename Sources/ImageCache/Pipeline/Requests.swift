// The cache's side of a request: routed through the ledger (`Ledger.route`), then answered from
// memory, joined to a download under way, or looked up on disk as a new download; and its
// cancellation.

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
    /// looks on disk first). `completion` runs on `queue` (``callbackQueue`` by default).
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
        case .lookUp(let download, let maxBytes):
            diskQueue.async { self.lookUpOnDisk(download, maxBytes: maxBytes) }
        case .none:
            break
        }
        return task
    }

    internal func cancel(_ task: FetchTask) {
        let (cancelled, stopped) = locked { $0.cancel(task) }
        if let stopped { finishStopped([stopped]) }
        if cancelled, let onCancel = task.onCancel { task.queue.async { onCancel() } }
    }
}
