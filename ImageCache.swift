// ImageCache.swift
//
// MIT License
//
// Copyright (c) 2026 The ImageCache authors
//
// Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
// associated documentation files (the "Software"), to deal in the Software without restriction,
// including without limitation the rights to use, copy, modify, merge, publish, distribute,
// sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in all copies or
// substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
// NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
// NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
// DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT
// OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

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

/// A cache of remote images: memory, then disk, then network, with one download per URL.
///
/// ```swift
/// ImageCache.shared.fetch(url) { url, image in
///     cell.imageView?.image = image
/// }
/// // In `cellForRow`, where the main thread cannot wait:
/// cell.imageView?.image = ImageCache.shared.peek(url) ?? placeholder
/// ```
///
/// **Tiers.** Memory holds up to ``imageMemoryMaxCount`` images in least-recently-used order; when
/// it is full, the least recently used 10% leave in one batch (into an `NSCache` second chance,
/// and on disk). Disk holds the original downloaded bytes in `directory/uniqueName`, one file per
/// URL named by a stable hash, with an index that is loaded on first need. Every image expires
/// ``imageTimeToLive`` seconds after it was downloaded, in both tiers.
///
/// **Queues.** ``fetch(_:callback:)`` downloads on a fast lane (up to ``maxConcurrentDownloads`` at
/// once); ``slowFetch(_:callback:)`` on a slow lane, one at a time, that starts nothing while fast
/// work is queued or running. Concurrent requests for one URL share one download.
///
/// **Thread safety.** Every method and property may be used from any thread. Callbacks run on
/// ``callbackQueue`` (the main queue by default), always asynchronously, exactly once per
/// ``FetchTask`` unless it was cancelled. ``peek(_:)`` takes one lock and does one dictionary
/// lookup; it never waits for the disk or the network. Shared state lives behind one lock; disk
/// work runs on a private serial queue, network work in `URLSession`.
public final class ImageCache: @unchecked Sendable {
    /// A cache named "ImageCache" in the platform's caches folder.
    public static let shared = ImageCache(uniqueName: "ImageCache")

    /// The name given to `init`.
    public let uniqueName: String
    /// The folder this instance keeps its files in: `directory/uniqueName`.
    public let folder: URL

    // Every property whose name starts with `_` is guarded by `lock`, and so is every method whose
    // name starts with `_`: it expects the lock to be held. The lock already makes each access
    // exclusive, so the properties on `peek`'s and `_insert`'s path skip the runtime's own
    // exclusivity check (a fifth of `peek`'s cost).
    private let lock = NSLock()
    @exclusivity(unchecked) private var _entries: [Key: Entry] = [:]
    @exclusivity(unchecked) private var _memory = MemoryList()
    private var _failureOrder = FIFO<(key: Key, serial: UInt64)>()
    @exclusivity(unchecked) private var _serial: UInt64 = 0
    private var _fastLane = FIFO<Download>()
    private var _slowLane = FIFO<Download>()
    private var _checkingFast = 0  // fast downloads still looking on disk: they hold back the slow lane too
    private var _queuedFast = 0
    private var _runningFast = 0
    private var _runningSlow = 0
    @exclusivity(unchecked) private var _timeToLive: TimeInterval = 600
    @exclusivity(unchecked) private var _memoryMaxCount = 100
    private var _maxConcurrentDownloads = 6
    private var _maxFailuresRemembered = 1_000
    private var _requestTimeout: TimeInterval = 30
    private var _retryPolicy = RetryPolicy.default
    private var _maxImageBytes = 20 * 1024 * 1024
    private var _transfers: [ObjectIdentifier: Transfer] = [:]  // by URLSessionTask
    private var _callbackQueue = DispatchQueue.main
    @exclusivity(unchecked) private var _recencyChanged = false
    private var _onEvent: ((Event) -> Void)?

    // NSCache alone cannot be the second chance's bound: on Linux it evicts the newest entry
    // first, and an insert walks its cost-sorted list (O(n)). It holds the images (so that the
    // system may reclaim them on Apple platforms) and this FIFO keeps the last `_secondChanceLimit`.
    private let secondChance = NSCache<NSString, SecondChance>()
    @exclusivity(unchecked) private var _secondChanceOrder = FIFO<(key: String, serial: UInt64)>()
    private var _session: URLSession  // remade when `requestTimeout` changes
    private let receiver = Receiver()
    private let diskQueue: DispatchQueue
    private let disk: DiskStore  // used only on `diskQueue`
    private var observers: [NSObjectProtocol] = []

    /// The clock, in seconds since 1970. Internal so that tests can move time forward; set it
    /// before the first call that uses the instance.
    internal var clock: @Sendable () -> TimeInterval = ImageCache.wallClock

    /// Seconds since 1970. On Linux from the coarse real-time clock (a few ms of resolution, a
    /// fifth of `Date()`'s cost on `peek`'s path); time to live is counted in seconds anyway.
    static let wallClock: @Sendable () -> TimeInterval = {
        #if os(Linux)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return TimeInterval(now.tv_sec) + TimeInterval(now.tv_nsec) / 1_000_000_000
        #else
        return Date().timeIntervalSince1970
        #endif
    }

    /// Creates a cache that keeps its files in `directory/uniqueName`.
    ///
    /// Nothing is read from disk here: the index loads on the disk queue when it is first needed.
    /// - Parameters:
    ///   - uniqueName: The name of the cache's folder. Two instances with different names never
    ///     share files; use one instance per name at a time. Characters other than letters,
    ///     digits, `-`, `_` and `.` are replaced, and a hash keeps replaced names apart.
    ///   - directory: The parent folder. The platform's caches folder by default.
    ///   - session: A session whose configuration (headers, timeouts, cookies, protocol classes,
    ///     proxies) the cache downloads with. The cache makes its own session from that
    ///     configuration, with its own delegate, so that it can stop a response that is too large
    ///     before reading it all; the given session's delegate is not called. By default: no
    ///     `URLCache` (the cache is the cache), 16 connections per host, a 120-second limit per
    ///     download.
    public init(uniqueName: String, directory: URL? = nil, session: URLSession? = nil) {
        self.uniqueName = uniqueName
        let parent = directory
            ?? FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        folder = parent.appendingPathComponent(Self.folderName(for: uniqueName), isDirectory: true)
        let configuration: URLSessionConfiguration
        if let session {
            configuration = session.configuration
            _requestTimeout = max(1, configuration.timeoutIntervalForRequest)
        } else {
            configuration = URLSessionConfiguration.default
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            configuration.httpMaximumConnectionsPerHost = 16
            configuration.timeoutIntervalForResource = 120
        }
        _session = Self.makeSession(configuration, timeout: _requestTimeout, delegate: receiver)
        diskQueue = DispatchQueue(label: "ImageCache.disk.\(uniqueName)", qos: .utility)
        disk = DiskStore(folder: folder)
        disk.owner = self
        receiver.cache = self
        observeSystemEvents()
    }

    deinit {
        observers.forEach { NotificationCenter.default.removeObserver($0) }
        // The last reference may go away inside one of the session's own callbacks, where
        // invalidating synchronously would wait for the queue it runs on.
        let session = _session
        DispatchQueue.global().async { session.invalidateAndCancel() }
    }
}

// MARK: - Public API

extension ImageCache {
    /// Fetches an image for the screen: memory, then disk, then the network on the fast lane.
    ///
    /// The callback runs once, asynchronously, on ``callbackQueue`` (as it was when `fetch` was
    /// called), with `url` and the image, or nil if it could not be had (see ``error(for:)``).
    /// It never runs after the returned task's ``FetchTask/cancel()`` has returned. Fetching a URL
    /// that waits on the slow lane moves that download to the fast lane.
    @discardableResult
    public func fetch(_ url: URL, callback: ((URL, Image?) -> Void)?) -> FetchTask {
        request(url, lane: .fast, completion: callback.map { Self.adapt(url, $0) })
    }

    /// Fetches an image ahead of need on the slow lane: one download at a time, started only
    /// while no fast work is queued or running. Same callback contract as ``fetch(_:callback:)``.
    @discardableResult
    public func slowFetch(_ url: URL, callback: ((URL, Image?) -> Void)? = nil) -> FetchTask {
        request(url, lane: .slow, completion: callback.map { Self.adapt(url, $0) })
    }

