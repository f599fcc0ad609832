// The cache's side of the end of a network attempt: settled in the ledger (`Ledger.attemptEnded`),
// then delivered, or retried after a delay.

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
    /// Ends a network attempt (see `Ledger.attemptEnded`): the waiters get the entry or the
    /// failure, or the download waits to be retried. `whole` is the body's size (and the announced
    /// one), which the waiters with an `onProgress` hear before their completion. Returns what may
    /// start now, for the caller to start (here it would nest one call per queued download that
    /// fails at once).
    internal func networkFinished(_ download: Download, _ result: Result<Payload, Error>, bytes: Data? = nil,
                                 _ reply: Reply = Reply(), whole: (Int, Int?)? = nil) -> [Download] {
        let now = currentTime()
        let (settled, started, handler) = locked { ledger in
            let settled = ledger.attemptEnded(download, result, bytes: bytes, reply, whole: whole, now: now)
            return (settled, settled == nil ? [] : ledger.startReady(), ledger.settings.onEvent)
        }
        guard let settled else { return [] }  // forgotten, or ended meanwhile
        if let delivery = settled.delivery {
            let size = (try? delivery.get().payload.bytes?.count ?? 0) ?? 0
            let source = (try? delivery.get().source) ?? .network
            let outcome = delivery.flatMap { $0.failed.map { .failure($0.error) } ?? .success($0) }
            deliver(settled.waiters, delivery, event: Self.event(outcome, download.url, from: source, bytes: size),
                    handler: handler)
        } else if case .retry(let attempt, let delay, let error) = settled.outcome {
            scheduleRetry(download, settled.waiters, attempt: attempt, delay: delay, error: error)
        }
        return started
    }

    /// Tells of a retry (an event, and each waiter's `onRetry` on its queue) and puts the download
    /// back on its lane after `delay`.
    private func scheduleRetry(_ download: Download, _ waiters: [FetchTask], attempt: Int, delay: TimeInterval,
                               error: Error) {
        emit(.retrying(download.url, attempt: attempt, delay: delay, error: error))
        for task in waiters where task.load.onRetry != nil {
            task.queue.async { if task.isWaiting { task.load.onRetry?(error, attempt) } }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { self.requeue(download) }
    }
}
