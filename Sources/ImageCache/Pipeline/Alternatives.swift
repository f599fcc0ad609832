// A load that may fall back to its request's alternative (`Request.Alternative`): the request's own
// URL is loaded as any other; if it fails under one of the alternative's conditions, the alternative
// is loaded as a load of its own, under its own key, and its result says so. The task the caller
// holds answers for both (`FollowUp`): cancelling it cancels whichever waits.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// What a ``FetchTask`` whose request has an alternative came to, once its own load answered:
    /// nothing yet, cancelled before the answer was handed on, handed on as it was, or the
    /// alternative's load, which is what waits now. Its own lock: it is read by `cancel()` from
    /// any thread and settled on the task's queue.
    internal final class FollowUp: @unchecked Sendable {
        private enum State { case pending, cancelled, handedOn, loading(FetchTask) }
        private let lock = NSLock()
        private var state = State.pending

        /// Cancels what waits: the alternative's load, or the hand-over still to come (which then
        /// runs the task's `onCancel` instead). Nothing once handed on.
        func cancel() {
            let next: FetchTask? = lock.withLock {
                switch state {
                case .pending: state = .cancelled; return nil
                case .loading(let next): return next
                case .cancelled, .handedOn: return nil
                }
            }
            next?.cancel()
        }

        /// Whether the task was cancelled before its answer was handed on, or its alternative's load was.
        var isCancelled: Bool {
            let next: FetchTask? = lock.withLock {
                if case .loading(let next) = state { return next }
                return nil
            }
            return next?.isCancelled ?? lock.withLock { if case .cancelled = state { true } else { false } }
        }

        /// Settles it as handed on as it was, unless it was cancelled first: returns whether to hand on.
        func handOn() -> Bool {
            lock.withLock {
                guard case .pending = state else { return false }
                state = .handedOn
                return true
            }
        }

        /// Settles it as loading the alternative with `start`, unless it was cancelled first:
        /// returns whether it started.
        func load(_ start: () -> FetchTask) -> Bool {
            lock.withLock {
                guard case .pending = state else { return false }
                state = .loading(start())  // no other lock is held: `request` takes the cache's
                return true
            }
        }
    }

    /// Loads `load`, whose request has `alternative`: its own URL (sent restricted, see
    /// ``Request/Alternative/restrict(_:)``), then, if that fails under one of the alternative's
    /// conditions, the alternative's, with the same queue and hooks. `completion` gets the request's
    /// own answer, or the alternative's image marked ``Fetched/usedAlternative``, or, when the
    /// alternative fails too, the request's own error.
    internal func request(_ load: Load, falling alternative: Request.Alternative, queue: DispatchQueue?,
                          completion: @escaping @Sendable (Result<Delivery, Error>) -> Void,
                          onCancel: (@Sendable () -> Void)?) -> FetchTask {
        let followUp = FollowUp()
        return request(load, queue: queue, completion: { result in
            guard case .failure(let error) = result, let condition = alternative.condition(for: error) else {
                if followUp.handOn() { completion(result) } else { onCancel?() }
                return
            }
            let used = UsedAlternative(url: alternative.url, condition: condition, mainError: error)
            let started = followUp.load {
                self.notify(Notice(.alternativeUsed, url: load.url,
                                   detail: "\(alternative.url.absoluteString) instead: \(error)"))
                let next = load.alternate(alternative, withProgress: condition != .failure)
                return self.request(next, queue: queue, completion: { result in
                    switch result {
                    case .success(let delivery):
                        completion(.success(delivery.with(used)))
                    case .failure(.cancelled):
                        completion(.failure(.cancelled))
                    case .failure:
                        completion(.failure(error))
                    }
                }, onCancel: onCancel)
            }
            if !started { onCancel?() }
        }, onCancel: onCancel, followUp: followUp)
    }
}

nonisolated extension ImageCache.Load {
    /// The key its alternative's image has in memory where its own has `key`, if it has an alternative.
    func alternativeKey(of key: ImageCache.Key) -> ImageCache.Key? {
        alternative.map { key.ofAlternative($0) }
    }
}

nonisolated extension ImageCache.Key {
    /// The key of `alternative`'s image where this is its request's own: the same size and processors.
    func ofAlternative(_ alternative: ImageCache.Request.Alternative) -> ImageCache.Key {
        ImageCache.Key(string: alternative.url.absoluteString, size: size, processors: processors)
    }
}