    /// Fetches an image with Swift concurrency; throws ``ImageCache/Error`` when it cannot be had,
    /// and `CancellationError` when the calling task is cancelled first.
    public func image(for url: URL, slow: Bool = false) async throws -> Image {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Unchecked<Image>, Swift.Error>) in
                // The continuation resumes on a global queue: the main queue may not be running.
                let task = request(url, lane: slow ? .slow : .fast, queue: .global()) { result in
                    continuation.resume(with: result.map(Unchecked.init).mapError { $0 })
                } onCancel: {
                    continuation.resume(throwing: CancellationError())
                }
                box.set(task)
            }
        } onCancel: {
            box.cancel()
        }.value
    }

    /// Moves a fast-lane download of `url` that has not started yet to the back of the slow lane.
    ///
    /// A download that is already running is left to finish: stopping it would throw away the
    /// bytes already received. Nothing happens if `url` is not being fetched.
    public func moveToSlowQueue(_ url: URL) {
        let key = Key(url)
        let started: [Download] = lock.withLock {
            guard case .loading(let download)? = _entries[key], download.lane == .fast else { return [] }
            if case .queued = download.phase {
                _queuedFast -= 1
                download.lane = .slow
                _slowLane.append(download)
                return _startReadyDownloads()
            }
            if case .checkingDisk = download.phase {
                _checkingFast -= 1
                download.lane = .slow
                return _startReadyDownloads()
            }
            if case .waitingToRetry = download.phase { download.lane = .slow }
            return []
        }
        startNetwork(started)
    }

    /// The image for `url` if it is in memory and fresh, else nil. Never touches the disk or the
    /// network and never waits for them; counts as a use of the image.
    ///
    /// - Complexity: O(1): one lock, one dictionary lookup.
    public func peek(_ url: URL) -> Image? {
        let key = Key(url)
        let now = clock()
        return lock.withLock {
            switch _entries[key] {
            case .loaded(let slot)?:
                if now < _memory[slot].downloadedAt + _timeToLive {
                    _memory.moveToFront(slot)
                    _recencyChanged = true
                    return _memory.image(slot)
                }
                _removeFromMemory(key, slot: slot)
                return nil
            case nil:
                return _secondChance(key, now: now)?.0
            case .loading?, .failed?:
                return nil
            }
        }
    }

    /// True when the last fetch of `url` failed; cleared when `url` is fetched again or removed.
    public func failedToFetch(_ url: URL) -> Bool {
        error(for: url) != nil
    }

    /// True while `url` is being looked up on disk, queued, or downloaded.
    public func fetching(_ url: URL) -> Bool {
        let key = Key(url)
        return lock.withLock {
            if case .loading? = _entries[key] { return true }
            return false
        }
    }

    /// Why the last fetch of `url` failed, or nil if it did not fail (or was fetched again or
    /// removed since). The error's ``Error/isFatal`` says whether trying again can help.
    public func error(for url: URL) -> ImageCache.Error? {
        let key = Key(url)
        return lock.withLock {
            if case .failed(let error, _)? = _entries[key] { return error }
            return nil
        }
    }

    /// Forgets `url` in every tier. A download of it in flight is cancelled and its callbacks run
    /// with nil. The disk file is deleted on the disk queue, before any later disk lookup.
    public func remove(_ url: URL) {
        let key = Key(url)
        let stopped: Stopped? = lock.withLock {
            secondChance.removeObject(forKey: key.string as NSString)
            let string = key.string
            diskQueue.async { self.disk.remove(string) }
            return _forget(key)
        }
        finishStopped([stopped].compactMap { $0 })
    }

    /// Forgets everything, in memory and on disk, and returns when the disk is empty. Downloads
    /// in flight are cancelled and their callbacks run with nil.
    public func removeAll() {
        let stopped: [Stopped] = lock.withLock {
            secondChance.removeAllObjects()
            return _entries.keys.compactMap { _forget($0) }
        }
        finishStopped(stopped)
        diskQueue.sync { disk.removeAll() }
    }

    /// Empties memory; the disk keeps everything (images not yet written are written first), and
    /// downloads in flight go on and deliver their images. Called on a memory warning under UIKit.
    public func purgeMemory() {
        lock.withLock {
            var evicted: [Evicted] = []
            while let oldest = _memory.tail { evicted.append(_evict(oldest)) }
            secondChance.removeAllObjects()
            _handOverToDisk(evicted)
        }
    }

    /// Writes every image in memory that is not on disk yet, with its index row and how recently
    /// it was used, and returns when all of it (and every disk operation queued before) is done.
    /// Cheap when nothing is pending.
    public func persistCacheToDisk() {
        let now = clock()
        lock.withLock {
            var pending: [Evicted] = []
            for slot in _memory.indicesFromLeastRecent() where _memory[slot].disk == .notStored {
                _memory[slot].disk = .writing
                pending.append(_memory.evicted(slot))
            }
            let recency = _recencyChanged ? _memory.indicesFromLeastRecent().map { _memory[$0].key.string } : []
            _recencyChanged = false
            guard !pending.isEmpty || !recency.isEmpty else { return }
            // Queued under the lock, like _handOverToDisk, so that it is ordered with remove/removeAll.
            let toWrite = pending
            diskQueue.async {
                self.writeToDisk(toWrite)
                if !recency.isEmpty { self.disk.touch(recency, at: now) }
            }
        }
        diskQueue.sync {}
    }

    /// Keeps the `maxImageCount` most recently used images on disk and deletes the rest, files
    /// and index rows; expired images go first. Returns when done. Memory is not changed.
    ///
    /// - Complexity: O(n log n) in the number of images on disk.
    public func reduceDiskCache(maxImageCount: Int) {
        let recency = lock.withLock { _memory.indicesFromLeastRecent().map { _memory[$0].key.string } }
        let (now, ttl) = (clock(), timeToLiveNow())
        let removed = diskQueue.sync { () -> [String] in
            disk.touch(recency, at: now)
            return disk.reduce(to: max(0, maxImageCount), now: now, timeToLive: ttl)
        }
        guard !removed.isEmpty else { return }
        lock.withLock {
            for string in removed {
                secondChance.removeObject(forKey: string as NSString)
                if case .loaded(let slot)? = _entries[Key(string: string)] { _memory[slot].disk = .notStored }
            }
        }
    }
}

// MARK: - Configuration

extension ImageCache {
    /// How long an image stays valid after it was downloaded, in seconds, in memory and on disk
    /// alike (also across launches). 600 by default; values below 1 are clamped to 1.
    public var imageTimeToLive: TimeInterval {
        get { timeToLiveNow() }
        set { lock.withLock { _timeToLive = max(1, newValue.isNaN ? 1 : newValue) } }
    }

    /// How many images memory holds. 100 by default; values below 1 are clamped to 1. Lowering it
    /// evicts the least recently used images at once.
    public var imageMemoryMaxCount: Int {
        get { lock.withLock { _memoryMaxCount } }
        set {
            lock.withLock {
                _memoryMaxCount = max(1, newValue)
                var evicted: [Evicted] = []
                while _memory.count > _memoryMaxCount, let oldest = _memory.tail { evicted.append(_evict(oldest)) }
                _handOverToDisk(evicted)
            }
        }
    }

    /// The queue callbacks run on. `.main` by default. A Linux program that does not run the main
    /// queue (`dispatchMain()` or `RunLoop.main.run()`) must set its own queue here.
    public var callbackQueue: DispatchQueue {
        get { lock.withLock { _callbackQueue } }
        set { lock.withLock { _callbackQueue = newValue } }
    }

    /// How many fast-lane downloads run at once. 6 by default; values below 1 are clamped to 1.
    public var maxConcurrentDownloads: Int {
        get { lock.withLock { _maxConcurrentDownloads } }
        set {
            let started = lock.withLock {
                _maxConcurrentDownloads = max(1, newValue)
                return _startReadyDownloads()
            }
            startNetwork(started)
        }
    }

    /// Seconds a request may wait for data before it fails with a timeout. 30 by default; values
    /// below 1 are clamped to 1 (URLSession on Linux counts whole seconds: 0.5 would mean none).
    public var requestTimeout: TimeInterval {
        get { lock.withLock { _requestTimeout } }
        set {
            // URLSession on Linux times out by its configuration, not by the request: make a new
            // session for new downloads and let the old one finish its own.
            let old: URLSession = lock.withLock {
                _requestTimeout = max(1, newValue.isNaN ? 30 : newValue)
                let old = _session
                _session = Self.makeSession(old.configuration, timeout: _requestTimeout, delegate: receiver)
                return old
            }
            old.finishTasksAndInvalidate()
        }
    }

    private static func makeSession(_ base: URLSessionConfiguration, timeout: TimeInterval, delegate: Receiver) -> URLSession {
        let configuration = base
        configuration.timeoutIntervalForRequest = timeout
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    /// How transient failures are retried; see ``RetryPolicy``.
    public var retryPolicy: RetryPolicy {
        get { lock.withLock { _retryPolicy } }
        set { lock.withLock { _retryPolicy = newValue } }
    }

    /// The largest response body accepted, in bytes. 20 MiB by default; values below 1 are clamped
    /// to 1. A larger response fails as ``Error/tooLarge(limit:)`` as soon as its announced length
    /// or its received bytes pass the limit, without reading the rest.
    public var maxImageBytes: Int {
        get { lock.withLock { _maxImageBytes } }
        set { lock.withLock { _maxImageBytes = max(1, newValue) } }
    }

    /// When and how often a download is tried again after a transient failure: a timeout, a lost
    /// or refused connection, a body cut short, HTTP 5xx, 408 or 429. Fatal failures (other 4xx,
    /// not an image, too large, unsupported URL) are never retried.
    ///
    /// Wait number `n` (from 1) is `baseDelay * 2^(n-1)` seconds times a random factor in
    /// 0.5...1, or the server's `Retry-After` (seconds or an HTTP date) cut to `maxRetryAfter`.
    /// While a download waits to retry, `fetching(url)` is true and it holds no lane slot.
    public struct RetryPolicy: Sendable, Equatable {
        /// Retries after the first attempt. 2 by default; 0 turns retries off.
        public var maxRetries: Int
        /// The first wait in seconds, before jitter. 0.5 by default, so the first wait is at most 0.5 s.
        public var baseDelay: TimeInterval
        /// The longest `Retry-After` honoured, in seconds; longer ones are cut to it. 10 by default.
        public var maxRetryAfter: TimeInterval

        public init(maxRetries: Int = 2, baseDelay: TimeInterval = 0.5, maxRetryAfter: TimeInterval = 10) {
            self.maxRetries = max(0, maxRetries)
            self.baseDelay = max(0, baseDelay)
            self.maxRetryAfter = max(0, maxRetryAfter)
        }

        /// 2 retries, 0.5 s first wait, Retry-After up to 10 s.
        public static let `default` = RetryPolicy()
        /// No retries.
        public static let never = RetryPolicy(maxRetries: 0)

        /// Seconds to wait before retry number `attempt` (from 1).
        func delay(attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
            if let retryAfter { return min(max(0, retryAfter), maxRetryAfter) }
            return baseDelay * pow(2, Double(attempt - 1)) * Double.random(in: 0.5...1)
        }
    }

    /// Called for what the cache does, for logs, metrics and spinners: where each delivered image
    /// came from, each failure, each problem with the disk. Runs on ``callbackQueue``, before the
    /// callbacks of the same fetch when they share that queue. Nil by default.
    public var onEvent: ((Event) -> Void)? {
        get { lock.withLock { _onEvent } }
        set { lock.withLock { _onEvent = newValue } }
    }

    private func timeToLiveNow() -> TimeInterval {
        lock.withLock { _timeToLive }
    }
}

// MARK: - Errors

extension ImageCache {
    /// Why an image could not be had.
    public enum Error: Swift.Error, CustomStringConvertible, Sendable, Equatable {
        /// The URL's scheme is not `http` or `https`.
        case unsupportedURL(String)
        /// The server answered with a status outside 200...299.
        case httpStatus(Int)
        /// The request failed below HTTP: no connection, timeout, connection lost...
        case network(URLError.Code, String)
        /// The server answered 2xx with no body.
        case emptyBody
        /// The body ended before the length the server announced.
        case truncatedBody(expected: Int64, received: Int)
        /// The body is not an image of a known format; says what it looks like instead.
        case notAnImage(String)
        /// The body starts as an image of `format` but is broken; says where.
        case corruptImage(Format, String)
        /// The response is larger than ``ImageCache/maxImageBytes``; it was not read to the end.
        case tooLarge(limit: Int)
        /// The fetch was cancelled, or the URL removed, before the image arrived.
        case cancelled

