// A network attempt: its request sent through the transport, its progress and stalls, and its end:
// the body checked and decoded, what follows routed by the cache (`endAttempt`), the attempt
// settled in the ledger (`Ledger.attemptEnded`, below:
// the entry kept in memory and queued for the disk, a retry, the stale entry served offline, a
// failure), then delivered, or retried after a delay.

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
    /// Starts each download the lanes let start (or its next attempt): a source's load (see
    /// ``ImageSource``) or a network attempt. A request it refuses fails its download at once, and
    /// what that frees is started in the same loop.
    internal func startNetwork(_ downloads: [Download]) {
        var batch = downloads
        while !batch.isEmpty {
            var freed: [Download] = []
            let (settings, stale, credentials) = locked { ledger in
                (ledger.settings, batch.map { ($0.stale, $0.claimsPart) }, authorizer.refreshes)  // before the modifier reads a token
            }
            for (download, (stale, claimsPart)) in zip(batch, stale) {
                if let source = download.source {
                    startSource(download, source)
                    continue
                }
                freed += NetworkAttempt(cache: self, download: download).send(settings, stale, claimsPart: claimsPart,
                                                                              credentials: credentials)
            }
            batch = freed
        }
    }

    /// The end of a network attempt (`NetworkAttempt.transferred`: its body checked and decoded),
    /// its route written once: a failed body's part kept to resume from (`PartialBody`), before
    /// anyone hears of the failure; a refusal handed to the authorization hook, which may hold the
    /// attempt for a refresh (`authorizing`, Authorization.swift); the image's size learned from
    /// its header (`learnSize`, ImageSize.swift); then the attempt settled in the ledger and delivered
    /// (`NetworkAttempt.finished`), and what that frees started. `body`: the bytes, whole, for
    /// waiters of another type when the download's decoder failed.
    internal func endAttempt(_ attempt: NetworkAttempt, _ transfer: Transfer, _ result: Result<Payload, Error>,
                             body: Data?, _ reply: Reply) {
        if case .failure = result { PartialBody.keep(transfer) }
        guard let result = authorizing(attempt.download, result) else { return }
        if case .success(let payload) = result { learnSize(of: attempt.download.key, from: payload.bytes) }
        let whole = body.map { _ in (transfer.received, transfer.expected) }
        startNetwork(attempt.finished(result, bytes: body, reply, whole: whole))
    }

    /// The attempt `transfer` carries, for the transport's delegate to hand it its progress, stalls
    /// and end.
    internal func attempt(_ transfer: Transfer) -> NetworkAttempt {
        NetworkAttempt(cache: self, download: transfer.download)
    }

    /// Tells `tasks` how far their download is, each on its queue, unless it was answered or
    /// cancelled meanwhile. A job's request for its original passes it on to the job's fetches at
    /// once: its queue is concurrent, so a hop there could run after the request's own answer,
    /// which would drop it, and the fetches would hear nothing.
    internal func tell(_ tasks: [FetchTask], _ received: Int, _ expected: Int?) {
        for task in tasks {
            if task.load.isOriginal { task.load.onProgress?(received, expected); continue }
            task.queue.async { if task.isWaiting { task.load.onProgress?(received, expected) } }
        }
    }
}

