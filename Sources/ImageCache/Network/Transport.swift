// The network: the transport (one URLSession and its delegate), a transfer's bytes and response,
// deadlines and stalls. It keeps none of the cache's bookkeeping: it hands progress, stalls and each
// ended transfer to the cache (Pipeline/Attempts.swift).

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
    /// One network attempt: its download, its limits, and the bytes and response that the session's
    /// serial delegate queue alone fills and reads.
    internal final class Transfer: @unchecked Sendable {
        let download: Download
        let task: URLSessionDataTask
        fileprivate(set) var limits: BodyLimits  // `folder` goes once tried
        let seconds: TimeInterval  // its time limit, from its start to `deadline`
        let deadline: DispatchTime
        let stale: Payload?  // the expired entry it revalidates, if any: a `304` delivers it
        let sentAt: TimeInterval  // by the cache's clock, for the response's age (RFC 9111, 4.2.3)
        fileprivate(set) var response: URLResponse?
        fileprivate(set) var identity = true  // its `Content-Encoding` leaves the body as sent (`HTTP.isIdentity`)
        fileprivate(set) var data = Data()  // the body, unless it is streamed to disk
        fileprivate(set) var spool: Spool?  // the body streamed to disk (see `BodyLimits`); nil while it is in `data`
        fileprivate(set) var received = 0  // the body's bytes so far, in `data` or in `spool`
        fileprivate(set) var expected: Int?  // the length announced, for `onProgress` (nil: none, or compressed)
        fileprivate(set) var nextProgress: UInt64 = 0  // when `onProgress` may be called again, in uptime nanoseconds
        fileprivate(set) var scans = ProgressiveScans(), previews = PreviewSchedule()  // see Pipeline/Previews.swift
        fileprivate(set) var passes = InterlacedPasses()  // an interlaced PNG's (Pipeline/Previews.swift)
        fileprivate(set) var failure: Error?  // set when the transport stopped the transfer itself
        fileprivate(set) var timedOut: Error?  // set when its time limit passed; guarded by the transport's lock
        let stallTime: UInt64  // nanoseconds without bytes after which it counts as stalled
        // Guarded by the transport's lock: when it last received anything (the response or bytes),
        // in uptime nanoseconds, whether it has stalled since, and how long it was quiet when it
        // stalled or resumed.
        fileprivate(set) var heardAt: UInt64
        fileprivate(set) var stalled = false
        fileprivate(set) var quiet: UInt64 = 0
        let startedAt: UInt64  // when it was sent, in uptime nanoseconds (`TransferMetrics`)
        fileprivate(set) var redirects = 0  // followed so far
        fileprivate(set) var taskMetrics: URLSessionTaskMetrics?  // URLSession's, where the platform delivers them
        fileprivate(set) var awaitsChallenge = false  // a 401 read to its end for corelibs' challenge (ChallengeResponder.swift)
        fileprivate(set) var credentialSent = false  // corelibs sent the request again with a challenge's credential

        init(_ download: Download, _ task: URLSessionDataTask, limits: BodyLimits, seconds: TimeInterval,
             stallTime: TimeInterval, stale: Payload?, sentAt: TimeInterval) {
            (self.download, self.task, self.limits, self.seconds, self.stale) = (download, task, limits, seconds, stale)
            self.sentAt = sentAt
            let now = DispatchTime.now()
            deadline = now + seconds
            heardAt = now.uptimeNanoseconds
            startedAt = heardAt
            self.stallTime = UInt64(stallTime * 1_000_000_000)
        }

        /// A `206` goes on from the part it asked the rest of (`PartialBody.answered`): the part is
        /// its spool, the part's bytes its bytes so far, `total` the whole length (nil: unknown).
        func resume(from spool: Spool, at start: Int, total: Int?) {
            (self.spool, received, expected) = (spool, start, total)
            limits.folder = nil  // streamed already
        }

        /// The part it claimed is not resumed: the response starts over.
        func dropPartial() { limits.partial = nil }

        /// Stops it with `error`: the transport, or a check of its response, stopped it.
        func fail(_ error: Error) { failure = error }

        /// Its 401 is read to its end for corelibs' challenge (ChallengeResponder.swift).
        func awaitChallenge() { awaitsChallenge = true }

        /// Corelibs sent its request again with a challenge's credential.
        func sentCredential() { credentialSent = true }

        /// `count` bytes of a body it does not keep (a challenge's 401) were read.
        func skipped(_ count: Int) { received += count }

        /// Its progressive JPEG's scans, read from the body so far (Pipeline/Previews.swift).
        func readScans() -> ProgressiveScans {
            scans.read(data)
            return scans
        }

        /// Its interlaced PNG's passes, read from the body so far (Pipeline/Previews.swift).
        func readPasses() -> InterlacedPasses {
            passes.read(data)
            return passes
        }

        /// Whether a preview of `scans` complete scans (or passes) is due at `now`; if so, it counts
        /// as shown (see ``PreviewSchedule``).
        func previewDue(scans: Int, at now: TimeInterval) -> Bool { previews.isDue(scans: scans, at: now) }

        /// When it stalls if it receives nothing before.
        var stallsAt: DispatchTime { DispatchTime(uptimeNanoseconds: heardAt + stallTime) }

        /// The most bytes its body may have now: more on disk than in memory.
        var limit: Int { spool == nil ? limits.inMemory : limits.onDisk }

        /// Streams the body to disk from now on, if it can (a body announced or grown past
        /// `streamedAbove`): the bytes so far go to the file, and memory lets them go. If the file
        /// cannot be made, the body stays in memory within `limits.inMemory`, and this is not tried
        /// again.
        func streamToDisk() {
            guard let folder = limits.folder else { return }
            limits.folder = nil  // tried once
            guard let spool = Spool.open(in: folder, key: download.key.string) else { return }
            do {
                try spool.append(data)
            } catch {
                return  // the spool deletes its file
            }
            self.spool = spool
            data = Data()
        }
    }

    /// How large a transfer's body may be: `inMemory` (``ImageCache/maxImageBytes``) while it is in
    /// memory, `onDisk` (the larger of that and ``ImageCache/maxDiskImageBytes``) once it is streamed
    /// to a file in `folder` (nil: it is not, or was tried already), which it is once it is announced
    /// or grown past `streamedAbove` bytes.
    internal struct BodyLimits {
        let inMemory: Int
        let onDisk: Int
        fileprivate(set) var folder: URL?
        fileprivate(set) var partial: PartialBody? = nil  // a kept part claimed for this attempt, until answered

        /// ``ImageCache/streamedAbove``, or `inMemory` if that is less: a body memory may not hold
        /// goes to disk rather than failing.
        var streamedAbove: Int { min(ImageCache.streamedAbove, inMemory) }
    }

    /// The network: one `URLSession` with this object as its delegate, the transfers under way, and
    /// the one timer of their time limits. It keeps no download's bookkeeping: it hands progress
    /// and each finished transfer to the cache. Its `lock` is taken after the cache's, never
    /// before, and never held while it calls the cache.
    internal final class Transport: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private(set) weak var cache: ImageCache?  // the session holds its delegate until it is invalidated
        private let lock = NSLock()
        // Guarded by `lock`: the session (set in `init`, once `self` exists to be its delegate; made
        // again when the timeout changes), the transfers by task, and the timer with its deadline.
        private var session: URLSession?
        private var transfers: [ObjectIdentifier: Transfer] = [:]
        private var timer: DispatchSourceTimer?
        private var nextDeadline: DispatchTime?  // what `timer` is set for; nil when idle
        #if IMAGECACHE_TESTING
        private(set) var mostTransfers = 0  // the most transfers under way at once; guarded by `lock`
        var mostTransfersAtOnce: Int { lock.withLock { mostTransfers } }
        #endif

        /// Hands its transfers' progress and ends to `cache` from now on (the cache's `init`).
        func attach(_ cache: ImageCache) { self.cache = cache }

        init(_ configuration: URLSessionConfiguration, timeout: TimeInterval) {
            super.init()
            session = makeSession(configuration, timeout: timeout)
        }

        /// What every request asks for unless it says otherwise (a request's own header wins, and so
        /// does one of the app's session): images, not compressed again (they are compressed already).
        static let headers = ["Accept": "image/*, */*;q=0.8", "Accept-Encoding": "identity"]

        private func makeSession(_ configuration: URLSessionConfiguration, timeout: TimeInterval) -> URLSession {
            configuration.timeoutIntervalForRequest = timeout
            var headers: [AnyHashable: Any] = Self.headers
            headers.merge(configuration.httpAdditionalHeaders ?? [:]) { _, apps in apps }
            configuration.httpAdditionalHeaders = headers
            return URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        }

        /// Resumes `task` on the session's delegate queue, where its callbacks run: resumed from
        /// another thread, the session's work on that thread and its callbacks here contend for its
        /// locks (a thread woken more per image).
        func resume(_ task: URLSessionDataTask) {
            guard let queue = lock.withLock({ session?.delegateQueue }), OperationQueue.current !== queue else {
                return task.resume()
            }
            queue.addOperation { task.resume() }
        }

        /// A task that sends `request`, for `send` to make a transfer of, or to cancel: made outside
        /// the cache's lock (URLSession's own work, microseconds that a thread waiting for the lock
        /// would spend asleep).
        func task(_ request: URLRequest) -> URLSessionDataTask {
            lock.withLock { session! }.dataTask(with: request)
        }

        /// Makes `task` (see `task(_:)`) the transfer of `download`, to be resumed by the caller:
        /// under the cache's lock, so that a download stopped meanwhile cannot miss its task.
        func send(_ task: URLSessionDataTask, for download: Download, limits: BodyLimits, seconds: TimeInterval,
                  stallTime: TimeInterval, stale: Payload?, sentAt: TimeInterval) {
            lock.withLock {
                let transfer = Transfer(download, task, limits: limits, seconds: seconds, stallTime: stallTime,
                                        stale: stale, sentAt: sentAt)
                transfers[ObjectIdentifier(task)] = transfer
                #if IMAGECACHE_TESTING
                mostTransfers = max(mostTransfers, transfers.count)
                #endif
                _setTimer(for: min(transfer.stallsAt, transfer.deadline))
            }
        }

        /// URLSession on Linux times out by its configuration, not by the request: a new session
        /// sends new transfers, and the old one finishes its own.
        func setTimeout(_ seconds: TimeInterval) {
            let old: URLSession? = lock.withLock {
                defer { session = session.map { makeSession($0.configuration, timeout: seconds) } }
                return session
            }
            old?.finishTasksAndInvalidate()
        }

        /// Stops every transfer, when the cache goes away.
        func invalidate() {
            // The last reference may go away inside one of the session's own callbacks, where
            // invalidating synchronously would wait for the queue it runs on. Transfers of sessions
            // that `setTimeout` replaced are cancelled too: no timer would stop them now.
            let (session, tasks) = lock.withLock {
                timer?.cancel()
                return (self.session, transfers.values.map(\.task))
            }
            DispatchQueue.global().async {
                session?.invalidateAndCancel()
                for task in tasks { task.cancel() }
            }
        }

        /// The transfer of `task`, which has just received something at `now` (uptime nanoseconds),
        /// and whether it resumed so: the cache must then hear of it.
        private func heard(_ task: URLSessionTask, at now: UInt64) -> (Transfer, resumed: Bool)? {
            lock.withLock {
                guard let transfer = transfers[ObjectIdentifier(task)] else { return nil }
                defer { transfer.heardAt = now }
                guard transfer.stalled else { return (transfer, false) }
                transfer.stalled = false
                transfer.quiet = now - transfer.heardAt
                _setTimer(for: DispatchTime(uptimeNanoseconds: now + transfer.stallTime))
                return (transfer, true)
            }
        }

        /// The transfer of `task`, if it is under way.
        func transfer(of task: URLSessionTask) -> Transfer? {
            lock.withLock { transfers[ObjectIdentifier(task)] }
        }

        /// Whether `transfer` is stalled now, and how long it was quiet when it stalled or resumed.
        internal func stallState(_ transfer: Transfer) -> (stalled: Bool, quiet: TimeInterval) {
            lock.withLock { (transfer.stalled, TimeInterval(transfer.quiet) / 1_000_000_000) }
        }

        /// The response head: stops at once on an error status or an announced length over the
        /// limit, so that neither body is read.
        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            guard let (transfer, resumed) = heard(dataTask, at: DispatchTime.now().uptimeNanoseconds) else {
                return completionHandler(.cancel)
            }
            if resumed { cache?.attempt(transfer).stallChanged(transfer) }
            guard transfer.failure == nil else { return completionHandler(.cancel) }  // stopped already
            if transfer.awaitsChallenge { (transfer.awaitsChallenge, transfer.received) = (false, 0) }  // sent again
            let length = response.expectedContentLength
            let http = response as? HTTPURLResponse
            (transfer.response, transfer.identity) = (response, HTTP.isIdentity(http?.value(forHTTPHeaderField: "Content-Encoding")))
            transfer.expected = length >= 0 && transfer.identity ? Int(length) : nil
            let status = http?.statusCode ?? 200
            if transfer.limits.partial != nil { PartialBody.answered(transfer, status: status) }
            // A large body announced goes to disk from its first byte.
            if length > Int64(transfer.limits.streamedAbove), (200..<300).contains(status) { transfer.streamToDisk() }
            #if canImport(FoundationNetworking)
            if status == 401, let http, readsChallenge(transfer, http) { return completionHandler(.allow) }
            #endif
            if !(200..<300).contains(status), status != 304 {
                transfer.failure = .httpStatus(status)
            } else if length > Int64(transfer.limit) {
                transfer.failure = .tooLarge(limit: transfer.limit)
            }
            guard transfer.failure == nil else { return stop(transfer, completionHandler) }
            // Sized once when announced: growing by doubling would keep up to twice the bytes alive.
            if length > 0, transfer.spool == nil { transfer.data.reserveCapacity(Int(length)) }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let now = DispatchTime.now().uptimeNanoseconds
            guard let (transfer, resumed) = heard(dataTask, at: now),
                  transfer.failure == nil else { return }  // cancelled already; libcurl may hand over more
            if resumed { cache?.attempt(transfer).stallChanged(transfer) }
            if transfer.awaitsChallenge { return droppedChallengeBody(transfer, data) }
            let received = transfer.received + data.count
            if received > transfer.limits.streamedAbove, transfer.spool == nil, transfer.limits.folder != nil {
                transfer.streamToDisk()  // grown large: to disk from now on
            }
            guard received <= transfer.limit else {
                transfer.failure = .tooLarge(limit: transfer.limit)
                return stop(transfer, nil)
            }
            if let spool = transfer.spool {
                do {
                    try spool.append(data)
                } catch {
                    transfer.failure = .network(.cannotWriteToFile, "cannot write the body to \(spool.url.path): "
                                                + ImageCache.POSIX.describe(error))
                    return stop(transfer, nil)
                }
            } else {
                transfer.data.append(data)
            }
            transfer.received = received
            cache?.received(transfer)  // a progressive JPEG's preview, if due (Pipeline/Previews.swift)
            if now >= transfer.nextProgress {
                transfer.nextProgress = now + 50_000_000  // at most 20 calls a second
                cache?.attempt(transfer).progressed(received: received, expected: transfer.expected)
            }
        }

        /// Cancels a transfer the transport failed itself. corelibs' `cancel()` waits while libcurl
        /// inflates the burst it is in; the delegate queue must go on dropping chunks meanwhile (a
        /// 149 KB gzip bomb piled up 170 MB), so not there, nor on a GCD worker that can starve it.
        func stop(_ transfer: Transfer, _ completionHandler: ((URLSession.ResponseDisposition) -> Void)?) {
            let task = transfer.task
            Thread.detachNewThread { task.cancel() }
            completionHandler?(.cancel)  // which corelibs ignores
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Swift.Error?) {
            guard let (transfer, timedOut) = lock.withLock({
                transfers.removeValue(forKey: ObjectIdentifier(task)).map { ($0, $0.timedOut) }
            }) else { return }
            // The time limit stopped it only if it did not complete meanwhile.
            cache?.attempt(transfer).transferred(transfer, stopped: transfer.failure ?? (error == nil ? nil : timedOut), error: error)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask,
                        willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
            #if canImport(FoundationNetworking)
            if refusesRedirect(task) { return completionHandler(nil) }
            #endif
            let next = HTTP.redirect(response, request, from: task.originalRequest)
            if next != nil { lock.withLock { transfers[ObjectIdentifier(task)] }?.redirects += 1 }
            completionHandler(next)
        }

        /// URLSession's metrics of a task, before it completes (Apple platforms; not corelibs today).
        func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
            lock.withLock { transfers[ObjectIdentifier(task)] }?.taskMetrics = metrics
        }

        /// Sets the one timer of the transfers' time limits for `deadline` if that comes before the
        /// deadline it is set for. One timer, not one per transfer: a transfer then costs no timer of
        /// its own to make and cancel (on Linux each pokes the dispatch manager thread), and 10,000
        /// downloads leave no 10,000 timers behind.
        private func _setTimer(for deadline: DispatchTime) {
            if let next = nextDeadline, next <= deadline { return }
            nextDeadline = deadline
            if let timer { return timer.schedule(deadline: deadline) }
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.setEventHandler { [weak self] in self?.deadlinesPassed() }
            timer.schedule(deadline: deadline)
            timer.resume()
            self.timer = timer
        }

        /// Stops the transfers whose time limit has passed (they complete with `timedOut`), tells the
        /// cache of those that stalled, and sets the timer for the next deadline or stall, if any
        /// transfer is left. A transfer that receives bytes moves no timer: the timer finds out here,
        /// when it fires for the time the transfer would have stalled at.
        private func deadlinesPassed() {
            let now = DispatchTime.now()
            let (late, stalled): ([URLSessionDataTask], [Transfer]) = lock.withLock {
                nextDeadline = nil
                var (late, stalled): ([URLSessionDataTask], [Transfer]) = ([], [])
                for transfer in transfers.values where transfer.timedOut == nil {
                    if !transfer.stalled, transfer.stallsAt <= now {
                        transfer.stalled = true
                        transfer.quiet = now.uptimeNanoseconds - transfer.heardAt
                        stalled.append(transfer)
                    }
                    guard transfer.deadline <= now else {
                        _setTimer(for: transfer.stalled ? transfer.deadline : min(transfer.stallsAt, transfer.deadline))
                        continue
                    }
                    let limit = String(format: "%g", transfer.seconds)
                    transfer.timedOut = .network(.timedOut,
                                                 "no complete response within the \(limit)-second limit per download")
                    late.append(transfer.task)
                }
                return (late, stalled)
            }
            for task in late { task.cancel() }
            for transfer in stalled { cache?.attempt(transfer).stallChanged(transfer) }
        }
    }
}