        /// True when trying the same URL again cannot help: a 4xx other than 408 and 429, an
        /// unsupported URL, a body that is not an image or is broken.
        public var isFatal: Bool {
            switch self {
            case .unsupportedURL, .notAnImage, .corruptImage, .emptyBody, .tooLarge:
                return true
            case .httpStatus(let code):
                // 3xx here is not a redirect URLSession could follow; 5xx, 408 and 429 may pass.
                return (300..<500).contains(code) && code != 408 && code != 429
            case .network(let code, _):
                let fatal: [URLError.Code] = [
                    .badURL, .unsupportedURL, .httpTooManyRedirects, .redirectToNonExistentLocation,
                    .appTransportSecurityRequiresSecureConnection, .serverCertificateUntrusted,
                    .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot,
                    .clientCertificateRejected, .clientCertificateRequired, .userAuthenticationRequired,
                    .userCancelledAuthentication, .cannotDecodeContentData, .cannotDecodeRawData,
                    .fileDoesNotExist, .dataLengthExceedsMaximum,
                ]
                return fatal.contains(code)
            case .truncatedBody, .cancelled:
                return false
            }
        }

        public var description: String {
            switch self {
            case .unsupportedURL(let url): return "unsupported URL (only http and https): \(url)"
            case .httpStatus(let code): return "HTTP status \(code)"
            case .network(let code, let text): return "network error \(code.rawValue): \(text)"
            case .emptyBody: return "not an image: the body is empty"
            case .truncatedBody(let expected, let received): return "truncated body: \(received) of \(expected) bytes"
            case .notAnImage(let what): return "not an image: \(what)"
            case .corruptImage(let format, let what): return "corrupt \(format.rawValue) image: \(what)"
            case .tooLarge(let limit): return "too large: the response is over the \(limit)-byte limit"
            case .cancelled: return "cancelled"
            }
        }
    }
}

// MARK: - Events

extension ImageCache {
    /// Where a delivered image came from.
    public enum Source: String, Sendable {
        case memory, disk, network
    }

    /// Something the cache did; see ``ImageCache/onEvent``.
    public enum Event: Sendable {
        /// An image was delivered to the callers of `url`; `bytes` is the size of its original data.
        case served(URL, from: Source, bytes: Int)
        /// A download of `url` failed for a transient reason and will be tried again after `delay`
        /// seconds; `attempt` is the number of the attempt that failed (from 1).
        case retrying(URL, attempt: Int, delay: TimeInterval, error: Error)
        /// A fetch of `url` ended without an image, for the reason given; `error.isFatal` says
        /// whether trying again can help.
        case failed(URL, Error)
        /// The disk tier could not do something; the cache goes on with memory and the network.
        case diskProblem(String)
    }
}

extension ImageCache {
    /// The event that delivering `result` to callers stands for (none for a cancellation).
    private static func event<T>(_ result: Result<T, Error>, _ url: URL, from source: Source, bytes: Int) -> Event? {
        switch result {
        case .success: return .served(url, from: source, bytes: bytes)
        case .failure(.cancelled): return nil
        case .failure(let error): return .failed(url, error)
        }
    }
}

// MARK: - Queues and fetching

extension ImageCache {
    /// A request made by ``ImageCache/fetch(_:callback:)`` or ``ImageCache/slowFetch(_:callback:)``.
    public final class FetchTask: @unchecked Sendable {
        /// The URL that was requested.
        public let url: URL
        fileprivate let cache: ImageCache
        fileprivate let queue: DispatchQueue
        fileprivate let completion: ((Result<Image, ImageCache.Error>) -> Void)?
        fileprivate let onCancel: (() -> Void)?
        fileprivate var state = State.waiting  // guarded by `cache.lock`
        fileprivate weak var download: Download?  // the download it waits for; guarded by `cache.lock`
        fileprivate enum State { case waiting, delivered, cancelled }

        fileprivate init(url: URL, cache: ImageCache, queue: DispatchQueue,
                         completion: ((Result<Image, ImageCache.Error>) -> Void)?, onCancel: (() -> Void)?) {
            self.url = url
            self.cache = cache
            self.queue = queue
            self.completion = completion
            self.onCancel = onCancel
        }

        /// Cancels this request: its callback will not run once `cancel()` has returned. When no
        /// other request waits for the same URL, the download itself stops and nothing is cached
        /// from it. Cancelling twice, or after the callback ran, does nothing.
        ///
        /// Called on ``ImageCache/callbackQueue`` (the usual case: the main queue) this is exact.
        /// Called from another thread at the very moment the callback is being started, it cannot
        /// stop it: holding a lock across the callback instead would deadlock a callback that
        /// waits for the cancelling thread (a `DispatchQueue.main.sync`, say).
        public func cancel() {
            cache.cancel(self)
        }

        /// True once ``cancel()`` has been called before the callback ran.
        public var isCancelled: Bool {
            cache.lock.withLock { state == .cancelled }
        }
    }

    fileprivate enum Lane { case fast, slow }

    /// One URL being looked up on disk, queued, or downloaded, and everyone waiting for it.
    fileprivate final class Download: @unchecked Sendable {
        let key: Key
        let url: URL
        var lane: Lane
        var phase = Phase.checkingDisk
        var waiters: [FetchTask] = []
        var activeWaiters = 0
        var attempts = 0
        enum Phase { case checkingDisk, queued, running(URLSessionDataTask?), waitingToRetry, finished }

        init(key: Key, url: URL, lane: Lane) {
            self.key = key
            self.url = url
            self.lane = lane
        }
    }

    fileprivate enum Entry {
        case loaded(Int)
        case loading(Download)
        case failed(Error, serial: UInt64)
    }

    private static func adapt(_ url: URL, _ callback: @escaping (URL, Image?) -> Void) -> (Result<Image, Error>) -> Void {
        return { result in
            switch result {
            case .success(let image): callback(url, image)
            case .failure: callback(url, nil)
            }
        }
    }

    private func request(_ url: URL, lane: Lane, queue: DispatchQueue? = nil,
                         completion: ((Result<Image, Error>) -> Void)?, onCancel: (() -> Void)? = nil) -> FetchTask {
        let key = Key(url)
        let now = clock()
        var started: [Download] = []
        var lookUp: Download?
        var immediate: Result<Image, Error>?
        var immediateBytes = 0
        var handler: ((Event) -> Void)?
        let task: FetchTask = lock.withLock {
            let task = FetchTask(url: url, cache: self, queue: queue ?? _callbackQueue, completion: completion, onCancel: onCancel)
            handler = _onEvent
            switch _entries[key] {
            case .loaded(let slot)? where now < _memory[slot].downloadedAt + _timeToLive:
                _memory.moveToFront(slot)
                _recencyChanged = true
                immediate = .success(_memory.image(slot))
                immediateBytes = _memory[slot].data.count
                return task
            case .loaded(let slot)?:
                _removeFromMemory(key, slot: slot)
            case .loading(let download)?:
                download.waiters.append(task)
                task.download = download
                download.activeWaiters += 1
                if lane == .fast, download.lane == .slow { started = _promote(download) }
                return task
            case .failed?, nil:
                break
            }
            if let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil {
                if let (image, bytes) = _secondChance(key, now: now) {
                    immediate = .success(image)
                    immediateBytes = bytes
                    return task
                }
                let download = Download(key: key, url: url, lane: lane)
                if lane == .fast { _checkingFast += 1 }
                download.waiters.append(task)
                task.download = download
                download.activeWaiters = 1
                _entries[key] = .loading(download)
                lookUp = download
            } else {
                let error = Error.unsupportedURL(url.absoluteString)
                _setFailed(key, error)
                immediate = .failure(error)
            }
            return task
        }
        if let immediate {
            deliver([task], immediate, event: Self.event(immediate, url, from: .memory, bytes: immediateBytes), handler: handler)
        }
        if let lookUp {
            let ttl = timeToLiveNow()
            diskQueue.async { self.lookUpOnDisk(lookUp, timeToLive: ttl) }
        }
        startNetwork(started)
        return task
    }

    fileprivate func cancel(_ task: FetchTask) {
        let key = Key(task.url)
        var stopped: Stopped?
        let wasWaiting: Bool = lock.withLock {
            guard task.state == .waiting else { return false }
            task.state = .cancelled
            guard let download = task.download, case .loading(let entry)? = _entries[key], entry === download else {
                return true
            }
            download.activeWaiters -= 1
            if download.activeWaiters == 0 {
                stopped = _forget(key)
            }
            return true
        }
        if let stopped { finishStopped([stopped]) }
        if wasWaiting, let onCancel = task.onCancel.map(Unchecked.init) { task.queue.async { onCancel.value() } }
    }

    /// A download taken out of the bookkeeping by `_forget`, to be finished outside the lock.
    private struct Stopped {
        let waiters: [FetchTask]
        let task: URLSessionDataTask?
    }

    /// Removes `key` from memory and from the download bookkeeping; a download it stops is marked
    /// finished at once (so that no lane starts it), and the caller must pass it to
    /// `finishStopped` after unlocking.
    private func _forget(_ key: Key) -> Stopped? {
        switch _entries[key] {
        case .loaded(let slot)?:
            _removeFromMemory(key, slot: slot)
        case .loading(let download)?:
            _entries[key] = nil
            var task: URLSessionDataTask?
            switch download.phase {
            case .checkingDisk where download.lane == .fast:
                _checkingFast -= 1
            case .queued where download.lane == .fast:
                _queuedFast -= 1
            case .running(let running):
                task = running
                download.lane == .fast ? (_runningFast -= 1) : (_runningSlow -= 1)
            default:
                break
            }
            download.phase = .finished
            // The lanes may hold the download a while longer: let its waiters go now.
            defer { download.waiters = [] }
            return Stopped(waiters: download.waiters, task: task)
        case .failed?:
            _entries[key] = nil
        case nil:
            break
        }
        return nil
    }

    /// Cancels the network tasks of stopped downloads, delivers nil to whoever still waits, and
    /// starts what the freed slots allow.
    private func finishStopped(_ stopped: [Stopped]) {
        guard !stopped.isEmpty else { return }
        let started = lock.withLock { _startReadyDownloads() }
        for item in stopped {
            item.task?.cancel()
            deliver(item.waiters, .failure(.cancelled))
        }
        startNetwork(started)
    }

