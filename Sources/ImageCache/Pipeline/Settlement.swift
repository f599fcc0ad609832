// What a network attempt and a store come to, settled in the ledger under the lock: the entry kept
// in memory and queued for the disk, a retry, the stale entry served offline, a failure. Each step
// returns what the cache does after unlocking (the waiters to deliver to, the downloads that may
// start); the cache's side of each is in Attempts and Storing. (A look-up on disk, a variant's job
// and a store's decode settle beside their own types.)

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
        var response: URLResponse?
        var sentAt: TimeInterval?
        var notModified = false
        var metrics: TransferMetrics?  // what the transfer measured (TransferMetrics.swift)
    }
}

nonisolated extension ImageCache.Ledger {
    // MARK: Network attempts

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
        let waiters = delivery != nil ? download.takeWaiters() : download.waiters
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
            if download.attempts <= policy.maxRetries {
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
        let headers = ImageCache.HTTP.FreshnessHeaders(answer.response, updating: revalidated?.headers)
        let freshness = ImageCache.HTTP.Freshness(answer.response, headers, sentAt: answer.sentAt ?? now,
                                                  receivedAt: now)
        let size = payload.bytes?.count
        if answer.notModified { counts.revalidated &+= 1 } else { counts.bytesDownloaded &+= size ?? 0 }
        guard !freshness.cacheControl.noStore else {
            entries[download.key] = nil
            queueOnDisk(.remove(download.key.string))  // an older file of the key goes too
            return delivery
        }
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
            queueOnDisk(.remove(download.key.string))  // an older file of the key is not this image
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

    // MARK: Stores

    /// The prologue of every store under `key`: refuses `size` bytes past the limit, then forgets
    /// the key's downloads (and those of its variants) and its second chance. Returns what it stopped.
    mutating func replace(_ key: ImageCache.Key, size: Int?) throws -> [ImageCache.Stopped] {
        let limit = settings.maxImageBytes
        if let size, size > limit { throw Error.tooLarge(limit: limit) }
        let stopped = forgetWithVariants(key)
        shelf.removeObject(forKey: key)  // an older image of the key
        return stopped
    }

    /// Puts `payload` in memory under `key` at `now`, and `item` on disk (bytes to write, or an
    /// image whose bytes are made first).
    mutating func keepStored(_ key: ImageCache.Key, _ payload: Payload, size: Int, _ disk: ImageCache.DiskWork,
                             now: TimeInterval) {
        keepOnDisk(insert(key, payload, size: size, downloadedAt: now), usedAt: now)
        queueOnDisk(disk)
    }
}
