// A variant's job: a processed image (see `Processor`) made from its original, which the job
// requests as any image is requested (memory, a download under way, disk, the network); its
// processors run on a decode worker; the variant goes to memory beside its original and to the
// fetches that wait for it. The disk keeps only the original: a variant is made again from it.
// The job (`VariantJob`), its steps, and what they do to the ledger, beside them.

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
    /// The job that makes one variant (its key has processors) from its original, and the fetches
    /// waiting for it. It holds no place in a lane and writes nothing: its request for the original
    /// (`original`) does, as any fetch does. It stays in the ledger's entries (`.processing`) until
    /// it ends or is forgotten.
    internal final class VariantJob: @unchecked Sendable {  // guarded by the cache's lock
        let load: Load  // the first fetch's: its processors and scale make the variant
        private(set) var waiters = Waiters()  // cancelled ones leave; all leave when it ends
        private(set) var original: FetchTask?  // its request for the image it is made from

        var key: Key { load.key }

        init(_ load: Load) { self.load = load }

        /// Adds `task` to those waiting for it: the task waits for it now.
        func add(_ task: FetchTask) {
            waiters.add(task)
            task.waits(for: self)
        }

        /// Takes `task` out of those waiting for it (a cancellation).
        func remove(_ task: FetchTask) { waiters.remove(task) }

        /// Its waiters, who all leave it: it ended, or was stopped.
        func takeWaiters() -> [FetchTask] { waiters.takeAll() }

        /// Its request for the image it is made from; nil lets it go (the request holds the job).
        func attach(_ original: FetchTask?) {
            self.original = original
        }
    }

    /// Starts the job that makes a variant (routed by `Ledger.route`): it requests the original;
    /// its fetches, those that join later too, hear the original's progress and retries. Cancelled
    /// with its last fetch (`Ledger.cancel` forgets the job, and `finishStopped` cancels this
    /// request). The request and the job hold each other until the job ends or is forgotten.
    internal func makeVariant(_ job: VariantJob) {
        let load = job.load.original.hooked(onProgress: { [weak job] received, expected in
            if let job { self.tell(self.locked { $0.progressed(job.waiters, received: received) }, received, expected) }
        }, onRetry: { [weak job] error, attempt in
            guard let job else { return }
            for task in self.locked({ _ in job.waiters }) where task.load.onRetry != nil {
                task.queue.async { if task.isWaiting { task.load.onRetry?(error, attempt) } }
            }
        })
        let original = request(load, queue: Self.variantQueue) { [weak job] result in
            guard let job else { return }
            let result = Unchecked(result)  // made for this job alone
            self.decodes.async { self.process(job, result.value) }
        }
        guard let (started, hurried) = locked({ $0.attach(original, to: job) }) else { return original.cancel() }
        if let hurried { lookUps.hurry(hurried) }
        startNetwork(started)
    }

    /// Makes the variant `task` asks for from what the cache has (`onlyFromCache`): no job, since
    /// a job shared with fetches that may use the network could not keep either promise; its
    /// original is requested with the same options; kept in memory as a job's variant is.
    internal func makeVariantFromCache(_ task: FetchTask) {
        let load = task.load
        _ = request(load.original, queue: Self.variantQueue) { result in
            let result = Unchecked(result)  // made for this request alone
            self.decodes.async {
                guard task.isWaiting else { return }
                let variant = Self.variant(of: result.value, by: load.processors, scale: load.scale)
                if case .success(let made) = variant.made, !made.isStale, !load.options.contains(.notKeptInMemory) {
                    let now = self.currentTime()
                    self.locked { $0.keepVariant(made.payload, under: load.key, beside: load.key.original, from: variant.original, now: now) }
                }
                self.deliver(task, variant.made, event: nil, handler: nil)
            }
        }
    }

    /// Where a job's original arrives, before its processors run on a decode worker. No app's
    /// queue: an event that comes with it goes to ``callbackQueue`` instead (see `deliver`).
    internal static let variantQueue = DispatchQueue(label: "ImageCache.variants", qos: .userInitiated,
                                                    attributes: .concurrent)

    /// Runs a job's processors on its original (unless the job was forgotten meanwhile), and ends
    /// the job: its waiters get the variant, or why there is none.
    private func process(_ job: VariantJob, _ result: Result<Delivery, Error>) {
        guard locked({ $0.isCurrent(job) }) else { return }
        let variant = Self.variant(of: result, by: job.load.processors, scale: job.load.scale)
        let now = currentTime()
        guard let waiters = locked({
            $0.jobEnded(job, variant.made.map(\.payload), from: variant.original, counted: variant.processorFailed,
                        now: now)
        }) else { return }
        deliver(waiters, variant.made)
    }

    /// The variant `processors` make of the image an original's request got: its delivery (where
    /// the original came from, and whether stale), the original's image as memory keeps it (to
    /// compare with), and whether a processor failed (not the original).
    private static func variant(of result: Result<Delivery, Error>, by processors: [Processor], scale: Double?)
        -> (made: Result<Delivery, Error>, original: Image?, processorFailed: Bool) {
        let made = image(result).flatMap { fetched in
            Processor.run(processors, on: fetched.value, scale: scale).map {
                Delivery(payload: Payload(image: $0), source: fetched.source, isStale: fetched.isStale)
            }
        }
        var processorFailed = false
        if case .success = result, case .failure = made { processorFailed = true }
        return (made, try? result.get().payload.image, processorFailed)
    }
}