    /// Queues a download for the network on its lane; returns what may start now.
    private func _enqueue(_ download: Download) -> [Download] {
        download.phase = .queued
        if download.lane == .fast {
            _queuedFast += 1
            _fastLane.append(download)
        } else {
            _slowLane.append(download)
        }
        return _startReadyDownloads()
    }

    /// Moves a slow download to the fast lane.
    private func _promote(_ download: Download) -> [Download] {
        switch download.phase {
        case .queued:
            _queuedFast += 1
            _fastLane.append(download)
        case .running:
            _runningSlow -= 1
            _runningFast += 1
        case .checkingDisk:
            _checkingFast += 1
        case .waitingToRetry, .finished:
            break
        }
        download.lane = .fast
        return _startReadyDownloads()
    }

    /// Takes downloads off the lanes as far as the limits allow and marks them running; the caller
    /// starts them with `startNetwork` after unlocking.
    private func _startReadyDownloads() -> [Download] {
        var started: [Download] = []
        while _runningFast < _maxConcurrentDownloads, let download = _fastLane.popFirst() {
            guard case .queued = download.phase, download.lane == .fast else { continue }
            _queuedFast -= 1
            _runningFast += 1
            download.phase = .running(nil)
            download.attempts += 1
            started.append(download)
        }
        while _checkingFast == 0, _queuedFast == 0, _runningFast == 0, _runningSlow == 0,
              let download = _slowLane.popFirst() {
            guard case .queued = download.phase, download.lane == .slow else { continue }
            _runningSlow += 1
            download.phase = .running(nil)
            download.attempts += 1
            started.append(download)
        }
        return started
    }

    /// The bytes of one network attempt, filled on the session's serial delegate queue.
    fileprivate final class Transfer: @unchecked Sendable {
        let download: Download
        let limit: Int
        var response: URLResponse?
        var data = Data()
        var failure: Error?  // set when the cache stopped the transfer itself

        init(download: Download, limit: Int) {
            self.download = download
            self.limit = limit
        }

        /// Sizes the buffer once when the length is announced (growing it by doubling would keep
        /// up to twice the image's bytes alive).
        func expect(_ length: Int64) {
            if length > 0, length <= Int64(limit) { data.reserveCapacity(Int(length)) }
        }
    }

