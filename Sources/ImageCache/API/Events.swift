// Events (`onEvent`) and statistics.

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
    /// Something the cache did; see ``ImageCache/onEvent``.
    public enum Event: Sendable {
        /// An image was delivered to the callers of `url`; `bytes` is the size of its original data.
        case served(URL, from: Source, bytes: Int)
        /// A download of `url` failed for a transient reason and will be tried again after `delay`
        /// seconds; `attempt` is the number of the attempt that failed (from 1).
        case retrying(URL, attempt: Int, delay: TimeInterval, error: Error)
        /// A fetch of `url` ended without an image, for the reason given (see ``Error/isFatal``).
        case failed(URL, Error)
        /// The disk tier could not do something; the cache goes on with memory and the network.
        case diskProblem(String)
        /// A transfer of `url` has received nothing for `seconds` (no response yet, or no bytes
        /// since the last; see ``ImageCache/stallTime``): it holds no lane slot now, and goes on.
        case stalled(URL, seconds: TimeInterval)
        /// A stalled transfer of `url` received bytes again after `seconds` without any: it holds a
        /// lane slot again.
        case resumed(URL, seconds: TimeInterval)
    }

    /// What the cache has done since it was made, and what it holds now; see ``statistics()``.
    /// Counters wrap around past `Int.max` (2^31 - 1 where `Int` is 32 bits) rather than trap.
    public struct Statistics: Sendable, Equatable {
        /// Calls of `fetch`, `slowFetch` and `image(for:)`.
        public var requests = 0
        /// Requests answered from memory (second chance included), and lookups answered from disk.
        ///
        /// A request counts at most once in `memoryHits + diskHits + misses + deduplicated`: in
        /// `memoryHits` or `diskHits` when a tier answers it, in `deduplicated` when it joins a
        /// download under way, in `misses` when its own download is sent. A request for an
        /// unsupported URL, and an `onlyFromCache` one that the cache could not answer, count in
        /// `failures` instead. A request cancelled before its download was sent counts in
        /// `requests` alone, as does one refused before anything was looked up (an invalid request).
        public var memoryHits = 0, diskHits = 0
        /// Downloads that went to the network: neither memory nor disk had a fresh entry, and the
        /// first request was sent (a revalidation included; its retries are not counted again).
        public var misses = 0
        /// Requests that joined a download already under way instead of making their own.
        public var deduplicated = 0
        /// Entries renewed by a `304 Not Modified`, without a body.
        public var revalidated = 0
        /// Bytes of the bodies downloaded and accepted (a `304` has none).
        public var bytesDownloaded = 0
        /// Downloads and lookups that ended in a failure (each counted once, however many requests
        /// waited for it), and entries evicted from memory by its limits.
        public var failures = 0, evictions = 0
        /// Transfers that stalled (see ``ImageCache/stallTime``), and stalled transfers that
        /// received bytes again; a transfer may stall and resume more than once.
        public var stalls = 0, resumes = 0
        /// Transfers stalled now: under way, holding no lane slot unless ``ImageCache/maxStalledDownloads``
        /// is passed.
        public var stalledNow = 0
        /// Calls of `peek`, and those that returned an image.
        public var peeks = 0, peekHits = 0
        /// What memory holds now: entries and their cost in bytes (second chance not included).
        public var memoryCount = 0, memoryBytes = 0
        /// What the folder holds: entry files and their bytes, as ``ImageCache/statistics()`` says.
        public var diskFiles = 0, diskBytes = 0
        /// How often each tier missed for each reason (see ``MissReason``), and how revalidations
        /// ended (``MissReason/notModified``, ``MissReason/modified``): the loads' ``Fetched/misses``, summed.
        public var missReasons: [MissReason: Int] = [:]

        /// What the cache counts, one case a counter: changed only through `add`, here.
        internal enum Counter {
            case requests, memoryHits, diskHits, misses, deduplicated, revalidated, bytesDownloaded, failures
            case evictions, stalls, resumes, peeks, peekHits
        }

        /// Adds `amount` to `counter`, wrapping past `Int.max`.
        internal mutating func add(_ counter: Counter, _ amount: Int = 1) {
            switch counter {
            case .requests: requests &+= amount
            case .memoryHits: memoryHits &+= amount
            case .diskHits: diskHits &+= amount
            case .misses: misses &+= amount
            case .deduplicated: deduplicated &+= amount
            case .revalidated: revalidated &+= amount
            case .bytesDownloaded: bytesDownloaded &+= amount
            case .failures: failures &+= amount
            case .evictions: evictions &+= amount
            case .stalls: stalls &+= amount
            case .resumes: resumes &+= amount
            case .peeks: peeks &+= amount
            case .peekHits: peekHits &+= amount
            }
        }

        /// Counts a load that missed a tier for `reason`.
        internal mutating func add(_ reason: MissReason) { missReasons[reason, default: 0] &+= 1 }

        /// Takes the disk's figures (see `DiskStore.counted`).
        internal mutating func setDisk(files: Int, bytes: Int) { (diskFiles, diskBytes) = (files, bytes) }

        /// Itself with what memory holds and the transfers stalled now, for a snapshot.
        internal func with(memoryCount: Int, memoryBytes: Int, stalledNow: Int) -> Statistics {
            var snapshot = self
            (snapshot.memoryCount, snapshot.memoryBytes, snapshot.stalledNow) = (memoryCount, memoryBytes, stalledNow)
            return snapshot
        }
    }

    /// A snapshot of the counters (one addition each, under the lock the cache takes anyway) and
    /// sizes. The disk figures are what the folder held when it was last counted (by the sweep 2 s
    /// after the first disk lookup, the disk limit, `reduceDiskCache`, the first write, or
    /// ``statistics(completion:)``), plus what this instance wrote and deleted since: approximate
    /// while other processes or instances share the folder, and 0 until it is first counted.
    ///
    /// - Complexity: O(1): one lock; it never waits for the disk.
    public func statistics() -> Statistics {
        locked { $0.statistics }
    }

    /// A snapshot as ``statistics()`` makes it, with the disk figures counted exactly: the folder
    /// is listed on the disk queue, after the disk work queued so far, and `completion` runs with
    /// the snapshot (on the main actor on Apple platforms, else on ``callbackQueue``).
    ///
    /// - Complexity: O(files in the folder); the Performance article has the figure.
    public func statistics(completion: @escaping StatisticsCallback) {
        let queue = Self.callbackActorQueue ?? callbackQueue
        diskQueue.async {
            self.disk.recount()
            let snapshot = self.statistics()
            queue.async { Self.onCallbackActor(snapshot) { completion($0) } }
        }
    }

    /// Takes the disk's figures (see `DiskStore.counted`), for ``statistics()``.
    internal func diskCounted(_ figures: (files: Int, bytes: Int)) {
        locked { $0.diskCounted(figures) }
    }

    /// The event that delivering `result` to callers stands for (none for a cancellation).
    internal static func event<T>(_ result: Result<T, Error>, _ url: URL, from source: Source, bytes: Int) -> Event? {
        switch result {
        case .success: return .served(url, from: source, bytes: bytes)
        case .failure(.cancelled): return nil
        case .failure(let error): return .failed(url, error)
        }
    }
}