nonisolated extension ImageCache.Ledger {
    typealias VariantJob = ImageCache.VariantJob

    /// The job that makes the variant `load` names, with `task` waiting for it, as the entry of its
    /// key until it ends or is forgotten.
    mutating func startJob(_ task: FetchTask, _ load: ImageCache.Load) -> VariantJob {
        let job = VariantJob(load)
        job.add(task)
        entries[load.key] = .processing(job)
        entries.noteVariant(load.key)
        return job
    }

    /// True while `job` is the entry of its key: not forgotten, replaced or ended.
    func isCurrent(_ job: VariantJob) -> Bool {
        if case .processing(let entry)? = entries[job.key] { return entry === job }
        return false
    }

    /// Gives a variant's job the request for its original; nil if the job was forgotten meanwhile
    /// (the caller cancels the request). A fetch for the screen that joined the job before it had
    /// its original raises the original now, as `join` would have: its download goes to the fast
    /// lane (the downloads that may start then are returned), its look-up on disk at once if it
    /// waits (`hurried`).
    mutating func attach(_ original: FetchTask, to job: VariantJob) -> (started: [Download], hurried: Download?)? {
        guard isCurrent(job) else { return nil }
        job.attach(original)
        guard job.waiters.contains(where: Self.wantsFast) else { return ([], nil) }
        let started = relower(job)
        return (started, lookedUpFast(original.download))
    }

    /// `task` waits for `job` too. Its request for the original stands for all its fetches: a fast
    /// fetch raises it, and moves its download to the fast lane. Returns the downloads that may
    /// start now.
    mutating func join(_ task: FetchTask, _ job: VariantJob, fast: Bool) -> [Download] {
        job.add(task)
        counts.add(.deduplicated)
        guard let original = job.original, let download = original.download, isCurrent(download) else { return [] }
        download.join(task.load.options)
        guard fast else { return [] }
        original.lower(false)  // a job's fetch for the screen
        guard download.lane == .slow else { return [] }
        lanes.move(download, to: download.phase, lane: .fast)
        return startReady()
    }

    /// `task`, cancelled, leaves `job`; the job stops when no one else waits for it (the stopped job).
    mutating func leave(_ job: VariantJob, _ task: FetchTask) -> ImageCache.Stopped? {
        guard isCurrent(job) else { return nil }
        job.remove(task)
        return job.waiters.isEmpty ? forget(job.key) : nil
    }

    /// Lowers or raises the job's request for its original to match its fetches (lowered when none
    /// of them wants it fast), and moves the original's download as a fetch's own lowering would
    /// (see ``lower(_:_:)``). After a cancellation (`cancelled`), only when the fetch that left kept it
    /// fast for fetches that lowered theirs. Returns the downloads that may start now.
    mutating func relower(_ job: VariantJob, cancelled: FetchTask? = nil) -> [Download] {
        if let cancelled, !wantedFast(cancelled) || !job.waiters.contains(where: \.lowered) { return [] }
        guard let original = job.original, let download = original.download, isCurrent(download) else { return [] }
        let lowered = !job.waiters.contains(where: Self.wantsFast)
        original.lower(lowered)
        if lowered { return slowDown(download) }
        guard download.lane == .slow else { return [] }
        return move(download, ifIn: { _ in true }, to: download.phase, lane: .fast) ?? []
    }

    /// Ends a variant's job, unless it was forgotten meanwhile (nil): the variant goes to memory
    /// with its original's dates if memory has the image it was made from (`from`) under the
    /// original's key (not one a store or a later download put there meanwhile); a failure is
    /// remembered under the variant's key, and `counted` if it is the processors' own (the
    /// original's was counted already). Returns its waiters.
    mutating func jobEnded(_ job: VariantJob, _ result: Result<Payload, Error>, from image: Image?,
                           counted: Bool, now: TimeInterval) -> [FetchTask]? {
        guard isCurrent(job) else { return nil }
        entries[job.key] = nil
        job.attach(nil)  // the request for the original holds the job
        switch result {
        case .success(let payload):
            keepVariant(payload, under: job.key, beside: job.key.original, from: image, now: now)
        case .failure(let error):
            if counted { setFailed(job.key, error) } else { entries.setFailed(job.key, error) }
        }
        return job.takeWaiters()
    }
}