nonisolated extension ImageCache {
    /// One attempt of a download over HTTP(S), from its request to what it comes to: sent through
    /// the transport, its progress and stalls, its body checked and decoded, then settled in the
    /// ledger (`Ledger.attemptEnded`, below) and delivered, or retried after a delay. A source's
    /// load ends as an attempt does (`finished`).
    internal struct NetworkAttempt: @unchecked Sendable {  // its download is guarded by the cache's lock
        let cache: ImageCache
        let download: Download

        /// Sends it: the load's request with the cache's headers and the revalidation's, as
        /// ``requestModifier`` makes it (`stale`: the expired entry to revalidate; `credentials`: the
        /// refreshes ended before the modifier ran; `claimsPart`: a kept part may be there to resume).
        /// Returns what a refused request freed.
        func send(_ settings: Settings, _ stale: (payload: Payload, found: DiskStore.Found)?, claimsPart: Bool = true,
                  credentials: UInt64) -> [Download] {
            let (download, transport, disk) = (self.download, cache.transport, cache.disk)
            switch request(settings, stale?.found.validators) {
            case .failure(let refusal):
                return finished(.failure(refusal))
            case .success(var request):
                let partial = stale == nil && claimsPart ? PartialBody.claim(in: disk, key: download.key.string, &request) : nil
                let task = transport.task(request)
                let sent = cache.locked { ledger in
                    guard case .running(nil) = download.phase else { return false }
                    let limits = BodyLimits(inMemory: settings.maxImageBytes,
                                            onDisk: max(settings.maxImageBytes, settings.maxDiskImageBytes),
                                            folder: disk.folder, partial: partial)
                    transport.send(task, for: download, limits: limits, seconds: ledger.settings.downloadTimeLimit,
                                   stallTime: ledger.settings.stallTime, stale: stale?.payload, sentAt: cache.currentTime())
                    ledger.sent(download, task)
                    download.sent(withCredentials: credentials)
                    return true
                }
                if sent { transport.resume(task) } else { task.cancel() }  // stopped meanwhile: never sent
                return []
            }
        }

        /// The request of a download's next attempt, or why ``requestModifier`` made it one that cannot
        /// be sent. The modifier runs here, outside the lock: it is the app's code.
        private func request(_ settings: Settings, _ validators: Validators?) -> Result<URLRequest, Error> {
            // `Accept` and `Accept-Encoding` come from the session (`Transport.headers`): set on each
            // request, they cost more than the rest of this function (FoundationNetworking's headers).
            var request = download.load.request ?? URLRequest(url: download.url, cachePolicy: .reloadIgnoringLocalCacheData,
                                                              timeoutInterval: settings.requestTimeout)
            validators?.ask(&request)
            download.load.alternative?.restrict(&request)  // refused on a network its alternative serves (Alternative.swift)
            guard let modifier = settings.requestModifier else { return .success(request) }
            guard let modified = modifier(request) else {
                return .failure(.invalidRequest("the request modifier returned nil"))
            }
            if let refusal = Load.refusal(of: modified) ?? modified.url.flatMap(Load.refusal(of:)) {
                return .failure(refusal)
            }
            return .success(modified)
        }

        /// A transfer stalled or resumed (the transport says which it is now, as the calls may cross):
        /// its download gives up its lane slot or takes one back, the statistics count it, and
        /// `onEvent` hears it, queued under the lock so that a download's events keep their order.
        func stallChanged(_ transfer: Transfer) {
            let transport = cache.transport
            let started = cache.locked { ledger in
                let (stalled, quiet) = transport.stallState(transfer)
                return ledger.stall(download, task: transfer.task, stalled,
                                    event: stalled ? .stalled(download.url, seconds: quiet)
                                        : .resumed(download.url, seconds: quiet))
            }
            cache.startNetwork(started)
        }

        /// Tells its waiters that have an `onProgress` how far it is (see `ImageCache.tell`).
        func progressed(received: Int, expected: Int?) {
            cache.tell(cache.locked { $0.progressed(download.waiters, received: received) }, received, expected)
        }

        /// A transfer has ended: `stopped` by the transport (a limit, or its time limit, which
        /// URLSession reports as a cancellation), or with URLSession's `error`, or whole. Its body is
        /// checked here and decoded on `decodes` (see ``DecodeWorkers``: not on this delegate queue), or here
        /// when the decoder is cheap; then the cache ends the attempt (`endAttempt`, above).
        func transferred(_ transfer: Transfer, stopped: Error?, error: Swift.Error?) {
            let (download, cache) = (self.download, self.cache)
            let notModified = (transfer.response as? HTTPURLResponse)?.statusCode == 304 && error == nil
                && transfer.stale != nil
            let reply = Reply(response: transfer.response, sentAt: transfer.sentAt, notModified: notModified,
                              metrics: TransferMetrics(transfer))  // at its end, not after a decode
            // `body`: the bytes, whole, for waiters of another type when the download's decoder fails.
            let finish: @Sendable (Result<Payload, Error>, _ body: Data?) -> Void = { result, body in
                cache.endAttempt(self, transfer, result, body: body, reply)
            }
            if let stopped { return finish(.failure(stopped), nil) }
            if notModified, let stale = transfer.stale { return finish(.success(stale), nil) }
            if let spool = transfer.spool { return streamed(transfer, spool, error: error, finish) }
            switch HTTP.validate(data: transfer.data, response: transfer.response, error: error, identity: transfer.identity) {
            case .failure(let error):
                finish(.failure(error), nil)
            case .success(let body):
                // A cheap decoder (Linux's check of an image) runs here, and the attempt ends at once: a
                // hop to a worker, or a lock taken to free the slot first, would cost more.
                guard !download.decoder.isCheap(download.limits) else { return finish(download.decoder.decode(body, download.limits), body) }
                decodeOnWorker { finish(download.decoder.decode(body, download.limits), body) }
            }
        }

        /// Runs `decode` on a decode worker, the download's slot given to the next one meanwhile (its
        /// bytes are in); not at all for a download forgotten meanwhile (nobody waits for it), nor
        /// for one forgotten while it waited for a worker (a cell scrolled away).
        private func decodeOnWorker(_ decode: @escaping @Sendable () -> Void) {
            let (download, cache) = (self.download, self.cache)
            let started = cache.locked { ledger in
                ledger.move(download, ifIn: { if case .running = $0 { return true } else { return false } },
                            to: .decoding)
            }
            guard let started else { return }
            cache.startNetwork(started)
            cache.decodes.async {
                guard cache.locked({ $0.isCurrent(download) }) else { return }
                decode()
            }
        }

        /// The end of a transfer whose body was streamed to disk (`spool`): checked as a body in memory
        /// is, then mapped from its file and decoded on `decodes` (an image on Apple platforms from the
        /// file itself, by ImageIO, at a bounded size), and handed to `finish` with its spool, which the
        /// disk queue renames into place as the entry's file. On any failure the spool, no longer
        /// referenced, deletes its file.
        private func streamed(_ transfer: Transfer, _ spool: Spool, error: Swift.Error?,
                              _ finish: @escaping @Sendable (Result<Payload, Error>, Data?) -> Void) {
            if case .failure(let failure) = HTTP.validate(count: spool.count, response: transfer.response, error: error,
                                                         identity: transfer.identity) {
                return finish(.failure(failure), nil)
            }
            guard let body = spool.mapped() else {
                return finish(.failure(.network(.cannotOpenFile, "cannot map the body's file \(spool.url.path): "
                                                + POSIX.describe(POSIX.lastError()))), nil)
            }
            let download = self.download
            let decode: @Sendable () -> Void = {
                let result = download.decoder.decode(body, file: spool.url, download.limits).map { $0.with(spool: spool) }
                finish(result, body)
            }
            guard !download.decoder.isCheap(download.limits) else { return decode() }
            decodeOnWorker(decode)
        }

        /// Ends a network attempt (see `Ledger.attemptEnded`): the waiters get the entry or the
        /// failure, or the download waits to be retried. `whole` is the body's size (and the announced
        /// one), which the waiters with an `onProgress` hear before their completion. Returns what may
        /// start now, for the caller to start (here it would nest one call per queued download that
        /// fails at once).
        func finished(_ result: Result<Payload, Error>, bytes: Data? = nil, _ reply: Reply = Reply(),
                      whole: (Int, Int?)? = nil) -> [Download] {
            let now = cache.currentTime()
            let (settled, started, handler) = cache.locked { ledger in
                let settled = ledger.attemptEnded(download, result, bytes: bytes, reply, whole: whole, now: now)
                return (settled, settled == nil ? [] : ledger.startReady(), ledger.settings.onEvent)
            }
            guard let settled else { return [] }  // forgotten, or ended meanwhile
            if let delivery = settled.delivery {
                var event: Event?  // only for a handler to hear
                if handler != nil {
                    let size = (try? delivery.get().payload.bytes?.count ?? 0) ?? 0
                    let source = (try? delivery.get().source) ?? .network
                    let outcome = delivery.flatMap { $0.failed.map { .failure($0.error) } ?? .success($0) }
                    event = ImageCache.event(outcome, download.url, from: source, bytes: size)
                }
                cache.deliver(entryOf: download.key, to: settled.waiters, delivery, event: event, handler: handler, downloaded: true)
            } else if case .retry(let attempt, let delay, let error) = settled.outcome {
                scheduleRetry(settled.waiters, attempt: attempt, delay: delay, error: error)
            }
            return started
        }

        /// Tells of a retry (an event, and each waiter's `onRetry` on its queue, a job's request's at
        /// once, as `progress` does) and puts the download
        /// back on its lane after `delay`.
        private func scheduleRetry(_ waiters: [FetchTask], attempt: Int, delay: TimeInterval, error: Error) {
            cache.emit(.retrying(download.url, attempt: attempt, delay: delay, error: error))
            for task in waiters where task.load.onRetry != nil {
                if task.load.isOriginal { task.load.onRetry?(error, attempt); continue }
                task.queue.async { if task.isWaiting { task.load.onRetry?(error, attempt) } }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { self.requeue() }
        }

        /// Puts its download, which waited to retry, back on its lane (unless it was cancelled
        /// meanwhile).
        func requeue() {
            let download = self.download
            let started = cache.locked { ledger in
                ledger.move(download, ifIn: { if case .waitingToRetry = $0 { return true } else { return false } },
                            to: .queued)
            }
            cache.startNetwork(started ?? [])
        }
    }
}

nonisolated extension ImageCache {
    /// What a network attempt came to, decided by `Ledger.outcome(of:_:response:)`; each has one
    /// handler.
    internal enum Outcome {
        case downloaded(Payload)  // to memory and disk, and to the waiters
        case retry(attempt: Int, delay: TimeInterval, error: Error)  // the waiters stay for the next attempt
        case offline(Payload)  // the expired entry from disk, marked stale (`servesStaleWhenOffline`)
        case failed(Error)
    }

    /// An attempt settled: its outcome, what its waiters get (nil: they wait for the next attempt),
    /// and who they are.
    internal struct Settled {
        let outcome: Outcome
        let delivery: Result<Delivery, Error>?
        let waiters: [FetchTask]
    }

    /// A network attempt's answer, as the transport hands it over: the response, when its request
    /// was sent, and whether it is a `304` for the stale entry.
    internal struct Reply {
        private(set) var response: URLResponse?
        private(set) var sentAt: TimeInterval?
        private(set) var notModified = false
        private(set) var metrics: TransferMetrics?  // what the transfer measured (TransferMetrics.swift)
    }
}

nonisolated extension ImageCache.Ledger {
    /// Ends a network attempt of a download still current and running or decoding (nil if not):
    /// the entry goes to memory and disk and the waiters get it, or it waits to be retried, or it
    /// failed. `whole` is the body's size (and the announced one), which the waiters with an
    /// `onProgress` hear before their completion.
    mutating func attemptEnded(_ download: Download, _ result: Result<Payload, Error>, bytes: Data?,
                               _ answer: ImageCache.Reply, whole: (Int, Int?)?,
                               now: TimeInterval) -> ImageCache.Settled? {
        guard isCurrent(download) else { return nil }
        switch download.phase {
        case .running, .decoding, .waitingToRetry: break  // waiting: for a refresh (Authorization.swift)
        default: return nil
        }
        if let whole {  // the body is whole, whatever its decoder made of it
            for task in progressed(download.waiters, received: whole.0) { task.keepFinalProgress(whole) }
        }
        let outcome = outcome(of: download, result, response: answer.response)
        var delivery: Result<Delivery, Error>?
        switch outcome {
        case .downloaded(let payload):
            delivery = .success(keepDownloaded(download, payload, answer, now: now))
        case .retry:
            lanes.move(download, to: .waitingToRetry)
        case .offline(let payload):
            delivery = .success(serveOffline(download, payload))
        case .failed(let error):
            delivery = fail(download, error, bytes: bytes)
        }
        let waiters = delivery != nil ? download.takeWaiters() : Array(download.waiters)
        return ImageCache.Settled(outcome: outcome, delivery: delivery, waiters: waiters)
    }

    /// What an attempt that ended with `result` comes to: a failure that is not fatal is retried
    /// while the retry policy allows, then served stale from disk if the settings ask for that.
    private func outcome(of download: Download, _ result: Result<Payload, Error>,
                         response: URLResponse?) -> ImageCache.Outcome {
        switch result {
        case .success(let payload):
            return .downloaded(payload)
        case .failure(let error) where error.isFatal || error == .cancelled:
            return .failed(error)
        case .failure(let error):
            let policy = settings.retryPolicy
            // A network constraint's refusal would come again at once: an alternative may serve.
            if download.attempts <= policy.maxRetries, error.networkConstraint == nil {
                return .retry(attempt: download.attempts,
                              delay: policy.delay(attempt: download.attempts,
                                                  retryAfter: ImageCache.HTTP.retryAfter(response)),
                              error: error)
            }
            // Never one whose server forbade it (`no-cache`, `must-revalidate`), whatever the settings.
            if settings.servesStaleWhenOffline, let stale = download.stale,
               !ImageCache.HTTP.CacheControl(stale.found.headers?.cacheControl).forbidsStale {
                return .offline(stale.payload)
            }
            return .failed(error)
        }
    }

    /// A download's entry goes to memory while it is fresh and to disk (a `304` renews the file it
    /// revalidated), unless the server said `no-store`: then to no tier. Returns what its waiters
    /// get.
    private mutating func keepDownloaded(_ download: Download, _ payload: Payload, _ answer: ImageCache.Reply,
                                         now: TimeInterval) -> Delivery {
        let delivery = Delivery(payload: payload, source: .network, limits: download.limits,
                                misses: explained(download, notModified: answer.notModified), metrics: answer.metrics)
        lanes.move(download, to: .done)
        let revalidated = answer.notModified ? download.stale?.found : nil
        let cacheControl = ImageCache.HTTP.FreshnessHeaders.cacheControl(answer.response, updating: revalidated?.headers)
        let size = payload.bytes?.count
        if answer.notModified { counts.add(.revalidated) } else { counts.add(.bytesDownloaded, size ?? 0) }
        let parsed = ImageCache.HTTP.CacheControl(cacheControl)
        guard !parsed.noStore else {
            entries[download.key] = nil
            removeOlderFile(of: download)
            return delivery
        }
        let headers = ImageCache.HTTP.FreshnessHeaders(cacheControl: cacheControl, expiresOf: answer.response,
                                                       updating: revalidated?.headers)
        let freshness = ImageCache.HTTP.Freshness(answer.response, headers, parsed: parsed, sentAt: answer.sentAt ?? now,
                                                  receivedAt: now)
        let downloadedAt = downloadDate(freshness, now: now)
        if now < downloadedAt + settings.timeToLive, download.keepsInMemory {
            // On disk already, or about to be; or never to be written, so memory need not keep them.
            let onDisk = answer.notModified || payload.spool != nil || !download.writesToDisk
            let kept = payload.with(bytes: onDisk ? nil : payload.bytes).with(spool: nil)
            keepOnDisk(insert(download.key, kept, size: size, downloadedAt: downloadedAt, receivedAt: now,
                              diskless: !download.writesToDisk), usedAt: now)
        } else {
            entries[download.key] = nil  // stale on arrival (memory would never serve it), or not to keep
        }
        guard download.writesToDisk else {
            removeOlderFile(of: download)  // it is not this image
            return delivery
        }
        if let revalidated {
            queueOnDisk(.renew(revalidated, downloadedAt: downloadedAt, receivedAt: now, headers))
        } else if !answer.notModified {
            // A body streamed to disk is renamed into place, not written.
            let item = ImageCache.DiskStore.Item(url: download.key.string,
                                                 data: payload.spool == nil ? payload.bytes : nil, size: size ?? 0,
                                                 downloadedAt: downloadedAt, receivedAt: now,
                                                 validators: ImageCache.Validators(answer.response), headers: headers)
            queueOnDisk(.write(item, key: download.key, usedAt: now, spool: payload.spool))
        }
        return delivery
    }

    /// Has the disk remove the file of `download`'s key, which an image kept on no disk must not
    /// leave behind, whoever wrote it; not when its look-up on disk found none and the folder's watch
    /// knows of none since (this process has written none: a store forgets the download first;
    /// another's would be known), which spares a `no-store` miss a hop to the disk queue.
    private mutating func removeOlderFile(of download: Download) {
        guard download.misses.disk == .absent, knowsAbsentOnDisk(download.key) else {
            return queueOnDisk(.remove(download.key.string))
        }
    }

    /// The date an entry counts as downloaded, for it to expire `imageTimeToLive` after that date
    /// when its freshness runs out: now, unless `usesServerMaxAge` lets the server's lifetime less
    /// its age decide; 0 (1970, expired under any time to live) for one stale on arrival or marked
    /// `no-cache` (revalidated before every reuse), in both modes.
    private func downloadDate(_ freshness: ImageCache.HTTP.Freshness, now: TimeInterval) -> TimeInterval {
        let timeToLive = settings.timeToLive
        guard !freshness.cacheControl.noCache else { return 0 }
        guard settings.usesServerMaxAge else { return now }
        let remaining = (freshness.lifetime ?? timeToLive) - freshness.age
        return remaining > 0 ? now + remaining - timeToLive : 0
    }

    /// The expired entry from disk, when the refetch failed for a reason that is not fatal: not
    /// for memory (the disk keeps it).
    private mutating func serveOffline(_ download: Download, _ payload: Payload) -> Delivery {
        lanes.move(download, to: .done)
        entries[download.key] = nil
        return Delivery(payload: payload, source: .disk, isStale: true, limits: download.limits)
    }

    /// A failed download: remembered for `error(for:)`. If its decoder rejected `bytes`, waiters of
    /// another type decode the bytes themselves.
    private mutating func fail(_ download: Download, _ error: Error, bytes: Data?) -> Result<Delivery, Error> {
        lanes.move(download, to: .done)
        setFailed(download.key, error)
        // Its waiters of another key of the image (a fetch that joined a view's download at a size)
        // find the failure under their own key too, unless something has taken it meanwhile.
        for key in Set(download.waiters.map(\.load.key)) where key != download.key {
            switch entries[key] {
            case .failed?, nil: setFailed(key, error)
            case .loaded?, .loading?, .processing?, .decodingStore?: break
            }
        }
        guard let bytes else { return .failure(error) }
        return .success(Delivery(payload: Payload(bytes: bytes), source: .network,
                                 failed: (download.decoder.type, error), limits: download.limits))
    }
}
