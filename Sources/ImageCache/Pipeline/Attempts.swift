// The end of a network attempt: the body decoded off the transport (`Decodes`), the outcome judged
// (`_outcome`), and one handler each: the entry kept in memory and on disk, a retry, the stale
// entry served offline, a failure.

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
    /// Where downloaded bytes are decoded: in the order they came, at most two at a time, on a queue
    /// of their own (not URLSession's delegate queue, where one large decode would hold back every
    /// transfer's data; a cheap decoder, Linux's check of an image, runs there instead of hopping).
    /// A decode that ends takes the next waiting one in the same block. (Not an
    /// `OperationQueue`: its own machinery showed in a profile of small downloads; see CHANGELOG.)
    internal final class Decodes: @unchecked Sendable {
        private let queue: DispatchQueue
        private let lock = NSLock()
        private var waiting = FIFO<@Sendable () -> Void>()  // guarded by `lock`
        private var running = 0  // guarded by `lock`
        static let width = 2  // decodes at once

        init(label: String) {
            queue = DispatchQueue(label: label, qos: .userInitiated, attributes: .concurrent)
        }

        /// How many decodes wait for a worker.
        var backlog: Int { lock.withLock { waiting.count } }

        /// No decode runs or waits.
        var isIdle: Bool { lock.withLock { running == 0 && waiting.count == 0 } }

        func async(_ work: @escaping @Sendable () -> Void) {
            let starts: Bool = lock.withLock {
                guard running < Self.width else { waiting.append(work); return false }
                running += 1
                return true
            }
            if starts { queue.async { self.drain(from: work) } }
        }

        private func drain(from first: @escaping @Sendable () -> Void) {
            var next: (@Sendable () -> Void)? = first
            while let work = next {
                work()
                next = lock.withLock {
                    if let following = waiting.popFirst() { return following }
                    running -= 1
                    return nil
                }
            }
        }
    }

    /// What a network attempt came to, decided under the lock by `_outcome(of:_:response:)`; each
    /// has one handler.
    private enum Outcome {
        case downloaded(Payload)  // to memory and disk, and to the waiters
        case retry(attempt: Int, delay: TimeInterval, error: Error)  // the waiters stay for the next attempt
        case offline(Payload)  // the expired entry from disk, marked stale (`servesStaleWhenOffline`)
        case failed(Error)
    }

    /// Ends a network attempt: the entry goes to memory and disk and the waiters get it, or it is
    /// retried later, or it failed. `whole` is the body's size (and the announced one), which the
    /// waiters with an `onProgress` hear before their completion. Returns what may start now, for
    /// the caller to start (here it would nest one call per queued download that fails at once).
    internal func networkFinished(_ download: Download, _ result: Result<Payload, Error>, bytes: Data? = nil,
                                 response: URLResponse?, sentAt: TimeInterval? = nil, notModified: Bool = false,
                                 whole: (Int, Int?)? = nil) -> [Download] {
        let now = currentTime()
        var started: [Download] = []
        var handler: (@Sendable (Event) -> Void)?
        let ended: (outcome: Outcome, delivery: Result<Delivery, Error>?, waiters: [FetchTask])? = lock.withLock {
            handler = _state.settings.onEvent
            guard _isCurrent(download) else { return nil }
            switch download.phase {
            case .running, .decoding: break
            default: return nil
            }
            if let whole {  // the body is whole, whatever its decoder made of it
                for task in _progressed(download, received: whole.0) { task.finalProgress = whole }
            }
            let outcome = _outcome(of: download, result, response: response)
            var delivery: Result<Delivery, Error>?  // nil: the waiters wait for the next attempt
            switch outcome {
            case .downloaded(let payload):
                let answer = (response, sentAt ?? now, notModified)
                delivery = .success(_keepDownloaded(download, payload, answer, now: now))
            case .retry:
                _state.lanes.move(download, to: .waitingToRetry)
            case .offline(let payload):
                delivery = .success(_serveOffline(download, payload))
            case .failed(let error):
                delivery = _fail(download, error, bytes: bytes)
            }
            started = _startReadyDownloads()
            defer { if delivery != nil { download.waiters = [] } }
            return (outcome, delivery, download.waiters)
        }
        guard let ended else { return [] }  // forgotten, or ended meanwhile
        if let delivery = ended.delivery {
            let size = (try? delivery.get().payload.bytes?.count ?? 0) ?? 0
            let source = (try? delivery.get().source) ?? .network
            let outcome = delivery.flatMap { $0.failed.map { .failure($0.error) } ?? .success($0) }
            let event = Self.event(outcome, download.url, from: source, bytes: size)
            deliver(download, to: ended.waiters, delivery, event: event, handler: handler)
        } else if case .retry(let attempt, let delay, let error) = ended.outcome {
            scheduleRetry(download, ended.waiters, attempt: attempt, delay: delay, error: error)
        }
        return started
    }

    /// What an attempt that ended with `result` comes to: a failure that is not fatal is retried
    /// while the retry policy allows, then served stale from disk if the settings ask for that.
    private func _outcome(of download: Download, _ result: Result<Payload, Error>, response: URLResponse?) -> Outcome {
        switch result {
        case .success(let payload):
            return .downloaded(payload)
        case .failure(let error) where error.isFatal || error == .cancelled:
            return .failed(error)
        case .failure(let error):
            let policy = _state.settings.retryPolicy
            if download.attempts <= policy.maxRetries {
                return .retry(attempt: download.attempts,
                              delay: policy.delay(attempt: download.attempts, retryAfter: HTTP.retryAfter(response)),
                              error: error)
            }
            // Never one whose server forbade it (`no-cache`, `must-revalidate`), whatever the settings.
            if _state.settings.servesStaleWhenOffline, let stale = download.stale,
               !HTTP.CacheControl(stale.found.headers?.cacheControl).forbidsStale {
                return .offline(stale.payload)
            }
            return .failed(error)
        }
    }

    /// A download's entry goes to memory while it is fresh and to disk (a `304` renews the file it
    /// revalidated), unless the server said `no-store`: then to no tier. Returns what its waiters
    /// get. `answer` is the response, when its request was sent, and whether it is a `304`.
    private func _keepDownloaded(_ download: Download, _ payload: Payload,
                                 _ answer: (response: URLResponse?, sentAt: TimeInterval, notModified: Bool),
                                 now: TimeInterval) -> Delivery {
        let delivery = Delivery(payload: payload, source: .network, limits: download.limits)
        _state.lanes.move(download, to: .done)
        let revalidated = answer.notModified ? download.stale?.found : nil
        let headers = HTTP.FreshnessHeaders(answer.response, updating: revalidated?.headers)
        let freshness = HTTP.Freshness(answer.response, headers, sentAt: answer.sentAt, receivedAt: now)
        let size = payload.bytes?.count
        if answer.notModified { _state.counts.revalidated &+= 1 } else { _state.counts.bytesDownloaded &+= size ?? 0 }
        guard !freshness.cacheControl.noStore else {
            _state.entries[download.key] = nil
            _queueOnDisk(.remove(download.key.string))  // an older file of the key goes too
            return delivery
        }
        let downloadedAt = _downloadDate(freshness, now: now)
        if now < downloadedAt + _state.settings.timeToLive {
            var kept = payload
            if answer.notModified { kept.bytes = nil }  // on disk already
            _keepOnDisk(_insert(download.key, kept, size: size, downloadedAt: downloadedAt, receivedAt: now),
                        usedAt: now)
        } else {
            _state.entries[download.key] = nil  // stale on arrival: memory would never serve it
        }
        if let revalidated {
            _queueOnDisk(.renew(revalidated, downloadedAt: downloadedAt, receivedAt: now, headers))
        } else if !answer.notModified {
            _queueOnDisk(.write(DiskStore.Item(url: download.key.string, data: payload.bytes, size: size ?? 0,
                                               downloadedAt: downloadedAt, receivedAt: now,
                                               validators: Validators(answer.response), headers: headers),
                                key: download.key, usedAt: now))
        }
        return delivery
    }

    /// The date an entry counts as downloaded, for it to expire `imageTimeToLive` after that date
    /// when its freshness runs out: now, unless `usesServerMaxAge` lets the server's lifetime less
    /// its age decide; 0 (1970, expired under any time to live) for one stale on arrival or marked
    /// `no-cache` (revalidated before every reuse), in both modes.
    private func _downloadDate(_ freshness: HTTP.Freshness, now: TimeInterval) -> TimeInterval {
        let timeToLive = _state.settings.timeToLive
        guard !freshness.cacheControl.noCache else { return 0 }
        guard _state.settings.usesServerMaxAge else { return now }
        let remaining = (freshness.lifetime ?? timeToLive) - freshness.age
        return remaining > 0 ? now + remaining - timeToLive : 0
    }

    /// The expired entry from disk, when the refetch failed for a reason that is not fatal: not
    /// for memory (the disk keeps it).
    private func _serveOffline(_ download: Download, _ payload: Payload) -> Delivery {
        _state.lanes.move(download, to: .done)
        _state.entries[download.key] = nil
        return Delivery(payload: payload, source: .disk, isStale: true, limits: download.limits)
    }

    /// A failed download: remembered for `error(for:)`. If its decoder rejected `bytes`, waiters of
    /// another type decode the bytes themselves.
    private func _fail(_ download: Download, _ error: Error, bytes: Data?) -> Result<Delivery, Error> {
        _state.lanes.move(download, to: .done)
        _setFailed(download.key, error)
        guard let bytes else { return .failure(error) }
        return .success(Delivery(payload: Payload(bytes: bytes), source: .network,
                                 failed: (download.decoder.type, error), limits: download.limits))
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