    /// The session's delegate: hands each callback to the cache, which it holds weakly (the
    /// session holds its delegate until it is invalidated).
    fileprivate final class Receiver: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        weak var cache: ImageCache?

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            completionHandler(cache?.received(response, for: dataTask) ?? .cancel)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            cache?.received(data, for: dataTask)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Swift.Error?) {
            cache?.completed(task, error: error)
        }
    }

    private func startNetwork(_ downloads: [Download]) {
        guard !downloads.isEmpty else { return }
        let (timeout, limit) = lock.withLock { (_requestTimeout, _maxImageBytes) }
        for download in downloads {
            var request = URLRequest(url: download.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
            request.setValue("image/*, */*;q=0.8", forHTTPHeaderField: "Accept")
            let task: URLSessionDataTask? = lock.withLock {
                guard case .running = download.phase else { return nil }
                // Made under the lock: the requestTimeout setter invalidates the session it replaces.
                let task = _session.dataTask(with: request)
                download.phase = .running(task)
                _transfers[ObjectIdentifier(task)] = Transfer(download: download, limit: limit)
                return task
            }
            task?.resume()
        }
    }

    private func transfer(for task: URLSessionTask) -> Transfer? {
        lock.withLock { _transfers[ObjectIdentifier(task)] }
    }

    /// The response head: stops at once on an error status or an announced length over the limit,
    /// so that neither body is read.
    fileprivate func received(_ response: URLResponse, for task: URLSessionDataTask) -> URLSession.ResponseDisposition {
        guard let transfer = transfer(for: task) else { return .cancel }
        transfer.response = response
        transfer.expect(response.expectedContentLength)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 200
        if !(200..<300).contains(status) {
            transfer.failure = .httpStatus(status)
        } else if response.expectedContentLength > Int64(transfer.limit) {
            transfer.failure = .tooLarge(limit: transfer.limit)
        }
        guard transfer.failure == nil else {
            task.cancel()  // swift-corelibs-foundation ignores the `.cancel` disposition
            return .cancel
        }
        return .allow
    }

    fileprivate func received(_ data: Data, for task: URLSessionDataTask) {
        guard let transfer = transfer(for: task) else { return }
        guard transfer.failure == nil else { task.cancel(); return }
        guard transfer.data.count + data.count <= transfer.limit else {
            transfer.failure = .tooLarge(limit: transfer.limit)
            task.cancel()
            return
        }
        transfer.data.append(data)
    }

    fileprivate func completed(_ task: URLSessionTask, error: Swift.Error?) {
        guard let transfer = lock.withLock({ _transfers.removeValue(forKey: ObjectIdentifier(task)) }) else { return }
        let result: Result<(Image, Data), Error>
        if let failure = transfer.failure {
            result = .failure(failure)
        } else {
            result = Self.validate(data: transfer.data, response: transfer.response, error: error)
        }
        networkFinished(transfer.download, result, retryAfter: Self.retryAfter(transfer.response))
    }

    private func networkFinished(_ download: Download, _ result: Result<(Image, Data), Error>, retryAfter: TimeInterval?) {
        let now = clock()
        var started: [Download] = []
        var retry: (attempt: Int, delay: TimeInterval, error: Error)?
        var onEvent: ((Event) -> Void)?
        let current: Bool = lock.withLock {
            onEvent = _onEvent
            guard case .loading(let entry)? = _entries[download.key], entry === download,
                  case .running = download.phase else { return false }
            download.lane == .fast ? (_runningFast -= 1) : (_runningSlow -= 1)
            switch result {
            case .success(let (image, bytes)):
                download.phase = .finished
                _insert(download.key, image: image, data: bytes, downloadedAt: now, disk: .writing)
                let string = download.key.string
                diskQueue.async { self.writeToDisk([Evicted(key: string, data: bytes, downloadedAt: now, disk: .writing)]) }
            case .failure(let error) where !error.isFatal && error != .cancelled && download.attempts <= _retryPolicy.maxRetries:
                download.phase = .waitingToRetry
                retry = (download.attempts, _retryPolicy.delay(attempt: download.attempts, retryAfter: retryAfter), error)
            case .failure(let error):
                download.phase = .finished
                _setFailed(download.key, error)
            }
            started = _startReadyDownloads()
            return true
        }
        guard current else { return }
        if let retry {
            emit(.retrying(download.url, attempt: retry.attempt, delay: retry.delay, error: retry.error))
            DispatchQueue.global().asyncAfter(deadline: .now() + retry.delay) { self.requeue(download) }
        } else {
            var bytes = 0
            if case .success(let (_, data)) = result { bytes = data.count }
            deliver(download.waiters, result.map { $0.0 }, event: Self.event(result, download.url, from: .network, bytes: bytes),
                    handler: onEvent)
        }
        startNetwork(started)
    }

    /// Puts a download that waited to retry back on its lane (unless it was cancelled meanwhile).
    private func requeue(_ download: Download) {
        let started: [Download] = lock.withLock {
            guard case .loading(let entry)? = _entries[download.key], entry === download,
                  case .waitingToRetry = download.phase else { return [] }
            return _enqueue(download)
        }
        startNetwork(started)
    }

    /// Checks a finished transfer and decodes its body.
    private static func validate(data: Data, response: URLResponse?, error: Swift.Error?) -> Result<(Image, Data), Error> {
        let expected = response?.expectedContentLength ?? -1
        if let error {
            let code = (error as? URLError)?.code ?? .unknown
            if code == .cancelled { return .failure(.cancelled) }
            // libcurl reports a body cut short as a generic error: say what it was.
            if expected > 0, Int64(data.count) < expected {
                return .failure(.truncatedBody(expected: expected, received: data.count))
            }
            let text = (error as? URLError)?.localizedDescription ?? String(describing: error)
            return .failure(.network(code, text))
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 200
        guard (200..<300).contains(status) else { return .failure(.httpStatus(status)) }
        if expected > 0, Int64(data.count) < expected {
            return .failure(.truncatedBody(expected: expected, received: data.count))
        }
        return decode(data).map { ($0, data) }
    }

    /// A `Retry-After` header in seconds, from a number of seconds or an HTTP date.
    static func retryAfter(_ response: URLResponse?) -> TimeInterval? {
        guard let http = response as? HTTPURLResponse,
              let value = http.value(forHTTPHeaderField: "Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = TimeInterval(value) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: value).map { max(0, $0.timeIntervalSinceNow) }
    }

    /// Runs every waiter's callback on its queue, once, unless it was cancelled.
    /// Runs every waiter's callback on its queue, once, unless it was cancelled; `event` goes to
    /// the event handler first, in the same block as the first queue's callbacks.
    private func deliver(_ tasks: [FetchTask], _ result: Result<Image, Error>,
                         event: Event? = nil, handler: ((Event) -> Void)? = nil) {
        var byQueue: [(queue: DispatchQueue, tasks: [FetchTask])] = []
        for task in tasks {
            if let index = byQueue.firstIndex(where: { $0.queue === task.queue }) {
                byQueue[index].tasks.append(task)
            } else {
                byQueue.append((task.queue, [task]))
            }
        }
        let boxed = Unchecked((result, handler))
        for (index, group) in byQueue.enumerated() {
            group.queue.async {
                if index == 0, let event, let handler = boxed.value.1 { handler(event) }
                for task in group.tasks {
                    let due: Bool = self.lock.withLock {
                        guard task.state == .waiting else { return false }
                        task.state = .delivered
                        return true
                    }
                    if due { task.completion?(boxed.value.0) }
                }
            }
        }
    }

    /// Sends an event that has no callbacks with it to the handler, on `callbackQueue`.
    fileprivate func emit(_ event: Event) {
        let (handler, queue) = lock.withLock { (_onEvent, _callbackQueue) }
        guard let handler = handler.map(Unchecked.init) else { return }
        queue.async { handler.value(event) }
    }
}

// MARK: - Memory tier

extension ImageCache {
    /// Where a memory entry's bytes stand on disk.
    fileprivate enum DiskState { case notStored, writing, stored }

    /// An image leaving memory, with what the disk needs to keep it.
    fileprivate struct Evicted {
        let key: String
        let data: Data
        let downloadedAt: TimeInterval
        let disk: DiskState
    }

    fileprivate final class SecondChance {
        let image: Image
        let data: Data
        let downloadedAt: TimeInterval
        let serial: UInt64
        init(image: Image, data: Data, downloadedAt: TimeInterval, serial: UInt64) {
            self.image = image
            self.data = data
            self.downloadedAt = downloadedAt
            self.serial = serial
        }
    }

    /// Memory entries in a doubly linked list threaded through an array, most recent first, so
    /// that a use and an eviction cost O(1) with no allocation and no reference counting.
    fileprivate struct MemoryList {
        struct Slot {
            var key: Key
            var image: Image?
            var data: Data
            var downloadedAt: TimeInterval
            var disk: DiskState
            var previous = -1
            var next = -1
        }
        private var slots: [Slot] = []
        private var free: [Int] = []
        private(set) var head = -1
        private var last = -1
        private(set) var count = 0

        var tail: Int? { last < 0 ? nil : last }

        subscript(index: Int) -> Slot {
            _read { yield slots[index] }  // no copy of the slot (and its references) per field read
            _modify { yield &slots[index] }
        }

        mutating func insert(_ slot: Slot) -> Int {
            let index: Int
            if let reused = free.popLast() {
                index = reused
                slots[index] = slot
            } else {
                index = slots.count
                slots.append(slot)
            }
            link(index)
            count += 1
            return index
        }

        /// Moves the slot out (no copy, so no reference counting), leaving an empty one.
        @discardableResult
        mutating func remove(_ index: Int) -> Slot {
            unlink(index)
            var slot = Slot(key: Key(string: ""), image: nil, data: Data(), downloadedAt: 0, disk: .notStored)
            swap(&slot, &slots[index])
            free.append(index)
            count -= 1
            return slot
        }

        mutating func moveToFront(_ index: Int) {
            guard head != index else { return }
            unlink(index)
            link(index)
        }

        /// The image of a live slot (freed slots drop theirs so that memory is released).
        func image(_ index: Int) -> Image {
            guard let image = slots[index].image else { preconditionFailure("ImageCache: image of a freed slot") }
            return image
        }

        func evicted(_ index: Int) -> Evicted {
            Evicted(key: slots[index].key.string, data: slots[index].data,
                    downloadedAt: slots[index].downloadedAt, disk: slots[index].disk)
        }

        /// - Complexity: O(count).
        func indicesFromLeastRecent() -> [Int] {
            var result: [Int] = []
            result.reserveCapacity(count)
            var index = last
            while index >= 0 {
                result.append(index)
                index = slots[index].previous
            }
            return result
        }

        private mutating func link(_ index: Int) {
            slots[index].previous = -1
            slots[index].next = head
            if head >= 0 { slots[head].previous = index }
            head = index
            if last < 0 { last = index }
        }

        private mutating func unlink(_ index: Int) {
            let (previous, next) = (slots[index].previous, slots[index].next)
            if previous >= 0 { slots[previous].next = next } else { head = next }
            if next >= 0 { slots[next].previous = previous } else { last = previous }
        }
    }

    /// Puts a decoded image in memory, evicting the least recently used 10% first if memory is full.
    private func _insert(_ key: Key, image: Image, data: Data, downloadedAt: TimeInterval, disk: DiskState) {
        // Insert first and evict after, so that the key is hashed once: the new image is the most
        // recent, so the batch that leaves is the one that would have left before it came in.
        let slot = _memory.insert(.init(key: key, image: image, data: data, downloadedAt: downloadedAt, disk: disk))
        if case .loaded(let old)? = _entries.updateValue(.loaded(slot), forKey: key) { _memory.remove(old) }
        _recencyChanged = true
        guard _memory.count > _memoryMaxCount else { return }
        let batch = max(1, _memoryMaxCount / 10)
        var evicted: [Evicted] = []
        evicted.reserveCapacity(batch)
        while evicted.count < batch, let oldest = _memory.tail {
            // Only the batch's 8 most recent go to the second chance: an NSCache insert costs
            // ~3 us on Linux, and the second chance is for what was just evicted.
            if batch - evicted.count <= min(8, _secondChanceLimit), let image = _memory[oldest].image {
                let slot = _memory[oldest]
                _keepSecondChance(slot.key.string, image: image, data: slot.data, downloadedAt: slot.downloadedAt)
            }
            evicted.append(_evict(oldest))
        }
        _handOverToDisk(evicted)
    }

    private func _evict(_ slot: Int) -> Evicted {
        let gone = _memory.remove(slot)
        _entries[gone.key] = nil
        return Evicted(key: gone.key.string, data: gone.data, downloadedAt: gone.downloadedAt, disk: gone.disk)
    }

    private func _removeFromMemory(_ key: Key, slot: Int) {
        _entries[key] = nil
        _memory.remove(slot)
    }

    /// Queues the disk work for images leaving memory: write those not stored yet, and record
    /// their order of use. Queued under the lock so that it is ordered with `remove`.
    private func _handOverToDisk(_ evicted: [Evicted]) {
        guard !evicted.isEmpty else { return }
        let now = clock()
        diskQueue.async {
            self.writeToDisk(evicted.filter { $0.disk == .notStored })
            self.disk.touch(evicted.map(\.key), at: now)
        }
    }

    /// How many evicted images the second chance keeps: a fifth of the cap, at most 64.
    private var _secondChanceLimit: Int { min(64, max(1, _memoryMaxCount / 5)) }

    private func _keepSecondChance(_ key: String, image: Image, data: Data, downloadedAt: TimeInterval) {
        _serial += 1
        secondChance.setObject(SecondChance(image: image, data: data, downloadedAt: downloadedAt, serial: _serial), forKey: key as NSString)
        _secondChanceOrder.append((key, _serial))
        while _secondChanceOrder.count > _secondChanceLimit, let (oldKey, serial) = _secondChanceOrder.popFirst() {
            let name = oldKey as NSString
            if secondChance.object(forKey: name)?.serial == serial { secondChance.removeObject(forKey: name) }
        }
    }

    /// The `NSCache` second chance: an image evicted lately comes back into memory.
    private func _secondChance(_ key: Key, now: TimeInterval) -> (Image, Int)? {
        let name = key.string as NSString
        guard let found = secondChance.object(forKey: name) else { return nil }
        secondChance.removeObject(forKey: name)
        guard now < found.downloadedAt + _timeToLive else { return nil }
        // Whether its file survived (reduceDiskCache, a lost folder, a failed write) is unknown
        // here: the next eviction, purge or persist writes it again.
        _insert(key, image: found.image, data: found.data, downloadedAt: found.downloadedAt, disk: .notStored)
        return (found.image, found.data.count)
    }

    private func _setFailed(_ key: Key, _ error: Error) {
        _serial += 1
        _entries[key] = .failed(error, serial: _serial)
        _failureOrder.append((key, _serial))
        // The FIFO holds live and superseded records alike; the serial tells them apart.
        while _failureOrder.count > _maxFailuresRemembered, let (oldKey, serial) = _failureOrder.popFirst() {
            if case .failed(_, serial)? = _entries[oldKey] { _entries[oldKey] = nil }
        }
    }
}

// MARK: - Disk tier

extension ImageCache {
    /// Looks a download up on disk (on `diskQueue`); a hit ends it, a miss queues it on its lane.
    private func lookUpOnDisk(_ download: Download, timeToLive: TimeInterval) {
        let now = clock()
        var result: Result<Image, Error>?
        var stored: DiskStore.Hit?
        if let hit = disk.readImage(download.key.string, now: now, timeToLive: timeToLive) {
            switch Self.decode(hit.data) {
            case .success(let image):
                result = .success(image)
                stored = hit
            case .failure(let error):
                disk.discard(download.key.string, because: "\(error)")
            }
        }
        var started: [Download] = []
        var onEvent: ((Event) -> Void)?
        let current: Bool = lock.withLock {
            onEvent = _onEvent
            guard case .loading(let entry)? = _entries[download.key], entry === download,
                  case .checkingDisk = download.phase else { return false }
            if download.lane == .fast { _checkingFast -= 1 }
            if case .success(let image)? = result, let stored {
                download.phase = .finished
                _insert(download.key, image: image, data: stored.data, downloadedAt: stored.downloadedAt, disk: .stored)
                started = _startReadyDownloads()
            } else {
                started = _enqueue(download)
            }
            return true
        }
        guard current else { return }
        if let result {
            deliver(download.waiters, result, event: Self.event(result, download.url, from: .disk, bytes: stored?.data.count ?? 0),
                    handler: onEvent)
        }
        startNetwork(started)
    }

    /// The disk lost every file: what memory holds must be written again at the next eviction,
    /// purge or persist.
    fileprivate func diskLostEverything() {
        lock.withLock {
            secondChance.removeAllObjects()
            for slot in _memory.indicesFromLeastRecent() where _memory[slot].disk == .stored {
                _memory[slot].disk = .notStored
            }
        }
    }

    /// Writes images to disk (on `diskQueue`) and records in memory which ones made it.
    private func writeToDisk(_ images: [Evicted]) {
        guard !images.isEmpty else { return }
        let written = images.map { disk.writeImage($0.key, data: $0.data, downloadedAt: $0.downloadedAt) }
        lock.withLock {
            for (image, ok) in zip(images, written) {
                guard case .loaded(let slot)? = _entries[Key(string: image.key)],
                      _memory[slot].downloadedAt == image.downloadedAt else { continue }
                _memory[slot].disk = ok ? .stored : .notStored
            }
        }
    }

    /// The disk tier: one file per URL with the original bytes, and an index of rows kept as a
    /// snapshot file plus an append-only journal. Used only on the cache's disk queue.
    ///
    /// Crash safety without fsync: a file is written under a temporary name and renamed, then its
    /// row is appended to the journal; a row is trusted only if its file has the recorded length
    /// and decodes; files without a row and temporary files are deleted when the index loads.
    fileprivate final class DiskStore: @unchecked Sendable {  // confined to the disk queue
        struct Row {
            var url: String
            var size: Int
            var downloadedAt: TimeInterval
            var lastUsed: TimeInterval
        }
        struct Hit {
            let data: Data
            let downloadedAt: TimeInterval
        }

        let folder: URL
        private let folderPath: String
        weak var owner: ImageCache?
        private var rows: [String: Row]?  // by file name; nil until loaded
        private var failing = false  // the last write failed: report a failure once, not per file
        private var lastTouch: TimeInterval = 0
        var injectedWriteError: POSIXErrorCode?  // for tests: every write fails with this
        private var journal: Int32 = -1
        private var journalRecords = 0
        private static let header = "ImageCache index 1\n"
        // Hidden names, so that a listing that skips hidden files sees the images alone.
        static let indexName = ".index"
        static let journalName = ".journal"

        init(folder: URL) {
            self.folder = folder
            folderPath = folder.path
        }

        deinit {
            if journal >= 0 { close(journal) }
        }

        func readImage(_ url: String, now: TimeInterval, timeToLive: TimeInterval) -> Hit? {
            load()
            let name = Self.fileName(for: url)
            guard let row = rows?[name], row.url == url else { return nil }
            guard now < row.downloadedAt + timeToLive else {
                delete(name, url: url)
                return nil
            }
            do {
                let data = try Self.readFile(path(name))
                guard data.count == row.size else {
                    discard(url, because: "file has \(data.count) bytes, index says \(row.size)")
                    return nil
                }
                rows?[name]?.lastUsed = now
                return Hit(data: data, downloadedAt: row.downloadedAt)
            } catch {
                delete(name, url: url)
                return nil
            }
        }

        @discardableResult
        func writeImage(_ url: String, data: Data, downloadedAt: TimeInterval) -> Bool {
            guard !url.contains(where: { $0 == "\t" || $0 == "\n" }) else { return false }
            let name = Self.fileName(for: url)
            do {
                if let injected = injectedWriteError { throw POSIXError(injected) }
                try ensureFolder()
                do {
                    try Self.writeFile(path(name), data: data)
                } catch let error as POSIXError where error.code == .ENOENT {
                    // The folder was deleted under us, and every file with it: start afresh.
                    folderVanished()
                    try ensureFolder(force: true)
                    try Self.writeFile(path(name), data: data)
                }
            } catch {
                fail("cannot write \(path(name)): \(Self.describe(error)); serving from memory and the network")
                return false
            }
            failing = false
            let row = Row(url: url, size: data.count, downloadedAt: downloadedAt, lastUsed: downloadedAt)
            rows?[name] = row
            // Without its row the file would be deleted as an orphan on the next launch.
            return append("+\t\(row.downloadedAt)\t\(row.lastUsed)\t\(row.size)\t\(url)\n")
        }

        func remove(_ url: String) {
            let name = Self.fileName(for: url)
            if let rows, rows[name]?.url != url { return }
            delete(name, url: url)
        }

        /// Drops a row and its file because what was read is not usable.
        func discard(_ url: String, because reason: String) {
            report("dropped \(url): \(reason)")
            delete(Self.fileName(for: url), url: url)
        }

        func removeAll() {
            if journal >= 0 { close(journal) }
            journal = -1
            journalRecords = 0
            folderReady = false
            do {
                try FileManager.default.removeItem(at: folder)
            } catch let error as CocoaError where error.code == .fileNoSuchFile {
                // Nothing to remove.
            } catch {
                report("cannot remove \(folder.path): \(error)")
            }
            rows = [:]
            // A fetch between `removeAll`'s forgetting and this block may have put an image back
            // in memory from a file that is now gone: it must not count as stored.
            owner?.diskLostEverything()
        }

        func touch(_ urls: [String], at time: TimeInterval) {
            guard !urls.isEmpty else { return }
            var lines = ""
            for url in urls {
                // Later in the list is more recent: keep the order with tiny steps that never go
                // back, even when two batches come within a microsecond.
                let when = max(time, lastTouch + 1e-6)
                lastTouch = when
                let name = Self.fileName(for: url)
                if rows != nil {
                    guard rows?[name]?.url == url else { continue }
                    rows?[name]?.lastUsed = when
                }
                lines += "u\t\(when)\t\(url)\n"
            }
            append(lines, records: urls.count)
        }

        /// Deletes expired images, then all but the `maxCount` most recently used; returns the
        /// URLs it deleted.
        func reduce(to maxCount: Int, now: TimeInterval, timeToLive: TimeInterval) -> [String] {
            load()
            var removed = sweepExpired(now: now, timeToLive: timeToLive)
            guard let rows, rows.count > maxCount else { return removed }
            let oldestFirst = rows.sorted { $0.value.lastUsed < $1.value.lastUsed }
            for (name, row) in oldestFirst.prefix(rows.count - maxCount) {
                // No journal record each: the compaction below writes the rows that remain (and
                // if it fails, the next load drops rows whose files are gone).
                delete(name, url: row.url, journaled: false)
                removed.append(row.url)
            }
            compact()
            return removed
        }

        @discardableResult
        func sweepExpired(now: TimeInterval, timeToLive: TimeInterval) -> [String] {
            guard let rows else { return [] }
            var removed: [String] = []
            for (name, row) in rows where now >= row.downloadedAt + timeToLive {
                delete(name, url: row.url)
                removed.append(row.url)
            }
            return removed
        }

        /// Problems in the disk tier, for tests: rows without a valid file, files without a row.
        func invariantViolations(stored: [(url: String, downloadedAt: TimeInterval)]) -> [String] {
            load()
            sweepOrphans()  // what a first load defers: the check is of the state after the sweep
            guard let rows else { return [] }
            var problems: [String] = []
            for (url, downloadedAt) in stored where rows[Self.fileName(for: url)]?.downloadedAt != downloadedAt {
                problems.append("in memory as stored, but no row for this download on disk: \(url)")
            }
            let files = Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
            for (name, row) in rows {
                if !files.contains(name) { problems.append("row without file: \(row.url)") }
                if Self.fileName(for: row.url) != name { problems.append("row under wrong name: \(row.url)") }
            }
            for file in files where rows[file] == nil && file != Self.indexName && file != Self.journalName {
                problems.append("file without row: \(file)")
            }
            return problems
        }

        var isLoaded: Bool { rows != nil }

        var rowCount: Int {
            load()
            return rows?.count ?? 0
        }

        // MARK: Index

        private func load() {
            guard rows == nil else { return }
            var loaded: [String: Row] = [:]
            for file in [Self.indexName, Self.journalName] {
                guard let data = FileManager.default.contents(atPath: path(file)) else { continue }
                var bytes = [UInt8](data)
                // Only whole lines count. A last line cut short (a crash or a full disk mid-append)
                // is dropped, and cut off the file, so that the next record cannot glue onto it.
                let whole = bytes.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
                if whole < bytes.count {
                    bytes.removeSubrange(whole...)
                    if file == Self.journalName, truncate(path(file), off_t(whole)) != 0 {
                        fail("cannot repair \(path(file)): \(String(cString: strerror(errno)))")
                    }
                }
                if file == Self.indexName {
                    guard bytes.starts(with: Self.header.utf8) else {
                        report("index file unreadable; starting empty")
                        continue
                    }
                    bytes.removeFirst(Self.header.utf8.count)
                }
                let lines = Self.apply(&bytes, to: &loaded)
                if file == Self.journalName { journalRecords += lines }
            }
            rows = loaded
            let now = owner?.clock() ?? Date().timeIntervalSince1970
            let ttl = owner?.timeToLiveNow() ?? 600
            sweepExpired(now: now, timeToLive: ttl)
            // Listing the folder and rewriting the index can wait until the lookup that needed
            // the index has been answered.
            let rewrite = journalRecords > max(64, loaded.count)
            owner?.diskQueue.async { [self] in
                sweepOrphans()
                if rewrite { compact() }
            }
        }

        /// Applies each line of an index or journal file to `rows`; returns how many lines it read.
        /// Lines that do not parse whole are skipped. Parsed as bytes with `strtod`: splitting a
        /// String by Characters cost most of a 10,000-row load.
        private static func apply(_ bytes: inout [UInt8], to rows: inout [String: Row]) -> Int {
            bytes.append(0)  // strtod and strtol stop at it, never past the end
            return bytes.withUnsafeMutableBufferPointer { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                let end = base + buffer.count - 1
                var lineCount = 0
                var line = base
                while line < end {
                    let newline = memchr(line, 0x0A, end - line)?.assumingMemoryBound(to: UInt8.self) ?? end
                    defer { line = newline + 1 }
                    guard newline > line else { continue }
                    lineCount += 1
                    var fields: [(start: UnsafeMutablePointer<UInt8>, end: UnsafeMutablePointer<UInt8>)] = []
                    var field = line
                    while fields.count < 4, let tab = memchr(field, 0x09, newline - field)?.assumingMemoryBound(to: UInt8.self) {
                        fields.append((field, tab))
                        field = tab + 1
                    }
                    fields.append((field, newline))  // the URL is last and may hold no tab
                    func number(_ index: Int) -> Double? {
                        var stop: UnsafeMutablePointer<CChar>?
                        let start = UnsafeMutableRawPointer(fields[index].start).assumingMemoryBound(to: CChar.self)
                        let value = strtod(start, &stop)
                        return stop.map(UnsafeMutableRawPointer.init) == UnsafeMutableRawPointer(fields[index].end)
                            && fields[index].end > fields[index].start ? value : nil
                    }
                    func text(_ index: Int) -> String {
                        String(decoding: UnsafeBufferPointer(start: fields[index].start, count: fields[index].end - fields[index].start), as: UTF8.self)
                    }
                    guard fields[0].end - fields[0].start == 1 else { continue }
                    switch (fields[0].start.pointee, fields.count) {
                    case (UInt8(ascii: "+"), 5):
                        guard let downloaded = number(1), let used = number(2), let size = number(3),
                              downloaded.isFinite, used.isFinite, size >= 0, size < 0x1p62, size == size.rounded() else { continue }
                        let url = text(4)
                        rows[fileName(for: url)] = Row(url: url, size: Int(size), downloadedAt: downloaded, lastUsed: used)
                    case (UInt8(ascii: "u"), 3):
                        guard let used = number(1) else { continue }
                        let url = text(2)
                        let name = fileName(for: url)
                        if rows[name]?.url == url { rows[name]?.lastUsed = used }
                    case (UInt8(ascii: "-"), 2):
                        let url = text(1)
                        let name = fileName(for: url)
                        if rows[name]?.url == url { rows[name] = nil }
                    default:
                        continue
                    }
                }
                return lineCount
            }
        }

        /// Makes the index and the folder agree: deletes files without a row (and temporary files
        /// left by a crash), and drops rows without a file (a crash between unlink and journal).
        private func sweepOrphans() {
            guard let rows, let files = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
            for file in files where rows[file] == nil && file != Self.indexName && file != Self.journalName {
                unlink(path(file))
            }
            let present = Set(files)
            for (name, row) in rows where !present.contains(name) {
                self.rows?[name] = nil
                append("-\t\(row.url)\n")
            }
        }

        private func folderVanished() {
            report("the folder \(folder.path) was deleted; starting it again")
            owner?.diskLostEverything()
            if rows != nil { rows = [:] }
            if journal >= 0 { close(journal) }
            journal = -1
            journalRecords = 0
        }

        private func delete(_ name: String, url: String, journaled: Bool = true) {
            unlink(path(name))
            if rows?[name]?.url == url { rows?[name] = nil }
            if journaled { append("-\t\(url)\n") }
        }

        /// Appends index records to the journal; false if they could not be written.
        @discardableResult
        private func append(_ text: String, records: Int = 1) -> Bool {
            guard !text.isEmpty else { return true }
            if journal < 0 {
                do {
                    try ensureFolder()
                } catch {
                    fail("cannot create \(folder.path): \(Self.describe(error))")
                    return false
                }
                journal = open(path(Self.journalName), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
                guard journal >= 0 else {
                    fail("cannot open \(path(Self.journalName)): \(String(cString: strerror(errno)))")
                    return false
                }
            }
            do {
                try Self.writeAll(journal, Data(text.utf8))
            } catch {
                fail("cannot append to \(path(Self.journalName)): \(Self.describe(error))")
                return false
            }
            journalRecords += records
            if journalRecords > max(1_024, 2 * (rows?.count ?? 0)) {
                load()
                compact()
            }
            return true
        }

        /// Rewrites the snapshot from the rows in memory and empties the journal.
        private func compact() {
            guard let rows else { return }
            var text = Self.header
            for row in rows.values {
                text += "+\t\(row.downloadedAt)\t\(row.lastUsed)\t\(row.size)\t\(row.url)\n"
            }
            do {
                try ensureFolder()
                // The one fsync: the journal goes next, so a lost index would lose every row.
                try Self.writeFile(path(Self.indexName), data: Data(text.utf8), durable: true)
                if journal >= 0 { close(journal) }
                journal = -1
                unlink(path(Self.journalName))
                journalRecords = 0
            } catch {
                fail("cannot write \(path(Self.indexName)): \(Self.describe(error))")
            }
        }

        // MARK: Files

        private var folderReady = false

        private func ensureFolder(force: Bool = false) throws {
            guard force || !folderReady else { return }
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            if force, journal >= 0 {
                close(journal)
                journal = -1
            }
            folderReady = true
        }

        /// Plain concatenation: `appendingPathComponent(_:).path` costs microseconds on Linux.
        private func path(_ name: String) -> String {
            folderPath + "/" + name
        }

        private func report(_ message: String) {
            owner?.log(message)
        }

        /// Reports a failing disk once; the next successful image write ends the episode.
        private func fail(_ message: String) {
            if !failing { report(message) }
            failing = true
        }

        private static func describe(_ error: Swift.Error) -> String {
            if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
            return String(describing: error)
        }

        /// A file name from a stable 64-bit FNV-1a hash of the URL: the same on every launch and
        /// platform, unlike `hashValue`, and never a path outside the folder.
        static func fileName(for url: String) -> String {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in url.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            let hex = String(hash, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }

        static func readFile(_ path: String) throws -> Data {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            // Read into fresh memory without zero-filling it first, and hand it to Data as is.
            let count = Int(info.st_size)
            guard let buffer = malloc(max(1, count)) else { throw POSIXError(.ENOMEM) }
            var done = 0
            while done < count {
                let n = read(fd, buffer + done, count - done)
                if n > 0 { done += n } else if n == 0 || errno != EINTR { break }
            }
            guard done == count else {
                free(buffer)
                throw POSIXError(.EIO)
            }
            return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
        }

        /// Writes under a temporary name and renames, so that a reader never sees half a file.
        /// No fsync: a cache can lose its last writes on power loss, and rows are validated on read.
        static func writeFile(_ path: String, data: Data, durable: Bool = false) throws {
            // Hidden too, beside its final name: "dir/.name.<random>.tmp".
            let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
            let temporary = String(path[..<slash]) + "." + String(path[slash...]) + ".\(UInt32.random(in: 0 ... .max)).tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            do {
                try writeAll(fd, data)
                if durable, fsync(fd) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            } catch {
                close(fd)
                unlink(temporary)
                throw error
            }
            close(fd)
            guard rename(temporary, path) == 0 else {
                let code = POSIXErrorCode(rawValue: errno) ?? .EIO
                unlink(temporary)
                throw POSIXError(code)
            }
        }

        static func writeAll(_ fd: Int32, _ data: Data) throws {
            try data.withUnsafeBytes { buffer in
                var done = 0
                while done < buffer.count {
                    let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
                    if n > 0 {
                        done += n
                    } else if n < 0 && errno == EINTR {
                        continue
                    } else {
                        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                    }
                }
            }
        }
    }

    fileprivate func log(_ message: String) {
        emit(.diskProblem(message))
    }
}

// MARK: - Checks for tests

extension ImageCache {
    /// Internal for tests: how many images memory holds now.
    var memoryCount: Int { lock.withLock { _memory.count } }

    /// Internal for tests: the URLs in memory, least recently used first.
    var memoryURLs: [String] { lock.withLock { _memory.indicesFromLeastRecent().map { _memory[$0].key.string } } }

    /// Internal for tests: how many images the disk index holds (loading it if needed).
    var diskCount: Int { diskQueue.sync { disk.rowCount } }

    /// Internal for tests: makes every disk write fail with `code` (nil: work again).
    func _injectDiskWriteError(_ code: POSIXErrorCode?) {
        diskQueue.sync { disk.injectedWriteError = code }
    }

    /// Internal for tests: whether the disk index has been loaded (without loading it).
    var diskIndexLoaded: Bool { diskQueue.sync { disk.isLoaded } }

    /// Internal for tests: the file name the disk tier uses for `url`.
    static func diskFileName(for url: URL) -> String { DiskStore.fileName(for: url.absoluteString) }

    /// Internal for tests: every broken invariant, described; empty when all hold. Checks the
    /// memory list against the dictionary, the counts against their caps, the lane counters
    /// against the downloads, and the disk index against the files (after queued disk work).
    func _checkInvariants() -> [String] {
        var problems: [String] = lock.withLock {
            var problems: [String] = []
            let order = _memory.indicesFromLeastRecent()
            if order.count != _memory.count { problems.append("memory list has \(order.count) slots, count says \(_memory.count)") }
            if _memory.count > _memoryMaxCount { problems.append("memory holds \(_memory.count) > cap \(_memoryMaxCount)") }
            var loaded = 0, checkingFast = 0, queuedFast = 0, runningFast = 0, runningSlow = 0
            for (key, entry) in _entries {
                switch entry {
                case .loaded(let slot):
                    loaded += 1
                    if _memory[slot].key != key { problems.append("slot of \(key.string) holds \(_memory[slot].key.string)") }
                case .loading(let download):
                    switch download.phase {
                    case .checkingDisk where download.lane == .fast: checkingFast += 1
                    case .queued where download.lane == .fast: queuedFast += 1
                    case .running: download.lane == .fast ? (runningFast += 1) : (runningSlow += 1)
                    case .finished: problems.append("finished download still listed: \(key.string)")
                    default: break
                    }
                    if download.activeWaiters < 1 { problems.append("download without waiters: \(key.string)") }
                case .failed:
                    break
                }
            }
            if loaded != _memory.count { problems.append("\(loaded) loaded entries, memory count \(_memory.count)") }
            let counted = [checkingFast, queuedFast, runningFast, runningSlow]
            let kept = [_checkingFast, _queuedFast, _runningFast, _runningSlow]
            if counted != kept { problems.append("lane counters \(kept) != counted \(counted)") }
            return problems
        }
        let now = clock()
        problems += diskQueue.sync {
            // Read on the disk queue, so that no disk work can change it before the check.
            let stored: [(String, TimeInterval)] = lock.withLock {
                _memory.indicesFromLeastRecent().compactMap { slot in
                    let entry = _memory[slot]
                    guard entry.disk == .stored, now < entry.downloadedAt + _timeToLive else { return nil }
                    return (entry.key.string, entry.downloadedAt)
                }
            }
            return disk.invariantViolations(stored: stored)
        }
        return problems
    }
}

// MARK: - Entry points for the benchmarks

@_spi(Benchmarks)
extension ImageCache {
    /// Puts `image` in memory as if it had just been downloaded and written to disk, with the
    /// count cap and batch eviction, but without a disk write of its own: the memory tier alone.
    public func _benchmarkInsert(_ url: URL, image: Image, data: Data) {
        let key = Key(url)
        let now = clock()
        lock.withLock { _insert(key, image: image, data: data, downloadedAt: now, disk: .stored) }
    }

    /// Waits until every disk operation queued so far has run.
    public func _benchmarkDrainDisk() {
        diskQueue.sync {}
    }
}

// MARK: - Images

extension ImageCache {
    /// The image formats the cache recognises and checks.
    public enum Format: String, Sendable {
        case png, jpeg, gif, webp
    }

    /// Checks that `data` is a whole image of a known format and decodes it for the platform.
    static func decode(_ data: Data) -> Result<Image, Error> {
        switch inspect(data) {
        case .success(let info):
            #if canImport(UIKit) || canImport(AppKit)
            guard let image = Image(data: data) else { return .failure(.corruptImage(info.format, "the system decoder rejected it")) }
            return .success(image)
            #else
            return .success(Image(data: data, format: info.format, width: info.width, height: info.height))
            #endif
        case .failure(let error):
            return .failure(error)
        }
    }

    /// What the header and structure of `data` say: format and size, or why it is not a whole image.
    static func inspect(_ data: Data) -> Result<(format: Format, width: Int, height: Int), Error> {
        guard !data.isEmpty else { return .failure(.emptyBody) }
        return data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            let reader = ByteReader(bytes: bytes)
            if reader.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return reader.png() }
            if reader.starts(with: [0xFF, 0xD8, 0xFF]) { return reader.jpeg() }
            if reader.starts(with: Array("GIF87a".utf8)) || reader.starts(with: Array("GIF89a".utf8)) { return reader.gif() }
            if reader.starts(with: Array("RIFF".utf8)), reader.count >= 12, reader.matches(Array("WEBP".utf8), at: 8) {
                return reader.webp()
            }
            return .failure(.notAnImage(reader.describe()))
        }
    }

    /// Bounds-checked reads over a buffer; every accessor returns 0 past the end, and callers
    /// check lengths before trusting what they read.
    fileprivate struct ByteReader {
        let bytes: UnsafeBufferPointer<UInt8>
        var count: Int { bytes.count }
        typealias Info = Result<(format: Format, width: Int, height: Int), Error>

        func byte(_ i: Int) -> Int { i >= 0 && i < bytes.count ? Int(bytes[i]) : 0 }
        func be16(_ i: Int) -> Int { byte(i) << 8 | byte(i + 1) }
        func le16(_ i: Int) -> Int { byte(i) | byte(i + 1) << 8 }
        func be32(_ i: Int) -> Int { be16(i) << 16 | be16(i + 2) }
        func le24(_ i: Int) -> Int { le16(i) | byte(i + 2) << 16 }
        func le32(_ i: Int) -> Int { le16(i) | le16(i + 2) << 16 }

        func starts(with prefix: [UInt8]) -> Bool { matches(prefix, at: 0) }
        func matches(_ pattern: [UInt8], at offset: Int) -> Bool {
            guard offset + pattern.count <= bytes.count else { return false }
            for (i, b) in pattern.enumerated() where bytes[offset + i] != b { return false }
            return true
        }

        func png() -> Info {
            guard count >= 33, matches(Array("IHDR".utf8), at: 12), be32(8) == 13 else {
                return .failure(.corruptImage(.png, "no IHDR header"))
            }
            let (width, height) = (be32(16), be32(20))
            guard width > 0, height > 0 else { return .failure(.corruptImage(.png, "zero size")) }
            var offset = 8
            while offset + 12 <= count {
                let length = be32(offset)
                if matches(Array("IEND".utf8), at: offset + 4) { return .success((.png, width, height)) }
                offset += 12 + length
            }
            return .failure(.corruptImage(.png, "ends before IEND (truncated at \(count) bytes)"))
        }

        func jpeg() -> Info {
            var offset = 2
            var size: (Int, Int)?
            var inScan = false
            while offset < count {
                if inScan {
                    // Entropy-coded data: FF 00 is a stuffed byte, FF D0...D7 a restart marker.
                    guard let next = nextFF(from: offset) else { break }
                    let marker = byte(next + 1)
                    if marker == 0x00 || (0xD0...0xD7).contains(marker) || marker == 0xFF {
                        offset = next + (marker == 0xFF ? 1 : 2)
                        continue
                    }
                    inScan = false
                    offset = next
                    continue
                }
                guard byte(offset) == 0xFF else { return .failure(.corruptImage(.jpeg, "no marker at byte \(offset)")) }
                var marker = byte(offset + 1)
                while marker == 0xFF, offset + 2 < count { offset += 1; marker = byte(offset + 1) }
                if marker == 0xD9 {
                    guard let (width, height) = size else { return .failure(.corruptImage(.jpeg, "no frame header")) }
                    return .success((.jpeg, width, height))
                }
                if (0xD0...0xD7).contains(marker) || marker == 0x01 { offset += 2; continue }
                let length = be16(offset + 2)
                guard length >= 2, offset + 2 + length <= count else { break }
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    let (height, width) = (be16(offset + 5), be16(offset + 7))
                    guard width > 0, height > 0 else { return .failure(.corruptImage(.jpeg, "zero size")) }
                    size = (width, height)
                }
                if marker == 0xDA {
                    guard size != nil else { return .failure(.corruptImage(.jpeg, "scan before frame header")) }
                    inScan = true
                }
                offset += 2 + length
            }
            return .failure(.corruptImage(.jpeg, "ends before the end-of-image marker (truncated at \(count) bytes)"))
        }

        private func nextFF(from offset: Int) -> Int? {
            guard offset < count, let base = bytes.baseAddress,
                  let found = memchr(base + offset, 0xFF, count - offset) else { return nil }
            let index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            return index + 1 < count ? index : nil
        }

        func gif() -> Info {
            guard count >= 13 else { return .failure(.corruptImage(.gif, "header cut short")) }
            let (width, height) = (le16(6), le16(8))
            guard width > 0, height > 0 else { return .failure(.corruptImage(.gif, "zero size")) }
            var offset = 13
            if byte(10) & 0x80 != 0 { offset += 3 << ((byte(10) & 0x07) + 1) }
            var frames = 0
            while offset < count {
                switch byte(offset) {
                case 0x3B:
                    guard frames > 0 else { return .failure(.corruptImage(.gif, "no frames")) }
                    return .success((.gif, width, height))
                case 0x21:
                    guard let end = skipSubBlocks(offset + 2) else { return truncatedGIF() }
                    offset = end
                case 0x2C:
                    guard offset + 10 <= count else { return truncatedGIF() }
                    let packed = byte(offset + 9)
                    offset += 10
                    if packed & 0x80 != 0 { offset += 3 << ((packed & 0x07) + 1) }
                    guard let end = skipSubBlocks(offset + 1) else { return truncatedGIF() }
                    offset = end
                    frames += 1
                default:
                    return .failure(.corruptImage(.gif, "unknown block at byte \(offset)"))
                }
            }
            // Many GIFs in the wild lack the trailer; a last frame that is whole is enough.
            return frames > 0 && offset == count ? .success((.gif, width, height)) : truncatedGIF()
        }

        private func truncatedGIF() -> Info {
            .failure(.corruptImage(.gif, "ends inside a block (truncated at \(count) bytes)"))
        }

        /// Skips GIF data sub-blocks starting at `offset`; returns the offset after the terminator.
        private func skipSubBlocks(_ start: Int) -> Int? {
            var offset = start
            while offset < count {
                let size = byte(offset)
                offset += 1
                if size == 0 { return offset }
                offset += size
            }
            return nil
        }

        func webp() -> Info {
            let riffSize = le32(4)
            guard riffSize + 8 <= count else {
                return .failure(.corruptImage(.webp, "RIFF says \(riffSize + 8) bytes, got \(count) (truncated)"))
            }
            guard count >= 30 else { return .failure(.corruptImage(.webp, "header cut short")) }
            var size: (Int, Int)?
            if matches(Array("VP8 ".utf8), at: 12), matches([0x9D, 0x01, 0x2A], at: 23) {
                size = (le16(26) & 0x3FFF, le16(28) & 0x3FFF)
            } else if matches(Array("VP8L".utf8), at: 12), byte(20) == 0x2F {
                let bits = le32(21)
                size = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
            } else if matches(Array("VP8X".utf8), at: 12) {
                size = (le24(24) + 1, le24(27) + 1)
            }
            guard let (width, height) = size, width > 0, height > 0 else {
                return .failure(.corruptImage(.webp, "no VP8, VP8L or VP8X header"))
            }
            return .success((.webp, width, height))
        }

        /// A short description of bytes that are not an image, for error messages.
        func describe() -> String {
            let prefix = Array(bytes.prefix(16))
            let text = String(decoding: prefix, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let lower = text.lowercased()
            if lower.hasPrefix("<!doctype html") || lower.hasPrefix("<html") { return "an HTML page" }
            if lower.hasPrefix("<?xml") || lower.hasPrefix("<svg") { return "XML or SVG text" }
            if lower.hasPrefix("{") || lower.hasPrefix("[") { return "JSON-like text" }
            if prefix.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                return "text starting \"\(text)\""
            }
            return "unknown bytes " + prefix.prefix(8).map { String(format: "%02X", $0) }.joined(separator: " ")
        }
    }
}

