// Variants: a processed image (see `Processor`) made by a job from its original, which the job
// requests as any image is requested (memory, a download under way, disk, the network); its
// processors run on a decode worker; the variant goes to memory beside its original and to the
// requests that wait for it. The disk keeps only the original: a variant is made again from it.

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
    /// Starts the job that makes a variant (routed by `Ledger.route`): it requests the original;
    /// its fetches, those that join later too, hear the original's progress and retries. Cancelled
    /// with its last fetch (`Ledger.cancel` forgets the job, and `finishStopped` cancels this
    /// request). The request and the job hold each other until the job ends or is forgotten.
    internal func makeVariant(_ job: Download) {
        var load = job.load.original
        load.onProgress = { [weak job] received, expected in
            if let job { self.progress(job, received: received, expected: expected) }
        }
        load.onRetry = { [weak job] error, attempt in
            guard let job else { return }
            for task in self.locked({ $0.waiters(of: job) }) where task.load.onRetry != nil {
                task.queue.async { if task.isWaiting { task.load.onRetry?(error, attempt) } }
            }
        }
        let original = request(load, queue: Self.variantQueue) { [weak job] result in
            guard let job else { return }
            let result = Unchecked(result)  // made for this job alone
            self.decodes.async { self.process(job, result.value) }
        }
        if !locked({ $0.attach(original, to: job) }) { original.cancel() }
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
    private func process(_ job: Download, _ result: Result<Delivery, Error>) {
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