// MARK: - Platform support

extension ImageCache {
    #if canImport(UIKit)
    /// The platform image type.
    public typealias Image = UIImage
    #elseif canImport(AppKit)
    /// The platform image type.
    public typealias Image = NSImage
    #else
    /// An image as the cache holds it where no UI framework exists: the original bytes and what
    /// their header says. Bytes that are not a whole image of a known format fail to decode.
    public struct Image: Sendable, Hashable {
        /// The formats an image can be in (``ImageCache/Format``).
        public typealias Format = ImageCache.Format

        /// The original bytes, as downloaded.
        public let data: Data
        /// The format the bytes are in.
        public let format: Format
        /// Width in pixels, from the header.
        public let width: Int
        /// Height in pixels, from the header.
        public let height: Int

        /// Decodes `data`; nil when it is not a whole PNG, JPEG, GIF or WebP image.
        public init?(data: Data) {
            guard case .success(let image) = ImageCache.decode(data) else { return nil }
            self = image
        }

        fileprivate init(data: Data, format: Format, width: Int, height: Int) {
            self.data = data
            self.format = format
            self.width = width
            self.height = height
        }
    }
    #endif

    private func observeSystemEvents() {
        #if canImport(UIKit) && !os(watchOS)
        let observer = NotificationCenter.default.addObserver(
            forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
        ) { [weak self] _ in
            self?.purgeMemory()
        }
        observers.append(observer)
        #endif
    }

    /// A folder name that cannot leave the parent folder and that keeps distinct names apart.
    private static func folderName(for name: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        let safe = String(name.map { allowed.contains($0) ? $0 : "_" })
        if safe == name, name != ".", name != "..", !name.isEmpty { return name }
        return String(safe.prefix(64)) + "-" + DiskStore.fileName(for: name)
    }
}

// MARK: - Small helpers

extension ImageCache {
    /// A URL's key: its absolute string. (Caching the hash would not help: every call makes a
    /// new key, so the string is hashed once per lookup either way.)
    fileprivate struct Key: Hashable {
        let string: String

        init(_ url: URL) { string = url.absoluteString }
        init(string: String) { self.string = string }
    }

    /// A first-in first-out queue with O(1) amortized append and pop.
    fileprivate struct FIFO<Element> {
        private var items: [Element?] = []
        private var head = 0

        var count: Int { items.count - head }

        mutating func append(_ element: Element) { items.append(element) }

        mutating func popFirst() -> Element? {
            guard head < items.count else { return nil }
            let element = items[head]
            items[head] = nil
            head += 1
            if head >= 64, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return element
        }
    }

    /// Carries a value across a `@Sendable` boundary where the cache's lock or queue already
    /// orders every access to it.
    fileprivate struct Unchecked<Value>: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    fileprivate final class TaskBox: @unchecked Sendable {
        private let lock = NSLock()
        private var task: FetchTask?
        private var cancelled = false
        func set(_ task: FetchTask) {
            let cancelNow = lock.withLock { () -> Bool in
                self.task = task
                return cancelled
            }
            if cancelNow { task.cancel() }
        }
        func cancel() {
            let task = lock.withLock { () -> FetchTask? in
                cancelled = true
                return self.task
            }
            task?.cancel()
        }
    }
}
