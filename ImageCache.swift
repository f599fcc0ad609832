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
//
// Map of this file, one `// MARK: -` section each. What an app uses comes first: Public API;
// Configuration; Errors; Events (and statistics); Public types (the image, its formats, a request's
// task); Binding (views). Then, after the Implementation banner, the internal sections in the order
// a miss walks them: Requests (a load and the request path, cancellation); Download lifecycle (the
// phases, the lanes, the look-up on disk, forgetting); Network transfer (sending, the transport and
// its delegate, deadlines, progress, the end of an attempt); Delivery; and what those use: HTTP;
// Memory tier; Disk tier (and the one way to the disk); Disk files; Images (formats and decoding);
// Platform support; Small helpers; and, in the package's own builds only, For tests and benchmarks.
//
// A miss, in six steps: (1) `fetch` builds a `Load` and calls `request` (Requests), which finds
// nothing in memory and makes a `Download`; (2) `lookUpOnDisk` (Download lifecycle) misses and
// queues it on its lane; (3) `startNetwork` (Network transfer) sends it through the `Transport`;
// (4) the transport's delegate keeps the bytes and hands the ended transfer to `transferred`, which
// checks the body and has it decoded; (5) `networkFinished` puts the entry in memory (`_insert`,
// Memory tier) and queues its file's write (`_queueOnDisk`); (6) `deliver` and `complete`
// (Delivery) run each waiter's callback on its queue.
//
// Words: to *forget* a key is to take it out of the bookkeeping (memory, downloads, failures);
// memory *evicts* an entry its limits do not keep (to the second chance, and to disk); the disk
// *removes* a file by name when told to, *deletes* a file it judged only if it is still that file,
// and *discards* one that does not decode; `remove` and `removeAll` are the public calls that
// forget in every tier.

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

/// A cache of remote images (or any data): memory, then disk, then network, with one download per
/// key (the URL by default).
///
/// ```swift
/// ImageCache.shared.fetch(url) { url, image in
///     cell.imageView?.image = image
/// }
/// // In `cellForRow`, where the main thread cannot wait:
/// cell.imageView?.image = ImageCache.shared.peek(url) ?? placeholder
/// ```
///
/// **Tiers.** Memory holds up to ``imageMemoryMaxCount`` images and ``imageMemoryMaxBytes`` bytes in
/// CLOCK order (an approximation of least recently used: a use sets a bit, eviction gives a used
/// entry a second pass), an `NSCache` second chance included; past a limit, the least recently
/// used leave in one batch. Disk holds the downloaded bytes in `directory/uniqueName`, one file per
/// key named by a stable hash, written as soon as they arrive, within ``diskMaxBytes``. There is no
/// index: a file's modification date is when it was downloaded and its access date when it was last
/// used, so nothing is loaded before the first lookup, and several processes may share one folder.
/// Every entry expires ``imageTimeToLive`` seconds after it was downloaded, in both tiers, and is
/// then revalidated if the server gave an `ETag` or `Last-Modified`.
///
/// **Queues.** ``fetch(_:key:callback:)`` downloads on a fast lane (up to ``maxConcurrentDownloads``
/// at once); ``slowFetch(_:key:callback:)`` on a slow lane, one at a time, that starts nothing while
/// fast work is queued or running. Concurrent requests for one key share one download.
///
/// **Thread safety.** Every method and property may be used from any thread. Callbacks run on
/// ``callbackQueue`` (the main queue by default on Apple platforms), always asynchronously, exactly
/// once per ``FetchTask`` unless it was cancelled. ``peek(_:)`` takes one lock and does one
/// dictionary lookup; it never waits for the disk or the network. Shared state lives behind one
/// lock; disk work runs on a private serial queue, network work in `URLSession`. The class and its
/// extensions are `nonisolated`, so that all of this holds in a target whose default isolation is
/// the main actor too; only the views (`setImage(with:)`, ``RemoteImage``) are main-actor.
nonisolated public final class ImageCache: @unchecked Sendable {
    /// The program's cache, in a folder named after the program (its bundle identifier, else its
    /// executable name), so that programs never share it by accident: on Linux
    /// `~/.cache/<program>/ImageCache` (or under `$XDG_CACHE_HOME`), on Apple platforms
    /// `Library/Caches/<bundle identifier>/ImageCache`.
    public static let shared: ImageCache = {
        let program = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        return ImageCache(uniqueName: "ImageCache",
                          directory: cachesFolder.appendingPathComponent(folderName(for: program)))
    }()

    private static var cachesFolder: URL {
        FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
    }

    /// The name given to `init`.
    public let uniqueName: String
    /// The folder this instance keeps its files in: `directory/uniqueName`.
    public let folder: URL

    // `lock` guards `_state`, and the objects it holds that say so where they are declared (each
    // `Download`, a `FetchTask`'s answer, the second-chance shelf); a method whose name starts with
    // `_` expects the lock to be held. The transport has a lock of its own, taken after this one.
    // The lock already makes each access exclusive, so `_state` skips the runtime's own
    // exclusivity check (a fifth of `peek`'s cost).
    private let lock = NSLock()
    @exclusivity(unchecked) private var _state: Guarded

    // Images evicted lately; `Guarded.secondChanceOrder` bounds it. Guarded by `lock`.
    private let secondChance = SecondChanceShelf()
    private let transport: Transport
    private let diskQueue: DispatchQueue
    // Where downloaded bytes are decoded: two at a time, off URLSession's delegate queue.
    private let decodes: Decodes
    private let disk: DiskStore  // used only on `diskQueue`
    private var memoryWarnings: NSObjectProtocol?  // under UIKit
    // A clock the tests set, to move time forward (see the section for tests); nil for the wall
    // clock, which is then called directly (a stored closure costs `peek` a call it cannot inline).
    // Set only before the instance is used, so unchecked like `_state`.
    @exclusivity(unchecked) fileprivate var testClock: (@Sendable () -> TimeInterval)?

    /// Seconds since 1970. On Linux from the coarse real-time clock (a few ms of resolution, a
    /// fifth of `Date()`'s cost on `peek`'s path); time to live is counted in seconds anyway.
    fileprivate func currentTime() -> TimeInterval {
        if let testClock { return testClock() }
        #if os(Linux)
        var now = timespec()
        Foundation.clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return TimeInterval(now.tv_sec) + TimeInterval(now.tv_nsec) / 1_000_000_000
        #else
        return Date().timeIntervalSince1970
        #endif
    }

    /// Creates a cache that keeps its files in `directory/uniqueName`; reads and writes nothing yet.
    ///
    /// - Parameters:
    ///   - uniqueName: The name of the cache's folder. Two instances with different names never
    ///     share files; instances with the same name, in one process or several, share the folder
    ///     safely. Characters other than letters, digits, `-`, `_` and `.` are replaced, and a hash
    ///     keeps replaced names apart.
    ///   - directory: The parent folder. The platform's caches folder by default.
    ///   - session: A session whose configuration (headers, timeouts, cookies, protocol classes,
    ///     proxies) the cache downloads with, in a session of its own whose delegate can stop a
    ///     response too large before reading it all: the given session's delegate is not called.
    ///     Its request and resource timeouts become ``requestTimeout`` and ``downloadTimeLimit``.
    ///     By default: no `URLCache` (the cache is the cache) and 16 connections per host.
    public init(uniqueName: String, directory: URL? = nil, session: URLSession? = nil) {
        self.uniqueName = uniqueName
        folder = (directory ?? Self.cachesFolder)
            .appendingPathComponent(Self.folderName(for: uniqueName), isDirectory: true)
        var settings = Settings()
        #if !canImport(UIKit) && !canImport(AppKit)
        // No program is obliged to run a main queue here: a command-line tool that waits on a
        // semaphore would never see its callbacks.
        settings.callbackQueue = DispatchQueue(label: "ImageCache.callbacks.\(uniqueName)")
        #endif
        let configuration: URLSessionConfiguration
        if let session {
            configuration = session.configuration
            settings.requestTimeout = max(1, configuration.timeoutIntervalForRequest)
            settings.downloadTimeLimit = max(1, configuration.timeoutIntervalForResource)
        } else {
            configuration = URLSessionConfiguration.default
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            configuration.httpMaximumConnectionsPerHost = 16
        }
        transport = Transport(configuration, timeout: settings.requestTimeout)
        _state = Guarded(settings: settings)
        diskQueue = DispatchQueue(label: "ImageCache.disk.\(uniqueName)", qos: .utility)
        decodes = Decodes(label: "ImageCache.decode.\(uniqueName)")
        disk = DiskStore(folder: folder, timeToLive: settings.timeToLive, maxBytes: settings.diskMaxBytes)
        disk.owner = self
        transport.cache = self
        observeMemoryWarnings()
        Self.readScreenScale()
    }

    deinit {
        memoryWarnings.map(NotificationCenter.default.removeObserver)
        transport.invalidate()
    }

    /// All the state `lock` guards.
    private struct Guarded {
        // What `peek` reads first, together: its layout is part of `peek`'s cost.
        var entries: [Key: Entry] = [:]
        var memory = MemoryList()
        var counts = Statistics()  // its counters and the disk's figures; memory's are filled in by `statistics()`
        var settings: Settings
        var sizes: [String: [UInt64]] = [:]  // the sizes each key has had entries at: see `_noteSize`
        var sizeRecords = 0  // the sizes in `sizes`
        var lanes = Lanes()
        var serial: UInt64 = 0  // orders failures and second chances, to tell live records from old
        var prefetches: [Key: FetchTask] = [:]  // the requests of `prefetch`, until answered or cancelled
        var failureOrder = FIFO<(key: Key, serial: UInt64)>()
        var secondChanceOrder = FIFO<(key: Key, serial: UInt64, cost: Int)>()
        var secondChanceBytes = 0  // the costs in `secondChanceOrder`
    }

    /// What the public properties set.
    private struct Settings {
        var timeToLive: TimeInterval = 600
        var memoryMaxCount = 100
        var memoryMaxBytes = ImageCache.defaultMemoryMaxBytes
        var diskMaxBytes = 256 * 1024 * 1024
        var usesServerMaxAge = false
        var servesStaleWhenOffline = false
        var maxConcurrentDownloads = 6
        var requestTimeout: TimeInterval = 30
        var downloadTimeLimit: TimeInterval = 120
        var retryPolicy = RetryPolicy.default
        var maxImageBytes = 20 * 1024 * 1024
        var maxDecodedPixelSize: Int?  // nil: the screen's (see `screenPixels`)
        var maxAnimatedFrames = 200
        var callbackQueue = DispatchQueue.main
        var onEvent: (@Sendable (Event) -> Void)?
        var requestModifier: (@Sendable (URLRequest) -> URLRequest?)?
    }
}

// MARK: - Public API

nonisolated extension ImageCache {
    /// Fetches an image for the screen: memory, then disk, then the network on the fast lane.
    ///
    /// The callback runs once, asynchronously, on ``callbackQueue`` as it was at the call, with
    /// `url` and the image, or nil (see ``error(for:)``), unless the task is cancelled first (see
    /// ``FetchTask/cancel()``). A download of `url` waiting on the slow lane moves to the fast lane.
    /// - Parameter key: What the image is cached under: `url.absoluteString` by default. Give one
    ///   when the URL changes but the image does not (a signed URL's token, say): URLs under one
    ///   key share one entry, and one URL under two keys makes two.
    @discardableResult
    public func fetch(_ url: URL, key: String? = nil, callback: (@Sendable (URL, Image?) -> Void)?) -> FetchTask {
        request(Load(url, key: key)) { result in callback?(url, try? Self.image(result).get().value) }
    }

    /// Fetches an image ahead of need on the slow lane: one download at a time, started only
    /// while no fast work is queued or running. Same callback contract as ``fetch(_:key:callback:)``.
    @discardableResult
    public func slowFetch(_ url: URL, key: String? = nil,
                          callback: (@Sendable (URL, Image?) -> Void)? = nil) -> FetchTask {
        request(Load(url, key: key, slow: true)) { result in callback?(url, try? Self.image(result).get().value) }
    }

    /// Fetches an image and says where it came from, or why it could not be had.
    ///
    /// Each closure runs on ``callbackQueue``. `completion` runs once unless the task is cancelled
    /// first, with the image and its ``Source``, or an ``Error`` (see ``Error/isFatal``). `onRetry`
    /// runs before each retry, with the error that caused it and the number of the attempt that
    /// failed (from 1). `onProgress` runs while the image downloads, with the bytes received so far
    /// and the length the server announced (nil if none): at most about 20 times a second,
    /// `received` never smaller than the call before (not even after a retry), and a last call with
    /// the whole size before `completion`. A request that joins a download under way is told from
    /// where it is. Memory and disk hits do not call it.
    @discardableResult
    public func fetch(_ url: URL, key: String? = nil, slow: Bool = false,
                      onProgress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil,
                      onRetry: (@Sendable (Error, _ attempt: Int) -> Void)? = nil,
                      completion: @escaping @Sendable (Result<Fetched<Image>, Error>) -> Void) -> FetchTask {
        fetch(Load(url, key: key, slow: slow), onProgress, onRetry, completion)
    }

    /// Fetches an image with `request`, as `fetch(_:key:slow:onProgress:onRetry:completion:)` does a
    /// URL: its headers (an `Authorization`, a cookie), `cachePolicy` and `timeoutInterval` are sent
    /// as they are (plus the cache's `Accept` and `Accept-Encoding: identity` where it has none), and
    /// ``requestModifier`` sees it before each attempt. Its headers go to a redirect's target only on
    /// the same origin (see README).
    ///
    /// The key is `request.url.absoluteString` unless `key` is given: **headers are not part of it**,
    /// so two users' private images at one URL need two keys. Downloads of one key are shared, with
    /// the headers of the request that started it. Anything but a `GET` with no body of an http(s)
    /// URL fails at once, caching nothing, with the fatal ``Error/invalidRequest(_:)`` (or
    /// ``Error/unsupportedURL(_:)``).
    @discardableResult
    public func fetch(_ request: URLRequest, key: String? = nil, slow: Bool = false,
                      onProgress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil,
                      onRetry: (@Sendable (Error, _ attempt: Int) -> Void)? = nil,
                      completion: @escaping @Sendable (Result<Fetched<Image>, Error>) -> Void) -> FetchTask {
        fetch(Load(request, key: key, slow: slow), onProgress, onRetry, completion)
    }

    /// Fetches any data, with the same tiers, lanes and single download per key as images: the
    /// bytes are kept on disk as downloaded, and memory keeps what `decode` made of them (costing
    /// its bytes), reused only for the type that made it (another type decodes the bytes). An error
    /// thrown by `decode` fails the fetch with the fatal ``Error/decodingFailed(_:)``. Pass `{ $0 }`
    /// for the bytes themselves.
    ///
    /// ```swift
    /// cache.fetch(feedURL, decode: { try JSONDecoder().decode(Feed.self, from: $0) }) { result in
    ///     if case .success(let fetched) = result { show(fetched.value) }
    /// }
    /// ```
    @discardableResult
    public func fetch<Value>(_ url: URL, key: String? = nil, slow: Bool = false,
                             decode: @escaping @Sendable (Data) throws -> Value,
                             onProgress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil,
                             onRetry: (@Sendable (Error, _ attempt: Int) -> Void)? = nil,
                             completion: @escaping @Sendable (Result<Fetched<Value>, Error>) -> Void) -> FetchTask {
        fetch(Load(url, key: key, slow: slow, .value(decode)), onProgress, onRetry, completion)
    }

    /// Fetches any data with `request`, as the `decode:` form fetches a URL; the request is sent as
    /// `fetch(_:key:slow:onProgress:onRetry:completion:)` sends it.
    @discardableResult
    public func fetch<Value>(_ request: URLRequest, key: String? = nil, slow: Bool = false,
                             decode: @escaping @Sendable (Data) throws -> Value,
                             onProgress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil,
                             onRetry: (@Sendable (Error, _ attempt: Int) -> Void)? = nil,
                             completion: @escaping @Sendable (Result<Fetched<Value>, Error>) -> Void) -> FetchTask {
        fetch(Load(request, key: key, slow: slow, .value(decode)), onProgress, onRetry, completion)
    }

    /// Fetches an image with Swift concurrency. Throws an ``ImageCache/Error`` and nothing else:
    /// why the image could not be had, or ``Error/cancelled`` if the calling task is cancelled first.
    public func image(for url: URL, key: String? = nil, slow: Bool = false) async throws -> Image {
        try await image(Load(url, key: key, slow: slow))
    }

    /// Fetches an image with `request` and Swift concurrency, as `image(for:key:slow:)` fetches a
    /// URL; the request is sent as `fetch(_:key:slow:onProgress:onRetry:completion:)` sends it.
    public func image(for request: URLRequest, key: String? = nil, slow: Bool = false) async throws -> Image {
        try await image(Load(request, key: key, slow: slow))
    }

    /// Fetches each URL ahead of need, on the slow lane, with no callback: what a collection view's
    /// `prefetchItemsAt` hands over. A URL in memory or on disk costs no network request, one being
    /// prefetched is not asked again, and one that a fetch is downloading shares that download.
    ///
    /// - Complexity: O(n) in the URLs.
    public func prefetch(_ urls: [URL]) {
        for url in urls { prefetch(Load(url, key: nil, slow: true)) }
    }

    /// Prefetches each request, as `prefetch(_:)` prefetches URLs, with its headers.
    public func prefetch(_ requests: [URLRequest]) {
        for request in requests { prefetch(Load(request, key: nil, slow: true)) }
    }

    /// Stops prefetching each URL: only the requests of `prefetch(_:)` are cancelled, so a
    /// download that a fetch or a binder also waits for goes on; one that only the prefetch wanted
    /// stops, and nothing is cached from it. A URL not being prefetched is ignored.
    ///
    /// - Complexity: O(n) in the URLs.
    public func cancelPrefetching(_ urls: [URL]) {
        let tasks = lock.withLock { urls.compactMap { _state.prefetches[Key($0)] } }
        for task in tasks { task.cancel() }
    }

    /// The image Result forms of `fetch`, with their hooks.
    private func fetch(_ load: Load, _ onProgress: (@Sendable (Int, Int?) -> Void)?,
                       _ onRetry: (@Sendable (Error, Int) -> Void)?,
                       _ completion: @escaping @Sendable (Result<Fetched<Image>, Error>) -> Void) -> FetchTask {
        var load = load
        (load.onProgress, load.onRetry) = (onProgress, onRetry)
        return request(load) { completion(Self.image($0)) }
    }

    /// The `decode:` forms of `fetch`, with their hooks.
    private func fetch<Value>(_ load: Load, _ onProgress: (@Sendable (Int, Int?) -> Void)?,
                              _ onRetry: (@Sendable (Error, Int) -> Void)?,
                              _ completion: @escaping @Sendable (Result<Fetched<Value>, Error>) -> Void) -> FetchTask {
        var load = load
        (load.onProgress, load.onRetry) = (onProgress, onRetry)
        let decoder = load.decoder
        return request(load) { completion($0.flatMap { Self.resolve($0, decoder) }) }
    }

    private func image(_ load: Load) async throws -> Image {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Unchecked<Image>, Swift.Error>) in
                // The continuation resumes on a global queue: the main queue may not be running.
                let task = request(load, queue: .global()) { result in
                    continuation.resume(with: Self.image(result).map { Unchecked($0.value) }.mapError { $0 })
                } onCancel: {
                    continuation.resume(throwing: Error.cancelled)
                }
                box.set(task)
            }
        } onCancel: {
            box.cancel()
        }.value
    }

    private func prefetch(_ load: Load) {
        var load = load
        load.isPrefetch = true
        _ = request(load, queue: Self.prefetchQueue) { _ in }
    }

    /// Where a prefetch's answer goes: nowhere the app waits on (not the main queue).
    private static let prefetchQueue = DispatchQueue(label: "ImageCache.prefetch", qos: .utility)

    /// Puts `data` in the cache under `key` as if it had just been downloaded: on disk, and in
    /// memory (as an image if it is one, else as the bytes). A fetch under `key` then finds it
    /// without the network, and callers waiting for a download under `key` get it at once (the
    /// download stops). Throws ``Error/tooLarge(limit:)``, storing nothing, when `data` is larger
    /// than ``maxImageBytes`` (no lookup would read it back).
    ///
    /// - Complexity: O(1) amortized in the entries, plus the sizes a ``Binder`` decoded the key's
    ///   image to; the file is written on the disk queue.
    public func store(_ data: Data, for key: String) throws {
        let limits = lock.withLock { _decodeLimits }
        try store((try? Decoder.image.decode(data, limits).get()) ?? Payload(bytes: data, value: Box(data)), for: key)
    }

    /// Puts `image` in the cache under `key` as the `Data` form does: memory keeps this image, the
    /// disk its bytes (on Apple platforms a PNG encoding). Throws, storing nothing,
    /// ``Error/notAnImage(_:)`` if the platform cannot encode it, or ``Error/tooLarge(limit:)``.
    public func store(_ image: Image, for key: String) throws {
        guard let bytes = Self.encodedBytes(of: image) else {
            throw Error.notAnImage("an image that cannot be encoded as PNG")
        }
        try store(Payload(bytes: bytes, image: image), for: key)
    }

    private func store(_ payload: Payload, for key: String) throws {
        let key = Key(string: key)
        let now = currentTime()
        // Downloads of the key, and of its sizes (the binder's), stop; their callers get this.
        let waiting: [Stopped] = try lock.withLock {
            let limit = _state.settings.maxImageBytes
            guard payload.bytes?.count ?? 0 <= limit else { throw Error.tooLarge(limit: limit) }
            let stopped = _forgetWithSizes(key)
            secondChance.removeObject(forKey: key)  // an older image of the key
            _keepOnDisk(_insert(key, payload, downloadedAt: now), usedAt: now)
            _queueOnDisk(.write(DiskStore.Item(url: key.string, data: payload.bytes, size: payload.bytes?.count ?? 0,
                                               downloadedAt: now, receivedAt: now), key: key, usedAt: now))
            return stopped
        }
        finishStopped(waiting, with: .success(Delivery(payload: payload, source: .memory)))
    }

    /// Moves a fast-lane download of `url` that has not started yet to the back of the slow lane.
    ///
    /// A download that is already running is left to finish: stopping it would throw away the
    /// bytes already received. Nothing happens if `url` is not being fetched.
    public func moveToSlowQueue(_ url: URL, key: String? = nil) {
        let key = Key(string: key ?? url.absoluteString)
        let started: [Download] = lock.withLock {
            guard case .loading(let download)? = _state.entries[key], download.lane == .fast else { return [] }
            if case .running = download.phase { return [] }
            if case .decoding = download.phase { return [] }
            _state.lanes.move(download, to: download.phase, lane: .slow)
            return _startReadyDownloads()
        }
        startNetwork(started)
    }

    /// The image for `url` if it is in memory and fresh, else nil. Never touches the disk or the
    /// network and never waits for them; counts as a use of the image.
    ///
    /// - Complexity: O(1): one lock, one dictionary lookup.
    public func peek(_ url: URL) -> Image? {
        peek(key: url.absoluteString)
    }

    /// The image cached under `key`, as ``peek(_:)`` finds it.
    public func peek(key: String) -> Image? {
        peek(Key(string: key))
    }

    /// The image under `key` (a binder's, at a size, too), as ``peek(_:)`` finds it.
    private func peek(_ key: Key) -> Image? {
        let now = currentTime()
        return lock.withLock {
            _state.counts.peeks &+= 1
            switch _state.entries[key] {
            case .loaded(let slot)?:
                if now < _state.memory[slot].downloadedAt + _state.settings.timeToLive,
                   _state.memory[slot].receivedAt <= now + Self.maxClockSkew {
                    guard let image = _state.memory[slot].image else { return nil }  // data, not an image
                    _state.memory.markUsed(slot)
                    _state.counts.peekHits &+= 1
                    return image
                }
                _evict(slot)
                return nil
            case nil:
                let found = _secondChance(key, now: now)?.image
                _state.counts.peekHits &+= found == nil ? 0 : 1
                return found
            case .loading?, .failed?:
                return nil
            }
        }
    }

    /// True when the last fetch of `url` failed; cleared when `url` is fetched again or removed.
    public func failedToFetch(_ url: URL) -> Bool {
        error(for: url) != nil
    }

    /// True when the last fetch under `key` failed; cleared when it is fetched again or removed.
    public func failedToFetch(key: String) -> Bool {
        error(forKey: key) != nil
    }

    /// True while `url` is being looked up on disk, queued, downloaded, or waiting to retry.
    public func fetching(_ url: URL) -> Bool {
        let key = Key(url)
        return lock.withLock {
            if case .loading? = _state.entries[key] { return true }
            return false
        }
    }

    /// Why the last fetch of `url` failed; nil if it did not, or was fetched again or removed since.
    public func error(for url: URL) -> ImageCache.Error? {
        error(forKey: url.absoluteString)
    }

    /// Why the last fetch under `key` failed, as ``error(for:)`` says.
    public func error(forKey key: String) -> ImageCache.Error? {
        lock.withLock {
            if case .failed(let error, _)? = _state.entries[Key(string: key)] { return error }
            return nil
        }
    }

    /// Forgets `url` in every tier. A download of it in flight is cancelled and its callbacks run
    /// with nil. The disk file is deleted on the disk queue, before any later disk lookup.
    ///
    /// - Complexity: O(1) amortized, plus the sizes a ``Binder`` decoded `url`'s image to.
    public func remove(_ url: URL) {
        remove(key: url.absoluteString)
    }

    /// Forgets what is cached under `key`, as ``remove(_:)`` does.
    public func remove(key: String) {
        let key = Key(string: key)
        let stopped: [Stopped] = lock.withLock {
            secondChance.removeObject(forKey: key)
            _queueOnDisk(.remove(key.string))
            return _forgetWithSizes(key)
        }
        finishStopped(stopped)
    }

    /// Forgets everything, in memory and on disk. Downloads in flight are cancelled and their
    /// callbacks run with nil. Returns when the disk is empty; given a `completion`, returns at
    /// once (memory is empty then) and runs it on ``callbackQueue`` when the disk is. Another
    /// process's write that is under way at that moment may still land.
    public func removeAll(completion: (@Sendable () -> Void)? = nil) {
        let stopped: [Stopped] = lock.withLock {
            _forgetSecondChances()
            _queueOnDisk(.removeAll)  // no write of an image forgotten here can follow it
            return _state.entries.keys.compactMap { _forget($0) }
        }
        finishStopped(stopped)
        finishDiskWork(completion)
    }

    /// Empties memory; the disk keeps everything (an image whose file is missing is written
    /// again), and downloads in flight go on and deliver their images. Called on a memory warning
    /// under UIKit. Targets of a ``Binder`` that are not displayed let their images go.
    public func purgeMemory() {
        let now = currentTime()
        lock.withLock {
            let evicted = _state.memory.indicesFromLeastRecent().map { _evict($0) }
            _forgetSecondChances()
            _keepOnDisk(evicted, usedAt: now)
        }
        NotificationCenter.default.post(name: Self.memoryPurged, object: self)  // for the binders
    }

    /// Makes sure every image in memory is on disk, with how recently it was used. Images are
    /// written as they arrive, so this only writes again what could not be written then, or was
    /// deleted since while memory still holds its downloaded bytes (always on Linux; on Apple
    /// platforms, until they are on disk). Returns when done, with the disk work queued before;
    /// given a `completion`, returns at once and runs it on ``callbackQueue`` when done.
    public func persistCacheToDisk(completion: (@Sendable () -> Void)? = nil) {
        let now = currentTime()
        lock.withLock {
            _keepOnDisk(_state.memory.indicesFromLeastRecent().map { _state.memory[$0] }, usedAt: now)
        }
        finishDiskWork(completion)
    }

    /// Deletes expired images from disk, then the least recently used beyond the `maxImageCount`
    /// most recent, or beyond the most recent whose sizes add up to `maxBytes`. Images in memory
    /// count as used now, in their order of use; memory is not changed. Returns when done; given a
    /// `completion`, returns at once and runs it on ``callbackQueue`` when done. (The disk keeps
    /// within ``diskMaxBytes`` without this call.)
    ///
    /// - Complexity: O(n log n) in the number of files in the folder.
    public func reduceDiskCache(maxImageCount: Int = .max, maxBytes: Int = .max,
                                completion: (@Sendable () -> Void)? = nil) {
        let now = currentTime()
        lock.withLock {
            let recency = _state.memory.indicesFromLeastRecent().map { _state.memory[$0].key.string }
            _queueOnDisk(.reduce(recency: recency, maxCount: max(0, maxImageCount), maxBytes: max(0, maxBytes),
                                 now: now))
        }
        finishDiskWork(completion)
    }

    /// Waits for the disk work queued so far, or has `completion` run on ``callbackQueue`` after it.
    private func finishDiskWork(_ completion: (@Sendable () -> Void)?) {
        guard let completion else { return diskQueue.sync {} }
        let queue = callbackQueue
        diskQueue.async { queue.async(execute: completion) }
    }
}

// MARK: - Configuration

nonisolated extension ImageCache {
    /// How long an image stays valid after it was downloaded, in seconds, in memory and on disk
    /// alike (also across launches). 600 by default; values below 1 are clamped to 1.
    public var imageTimeToLive: TimeInterval {
        get { setting(\.timeToLive) }
        set {
            change(\.timeToLive, to: max(1, newValue.isNaN ? 1 : newValue)) { disk, timeToLive in
                disk.timeToLive = timeToLive
            }
        }
    }

    /// How many images memory holds, the second chance included: the most that ``peek(_:)`` can
    /// return. 100 by default; values below 1 are clamped to 1. When it is passed, the least
    /// recently used tenth leaves in one batch; lowering it evicts at once.
    public var imageMemoryMaxCount: Int {
        get { setting(\.memoryMaxCount) }
        set { changeMemoryLimit(\.memoryMaxCount, to: max(1, newValue)) }
    }

    /// How many bytes of images memory holds, the second chance included. An image costs its
    /// decoded size on Apple platforms (width x height x 4 bytes), its downloaded bytes on Linux.
    /// When it is passed, the least recently used images leave down to 90% of it; an image that
    /// costs more than a quarter of it is delivered but kept only on disk. By default a tenth of
    /// physical memory, at most 512 MiB, and 8 MiB in an app extension (a widget or a share
    /// extension, which the system stops at a few tens of MB); values are clamped to
    /// 1...`Int.max / 2`. Lowering it evicts at once.
    public var imageMemoryMaxBytes: Int {
        get { setting(\.memoryMaxBytes) }
        set { changeMemoryLimit(\.memoryMaxBytes, to: min(max(1, newValue), Int.max / 2)) }
    }

    /// The value of a setting, read under the lock.
    private func setting<Value>(_ setting: KeyPath<Settings, Value>) -> Value {
        lock.withLock { _state.settings[keyPath: setting] }
    }

    /// Changes a setting under the lock. `disk`, if given, applies it on the disk queue, in order
    /// with the disk work that follows.
    private func change<Value: Sendable>(_ setting: WritableKeyPath<Settings, Value>, to value: Value,
                                         disk: (@Sendable (DiskStore, Value) -> Void)? = nil) {
        change(setting, to: value, then: { if let disk { _queueOnDisk(.setting { disk($0, value) }) } })
    }

    /// Changes a setting and runs `then`, the work the new value calls for, under the lock.
    /// Returns what `then` returns, for the caller to act on after unlocking.
    private func change<Value, Effects>(_ setting: WritableKeyPath<Settings, Value>, to value: Value,
                                        then: () -> Effects) -> Effects {
        lock.withLock {
            _state.settings[keyPath: setting] = value
            return then()
        }
    }

    /// Changes a memory limit; what no longer fits leaves memory at once.
    private func changeMemoryLimit(_ limit: WritableKeyPath<Settings, Int>, to value: Int) {
        let now = currentTime()
        change(limit, to: value, then: { _keepOnDisk(_evictOverLimits(), usedAt: now) })
    }

    private static let defaultMemoryMaxBytes =
        defaultMemoryMaxBytes(bundlePath: Bundle.main.bundlePath,
                              physicalMemory: ProcessInfo.processInfo.physicalMemory)

    /// The default of ``imageMemoryMaxBytes``; an app extension's bundle ends in `.appex`.
    static func defaultMemoryMaxBytes(bundlePath: String, physicalMemory: UInt64) -> Int {
        if bundlePath.hasSuffix(".appex") || bundlePath.hasSuffix(".appex/") { return 8 * 1024 * 1024 }
        return Int(min(physicalMemory / 10, 512 * 1024 * 1024))
    }

    /// How many bytes the image files on disk may take. 256 MiB by default; values below 1 are
    /// clamped to 1. After each write that passes it, the disk queue deletes expired images, then
    /// the least recently used down to 90% of it, so the folder passes it by at most the writes
    /// under way. Each process sharing a folder counts what it writes and recounts the folder when
    /// it enforces the limit. Setting it lists no folder: a lower limit applies at once only when
    /// the bytes already counted pass it, else in the sweep 2 s after the first disk lookup (so an
    /// app that sets it at launch gets its first images from disk without waiting for a scan).
    public var diskMaxBytes: Int {
        get { setting(\.diskMaxBytes) }
        set {
            change(\.diskMaxBytes, to: max(1, newValue)) { disk, maxBytes in
                disk.setMaxBytes(maxBytes, now: self.currentTime())
            }
        }
    }

    /// Whether a response's `Cache-Control: max-age` sets its entry's time to live instead of
    /// ``imageTimeToLive``. False by default. (`no-store` is always obeyed: such an entry is kept
    /// in memory only.)
    public var usesServerMaxAge: Bool {
        get { setting(\.usesServerMaxAge) }
        set { change(\.usesServerMaxAge, to: newValue) }
    }

    /// Whether an expired entry is delivered, marked ``Fetched/isStale``, when its refetch fails
    /// for a reason that is not fatal (no network, a timeout, a 5xx; not a 404). False by default.
    /// When true, expired files stay on disk until a fetch replaces them (the disk limit and
    /// `reduceDiskCache` still delete the least recently used).
    public var servesStaleWhenOffline: Bool {
        get { setting(\.servesStaleWhenOffline) }
        set {
            change(\.servesStaleWhenOffline, to: newValue) { disk, keepsExpired in disk.keepsExpired = keepsExpired }
        }
    }

    /// The queue callbacks run on. On Apple platforms `.main` by default. On Linux, a serial queue of
    /// the instance's own by default, so that a command-line program needs no run loop; set `.main`
    /// for a program that runs one (`dispatchMain()` or `RunLoop.main.run()`).
    public var callbackQueue: DispatchQueue {
        get { setting(\.callbackQueue) }
        set { change(\.callbackQueue, to: newValue) }
    }

    /// How many fast-lane downloads run at once. 6 by default; values below 1 are clamped to 1.
    public var maxConcurrentDownloads: Int {
        get { setting(\.maxConcurrentDownloads) }
        set {
            let started = change(\.maxConcurrentDownloads, to: max(1, newValue), then: { _startReadyDownloads() })
            startNetwork(started)
        }
    }

    /// Seconds a request may wait for data before it fails with a timeout. 30 by default; values
    /// below 1 are clamped to 1 (URLSession on Linux counts whole seconds: 0.5 would mean none).
    public var requestTimeout: TimeInterval {
        get { setting(\.requestTimeout) }
        set {
            // Under the lock, so that the settings and the transport's session agree.
            change(\.requestTimeout, to: max(1, newValue.isNaN ? 30 : newValue),
                   then: { transport.setTimeout(_state.settings.requestTimeout) })
        }
    }

    /// Seconds one download attempt may take, from its request to its last byte. 120 by default
    /// (a session given to `init` sets it); values below 1 are clamped to 1. The cache enforces
    /// it, on Linux too: an attempt still running then fails with `.network(.timedOut, …)`, which
    /// ``retryPolicy`` may retry with a limit of its own. Applies to attempts that start after it.
    public var downloadTimeLimit: TimeInterval {
        get { setting(\.downloadTimeLimit) }
        set { change(\.downloadTimeLimit, to: max(1, newValue.isNaN ? 120 : newValue)) }
    }

    /// Makes every request the cache sends (first attempts, retries, revalidations) just before it
    /// is sent: add an `Authorization` header with the current token, say, so that a retry picks up
    /// a refreshed one. Nil by default. Returning nil, or anything but a `GET` of an http(s) URL
    /// without a body, fails the load with the fatal ``Error/invalidRequest(_:)``. Runs once per
    /// attempt, outside the cache's lock, on the thread that starts it (a queue of the cache's, or
    /// the caller of a method that freed a slot): keep it quick. What it returns is sent as it is,
    /// with its headers following a redirect to the same origin only, and cached under the load's
    /// key: changing the URL or its host changes what is downloaded, not the key.
    public var requestModifier: (@Sendable (URLRequest) -> URLRequest?)? {
        get { setting(\.requestModifier) }
        set { change(\.requestModifier, to: newValue) }
    }

    /// How transient failures are retried; see ``RetryPolicy``.
    public var retryPolicy: RetryPolicy {
        get { setting(\.retryPolicy) }
        set { change(\.retryPolicy, to: newValue) }
    }

    /// The largest response body accepted, in bytes. 20 MiB by default; values below 1 are clamped
    /// to 1. A larger response fails as ``Error/tooLarge(limit:)`` as soon as its announced length
    /// or its received bytes (inflated, if compressed) pass the limit, without reading the rest.
    public var maxImageBytes: Int {
        get { setting(\.maxImageBytes) }
        set { change(\.maxImageBytes, to: max(1, newValue)) }
    }

    /// The longest side, in pixels, of an image decoded with no size to fill (a `fetch`, a
    /// prefetch, a view not laid out yet, with bounds of zero): a larger one is decoded scaled down
    /// to it, so that no unsized decode makes a huge bitmap (a 12-megapixel photo is 48 MB). A
    /// binder or view with a size decodes to fill it, whatever this says. By default the main
    /// screen's longest side in pixels (2,796 on a 6.7-inch iPhone, 2,752 on a 13-inch iPad), read
    /// on the main thread with its scale (see ``screenScale``); 4,096 where there is none to read
    /// (Linux, visionOS, watchOS) or until it is read. `Int.max` decodes at full size; values below
    /// 1 are clamped to 1. Applies to requests made after it changes. On Linux an image is its
    /// bytes, and this decides nothing but `decodedSize(width:height:orientation:filling:maxPixels:)`.
    public var maxDecodedPixelSize: Int {
        get { setting(\.maxDecodedPixelSize) ?? Self.screenPixels }
        set { change(\.maxDecodedPixelSize, to: max(1, newValue)) }
    }

    /// The most frames a GIF or APNG may have to be shown animated on Apple platforms. One with
    /// more, or whose frames would together cost more than a quarter of ``imageMemoryMaxBytes``
    /// (width x height x 4 bytes each), shows its first frame. 200 by default; values below 1 are
    /// clamped to 1 (every animation then shows its first frame). Applies to requests made after it
    /// changes. On Linux an image is its bytes; its `frameCount` says how many frames they hold.
    public var maxAnimatedFrames: Int {
        get { setting(\.maxAnimatedFrames) }
        set { change(\.maxAnimatedFrames, to: max(1, newValue)) }
    }

    /// The bounds a decode for a request made now works within (call with the lock held).
    fileprivate var _decodeLimits: DecodeLimits {
        let settings = _state.settings
        return DecodeLimits(maxPixels: settings.maxDecodedPixelSize ?? Self.screenPixels,
                            maxAnimatedFrames: settings.maxAnimatedFrames, memoryMaxBytes: settings.memoryMaxBytes)
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
            return baseDelay * Foundation.pow(2, Double(attempt - 1)) * Double.random(in: 0.5...1)
        }
    }

    /// Called for what the cache does, for logs, metrics and spinners: where each delivered image
    /// came from, each failure, each problem with the disk. Runs on ``callbackQueue``, before the
    /// callbacks of the same fetch when they share that queue. Nil by default.
    public var onEvent: (@Sendable (Event) -> Void)? {
        get { setting(\.onEvent) }
        set { change(\.onEvent, to: newValue) }
    }
}

// MARK: - Errors

nonisolated extension ImageCache {
    /// Why an image could not be had.
    public enum Error: Swift.Error, CustomStringConvertible, Sendable, Equatable {
        /// The URL's scheme is not `http` or `https`.
        case unsupportedURL(String)
        /// The request cannot be sent as an image load: it has no URL, a method other than `GET`,
        /// or a body, or ``ImageCache/requestModifier`` returned nil for it. Nothing was sent.
        case invalidRequest(String)
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
        /// The decoder given to a `decode:` form of `fetch` threw this error (described).
        case decodingFailed(String)

        /// True when trying the same URL again cannot help: a 4xx other than 408 and 429, an
        /// unsupported URL or invalid request, a body that is not an image or is broken.
        public var isFatal: Bool {
            switch self {
            case .unsupportedURL, .invalidRequest, .notAnImage, .corruptImage, .emptyBody, .tooLarge, .decodingFailed:
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
            case .invalidRequest(let why): return "invalid request: \(why)"
            case .httpStatus(let code): return "HTTP status \(code)"
            case .network(let code, let text): return "network error \(code.rawValue): \(text)"
            case .emptyBody: return "not an image: the body is empty"
            case .truncatedBody(let expected, let received): return "truncated body: \(received) of \(expected) bytes"
            case .notAnImage(let what): return "not an image: \(what)"
            case .corruptImage(let format, let what): return "corrupt \(format.rawValue) image: \(what)"
            case .tooLarge(let limit): return "too large: the response is over the \(limit)-byte limit"
            case .cancelled: return "cancelled"
            case .decodingFailed(let what): return "the decoder failed: \(what)"
            }
        }
    }
}

// MARK: - Events

nonisolated extension ImageCache {
    /// Where a delivered image came from.
    public enum Source: String, Sendable {
        case memory, disk, network
    }

    /// What a fetch delivers: the value, where it came from, and whether it is stale (an expired
    /// entry delivered because the network failed).
    public struct Fetched<Value>: @unchecked Sendable {  // a value is handed to one callback queue
        public let value: Value
        public let source: Source
        public let isStale: Bool
    }

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
    }

    /// What the cache has done since it was made, and what it holds now; see ``statistics()``.
    /// Counters wrap around past `Int.max` (2^31 - 1 where `Int` is 32 bits) rather than trap.
    public struct Statistics: Sendable, Equatable {
        /// Calls of `fetch`, `slowFetch` and `image(for:)`.
        public var requests = 0
        /// Requests answered from memory (second chance included), and lookups answered from disk.
        /// Each request counts once: in `memoryHits`, `diskHits`, `misses` or `deduplicated` (or,
        /// for an unsupported URL, in `failures` alone).
        public var memoryHits = 0, diskHits = 0
        /// Downloads that went to the network: neither memory nor disk had the entry.
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
        /// Calls of `peek`, and those that returned an image.
        public var peeks = 0, peekHits = 0
        /// What memory holds now: entries and their cost in bytes (second chance not included).
        public var memoryCount = 0, memoryBytes = 0
        /// What the folder holds: entry files and their bytes, as ``ImageCache/statistics()`` says.
        public var diskFiles = 0, diskBytes = 0
    }

    /// A snapshot of the counters (one addition each, under the lock the cache takes anyway) and
    /// sizes. The disk figures are what the folder held when it was last counted (by the sweep 2 s
    /// after the first disk lookup, the disk limit, `reduceDiskCache`, the first write, or
    /// ``statistics(completion:)``), plus what this instance wrote and deleted since: approximate
    /// while other processes or instances share the folder, and 0 until it is first counted.
    ///
    /// - Complexity: O(1): one lock; it never waits for the disk.
    public func statistics() -> Statistics {
        lock.withLock {
            var counts = _state.counts
            (counts.memoryCount, counts.memoryBytes) = (_state.memory.count, _state.memory.bytes)
            return counts
        }
    }

    /// A snapshot as ``statistics()`` makes it, with the disk figures counted exactly: the folder
    /// is listed on the disk queue, after the disk work queued so far, and `completion` runs on
    /// ``callbackQueue`` with the snapshot.
    ///
    /// - Complexity: O(files in the folder): about 0.3 s for 100,000 files on a 2-core Linux VM.
    public func statistics(completion: @escaping @Sendable (Statistics) -> Void) {
        let queue = callbackQueue
        diskQueue.async {
            self.disk.recount()
            let snapshot = self.statistics()
            queue.async { completion(snapshot) }
        }
    }

    /// Takes the disk's figures (see `DiskStore.counted`), for ``statistics()``.
    fileprivate func diskCounted(_ figures: (files: Int, bytes: Int)) {
        lock.withLock { (_state.counts.diskFiles, _state.counts.diskBytes) = figures }
    }

    /// The event that delivering `result` to callers stands for (none for a cancellation).
    private static func event<T>(_ result: Result<T, Error>, _ url: URL, from source: Source, bytes: Int) -> Event? {
        switch result {
        case .success: return .served(url, from: source, bytes: bytes)
        case .failure(.cancelled): return nil
        case .failure(let error): return .failed(url, error)
        }
    }
}

// MARK: - Public types

nonisolated extension ImageCache {
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

        /// The image's bytes as downloaded, without any that followed its end.
        public let data: Data
        /// The format the bytes are in.
        public let format: Format
        /// Width and height in pixels, from the header.
        public let width: Int, height: Int
        /// How many frames the image has: a GIF's frames as its blocks hold them; an APNG's as its
        /// `acTL` chunk claims, but no more than it has `fcTL` chunks for; 1 for a still PNG, a JPEG
        /// and any WebP (an animated WebP's frames are not counted). Where the platform decodes, the
        /// rule of ``ImageCache/maxAnimatedFrames``, tested here, decides whether an image animates.
        public let frameCount: Int

        /// Decodes `data`; nil when it does not start with a whole PNG, JPEG, GIF or WebP image.
        /// Bytes after the image's end are dropped.
        public init?(data: Data) {
            guard case .success(let decoded) = ImageCache.decode(data) else { return nil }
            self = decoded.image
        }

        fileprivate init(data: Data, format: Format, width: Int, height: Int, frameCount: Int) {
            self.data = data
            self.format = format
            self.width = width
            self.height = height
            self.frameCount = frameCount
        }
    }
    #endif

    /// The image formats the cache recognises and checks.
    public enum Format: String, Sendable {
        case png, jpeg, gif, webp
    }

    /// A request made by one of the `fetch` methods or ``ImageCache/slowFetch(_:key:callback:)``.
    public final class FetchTask: @unchecked Sendable {
        /// The URL that was requested (`about:blank` for a `URLRequest` without one).
        public let url: URL
        fileprivate let cache: ImageCache
        fileprivate let load: Load  // this request's own: its hooks, and the key
        fileprivate let queue: DispatchQueue
        fileprivate let completion: @Sendable (Result<Delivery, ImageCache.Error>) -> Void
        fileprivate let onCancel: (@Sendable () -> Void)?
        fileprivate var answer = Answer.waiting  // guarded by `cache.lock`
        fileprivate weak var download: Download?  // the download it waits for; guarded by `cache.lock`
        fileprivate var progress = 0  // the bytes last reported to `onProgress`; guarded by `cache.lock`
        // The whole size, for `onProgress` just before the completion, in its block; guarded by `cache.lock`.
        fileprivate var finalProgress: (received: Int, expected: Int?)?
        fileprivate enum Answer { case waiting, delivered, cancelled }

        fileprivate init(_ load: Load, cache: ImageCache, queue: DispatchQueue,
                         completion: @escaping @Sendable (Result<Delivery, ImageCache.Error>) -> Void,
                         onCancel: (@Sendable () -> Void)?) {
            url = load.url ?? URL(string: "about:blank")!
            self.cache = cache
            self.load = load
            self.queue = queue
            self.completion = completion
            self.onCancel = onCancel
        }

        /// Cancels this request, from any thread. When `cancel()` returns, the callback either has
        /// already started or will never start, and ``isCancelled`` says which. Called on a serial
        /// ``ImageCache/callbackQueue`` (the main queue, say) before the callback ran, it always
        /// wins. When no other request waits for the same URL, the download itself stops and
        /// nothing is cached from it. Cancelling twice, or after the callback started, does nothing.
        /// A running callback is not waited for (that would deadlock one that waits for this thread).
        public func cancel() {
            cache.cancel(self)
        }

        /// True once ``cancel()`` has been called before the callback started: it never runs.
        public var isCancelled: Bool {
            cache.lock.withLock { answer == .cancelled }
        }

        /// Neither answered nor cancelled yet: a hook (progress, retry) may still run.
        fileprivate var isWaiting: Bool {
            cache.lock.withLock { answer == .waiting }
        }
    }
}

// MARK: - Binding

nonisolated extension ImageCache {
    /// Something that shows one image: `UIImageView`, `NSImageView` (below), or any class.
    public protocol ImageTarget: AnyObject {
        /// The image shown; nil shows none.
        var image: Image? { get set }
        /// Whether it is on screen now: on a memory warning, a target that is not lets its image go.
        var isDisplayed: Bool { get }
        /// Shows `image` with `transition`, which is `.none` but for an image that did not come
        /// from memory when the binding asked for a fade. By default, sets ``image``; `UIImageView`
        /// and `NSImageView` cross-dissolve.
        func show(_ image: Image?, transition: Transition)
    }

    /// How a binder shows an image that arrives: at once, or fading in. An image found in memory
    /// always appears at once, as do the placeholder and the failure image.
    public enum Transition: Sendable, Hashable {
        /// At once.
        case none
        /// A cross-dissolve from what the target shows, over this many seconds.
        case fade(TimeInterval)
    }

    /// Shows the image of one URL in one ``ImageTarget``, and owns the target's state and request: a
    /// new binding replaces the request, and no callback of an earlier one touches the target; an
    /// image in memory is set at once, inside `bind`, without the placeholder; a failure leaves the
    /// failure image (else the placeholder) and ``state`` says why; on `purgeMemory()`, a target not
    /// displayed lets its image go until it is bound again.
    ///
    /// **Thread safety.** A binder belongs to the serial queue it is made with (the main queue for
    /// views): call it there; it sets the target there, and its requests' callbacks run there.
    public final class Binder: @unchecked Sendable {
        /// What the target shows: `idle`, nothing bound or the load cancelled; `placeholder`, no URL or
        /// a memory warning; `loading`, the placeholder; the `image`; `failed`, the failure image.
        public enum State: Sendable, Equatable {
            case idle, placeholder, loading, image(Source), failed(Error)
        }

        /// What the target shows now.
        public private(set) var state = State.idle
        private let queue: DispatchQueue
        private weak var target: ImageTarget?
        private var binding: (placeholder: Image?, failureImage: Image?, cache: ImageCache, memoryKey: Key?,
                              transition: Transition)?
        private var task: FetchTask?
        private var generation = 0  // of the binding: a callback of an earlier one is ignored
        private(set) var ignoredCallbacks = 0  // so ignored; the tests report it
        private var observer: NSObjectProtocol?

        /// A binder for `target`, which it holds weakly, used on `queue`.
        public init(_ target: ImageTarget, queue: DispatchQueue = .main) {
            (self.target, self.queue) = (target, queue)
            observer = NotificationCenter.default.addObserver(forName: ImageCache.memoryPurged, object: nil,
                                                              queue: nil) { [weak self] note in
                guard let self, let cache = note.object as? ImageCache else { return }
                queue.async { self.purged(cache) }
            }
        }

        deinit {
            task?.cancel()
            observer.map(NotificationCenter.default.removeObserver)
        }

        /// Shows the image at `url` (nil: the placeholder), cached under `key` (the URL by default):
        /// at once if it is in memory, else the placeholder until it comes, shown with `transition`
        /// (none by default; see ``Transition``). Given `pixelSize`, Apple platforms decode it to
        /// fill that, as an entry of its own in memory, at the main screen's scale (see
        /// ``ImageCache/screenScale``: its `size` is in points). Returns the request.
        @discardableResult
        public func bind(_ url: URL?, key: String? = nil, placeholder: Image? = nil, failureImage: Image? = nil,
                         pixelSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: Transition = .none) -> FetchTask? {
            bind(url.map { Load($0, key: key) }, placeholder, failureImage, pixelSize, cache, transition, scale: nil)
        }

        /// Shows the image that `request` loads, as `bind(_:key:...)` shows a URL's; the request is
        /// sent as `fetch(_ request: URLRequest, ...)` sends it, and its headers are not part of the
        /// key. (Not optional, so that `bind(nil)` stays the URL form's: the placeholder.)
        @discardableResult
        public func bind(_ request: URLRequest, key: String? = nil, placeholder: Image? = nil,
                         failureImage: Image? = nil, pixelSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: Transition = .none) -> FetchTask? {
            bind(Load(request, key: key), placeholder, failureImage, pixelSize, cache, transition, scale: nil)
        }

        /// `scale`: the display scale of the target's screen (a view's), which the image carries;
        /// nil for the main screen's (see ``ImageCache/displayScale(_:screen:)``).
        @discardableResult
        fileprivate func bind(_ load: Load?, _ placeholder: Image?, _ failureImage: Image?, _ pixelSize: CGSize?,
                              _ cache: ImageCache, _ transition: Transition, scale: Double?) -> FetchTask? {
            dispatchPrecondition(condition: .onQueue(queue))
            let size = ImageCache.pixels(pixelSize)
            let scale = ImageCache.displayScale(scale, screen: ImageCache.screenScale)
            let memoryKey = load.map { ImageCache.memoryKey($0.key.string, filling: size, scale: scale) }
            let sameKey = memoryKey != nil && memoryKey == binding?.memoryKey && cache === binding?.cache
            let previous = task
            defer { previous?.cancel() }  // after the new request, which may share its download
            generation += 1
            let generation = generation  // before `show`: a target that binds again from its setter wins
            task = nil
            binding = (placeholder, failureImage, cache, memoryKey, transition)
            guard var load, let memoryKey else { show(placeholder, .placeholder); return nil }
            // In memory at this size, or whole (ready to draw, if larger than asked): set at once.
            if let image = cache.peek(memoryKey) ?? (size == nil ? nil : cache.peek(key: load.key.string)) {
                show(image, .image(.memory))
                return nil
            }
            // Bound again to the image it shows (a reload): no placeholder meanwhile.
            if case .image = state, sameKey { state = .loading } else { show(placeholder, .loading) }
            let decoder = Decoder.image(filling: size, scale: scale)
            (load.key, load.decoder) = (memoryKey, decoder)
            task = cache.request(load, queue: queue, completion: { [weak self] result in
                self?.finished(generation, result.flatMap { ImageCache.resolve($0, decoder) })
            }, onCancel: { [weak self] in self?.finished(generation, nil) })
            return task
        }

        /// Cancels the load under way, if any; what the target shows stays (`loading` becomes `idle`).
        public func cancel() {
            dispatchPrecondition(condition: .onQueue(queue))
            generation += 1
            task?.cancel()
            task = nil
            if case .loading = state { state = .idle }
        }

        /// A callback of the binding `generation`: the image, why not, or nil if its task was cancelled.
        private func finished(_ generation: Int, _ result: Result<Fetched<Image>, Error>?) {
            guard generation == self.generation else { ignoredCallbacks += 1; return }
            task = nil
            switch result {
            case .success(let fetched)?:
                // One from memory is there at once: a fade would only flash.
                let transition: Transition = fetched.source == .memory ? .none : binding?.transition ?? .none
                show(fetched.value, .image(fetched.source), transition: transition)
            case .failure(.cancelled)?, nil: state = .idle  // cancelled, or stopped by store, remove or removeAll
            case .failure(let error)?: show(binding?.failureImage ?? binding?.placeholder, .failed(error))
            }
        }

        private func purged(_ cache: ImageCache) {
            guard case .image = state, binding?.cache === cache, target?.isDisplayed == false else { return }
            show(binding?.placeholder, .placeholder)
        }

        private func show(_ image: Image?, _ state: State, transition: Transition = .none) {
            self.state = state
            target?.show(image, transition: transition)
        }
    }

    fileprivate static let memoryPurged = Notification.Name("ImageCache.memoryPurged")

    /// A target size in whole pixels; nil for none, or one that is empty or absurd.
    static func pixels(_ size: CGSize?) -> (width: Int, height: Int)? {
        guard let size, (1...100_000).contains(size.width), (1...100_000).contains(size.height) else { return nil }
        return (Int(size.width.rounded(.up)), Int(size.height.rounded(.up)))
    }

    /// `key` at `size` (a size from `pixels`) for a screen of `scale` (from `displayScale`): memory
    /// keeps an entry per size and scale, since an image's `size` is in its screen's points; the disk
    /// keeps one file, the key's.
    fileprivate static func memoryKey(_ key: String, filling size: (width: Int, height: Int)?,
                                      scale: Double = 1) -> Key {
        guard let size else { return Key(string: key) }
        let hundredths = scale == 1 ? 0 : UInt64((scale * 100).rounded())  // 0 for 1x; 16x is 1,600
        return Key(string: key, size: hundredths << 48 | UInt64(size.width) << 24 | UInt64(size.height))
    }

}

nonisolated extension ImageCache.ImageTarget {
    /// Sets ``ImageCache/ImageTarget/image``: no transition.
    public func show(_ image: ImageCache.Image?, transition: ImageCache.Transition) {
        self.image = image
    }
}

#if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
#if canImport(UIKit)
extension ImageCache { fileprivate typealias ImageView = UIImageView }
#else
extension ImageCache { fileprivate typealias ImageView = NSImageView }
#endif

// The view is main-actor isolated and the protocol is not: its binder uses it on the main queue only.
extension ImageCache.ImageView: @preconcurrency ImageCache.ImageTarget {
    /// Always true: nothing tells a view's binder when it returns to a window (a view controller
    /// under another, a tab not selected, a prefetched cell), so a view keeps its image on a memory
    /// warning rather than show its placeholder until it is bound again.
    public var isDisplayed: Bool { true }

    /// Sets `image`; with a fade, as a cross-dissolve.
    public func show(_ image: ImageCache.Image?, transition: ImageCache.Transition) {
        if case .fade(let seconds) = transition, seconds > 0 {
            #if canImport(UIKit)
            return UIView.transition(with: self, duration: seconds,
                                     options: [.transitionCrossDissolve, .allowUserInteraction],
                                     animations: { self.image = image })
            #else
            // NSImageView does not animate `image`: a fade of its layer's contents does.
            let fade = CATransition()
            (fade.type, fade.duration) = (.fade, seconds)
            wantsLayer = true
            layer?.add(fade, forKey: "ImageCache.fade")
            #endif
        }
        self.image = image
    }

    /// Shows the image at `url` here through ``imageBinder`` (see ``ImageCache/Binder``): at once
    /// if it is in memory, else `placeholder` until it comes, decoded off the main thread to fill
    /// `targetSize` (points; the view's bounds by default) at the view's display scale (its `size`
    /// is in points), or `failureImage` (else `placeholder`) if it cannot be had; an image that was
    /// not in memory comes with `transition` (a fade: `.fade(0.25)`). Returns the request, if one was made.
    @discardableResult
    public func setImage(with url: URL?, key: String? = nil, placeholder: ImageCache.Image? = nil,
                         failureImage: ImageCache.Image? = nil, targetSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: ImageCache.Transition = .none) -> ImageCache.FetchTask? {
        imageBinder.bind(url.map { ImageCache.Load($0, key: key) }, placeholder, failureImage, pixels(targetSize),
                         cache, transition, scale: displayScale)
    }

    /// Shows the image that `request` loads here, as `setImage(with url:...)` shows a URL's; the
    /// request is sent as ``ImageCache/Binder`` sends it, and its headers are not part of the key.
    /// (Not optional, so that `setImage(with: nil)` stays the URL form's: the placeholder.)
    @discardableResult
    public func setImage(with request: URLRequest, key: String? = nil, placeholder: ImageCache.Image? = nil,
                         failureImage: ImageCache.Image? = nil, targetSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: ImageCache.Transition = .none) -> ImageCache.FetchTask? {
        imageBinder.bind(ImageCache.Load(request, key: key), placeholder, failureImage, pixels(targetSize), cache,
                         transition, scale: displayScale)
    }

    /// `size` (the view's bounds by default) in the screen's pixels.
    private func pixels(_ size: CGSize?) -> CGSize {
        let size = size ?? bounds.size
        return CGSize(width: size.width * displayScale, height: size.height * displayScale)
    }

    /// The scale of the view's screen, which its images carry; the main screen's when it is in no window.
    private var displayScale: Double {
        #if canImport(UIKit)
        // Not `contentScaleFactor`: a system view's may be 1 on a 3x screen. (0 when not yet in a
        // window, where the bounds are rarely laid out either.)
        let scale = traitCollection.displayScale
        #else
        let scale = window?.backingScaleFactor ?? 0
        #endif
        return ImageCache.displayScale(Double(scale), screen: ImageCache.screenScale)
    }

    /// Cancels the load under way, if any; what the view shows stays.
    public func cancelImageLoad() { imageBinder.cancel() }

    /// The view's binder, made on first use: its `state` says what the view shows, or why not.
    public var imageBinder: ImageCache.Binder {
        if let binder = objc_getAssociatedObject(self, Self.binderKey) as? ImageCache.Binder { return binder }
        let binder = ImageCache.Binder(self)
        objc_setAssociatedObject(self, Self.binderKey, binder, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
        return binder
    }

    private static let binderKey = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
}
#endif

#if canImport(SwiftUI) && (canImport(UIKit) || canImport(AppKit))
extension ImageCache {
    /// A SwiftUI view of the image at `url`, resizable, through a ``Binder``: it cancels its load when
    /// it disappears, and binds again when it appears (a memory warning may have taken its image).
    /// The image carries the environment's `displayScale`: its `size` is in points.
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
    @MainActor public struct RemoteImage: View {
        private let url: URL?, key: String?, placeholder: Image?, failureImage: Image?, pixelSize: CGSize?,
                    cache: ImageCache, transition: Transition
        @StateObject private var target = Target()
        @Environment(\.displayScale) private var displayScale

        /// The arguments are those of ``Binder/bind(_:key:placeholder:failureImage:pixelSize:cache:transition:)``:
        /// with `.fade(seconds)`, an image that was not in memory fades in (an opacity transition).
        public init(_ url: URL?, key: String? = nil, placeholder: Image? = nil, failureImage: Image? = nil,
                    pixelSize: CGSize? = nil, cache: ImageCache = .shared, transition: Transition = .none) {
            (self.url, self.key, self.placeholder, self.failureImage, self.pixelSize, self.cache, self.transition) =
                (url, key, placeholder, failureImage, pixelSize, cache, transition)
        }

        public var body: some View {
            #if canImport(UIKit)
            let image = SwiftUI.Image(uiImage: target.image ?? Self.empty)
            #else
            let image = SwiftUI.Image(nsImage: target.image ?? Self.empty)
            #endif
            // A new identity per image, so that a fade's transition takes the old one out and the new in.
            let identified = image.resizable().id(target.image.map(ObjectIdentifier.init))
            return ZStack { identified.transition(AnyTransition.opacity) }
                .onAppear { target.isDisplayed = true; bind() }
                .onDisappear { target.isDisplayed = false; target.binder.cancel() }
                .onChange(of: arguments) { _ in bind() }
        }

        /// Shown while there is no image: one for every view, not one per evaluation of `body`.
        private static let empty = Image()

        /// What a binding is made of: a change of any argument binds again (the images by identity).
        private var arguments: [AnyHashable?] {
            [url, key, pixelSize.map { [$0.width, $0.height] }, ObjectIdentifier(cache),
             placeholder.map(ObjectIdentifier.init), failureImage.map(ObjectIdentifier.init), transition, displayScale]
        }

        private func bind() {
            target.binder.bind(url.map { Load($0, key: key) }, placeholder, failureImage, pixelSize, cache, transition,
                               scale: Double(displayScale))
        }

        private final class Target: ObservableObject, ImageTarget {
            @Published var image: Image?
            var isDisplayed = false
            lazy var binder = Binder(self)

            func show(_ image: Image?, transition: Transition) {
                guard case .fade(let seconds) = transition, seconds > 0 else { return self.image = image }
                withAnimation(.easeIn(duration: seconds)) { self.image = image }
            }
        }
    }
}
#endif

// MARK: - Implementation
//
// Everything below is internal, in the order a miss walks it: the request, the download's lifecycle,
// the network, delivery; then what they use: HTTP, the memory tier, the disk tier and its files,
// images, the platform's parts and small helpers.

// MARK: - Requests

nonisolated extension ImageCache {
    /// An entry as a decoder made it: the downloaded bytes (nil once memory no longer has them),
    /// and an image or any other value.
    fileprivate struct Payload {
        var bytes: Data?
        var image: Image?
        var value: Box?
        var noStore = false  // the server said `Cache-Control: no-store`: memory only
    }

    /// A decoded value that is not an image, with its type.
    fileprivate final class Box {
        let value: Any
        let type: ObjectIdentifier
        init<Value>(_ value: Value) {
            self.value = value
            type = ObjectIdentifier(Value.self)
        }
    }

    /// How bytes become an entry: the platform image (the default), or a value of one type.
    fileprivate struct Decoder: @unchecked Sendable {
        let type: ObjectIdentifier?  // nil for the image
        /// The bytes' entry; an image is decoded within `limits` (the settings when the request was
        /// made: the longest side without a size to fill, and when an animation animates).
        let decode: @Sendable (_ data: Data, _ limits: DecodeLimits) -> Result<Payload, Error>

        static let image = Decoder.image(filling: nil)

        /// The image, decoded to fill `size` if given (a binder's), else within the bound, for a
        /// screen of `scale` (a view's; nil or 0: the main screen's, as it is when decoded).
        static func image(filling size: (width: Int, height: Int)?, scale: Double? = nil) -> Decoder {
            Decoder(type: nil) { data, limits in
                let scale = ImageCache.displayScale(scale, screen: ImageCache.screenScale)
                return ImageCache.decode(data, filling: size, limits: limits, scale: scale)
                    .map { Payload(bytes: $0.data, image: $0.image) }
            }
        }

        static func value<Value>(_ decode: @escaping @Sendable (Data) throws -> Value) -> Decoder {
            Decoder(type: ObjectIdentifier(Value.self)) { data, _ in
                Result { Payload(bytes: data, value: Box(try decode(data))) }
                    .mapError { .decodingFailed(String(describing: $0)) }
            }
        }

        func made(_ payload: Payload) -> Bool { type == payload.value?.type && (type != nil || payload.image != nil) }
    }

    /// Everything one load needs, as a public entry point describes it; a ``FetchTask`` keeps its
    /// own, and a ``Download`` its first requester's (whose request and decoder it uses).
    fileprivate struct Load {
        let url: URL?  // the request's; nil only for a `URLRequest` without one, which fails at once
        let request: URLRequest?  // the app's, sent as given; nil for the URL forms (made when sent)
        var key: Key
        var lane: Lane
        var decoder: Decoder
        var onProgress: (@Sendable (Int, Int?) -> Void)? = nil
        var onRetry: (@Sendable (Error, Int) -> Void)? = nil
        var isPrefetch = false

        /// A load of `url` (the forms that take a URL). No `URLRequest` is made until one is sent:
        /// on Linux each is an object, and a memory hit needs none.
        init(_ url: URL, key: String?, slow: Bool = false, _ decoder: Decoder = .image) {
            (self.url, request) = (url, nil)
            self.key = Key(string: key ?? url.absoluteString)
            (lane, self.decoder) = (slow ? .slow : .fast, decoder)
        }

        /// A load of `request` as given: its headers, cache policy and timeout.
        init(_ request: URLRequest, key: String?, slow: Bool = false, _ decoder: Decoder = .image) {
            (url, self.request) = (request.url, request)
            self.key = Key(string: key ?? request.url?.absoluteString ?? "")
            (lane, self.decoder) = (slow ? .slow : .fast, decoder)
        }

        /// Why `request` is not a load at all, if it is not: the cache sends GETs with no body.
        static func refusal(of request: URLRequest) -> Error? {
            guard request.url != nil else { return .invalidRequest("the request has no URL") }
            if let method = request.httpMethod, method != "GET" {
                return .invalidRequest("method \(method); only GET is sent")
            }
            if request.httpBody != nil || request.httpBodyStream != nil { return .invalidRequest("a GET has no body") }
            return nil
        }

        /// Why `url` cannot be downloaded, if it cannot: only http(s) URLs with a host are.
        static func refusal(of url: URL) -> Error? {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                return .unsupportedURL(url.absoluteString)
            }
            return nil
        }
    }

    fileprivate enum Entry {
        case loaded(Int)  // a slot in `Guarded.memory`
        case loading(Download)
        case failed(Error, serial: UInt64)
    }

    /// The one path of every fetch: memory, a download under way, then a new download (which
    /// looks on disk first). `completion` runs on `queue` (``callbackQueue`` by default).
    private func request(_ load: Load, queue: DispatchQueue? = nil,
                         completion: @escaping @Sendable (Result<Delivery, Error>) -> Void,
                         onCancel: (@Sendable () -> Void)? = nil) -> FetchTask {
        let (key, decoder, lane) = (load.key, load.decoder, load.lane)
        let now = currentTime()
        var started: [Download] = []
        var lookUp: (download: Download, maxBytes: Int)?
        var immediate: (result: Result<Delivery, Error>, bytes: Int)?
        var handler: (@Sendable (Event) -> Void)?
        let task: FetchTask = lock.withLock {
            let task = FetchTask(load, cache: self, queue: queue ?? _state.settings.callbackQueue,
                                 completion: completion, onCancel: onCancel)
            /// The request waits for `download`, which moves to the fast lane if the request is fast.
            func join(_ download: Download) -> FetchTask {
                download.waiters.append(task)
                task.download = download
                _state.counts.deduplicated &+= 1
                if lane == .fast, download.lane == .slow {
                    _state.lanes.move(download, to: download.phase, lane: .fast)
                    started = _startReadyDownloads()
                }
                return task
            }
            handler = _state.settings.onEvent
            _state.counts.requests &+= 1
            if load.isPrefetch {
                guard _state.prefetches[key] == nil else {  // prefetched already: this one is not needed
                    task.answer = .delivered
                    return task
                }
                _state.prefetches[key] = task
            }
            if let refusal = load.request.flatMap(Load.refusal(of:)) {
                immediate = (.failure(refusal), 0)
                return task
            }
            switch _state.entries[key] {
            case .loaded(let slot)? where now < _state.memory[slot].downloadedAt + _state.settings.timeToLive
                    && _state.memory[slot].receivedAt <= now + Self.maxClockSkew
                    && decoder.type == _state.memory[slot].type:
                _state.memory.markUsed(slot)
                _state.counts.memoryHits &+= 1
                // No bytes: the entry is of the requested type.
                let payload = Payload(image: _state.memory[slot].image, value: _state.memory[slot].value)
                immediate = (.success(Delivery(payload: payload, source: .memory)), _state.memory[slot].size)
                return task
            case .loaded(let slot)?:
                _evict(slot)
            case .loading(let download)?:
                return join(download)
            case .failed?, nil:
                break
            }
            if let error = Load.refusal(of: task.url) {
                _setFailed(key, error)
                immediate = (.failure(error), 0)
                return task
            }
            // An image evicted lately comes back; a request for another type forgets it (its
            // entry will replace it).
            if decoder.type != nil, _state.secondChanceOrder.count > 0 { secondChance.removeObject(forKey: key) }
            if decoder.type == nil, let found = _secondChance(key, now: now) {
                _state.counts.memoryHits &+= 1
                immediate = (.success(Delivery(payload: Payload(image: found.image), source: .memory)), found.bytes)
                return task
            }
            // A binder's request at a size shares a download of its key under way (a prefetch's,
            // say): it gets that image, whole, rather than download it twice.
            if key.size != 0, case .loading(let whole)? = _state.entries[Key(string: key.string)] { return join(whole) }
            let download = Download(load, limits: _decodeLimits)
            download.waiters.append(task)
            task.download = download
            _state.lanes.move(download, to: .checkingDisk)
            _state.entries[key] = .loading(download)
            if key.size != 0 { _noteSize(key) }
            lookUp = (download, _state.settings.maxImageBytes)
            return task
        }
        if let immediate {
            let event = handler == nil ? nil : Self.event(immediate.result, task.url, from: .memory,
                                                          bytes: immediate.bytes)
            deliver(task, immediate.result, event: event, handler: handler)
        }
        if let lookUp {
            diskQueue.async { self.lookUpOnDisk(lookUp.download, maxBytes: lookUp.maxBytes) }
        }
        startNetwork(started)
        return task
    }

    fileprivate func cancel(_ task: FetchTask) {
        let (cancelled, stopped): (Bool, Stopped?) = lock.withLock {
            guard task.answer == .waiting else { return (false, nil) }
            task.answer = .cancelled
            _endPrefetch(task)
            guard let download = task.download, _isCurrent(download) else { return (true, nil) }
            download.waiters.removeAll { $0 === task }
            return (true, download.waiters.isEmpty ? _forget(download.key) : nil)
        }
        if let stopped { finishStopped([stopped]) }
        if cancelled, let onCancel = task.onCancel { task.queue.async { onCancel() } }
    }

    /// Forgets `task` as the prefetch of its key, if it is (its answer came, or it was cancelled).
    private func _endPrefetch(_ task: FetchTask) {
        if task.load.isPrefetch, _state.prefetches[task.load.key] === task { _state.prefetches[task.load.key] = nil }
    }

}

// MARK: - Download lifecycle

nonisolated extension ImageCache {
    fileprivate enum Lane { case fast, slow }

    /// One key being looked up on disk, queued, downloaded, or waiting to retry, and everyone
    /// waiting for it. Its lane and phase change only through ``Lanes/move(_:to:lane:)``.
    fileprivate final class Download: @unchecked Sendable {  // guarded by the cache's lock
        let load: Load  // the first requester's; the others' decoders decode the bytes themselves
        fileprivate(set) var lane: Lane
        fileprivate(set) var phase = Phase.new
        var stale: (payload: Payload, found: DiskStore.Found)?  // an expired entry on disk, to revalidate
        var waiters: [FetchTask] = []  // cancelled ones leave; all leave when it is delivered
        var attempts = 0
        fileprivate(set) var ticket: UInt64 = 0  // its place in its lane's queue (see `Lanes`)
        enum Phase {
            case new, checkingDisk, queued, running(URLSessionDataTask?), decoding, waitingToRetry, done

            /// The lifecycle, the one place it is written: new -> checkingDisk -> queued | done;
            /// queued -> running (its task set once sent); running -> decoding | done | waitingToRetry;
            /// decoding -> done; waitingToRetry -> queued; and any -> done (forgotten). A phase may
            /// also stay as it is while the download changes lane. `Lanes.move` checks every change
            /// against it. A decoding download's bytes are in: the next one may start (see `startReady`).
            func mayBecome(_ next: Phase) -> Bool {
                switch (self, next) {
                case (_, .done), (.new, .checkingDisk), (.checkingDisk, .queued), (.queued, .running(nil)),
                     (.running(nil), .running), (.running, .decoding), (.running, .waitingToRetry),
                     (.waitingToRetry, .queued):
                    return true
                case (.checkingDisk, .checkingDisk), (.queued, .queued), (.decoding, .decoding),
                     (.waitingToRetry, .waitingToRetry):
                    return true  // a change of lane
                case (.running(let task?), .running(let same)):
                    return task === same  // a change of lane
                default:
                    return false
                }
            }
        }

        let limits: DecodeLimits  // the settings' when it was made

        var key: Key { load.key }
        var url: URL { load.url! }  // checked by `Load.refusal(of:)` before a download is made
        var decoder: Decoder { load.decoder }

        init(_ load: Load, limits: DecodeLimits) {
            self.load = load
            lane = load.lane
            self.limits = limits
        }
    }

    /// The two lanes: which downloads wait for a slot, and how many hold one. Every change of a
    /// download's lane or phase goes through `move`, so the counts cannot drift from the downloads.
    /// A download that leaves a queue stays in it, stale, until it reaches the front (a ticket tells
    /// a live place from a stale one): leaving costs O(1), so cancelling n queued downloads is O(n).
    fileprivate struct Lanes {
        private var fastQueue = FIFO<(download: Download, ticket: UInt64)>()
        private var slowQueue = FIFO<(download: Download, ticket: UInt64)>()
        private var queuedFast = 0  // live places in `fastQueue`
        private var tickets: UInt64 = 0
        private var checkingFast = 0  // fast lookups on disk hold the slow lane back too
        private(set) var runningFast = 0
        private(set) var runningSlow = 0
        private(set) var decoding = 0  // downloads whose bytes are in, waiting for a decode or in one
        private(set) var wrongMoves: [String] = []  // changes the lifecycle does not allow: the first few

        mutating func move(_ download: Download, to phase: Download.Phase, lane: Lane? = nil) {
            if !download.phase.mayBecome(phase), wrongMoves.count < 10 {
                wrongMoves.append("\(download.key.string): \(download.phase) -> \(phase)")
            }
            count(download, -1)
            download.phase = phase
            download.lane = lane ?? download.lane
            count(download, +1)
        }

        /// Takes downloads off the queues as far as the limits allow and marks them running. A
        /// decoding download holds no slot while a decode worker is free for it; those beyond the
        /// workers hold one each, so that bodies waiting to be decoded stay within the lanes' limits.
        mutating func startReady(maxFast: Int) -> [Download] {
            var started: [Download] = []
            let held = max(0, decoding - Decodes.width)
            while runningFast + held < maxFast, let download = Self.popLive(&fastQueue) {
                start(download)
                started.append(download)
            }
            while checkingFast == 0, queuedFast == 0, runningFast == 0, runningSlow == 0, held == 0,
                  let download = Self.popLive(&slowQueue) {
                start(download)
                started.append(download)
            }
            return started
        }

        /// The first download still queued where `queue` has it, past the stale places before it.
        private static func popLive(_ queue: inout FIFO<(download: Download, ticket: UInt64)>) -> Download? {
            while let (download, ticket) = queue.popFirst() {
                if case .queued = download.phase, download.ticket == ticket { return download }
            }
            return nil
        }

        private mutating func start(_ download: Download) {
            move(download, to: .running(nil))
            download.attempts += 1
        }

        /// Adds (`+1`) or takes away (`-1`) a download's share of the queues and counts.
        private mutating func count(_ download: Download, _ sign: Int) {
            let fast = download.lane == .fast
            switch download.phase {
            case .checkingDisk where fast:
                checkingFast += sign
            case .queued:
                if fast { queuedFast += sign }
                if sign > 0 {
                    tickets += 1
                    download.ticket = tickets
                    fast ? fastQueue.append((download, tickets)) : slowQueue.append((download, tickets))
                }
            case .running:
                if fast { runningFast += sign } else { runningSlow += sign }
            case .decoding:
                decoding += sign
            case .new, .checkingDisk, .waitingToRetry, .done:
                break
            }
        }
    }

    /// True while `download` is the one its key's entry waits for: not forgotten, replaced or done.
    private func _isCurrent(_ download: Download) -> Bool {
        if case .loading(let entry)? = _state.entries[download.key] { return entry === download }
        return false
    }

    /// A download taken out of the bookkeeping by `_forget`, to be finished outside the lock.
    private struct Stopped {
        let waiters: [FetchTask]
        let task: URLSessionDataTask?
    }

    /// Removes `key` from memory and from the download bookkeeping. A download it stops leaves its
    /// lane at once, and the caller must pass it to `finishStopped` after unlocking.
    private func _forget(_ key: Key) -> Stopped? {
        switch _state.entries[key] {
        case .loaded(let slot)?:
            _evict(slot)
        case .loading(let download)?:
            _state.entries[key] = nil
            var task: URLSessionDataTask?
            if case .running(let running) = download.phase { task = running }
            _state.lanes.move(download, to: .done)
            defer { download.waiters = [] }
            return Stopped(waiters: download.waiters, task: task)
        case .failed?:
            _state.entries[key] = nil
        case nil:
            break
        }
        return nil
    }

    /// Forgets `key` and its images decoded to a size, when `key` is removed or replaced.
    ///
    /// - Complexity: O(1) plus the sizes `key` has had entries at.
    private func _forgetWithSizes(_ key: Key) -> [Stopped] {
        var stopped = _forget(key).map { [$0] } ?? []
        for size in _state.sizes.removeValue(forKey: key.string) ?? [] {
            _state.sizeRecords -= 1
            if let one = _forget(Key(string: key.string, size: size)) { stopped.append(one) }
        }
        return stopped
    }

    /// Notes that `key`, which has a size, has an entry, for `_forgetWithSizes`. Sizes whose entries
    /// have gone since stay noted (forgetting one that is gone does nothing) until the notes
    /// outnumber the entries: then they are made again from the entries, so that they stay within
    /// twice the entries, at O(1) amortized.
    private func _noteSize(_ key: Key) {
        guard !(_state.sizes[key.string]?.contains(key.size) ?? false) else { return }
        _state.sizes[key.string, default: []].append(key.size)
        _state.sizeRecords += 1
        guard _state.sizeRecords > 2 * _state.entries.count + 64 else { return }
        _state.sizes = [:]
        _state.sizeRecords = 0
        for sized in _state.entries.keys where sized.size != 0 {
            _state.sizes[sized.string, default: []].append(sized.size)
            _state.sizeRecords += 1
        }
    }

    private func _setFailed(_ key: Key, _ error: Error) {
        _state.serial += 1
        let serial = _state.serial
        _state.entries[key] = .failed(error, serial: serial)
        _state.counts.failures &+= 1
        _state.failureOrder.append((key, serial))
        // The FIFO holds live and superseded records alike; the serial tells them apart.
        while _state.failureOrder.count > Self.maxFailuresRemembered,
              let (oldKey, serial) = _state.failureOrder.popFirst() {
            if case .failed(_, serial)? = _state.entries[oldKey] { _state.entries[oldKey] = nil }
        }
    }

    /// Cancels the network tasks of stopped downloads, delivers `result` (a cancellation by
    /// default) to whoever still waits, and starts what the freed slots allow.
    private func finishStopped(_ stopped: [Stopped], with result: Result<Delivery, Error> = .failure(.cancelled)) {
        guard !stopped.isEmpty else { return }
        let started = lock.withLock { _startReadyDownloads() }
        for item in stopped {
            item.task?.cancel()
            deliver(item.waiters, result)
        }
        startNetwork(started)
    }

    /// Looks a download up on disk (on `diskQueue`); a hit ends it, a miss queues it on its lane.
    private func lookUpOnDisk(_ download: Download, maxBytes: Int) {
        let now = currentTime()
        var hit: (payload: Payload, downloadedAt: TimeInterval, receivedAt: TimeInterval)?
        var stale: (payload: Payload, found: DiskStore.Found)?
        if let found = disk.read(DiskStore.fileID(for: download.key.string), now: now, maxBytes: maxBytes) {
            switch download.decoder.decode(found.data, download.limits) {
            case .success(let payload) where found.expired: stale = (payload, found)
            case .success(let payload): hit = (payload, found.file.downloadedAt, found.receivedAt)
            case .failure(let error):
                // A broken image (a torn write) goes; bytes of another kind stay until a download replaces them.
                switch error {
                case .corruptImage, .emptyBody: disk.discard(found, because: "\(error)")
                default: break
                }
            }
        }
        var started: [Download] = []
        var handler: (@Sendable (Event) -> Void)?
        let waiters: [FetchTask]? = lock.withLock {
            handler = _state.settings.onEvent
            guard _isCurrent(download), case .checkingDisk = download.phase else { return nil }
            guard let hit else {
                download.stale = stale
                _state.lanes.move(download, to: .queued)
                _state.counts.misses &+= 1
                started = _startReadyDownloads()
                return []
            }
            _state.counts.diskHits &+= 1
            _state.lanes.move(download, to: .done)
            var kept = hit.payload
            kept.bytes = nil  // they are on disk
            _keepOnDisk(_insert(download.key, kept, size: hit.payload.bytes?.count, downloadedAt: hit.downloadedAt,
                                receivedAt: hit.receivedAt), usedAt: now)
            started = _startReadyDownloads()
            defer { download.waiters = [] }
            return download.waiters
        }
        if let waiters, let hit {
            deliver(waiters, .success(Delivery(payload: hit.payload, source: .disk, limits: download.limits)),
                    event: .served(download.url, from: .disk, bytes: hit.payload.bytes?.count ?? 0), handler: handler)
        }
        startNetwork(started)
    }

    /// What may start now on the lanes; the caller starts it with `startNetwork` after unlocking.
    private func _startReadyDownloads() -> [Download] {
        _state.lanes.startReady(maxFast: _state.settings.maxConcurrentDownloads)
    }

    /// Puts a download that waited to retry back on its lane (unless it was cancelled meanwhile).
    private func requeue(_ download: Download) {
        let started: [Download] = lock.withLock {
            guard _isCurrent(download), case .waitingToRetry = download.phase else { return [] }
            _state.lanes.move(download, to: .queued)
            return _startReadyDownloads()
        }
        startNetwork(started)
    }
}

// MARK: - Network transfer

nonisolated extension ImageCache {
    /// Sends the first request of each download (or its next attempt): the load's request with the
    /// cache's headers and the revalidation's, as ``requestModifier`` makes it. A request it
    /// refuses fails its download at once, and what that frees is started in the same loop.
    private func startNetwork(_ downloads: [Download]) {
        var batch = downloads
        while !batch.isEmpty {
            var freed: [Download] = []
            let (settings, stale) = lock.withLock { (_state.settings, batch.map(\.stale)) }
            for (download, stale) in zip(batch, stale) {
                switch request(for: download, settings, stale?.found.validators) {
                case .failure(let refusal):
                    freed += networkFinished(download, .failure(refusal), response: nil)
                case .success(let request):
                    let task: URLSessionDataTask? = lock.withLock {
                        guard case .running(nil) = download.phase else { return nil }
                        let task = transport.send(request, for: download, limit: settings.maxImageBytes,
                                                  seconds: _state.settings.downloadTimeLimit, stale: stale?.payload)
                        _state.lanes.move(download, to: .running(task))
                        return task
                    }
                    task?.resume()
                }
            }
            batch = freed
        }
    }

    /// The request of a download's next attempt, or why ``requestModifier`` made it one that cannot
    /// be sent. The modifier runs here, outside the lock: it is the app's code.
    private func request(for download: Download, _ settings: Settings,
                         _ validators: Validators?) -> Result<URLRequest, Error> {
        var request = download.load.request ?? URLRequest(url: download.url, cachePolicy: .reloadIgnoringLocalCacheData,
                                                          timeoutInterval: settings.requestTimeout)
        if request.value(forHTTPHeaderField: "Accept") == nil {
            request.setValue("image/*, */*;q=0.8", forHTTPHeaderField: "Accept")
        }
        if request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")  // images are compressed already
        }
        validators?.ask(&request)
        guard let modifier = settings.requestModifier else { return .success(request) }
        guard let modified = modifier(request) else {
            return .failure(.invalidRequest("the request modifier returned nil"))
        }
        if let refusal = Load.refusal(of: modified) ?? modified.url.flatMap(Load.refusal(of:)) {
            return .failure(refusal)
        }
        return .success(modified)
    }

    /// One network attempt: its download, its limits, and the bytes and response that the session's
    /// serial delegate queue alone fills and reads.
    fileprivate final class Transfer: @unchecked Sendable {
        let download: Download
        let task: URLSessionDataTask
        let limit: Int
        let seconds: TimeInterval  // its time limit, from its start to `deadline`
        let deadline: DispatchTime
        let stale: Payload?  // the expired entry it revalidates, if any: a `304` delivers it
        var response: URLResponse?
        var data = Data()
        var expected: Int?  // the length announced, for `onProgress` (nil: none, or compressed)
        var nextProgress: UInt64 = 0  // when `onProgress` may be called again, in uptime nanoseconds
        var failure: Error?  // set when the transport stopped the transfer itself
        var timedOut: Error?  // set when its time limit passed; guarded by the transport's lock

        init(_ download: Download, _ task: URLSessionDataTask, limit: Int, seconds: TimeInterval, stale: Payload?) {
            (self.download, self.task, self.limit, self.seconds, self.stale) = (download, task, limit, seconds, stale)
            deadline = .now() + seconds
        }
    }

    /// The network: one `URLSession` with this object as its delegate, the transfers under way, and
    /// the one timer of their time limits. It keeps no download's bookkeeping: it hands progress
    /// and each finished transfer to the cache. Its `lock` is taken after the cache's, never
    /// before, and never held while it calls the cache.
    fileprivate final class Transport: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        weak var cache: ImageCache?  // the session holds its delegate until it is invalidated
        private let lock = NSLock()
        // Guarded by `lock`: the session (set in `init`, once `self` exists to be its delegate; made
        // again when the timeout changes), the transfers by task, and the timer with its deadline.
        private var session: URLSession?
        private var transfers: [ObjectIdentifier: Transfer] = [:]
        private var timer: DispatchSourceTimer?
        private var nextDeadline: DispatchTime?  // what `timer` is set for; nil when idle

        init(_ configuration: URLSessionConfiguration, timeout: TimeInterval) {
            super.init()
            session = makeSession(configuration, timeout: timeout)
        }

        private func makeSession(_ configuration: URLSessionConfiguration, timeout: TimeInterval) -> URLSession {
            configuration.timeoutIntervalForRequest = timeout
            return URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        }

        /// A task that sends `request` for `download`, to be resumed by the caller: under the
        /// cache's lock, so that a download stopped meanwhile cannot miss its task.
        func send(_ request: URLRequest, for download: Download, limit: Int, seconds: TimeInterval,
                  stale: Payload?) -> URLSessionDataTask {
            lock.withLock {
                let task = session!.dataTask(with: request)
                let transfer = Transfer(download, task, limit: limit, seconds: seconds, stale: stale)
                transfers[ObjectIdentifier(task)] = transfer
                _setTimer(for: transfer.deadline)
                return task
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

        private func transfer(for task: URLSessionTask) -> Transfer? {
            lock.withLock { transfers[ObjectIdentifier(task)] }
        }

        /// The response head: stops at once on an error status or an announced length over the
        /// limit, so that neither body is read.
        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            guard let transfer = transfer(for: dataTask) else { return completionHandler(.cancel) }
            transfer.response = response
            let length = response.expectedContentLength
            // Sized once when announced: growing by doubling would keep up to twice the bytes alive.
            if length > 0, length <= Int64(transfer.limit) { transfer.data.reserveCapacity(Int(length)) }
            let http = response as? HTTPURLResponse
            let encoding = http?.value(forHTTPHeaderField: "Content-Encoding")?.lowercased() ?? "identity"
            transfer.expected = length >= 0 && encoding == "identity" ? Int(length) : nil
            let status = http?.statusCode ?? 200
            if !(200..<300).contains(status), status != 304 {
                transfer.failure = .httpStatus(status)
            } else if length > Int64(transfer.limit) {
                transfer.failure = .tooLarge(limit: transfer.limit)
            }
            guard transfer.failure == nil else { return stop(transfer, completionHandler) }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            guard let transfer = transfer(for: dataTask),
                  transfer.failure == nil else { return }  // cancelled already; libcurl may hand over more
            guard transfer.data.count + data.count <= transfer.limit else {
                transfer.failure = .tooLarge(limit: transfer.limit)
                return stop(transfer, nil)
            }
            transfer.data.append(data)
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= transfer.nextProgress {
                transfer.nextProgress = now + 50_000_000  // at most 20 calls a second
                cache?.progress(transfer.download, received: transfer.data.count, expected: transfer.expected)
            }
        }

        /// Cancels a transfer the transport failed itself. corelibs' `cancel()` waits while libcurl
        /// inflates the burst it is in; the delegate queue must go on dropping chunks meanwhile (a
        /// 149 KB gzip bomb piled up 170 MB), so not there, nor on a GCD worker that can starve it.
        private func stop(_ transfer: Transfer, _ completionHandler: ((URLSession.ResponseDisposition) -> Void)?) {
            let task = transfer.task
            Thread.detachNewThread { task.cancel() }
            completionHandler?(.cancel)  // which corelibs ignores
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Swift.Error?) {
            guard let (transfer, timedOut) = lock.withLock({
                transfers.removeValue(forKey: ObjectIdentifier(task)).map { ($0, $0.timedOut) }
            }) else { return }
            // The time limit stopped it only if it did not complete meanwhile.
            cache?.transferred(transfer, stopped: transfer.failure ?? (error == nil ? nil : timedOut), error: error)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask,
                        willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
            completionHandler(HTTP.redirect(response, request, from: task.originalRequest))
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

        /// Stops the transfers whose time limit has passed (they complete with `timedOut`), and sets
        /// the timer for the next deadline, if any transfer is left.
        private func deadlinesPassed() {
            let now = DispatchTime.now()
            let late: [URLSessionDataTask] = lock.withLock {
                nextDeadline = nil
                var late: [URLSessionDataTask] = []
                for transfer in transfers.values where transfer.timedOut == nil {
                    guard transfer.deadline <= now else { _setTimer(for: transfer.deadline); continue }
                    let limit = String(format: "%g", transfer.seconds)
                    transfer.timedOut = .network(.timedOut,
                                                 "no complete response within the \(limit)-second limit per download")
                    late.append(transfer.task)
                }
                return late
            }
            for task in late { task.cancel() }
        }
    }

    /// Tells the waiters of `download` that have an `onProgress` how far it is, each on its queue,
    /// unless it was answered or cancelled meanwhile.
    fileprivate func progress(_ download: Download, received: Int, expected: Int?) {
        for task in lock.withLock({ _progressed(download, received: received) }) {
            task.queue.async { if task.isWaiting { task.load.onProgress?(received, expected) } }
        }
    }

    /// The waiters to tell that `received` bytes are in: those with an `onProgress` that were told
    /// less (so never less, even after a retry, and never twice the same), marked as told.
    private func _progressed(_ download: Download, received: Int) -> [FetchTask] {
        download.waiters.filter { task in
            guard task.load.onProgress != nil, received > task.progress else { return false }
            task.progress = received
            return true
        }
    }

    /// A transfer has ended: `stopped` by the transport (a limit, or its time limit, which
    /// URLSession reports as a cancellation), or with URLSession's `error`, or whole. Its body is
    /// checked here and decoded on `decodes` (see ``Decodes``: not on this delegate queue).
    fileprivate func transferred(_ transfer: Transfer, stopped: Error?, error: Swift.Error?) {
        let download = transfer.download
        let notModified = (transfer.response as? HTTPURLResponse)?.statusCode == 304 && error == nil
            && transfer.stale != nil
        // `body`: the bytes, whole, for waiters of another type when the download's decoder fails.
        let finish: @Sendable (Result<Payload, Error>, _ body: Data?) -> Void = { result, body in
            let whole = body.map { _ in (transfer.data.count, transfer.expected) }
            self.startNetwork(self.networkFinished(download, result, bytes: body, response: transfer.response,
                                                   notModified: notModified, whole: whole))
        }
        if let stopped { return finish(.failure(stopped), nil) }
        if notModified, let stale = transfer.stale { return finish(.success(stale), nil) }
        switch HTTP.validate(data: transfer.data, response: transfer.response, error: error) {
        case .failure(let error):
            finish(.failure(error), nil)
        case .success(let body):
            // The bytes are in: the download's slot goes to the next one while this one decodes.
            let started: [Download]? = lock.withLock {
                guard _isCurrent(download), case .running = download.phase else { return nil }
                _state.lanes.move(download, to: .decoding)
                return _startReadyDownloads()
            }
            guard let started else { return }  // forgotten meanwhile: nobody waits for it
            startNetwork(started)
            decodes.async {
                // One forgotten while it waited for a worker (a cell scrolled away) is not decoded.
                guard self.lock.withLock({ self._isCurrent(download) }) else { return }
                finish(download.decoder.decode(body, download.limits), body)
            }
        }
    }

    /// Where downloaded bytes are decoded: in the order they came, at most two at a time, on a queue
    /// of their own (never URLSession's delegate queue, where one large decode would hold back every
    /// transfer's data). A decode that ends takes the next waiting one in the same block. (An
    /// `OperationQueue`'s own machinery was ~10% of the CPU in a profile of 50 KB downloads on Linux.)
    fileprivate final class Decodes: @unchecked Sendable {
        private let queue: DispatchQueue
        private let lock = NSLock()
        private var waiting = FIFO<@Sendable () -> Void>()  // guarded by `lock`
        private var running = 0  // guarded by `lock`
        static let width = 2  // decodes at once

        init(label: String) {
            queue = DispatchQueue(label: label, qos: .userInitiated, attributes: .concurrent)
        }

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

    /// Ends a network attempt: the entry goes to memory and disk and the waiters get it, or it is
    /// retried later, or it failed. `whole` is the body's size (and the announced one), which the
    /// waiters with an `onProgress` hear before their completion. Returns what may start now, for
    /// the caller to start (here it would nest one call per queued download that fails at once).
    private func networkFinished(_ download: Download, _ result: Result<Payload, Error>, bytes: Data? = nil,
                                 response: URLResponse?, notModified: Bool = false,
                                 whole: (Int, Int?)? = nil) -> [Download] {
        let now = currentTime()
        var delivery = result.map { Delivery(payload: $0, source: .network, limits: download.limits) }
        var started: [Download] = []
        var retry: (attempt: Int, delay: TimeInterval, error: Error)?
        var handler: (@Sendable (Event) -> Void)?
        let waiters: [FetchTask]? = lock.withLock {
            handler = _state.settings.onEvent
            guard _isCurrent(download) else { return nil }
            switch download.phase {
            case .running, .decoding: break
            default: return nil
            }
            let policy = _state.settings.retryPolicy
            let offline = _state.settings.servesStaleWhenOffline ? download.stale : nil
            if let whole {  // the body is whole, whatever its decoder made of it
                for task in _progressed(download, received: whole.0) { task.finalProgress = whole }
            }
            switch result {
            case .success(let payload):
                _state.lanes.move(download, to: .done)
                let cacheControl = HTTP.CachePolicy(response, usesMaxAge: _state.settings.usesServerMaxAge)
                // The time the entry counts as downloaded: its time to live runs out at the server's max-age.
                let downloadedAt = cacheControl.maxAge.map { now + $0 - _state.settings.timeToLive } ?? now
                var payload = payload
                let size = payload.bytes?.count
                payload.noStore = cacheControl.noStore
                if notModified || cacheControl.noStore { payload.bytes = nil }  // on disk already, or never to be
                _keepOnDisk(_insert(download.key, payload, size: size, downloadedAt: downloadedAt, receivedAt: now),
                            usedAt: now)
                if !notModified { _state.counts.bytesDownloaded &+= size ?? 0 }
                if notModified, let found = download.stale?.found {
                    _state.counts.revalidated &+= 1
                    _queueOnDisk(.renew(found, downloadedAt: downloadedAt, receivedAt: now))
                } else if cacheControl.noStore {
                    _queueOnDisk(.remove(download.key.string))
                } else {
                    _queueOnDisk(.write(DiskStore.Item(url: download.key.string, data: payload.bytes,
                                                       size: payload.bytes?.count ?? 0, downloadedAt: downloadedAt,
                                                       receivedAt: now, validators: Validators(response)),
                                        key: download.key, usedAt: now))
                }
            case .failure(let error) where !error.isFatal && error != .cancelled
                    && download.attempts <= policy.maxRetries:
                _state.lanes.move(download, to: .waitingToRetry)
                retry = (download.attempts,
                         policy.delay(attempt: download.attempts, retryAfter: HTTP.retryAfter(response)), error)
            case .failure(let error) where !error.isFatal && error != .cancelled && offline != nil:
                _state.lanes.move(download, to: .done)
                _state.entries[download.key] = nil  // expired: not for memory; the disk keeps it
                if let offline {
                    delivery = .success(Delivery(payload: offline.payload, source: .disk, isStale: true,
                                                 limits: download.limits))
                }
            case .failure(let error):
                _state.lanes.move(download, to: .done)
                _setFailed(download.key, error)
                if let bytes {  // waiters of another type decode the bytes themselves
                    delivery = .success(Delivery(payload: Payload(bytes: bytes), source: .network,
                                                 failed: (download.decoder.type, error), limits: download.limits))
                }
            }
            started = _startReadyDownloads()
            defer { if retry == nil { download.waiters = [] } }
            return download.waiters
        }
        guard let waiters else { return [] }
        if let retry {
            emit(.retrying(download.url, attempt: retry.attempt, delay: retry.delay, error: retry.error))
            for task in waiters where task.load.onRetry != nil {
                task.queue.async { if task.isWaiting { task.load.onRetry?(retry.error, retry.attempt) } }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + retry.delay) { self.requeue(download) }
        } else {
            let size = (try? delivery.get().payload.bytes?.count ?? 0) ?? 0
            let source = (try? delivery.get().source) ?? .network
            let outcome = delivery.flatMap { $0.failed.map { .failure($0.error) } ?? .success($0) }
            deliver(waiters, delivery, event: Self.event(outcome, download.url, from: source, bytes: size),
                    handler: handler)
        }
        return started
    }

}

// MARK: - Delivery

nonisolated extension ImageCache {
    /// What a download or a memory hit hands to each waiter.
    fileprivate struct Delivery {
        let payload: Payload
        let source: Source
        var isStale = false
        var failed: (type: ObjectIdentifier?, error: Error)?  // the download's decoder rejected the bytes
        var limits = DecodeLimits()  // the download's, for a waiter whose decoder reads the bytes
    }

    /// A waiter's own value from a delivery: what the delivery holds if its decoder made it, else
    /// its decoder's reading of the bytes (a download shared by requests for two types).
    fileprivate static func resolve<Value>(_ delivery: Delivery, _ decoder: Decoder) -> Result<Fetched<Value>, Error> {
        if let failed = delivery.failed, failed.type == decoder.type { return .failure(failed.error) }
        let payload = decoder.made(delivery.payload) ? Result.success(delivery.payload)
            : decoder.decode(delivery.payload.bytes ?? delivery.payload.image.flatMap(downloadedBytes(of:)) ?? Data(),
                             delivery.limits)
        return payload.flatMap { payload in
            guard let value = (decoder.type == nil ? payload.image as Any? : payload.value?.value) as? Value else {
                return .failure(.decodingFailed("the entry is not a \(Value.self)"))
            }
            return .success(Fetched(value: value, source: delivery.source, isStale: delivery.isStale))
        }
    }

    /// A delivery as an image: the one it holds, or the bytes decoded as one (a download shared
    /// with a request for another type). No generic cast where it holds one.
    private static func image(_ result: Result<Delivery, Error>) -> Result<Fetched<Image>, Error> {
        result.flatMap { delivery in
            guard let image = delivery.payload.image else { return resolve(delivery, .image) }
            return .success(Fetched(value: image, source: delivery.source, isStale: delivery.isStale))
        }
    }

    /// Runs every waiter's callback on its queue, once, unless it was cancelled; `event` goes to
    /// the event handler first, in the same block as the first queue's callbacks.
    private func deliver(_ tasks: [FetchTask], _ result: Result<Delivery, Error>,
                         event: Event? = nil, handler: (@Sendable (Event) -> Void)? = nil) {
        if tasks.count == 1 { return deliver(tasks[0], result, event: event, handler: handler) }
        let result = Unchecked(result)  // a UIImage or NSImage is used on one queue at a time
        var queues: [DispatchQueue] = []  // in the order of their first task
        for task in tasks where !queues.contains(where: { $0 === task.queue }) { queues.append(task.queue) }
        for (index, queue) in queues.enumerated() {
            queue.async {
                if index == 0, let event, let handler { handler(event) }
                for task in tasks where task.queue === queue { self.complete(task, result.value) }
            }
        }
    }

    /// `deliver` for one task (a memory hit, say): no array, no grouping to pay for.
    private func deliver(_ task: FetchTask, _ result: Result<Delivery, Error>,
                         event: Event?, handler: (@Sendable (Event) -> Void)?) {
        let result = Unchecked(result)
        task.queue.async {
            if let event, let handler { handler(event) }
            self.complete(task, result.value)
        }
    }

    /// Runs a task's callback, on its queue, unless it was cancelled or already ran; first its
    /// `onProgress` with the whole size, if the download left it one.
    private func complete(_ task: FetchTask, _ result: Result<Delivery, Error>) {
        let (due, progress): (Bool, (received: Int, expected: Int?)?) = lock.withLock {
            guard task.answer == .waiting else { return (false, nil) }
            task.answer = .delivered
            _endPrefetch(task)
            return (true, task.finalProgress)
        }
        guard due else { return }
        if let progress { task.load.onProgress?(progress.received, progress.expected) }
        task.completion(result)
    }

    /// Sends an event that has no callbacks with it to the handler, on `callbackQueue`.
    fileprivate func emit(_ event: Event) {
        let (handler, queue) = lock.withLock { (_state.settings.onEvent, _state.settings.callbackQueue) }
        guard let handler else { return }
        queue.async { handler(event) }
    }
}

// MARK: - HTTP

nonisolated extension ImageCache {
    /// What the cache reads in HTTP: a redirect's target and headers, whether a body is whole, and
    /// what `Cache-Control` and `Retry-After` say.
    enum HTTP {
        /// The request a redirect is followed with. The headers of the request as sent go with it to
        /// the same origin (scheme, host and port) only; to another, just the cache's own (`Accept`,
        /// `Accept-Encoding`, the revalidation's), so that an `Authorization`, a cookie or any header
        /// the app or ``requestModifier`` gave one host never reaches another. Nil (not followed, the
        /// load fails with its 3xx) for a target that is not http(s). The target is the response's
        /// `Location` (corelibs proposes an http URL on the same host for a `file:` location).
        fileprivate static func redirect(_ response: HTTPURLResponse, _ proposed: URLRequest,
                                         from sent: URLRequest?) -> URLRequest? {
            let location = response.value(forHTTPHeaderField: "Location")
                .flatMap { URL(string: $0, relativeTo: response.url) }
            guard let url = location?.absoluteURL ?? proposed.url, Load.refusal(of: url) == nil else { return nil }
            var next = URLRequest(url: url, cachePolicy: sent?.cachePolicy ?? .reloadIgnoringLocalCacheData,
                                  timeoutInterval: sent?.timeoutInterval ?? proposed.timeoutInterval)
            func origin(_ url: URL?) -> [String?] {
                let scheme = url?.scheme?.lowercased()
                return [scheme, url?.host?.lowercased(), String(url?.port ?? (scheme == "https" ? 443 : 80))]
            }
            let sameOrigin = origin(url) == origin(sent?.url)
            let ownHeaders: Set<String> = ["accept", "accept-encoding", "if-none-match", "if-modified-since"]
            for (name, value) in sent?.allHTTPHeaderFields ?? [:]
                where sameOrigin || ownHeaders.contains(name.lowercased()) {
                next.setValue(value, forHTTPHeaderField: name)
            }
            return next
        }

        /// Checks a finished transfer: its status, and that its body is whole. A body sent compressed
        /// (a server that ignored `Accept-Encoding: identity`) arrives inflated: its Content-Length
        /// says nothing of it.
        fileprivate static func validate(data: Data, response: URLResponse?,
                                         error: Swift.Error?) -> Result<Data, Error> {
            let encoding = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Encoding") ?? ""
            let identity = ["", "identity"].contains(encoding.trimmingCharacters(in: .whitespaces).lowercased())
            let expected = identity ? response?.expectedContentLength ?? -1 : -1
            let truncated: Error? = expected > 0 && Int64(data.count) < expected
                ? .truncatedBody(expected: expected, received: data.count) : nil
            if let error {
                let code = (error as? URLError)?.code ?? .unknown
                if code == .cancelled { return .failure(.cancelled) }
                // libcurl reports a body cut short as a generic error: say what it was.
                if let truncated { return .failure(truncated) }
                let text = (error as? URLError)?.localizedDescription ?? String(describing: error)
                return .failure(.network(code, text))
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 200
            guard (200..<300).contains(status) else { return .failure(.httpStatus(status)) }
            if let truncated { return .failure(truncated) }
            return data.isEmpty ? .failure(.emptyBody) : .success(data)
        }

        /// What a response's `Cache-Control` says about keeping it.
        fileprivate struct CachePolicy {
            var noStore = false
            var maxAge: TimeInterval?  // only when the cache is told to use it

            init(_ response: URLResponse?, usesMaxAge: Bool) {
                let value = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control")?.lowercased()
                    ?? ""
                for directive in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                    if directive == "no-store" { noStore = true }
                    let digits = directive.dropFirst(8)  // after "max-age="
                    // Digits only (not "inf" or "1e999"), at most 2^31 seconds (RFC 9111, 1.2.2).
                    if usesMaxAge, directive.hasPrefix("max-age="), !digits.isEmpty,
                       digits.allSatisfy({ ("0"..."9").contains($0) }) {
                        maxAge = min(Double(digits) ?? 0, 2_147_483_648)
                    }
                }
            }
        }

        /// A `Retry-After` header in seconds, from a number of seconds or an HTTP date.
        static func retryAfter(_ response: URLResponse?) -> TimeInterval? {
            guard let http = response as? HTTPURLResponse,
                  let value = http.value(forHTTPHeaderField: "Retry-After")?.trimmingCharacters(in: .whitespaces)
            else { return nil }
            if let seconds = TimeInterval(value) { return max(0, seconds) }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            return formatter.date(from: value).map { max(0, $0.timeIntervalSinceNow) }
        }
    }
}

// MARK: - Memory tier

nonisolated extension ImageCache {
    fileprivate final class SecondChance {
        let slot: MemoryList.Slot
        let serial: UInt64
        init(_ slot: MemoryList.Slot, serial: UInt64) {
            self.slot = slot
            self.serial = serial
        }
    }

    /// Where evicted images wait for their second chance. On Apple platforms an `NSCache`, so that
    /// the system may take the images back under memory pressure. Elsewhere a dictionary: no system
    /// takes memory back there, and corelibs' `NSCache` would cost ~3 us an insert (it keeps a
    /// cost-sorted list) and evict the newest entry first.
    fileprivate final class SecondChanceShelf {
        #if canImport(UIKit) || canImport(AppKit)
        private let cache = NSCache<NSString, SecondChance>()  // NSString keys compare code units, as `Key` does bytes
        func object(forKey key: Key) -> SecondChance? { cache.object(forKey: key.string as NSString) }
        func setObject(_ object: SecondChance, forKey key: Key) {
            cache.setObject(object, forKey: key.string as NSString)
        }
        func removeObject(forKey key: Key) { cache.removeObject(forKey: key.string as NSString) }
        func removeAllObjects() { cache.removeAllObjects() }
        #else
        private var items: [Key: SecondChance] = [:]
        func object(forKey key: Key) -> SecondChance? { items[key] }
        func setObject(_ object: SecondChance, forKey key: Key) { items[key] = object }
        func removeObject(forKey key: Key) { items[key] = nil }
        func removeAllObjects() { items = [:] }
        #endif
    }

    /// Memory entries in CLOCK order: a doubly linked list threaded through an array, newest insert
    /// first, and a reference bit per entry. A use only sets the bit; eviction takes the oldest
    /// entry whose bit is clear, and an older one whose bit is set gets a second pass (bit cleared,
    /// moved to the front). A hit writes one byte at most; an insert or an eviction is O(1)
    /// amortized, with no allocation and no reference counting.
    fileprivate struct MemoryList {
        struct Slot {
            var key: Key
            var image: Image?
            var value: Box?  // what a decoder other than the image's made
            var type: ObjectIdentifier? { value?.type }  // nil for an image, as `Decoder.type`
            var noStore = false
            var data: Data?  // the downloaded bytes, until they are known to be on disk
            var size: Int  // of the downloaded bytes
            var cost: Int  // what the image costs in memory, in bytes
            var downloadedAt: TimeInterval
            var receivedAt: TimeInterval  // `downloadedAt` less a max-age's shift: later than the clock, not trusted
            var referenced = false  // used since eviction last passed it
            var previous = -1
            var next = -1

            var payload: Payload { Payload(bytes: data, image: image, value: value, noStore: noStore) }

            /// What the disk needs to keep this entry: the downloaded bytes if memory still has them.
            var item: DiskStore.Item {
                DiskStore.Item(url: key.string, data: data ?? image.flatMap(ImageCache.downloadedBytes(of:)),
                               size: size, downloadedAt: downloadedAt, receivedAt: receivedAt)
            }
        }
        private var slots: [Slot] = []
        private var free: [Int] = []
        private var head = -1
        private var last = -1
        private(set) var bytes = 0  // the sum of the costs

        var count: Int { slots.count - free.count }

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
            bytes += slot.cost
            return index
        }

        /// Moves the slot out (no copy, so no reference counting), leaving an empty one.
        @discardableResult
        mutating func remove(_ index: Int) -> Slot {
            unlink(index)
            var slot = Slot(key: Key(string: ""), size: 0, cost: 0, downloadedAt: 0, receivedAt: 0)
            swap(&slot, &slots[index])
            free.append(index)
            bytes -= slot.cost
            return slot
        }

        /// Counts as a use: sets the reference bit, written only when it is clear (a hit on a hot
        /// entry writes nothing).
        mutating func markUsed(_ index: Int) {
            if !slots[index].referenced { slots[index].referenced = true }
        }

        /// The entry eviction takes next, nil when empty: the oldest whose bit is clear, after the
        /// older ones with a set bit have had it cleared and gone to the front.
        ///
        /// - Complexity: O(1) amortized: a pass clears each bit once.
        mutating func victim() -> Int? {
            while last >= 0, slots[last].referenced {
                let index = last
                slots[index].referenced = false
                unlink(index)
                link(index)
            }
            return last < 0 ? nil : last
        }

        /// Every entry in the order eviction would take them (without changing anything): oldest
        /// first those not used since eviction last passed them, then oldest first those used.
        ///
        /// - Complexity: O(count).
        func indicesFromLeastRecent() -> [Int] {
            var unused: [Int] = [], used: [Int] = []
            unused.reserveCapacity(count)
            var index = last
            while index >= 0 {
                if slots[index].referenced { used.append(index) } else { unused.append(index) }
                index = slots[index].previous
            }
            return unused + used
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

    /// Puts an entry in memory, then evicts while memory is over a limit; returns what it evicted,
    /// for `_keepOnDisk`. An entry that costs more than a quarter of the byte budget is not kept.
    private func _insert(_ key: Key, _ payload: Payload, size: Int? = nil, downloadedAt: TimeInterval,
                         receivedAt: TimeInterval? = nil) -> [MemoryList.Slot] {
        let size = size ?? payload.bytes?.count ?? 0
        let cost = payload.image.map(Self.memoryCost(of:)) ?? size
        guard cost <= _state.settings.memoryMaxBytes / 4 else {
            if case .loaded(let old)? = _state.entries.removeValue(forKey: key) { _state.memory.remove(old) }
            return []
        }
        // Insert first and evict after, so that the key is hashed once. The new entry's bit is set
        // meanwhile, so that its own eviction passes it (a second pass) instead of taking it when
        // every older entry was used; then it is clear, as for any entry not used since.
        let slot = _state.memory.insert(.init(key: key, image: payload.image, value: payload.value,
                                              noStore: payload.noStore, data: payload.bytes, size: size, cost: cost,
                                              downloadedAt: downloadedAt, receivedAt: receivedAt ?? downloadedAt,
                                              referenced: true))
        if case .loaded(let old)? = _state.entries.updateValue(.loaded(slot), forKey: key) { _state.memory.remove(old) }
        defer { _state.memory[slot].referenced = false }
        return _evictOverLimits()
    }

    /// When memory is over its count or byte limit, evicts the least recently used images (in
    /// CLOCK order, see `MemoryList`) in one batch: a tenth of the count cap over the cap, down to
    /// 90% of the byte budget over that. The batch's 8 most recent go to the second chance, which
    /// shares both limits with memory.
    private func _evictOverLimits() -> [MemoryList.Slot] {
        let (cap, budget) = (_state.settings.memoryMaxCount, _state.settings.memoryMaxBytes)
        var evicted: [MemoryList.Slot] = []
        let (overCount, overBytes) = (_state.memory.count > cap, _state.memory.bytes > budget)
        if overCount || overBytes {
            let batch = max(1, cap / 10)
            while _state.memory.count > cap || (overCount && evicted.count < batch)
                    || (overBytes && _state.memory.bytes > budget - budget / 10), let victim = _state.memory.victim() {
                evicted.append(_evict(victim))
            }
            _state.counts.evictions &+= evicted.count
            // Only the most recent few: the second chance is for what was just evicted, and an
            // NSCache insert is not cheap.
            for slot in evicted.suffix(8) where slot.image != nil { _keepSecondChance(slot) }
        }
        // Everything `peek` can return stays within the limits: memory first, the second chance after.
        while _state.secondChanceOrder.count > min(64, max(1, cap / 5))
                || _state.memory.count + _state.secondChanceOrder.count > cap
                || _state.secondChanceBytes > budget - _state.memory.bytes,
              let (oldKey, serial, cost) = _state.secondChanceOrder.popFirst() {
            _state.secondChanceBytes -= cost
            if secondChance.object(forKey: oldKey)?.serial == serial { secondChance.removeObject(forKey: oldKey) }
        }
        return evicted
    }

    /// Takes an entry out of memory; returns it, for `_keepOnDisk`.
    @discardableResult
    private func _evict(_ slot: Int) -> MemoryList.Slot {
        let gone = _state.memory.remove(slot)
        _state.entries[gone.key] = nil
        return gone
    }

    /// Queues memory's entries for the disk: each is written unless its file is there already, in
    /// which case it is marked as used (least recent first, so that the order of use is kept).
    private func _keepOnDisk(_ slots: [MemoryList.Slot], usedAt now: TimeInterval) {
        let items = slots.filter { !$0.noStore }.map(\.item)
        guard !items.isEmpty else { return }
        _queueOnDisk(.keep(items, usedAt: now))
    }

    /// Records a second chance; its record in `secondChanceOrder` counts against memory's limits
    /// until it is popped (a record whose image left early still counts: the bound errs low).
    private func _keepSecondChance(_ slot: MemoryList.Slot) {
        guard slot.key.size == 0 else { return }  // no sizes: the shelf is keyed by the string
        _state.serial += 1
        secondChance.setObject(SecondChance(slot, serial: _state.serial), forKey: slot.key)
        _state.secondChanceOrder.append((slot.key, _state.serial, slot.cost))
        _state.secondChanceBytes += slot.cost
    }

    private func _forgetSecondChances() {
        secondChance.removeAllObjects()
        _state.secondChanceOrder = FIFO()
        _state.secondChanceBytes = 0
    }

    /// The second chance: an image evicted lately comes back into memory.
    private func _secondChance(_ key: Key, now: TimeInterval) -> (image: Image, bytes: Int)? {
        guard key.size == 0, let found = secondChance.object(forKey: key)?.slot,
              let image = found.image else { return nil }
        secondChance.removeObject(forKey: key)
        guard now < found.downloadedAt + _state.settings.timeToLive,
              found.receivedAt <= now + Self.maxClockSkew else { return nil }
        // If its file is gone meanwhile, the next eviction, purge or persist writes it again.
        _keepOnDisk(_insert(key, found.payload, size: found.size, downloadedAt: found.downloadedAt,
                            receivedAt: found.receivedAt), usedAt: now)
        return (image, found.size)
    }

    /// Drops the downloaded bytes of `key`'s memory slot once they are on disk, where the image
    /// does not hold them itself (it does on Linux).
    private func bytesAreOnDisk(_ key: Key, downloadedAt: TimeInterval) {
        lock.withLock {
            if case .loaded(let slot)? = _state.entries[key], _state.memory[slot].downloadedAt == downloadedAt {
                _state.memory[slot].data = nil
            }
        }
    }

    /// At most this many failures are remembered for `error(for:)`, the oldest forgotten first.
    private static let maxFailuresRemembered = 1_000

    /// How far ahead of the clock a download date may lie, in seconds, and still be trusted: the
    /// clocks of processes sharing a folder disagree by a little. An entry downloaded further in the
    /// future (a clock set back, a restored backup, a file dated 2100) has expired, in memory and on
    /// disk, and the sweep counts its file as the least recently used. (A server's max-age longer
    /// than the time to live moves the date ahead on purpose: that shift is kept and allowed for.)
    fileprivate static let maxClockSkew: TimeInterval = 60

}

// MARK: - Disk tier

nonisolated extension ImageCache {
    /// What the disk is told to do: every change to the disk goes through `_queueOnDisk`.
    fileprivate enum DiskWork: @unchecked Sendable {  // its images and data are not used until it runs
        case write(DiskStore.Item, key: Key, usedAt: TimeInterval)  // a new entry: memory then drops its bytes
        case keep([DiskStore.Item], usedAt: TimeInterval)
        case touch([String], at: TimeInterval)
        case renew(DiskStore.Found, downloadedAt: TimeInterval, receivedAt: TimeInterval)
        case remove(String)
        case removeAll
        case reduce(recency: [String], maxCount: Int, maxBytes: Int, now: TimeInterval)
        case setting(@Sendable (DiskStore) -> Void)
    }

    /// Queues `work` on the disk queue. Called with the lock held, so that disk work runs in the
    /// order the bookkeeping changed: no write of an entry that `remove` or `removeAll` forgot can
    /// follow them. (Reads, `lookUpOnDisk` and `statistics(completion:)`, and the waits for queued
    /// work are not changes, and are queued as they are.)
    private func _queueOnDisk(_ work: DiskWork) {
        diskQueue.async { self.run(work) }
    }

    /// Does `work`, on the disk queue. Keys are hashed into file names here, not under the lock.
    private func run(_ work: DiskWork) {
        switch work {
        case .write(let item, let key, let now):
            if disk.write(item, usedAt: now) { bytesAreOnDisk(key, downloadedAt: item.downloadedAt) }
        case .keep(let items, let now):
            disk.keep(items, usedAt: now)
        case .touch(let keys, let now):
            disk.touch(keys.map(DiskStore.fileID(for:)), at: now)
        case .renew(let found, let downloadedAt, let receivedAt):
            disk.renew(found, downloadedAt: downloadedAt, receivedAt: receivedAt)
        case .remove(let key):
            disk.remove(DiskStore.fileID(for: key))
        case .removeAll:
            disk.removeAll()
        case .reduce(let recency, let maxCount, let maxBytes, let now):
            disk.touch(recency.map(DiskStore.fileID(for:)), at: now)
            disk.reduce(maxCount: maxCount, maxBytes: maxBytes, now: now)
        case .setting(let apply):
            apply(disk)
        }
    }


    /// The disk tier: one file per URL, named by a stable hash of it, holding the original bytes.
    /// No index: a file's modification date is when its image was downloaded, its access date
    /// when it was last used (set by the cache itself, since mounts update access dates lazily or
    /// never). Used only on the cache's disk queue.
    ///
    /// Safe for several processes on one folder, without fsync: a file is written under a unique
    /// temporary name and renamed, so a reader sees a whole file or none; a file is deleted for
    /// being old or unused only if it is still the one that was judged (same inode and date), so a
    /// file another process has just written is not; a temporary file is deleted only when the
    /// process named in it is gone or it has not changed for an hour (a crash's left-overs). A file that
    /// does not decode (a write torn by power loss) is a miss, and is deleted. Nothing is opened
    /// through a symbolic link: the folder is opened once with `O_NOFOLLOW`, and every file in it
    /// relative to that descriptor, also with `O_NOFOLLOW`.
    fileprivate final class DiskStore: @unchecked Sendable {  // confined to the disk queue
        /// An image to keep on disk.
        struct Item {
            let url: String
            let data: Data?  // nil: memory no longer has the bytes (they were written)
            let size: Int
            let downloadedAt: TimeInterval
            let receivedAt: TimeInterval  // earlier than `downloadedAt` by the shift of a long max-age
            var validators: Validators?
            // Hashed on the disk queue, not under the lock where the item is made.
            var id: UInt64 { fileID(for: url) }
        }

        /// A file as read: its bytes, and whether it has expired (then its validators, if it has some).
        struct Found {
            let file: File
            let receivedAt: TimeInterval  // see `Item`
            let data: Data
            let validators: Validators?
            let expired: Bool
        }

        let folder: URL
        private let folderPath: String
        weak var owner: ImageCache?
        private var directory: Int32 = -1  // the folder, opened without following a link; -1 until needed
        private var failing = false  // the last write failed: report a failure once, not per file
        private var lastTouch: TimeInterval = 0
        private(set) var sweep: DispatchWorkItem?  // scheduled by the first lookup
        // The image files and their bytes when last counted, plus what this instance wrote and
        // deleted since; nil until counted. Only `recount` and `count` change it: they tell the cache.
        private var counted: (files: Int, bytes: Int)?
        var timeToLive: TimeInterval  // the cache's settings, set here in order with the disk work
        var maxBytes: Int
        var keepsExpired = false
        #if IMAGECACHE_TESTING
        var injectedWriteError: POSIXErrorCode?  // see "For tests" at the end of the file
        #endif
        private static let staleTemporaryAge: TimeInterval = 3_600

        init(folder: URL, timeToLive: TimeInterval, maxBytes: Int) {
            self.folder = folder
            folderPath = folder.path
            self.timeToLive = timeToLive
            self.maxBytes = maxBytes
        }

        deinit {
            if directory >= 0 { Foundation.close(directory) }
        }

        /// The file `name` if it is there, a regular file, and not expired (an expired one is
        /// deleted); marks it as used `now`.
        func read(_ id: UInt64, now: TimeInterval, maxBytes: Int) -> Found? {
            guard openFolder(create: false) != nil else { return nil }
            if sweep == nil, let queue = owner?.diskQueue {
                // Once per instance, 2 s after its first lookup: expired files, a crash's
                // temporary files and files past `maxBytes` go without competing with a launch's
                // first lookups. (Queued at once, the sweep of 10,000 files held the first callback
                // up to 4 ms on 2 cores.)
                let sweep = DispatchWorkItem { [weak self] in
                    guard let self, let owner = self.owner else { return }
                    self.reduce(maxBytes: self.maxBytes, now: owner.currentTime())
                }
                self.sweep = sweep
                queue.asyncAfter(deadline: .now() + 2, execute: sweep)
            }
            var fd = openFile(id)
            if fd == nil, Foundation.errno == ENOENT, reopenIfReplaced() { fd = openFile(id) }
            guard let fd else { return nil }
            defer { Foundation.close(fd) }
            // Larger than any download may be: not read (a planted or damaged file), a miss.
            guard let file = File(id, { Foundation.fstat(fd, $0) }), file.size <= Int64(maxBytes) else { return nil }
            var (expired, receivedAt) = (now >= file.downloadedAt + timeToLive, file.downloadedAt)
            if receivedAt > now + ImageCache.maxClockSkew {  // a date in the future, unless a max-age moved it there
                receivedAt -= Validators.shift(fd: fd)
                expired = expired || receivedAt > now + ImageCache.maxClockSkew
            }
            let validators = expired ? Validators(fd: fd) : nil  // one more system call: only when needed
            // An expired file stays only to be revalidated, or to be served when offline.
            guard !expired || validators != nil || keepsExpired else {
                delete(file)
                return nil
            }
            guard let data = POSIX.readAll(fd, count: Int(file.size)) else { return nil }
            if !expired { Foundation.futimens(fd, dates(usedAt: now)) }
            return Found(file: file, receivedAt: receivedAt, data: data, validators: validators, expired: expired)
        }

        /// Marks `name` as downloaded again `now` (a `304 Not Modified`), if it is still the file
        /// that was read.
        func renew(_ found: Found, downloadedAt: TimeInterval, receivedAt now: TimeInterval) {
            guard isStill(found.file), let directory = openFolder(create: false) else { return }
            Foundation.utimensat(directory, found.file.name, dates(usedAt: now, downloadedAt: downloadedAt),
                                 AT_SYMLINK_NOFOLLOW)
            if downloadedAt > now { withFile(found.file.id) { Validators.setShift(downloadedAt - now, fd: $0) } }
        }

        /// Writes each image whose file is missing or older than it (or as old, of another size);
        /// marks the others as used. A newer file (another process's, say) is left as it is.
        func keep(_ items: [Item], usedAt now: TimeInterval) {
            for item in items {
                // 2 s: some file systems keep whole seconds.
                if let file = file(item.id), file.downloadedAt > item.downloadedAt + 2
                    || (file.size == Int64(item.size) && file.downloadedAt + 2 >= item.downloadedAt) {
                    touch([file.id], at: now)
                } else {
                    write(item, usedAt: now)  // does nothing if memory no longer has the bytes
                }
            }
        }

        /// Writes one image under a temporary name and renames it into place; true if it did. If the
        /// images' bytes are then over `maxBytes`, deletes the least recently used down to 90% of it.
        @discardableResult
        func write(_ item: Item, usedAt now: TimeInterval) -> Bool {
            guard let data = item.data else { return false }
            var replaced: Int64?  // the size of the file the write replaced
            do {
                #if IMAGECACHE_TESTING
                if let injected = injectedWriteError { throw POSIXError(injected) }
                #endif
                do {
                    replaced = try writeFile(item, data, usedAt: now)
                } catch let error as POSIXError where error.code == .ENOENT {
                    // The folder was deleted (and every file with it), or our temporary file was
                    // taken for a dead writer's: try once more, in the folder as it is now.
                    _ = reopenIfReplaced()
                    replaced = try writeFile(item, data, usedAt: now)
                }
                failing = false
            } catch {
                fail("cannot write \(folderPath)/\(Self.name(item.id)): \(POSIX.describe(error)); "
                     + "serving from memory and the network")
                return false
            }
            // Counted once: by the sweep, or here when a write comes first (the sweep waits 2 s), so
            // that only a write that passes the limit deletes anything.
            if counted == nil {
                recount()
            } else {
                count(files: replaced == nil ? 1 : 0, bytes: Int64(item.size) - (replaced ?? 0))
            }
            if let counted, counted.bytes > maxBytes { reduce(maxBytes: maxBytes - maxBytes / 10, now: now) }
            return true
        }

        /// A new `maxBytes`: applied at once only if the bytes already counted pass it (no listing
        /// ahead of a launch's lookups), else by the sweep or the next write.
        func setMaxBytes(_ limit: Int, now: TimeInterval) {
            maxBytes = limit
            if let counted, counted.bytes > limit { reduce(maxBytes: limit, now: now) }
        }

        /// Marks files as used, in the order given (the last is the most recent).
        func touch(_ ids: [UInt64], at now: TimeInterval) {
            guard let directory = openFolder(create: false) else { return }
            for id in ids { Foundation.utimensat(directory, Self.name(id), dates(usedAt: now), AT_SYMLINK_NOFOLLOW) }
        }

        func remove(_ id: UInt64) {
            guard let directory = openFolder(create: false) else { return }
            let size = file(id)?.size
            if Foundation.unlinkat(directory, Self.name(id), 0) == 0, let size { count(files: -1, bytes: -size) }
        }

        /// Drops a file because what was read from it is not an image.
        func discard(_ found: Found, because reason: String) {
            report("dropped \(folderPath)/\(found.file.name): \(reason)")
            delete(found.file)
        }

        /// Deletes every image, and temporary files a crash left behind.
        func removeAll() {
            for file in list(sweeping: true) { remove(file.id) }
            recount((0, 0))
        }

        /// Deletes expired images and stale temporary files, then the least recently used images
        /// beyond the `maxCount` or `maxBytes` most recent.
        ///
        /// - Complexity: O(n log n) in the files, and ~40 bytes of memory a file.
        func reduce(maxCount: Int = .max, maxBytes: Int = .max, now: TimeInterval) {
            var live = list(sweeping: true)
            counted = nil  // counted below: the deletes on the way need not be
            let latest = now + ImageCache.maxClockSkew
            var end = 0  // `live` is filtered in place: a second array would double the memory
            for index in live.indices {
                var file = live[index]
                let untrusted = file.downloadedAt > latest
                    && file.downloadedAt - (withFile(file.id, Validators.shift(fd:)) ?? 0) > latest
                if untrusted || file.usedAt > latest { file.usedAt = -.infinity }  // the least recently used
                // An expired file with the server's validators is kept, to be revalidated.
                if now >= file.downloadedAt + timeToLive || untrusted, !keepsExpired,
                   withFile(file.id, { Validators(fd: $0) == nil }) ?? true {
                    delete(file)
                } else {
                    live[end] = file
                    end += 1
                }
            }
            live.removeLast(live.count - end)
            live.sort { $0.usedAt > $1.usedAt }
            var (kept, bytes) = (0, 0)
            for file in live {
                let size = Int(clamping: file.size)
                if kept < maxCount, size <= maxBytes - bytes {
                    (kept, bytes) = (kept + 1, bytes + size)
                } else {
                    delete(file)
                }
            }
            recount((kept, bytes))
        }

        /// Counts the folder's image files and their bytes again, for the cache's statistics.
        func recount() {
            recount(sizes())
        }

        private func recount(_ counts: (files: Int, bytes: Int)) {
            counted = counts
            owner?.diskCounted(counts)
        }

        /// Adds to what was counted (nothing until the folder has been counted), for the statistics.
        private func count(files: Int, bytes: Int64) {
            guard let old = counted else { return }
            recount((max(0, old.files + files), max(0, Int(clamping: Int64(old.bytes) + bytes))))
        }

        /// How many entry files the folder holds (expired ones included), and their bytes.
        func sizes() -> (files: Int, bytes: Int) {
            let files = list()
            return (files.count, Int(clamping: files.reduce(Int64(0)) { $0 + $1.size }))
        }

        /// Opens file `id` in the folder to read it. O_NONBLOCK: a FIFO planted under an image's name must
        /// not block the disk queue.
        private func openFile(_ id: UInt64) -> Int32? {
            guard let directory = openFolder(create: false) else { return nil }
            let fd = Foundation.openat(directory, Self.name(id), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            return fd >= 0 ? fd : nil
        }

        /// Deletes `file` if its name still holds it: a file another process has written since stays.
        private func delete(_ file: File) {
            guard isStill(file), let directory = openFolder(create: false) else { return }
            if Foundation.unlinkat(directory, file.name, 0) == 0 { count(files: -1, bytes: -file.size) }
        }

        /// Runs `body` on file `id` opened to read, and closes it; nil if it cannot be opened.
        @discardableResult
        private func withFile<T>(_ id: UInt64, _ body: (Int32) -> T) -> T? {
            guard let fd = openFile(id) else { return nil }
            defer { Foundation.close(fd) }
            return body(fd)
        }

        /// True if `judged`'s name still holds that file (same inode and date).
        private func isStill(_ judged: File) -> Bool {
            guard let current = file(judged.id) else { return false }
            return current.inode == judged.inode && current.downloadedAt == judged.downloadedAt
        }

        /// Forgets the folder's descriptor if the folder it stands for was deleted or replaced (by
        /// anyone: another instance or process may have made it again); true if it did.
        private func reopenIfReplaced() -> Bool {
            guard directory >= 0 else { return false }
            var open = Foundation.stat(), now = Foundation.stat()
            let gone = Foundation.fstat(directory, &open) != 0 || open.st_nlink == 0
                || Foundation.lstat(folderPath, &now) != 0 || now.st_ino != open.st_ino || now.st_dev != open.st_dev
            guard gone else { return false }
            report("the folder \(folderPath) was deleted or replaced; using the one there now")
            Foundation.close(directory)
            directory = -1
            return true
        }

        /// The folder's descriptor, opened once without following a symbolic link; with `create`,
        /// the folder (and its parents) are made first. It must be the process's own and private
        /// (0700 is set if it is not): a folder others can write to could be handed planted images.
        private func openFolder(create: Bool) -> Int32? {
            if directory >= 0 { return directory }
            if create {
                try? FileManager.default.createDirectory(at: folder.deletingLastPathComponent(),
                                                         withIntermediateDirectories: true)
                Foundation.mkdir(folderPath, 0o700)
            }
            let fd = Foundation.open(folderPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                if create { fail("cannot open \(folderPath): \(POSIX.describe(POSIX.lastError()))") }
                return nil
            }
            var info = Foundation.stat()
            if Foundation.fstat(fd, &info) == 0, info.st_mode & 0o777 != 0o700, Foundation.fchmod(fd, 0o700) == 0 {
                Foundation.fstat(fd, &info)
            }
            guard info.st_uid == Foundation.geteuid(), info.st_mode & 0o077 == 0 else {
                Foundation.close(fd)
                fail("not using \(folderPath): it belongs to another user or others may write to it")
                return nil
            }
            directory = fd
            return fd
        }

        /// Writes `data` (the bytes of `item`) to a temporary file, with its dates and validators, and
        /// renames it into place; returns the size of the file it replaced, if any. A failure deletes
        /// the temporary file.
        private func writeFile(_ item: Item, _ data: Data, usedAt now: TimeInterval) throws -> Int64? {
            guard let directory = openFolder(create: true) else { throw POSIX.lastError() }
            let name = Self.name(item.id)
            // Hidden, unique across processes, and beside its final name.
            let temporary = ".\(name).\(Foundation.getpid()).\(UInt32.random(in: 0 ... .max)).tmp"
            let fd = Foundation.openat(directory, temporary,
                                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw POSIX.lastError() }
            var closed = false
            do {
                try data.withUnsafeBytes { bytes in
                    let written = POSIX.transfer(bytes.count) {
                        Foundation.write(fd, bytes.baseAddress! + $0, bytes.count - $0)
                    }
                    if !written { throw POSIX.lastError() }
                }
                item.validators?.write(to: fd)
                if item.downloadedAt > item.receivedAt {
                    Validators.setShift(item.downloadedAt - item.receivedAt, fd: fd)
                }
                try POSIX.check(Foundation.futimens(fd, dates(usedAt: now, downloadedAt: item.downloadedAt)))
                closed = true  // once, even if that fails: the descriptor is gone either way
                // A network file system may report a full disk only here.
                try POSIX.check(Foundation.close(fd))
                let replaced = file(item.id)?.size
                try POSIX.check(Foundation.renameat(directory, temporary, directory, name))
                return replaced
            } catch {
                if !closed { Foundation.close(fd) }
                Foundation.unlinkat(directory, temporary, 0)
                throw error
            }
        }

        /// Dates for `futimens` or `utimensat`: last used `now`, and downloaded at `downloadedAt` (nil:
        /// left as it is). Later uses get later dates, even within one clock tick, so that the order
        /// of use is kept.
        private func dates(usedAt now: TimeInterval, downloadedAt: TimeInterval? = nil) -> [Foundation.timespec] {
            lastTouch = max(now, lastTouch + 1e-6)
            return [POSIX.time(lastTouch), downloadedAt.map(POSIX.time) ?? POSIX.omit]
        }

        private func report(_ message: String) {
            owner?.emit(.diskProblem(message))
        }

        /// Reports a failing disk once; the next successful image write ends the episode.
        private func fail(_ message: String) {
            if !failing { report(message) }
            failing = true
        }
    }
}

// MARK: - Disk files

// The disk tier's folder as files: their names, and a listing that keeps little of each.
nonisolated extension ImageCache.DiskStore {
    /// An image file in the folder as `stat` saw it: what the tier needs of it, in 40 bytes (a
    /// scan of 100,000 files holds 4 MB, where a name `String` and a whole `stat` took ~450 bytes).
    struct File {
        let id: UInt64  // the name, 16 hex digits, as a number
        let size: Int64
        let downloadedAt: TimeInterval  // the modification date
        var usedAt: TimeInterval  // the access date
        let inode: UInt64  // with `downloadedAt`, what a later delete checks

        var name: String { ImageCache.DiskStore.name(id) }

        /// File `id` if `stat` (an `fstat` or `fstatat` that does not follow links) finds a regular file.
        init?(_ id: UInt64, _ stat: (UnsafeMutablePointer<Foundation.stat>) -> Int32) {
            var info = Foundation.stat()
            guard stat(&info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            (self.id, size, inode) = (id, Int64(info.st_size), UInt64(info.st_ino))
            (downloadedAt, usedAt, _) = ImageCache.POSIX.dates(of: info)
        }
    }

    /// The image files in the folder, nothing else, listed with `readdir` (no `String` per name);
    /// `sweeping`, it deletes the stale temporary files it meets.
    func list(sweeping: Bool = false) -> [File] {
        _ = reopenIfReplaced()
        guard let directory = openFolder(create: false) else { return [] }
        // An open file of its own: `readdir` moves the offset, which `directory` must not share.
        let fd = Foundation.openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = Foundation.fdopendir(fd) else {
            if fd >= 0 { Foundation.close(fd) }
            return []
        }
        defer { Foundation.closedir(stream) }
        var files: [File] = []
        var temporary: [String] = []
        while let entry = Foundation.readdir(stream) {
            withUnsafeBytes(of: &entry.pointee.d_name) { name in
                if let id = Self.imageID(name) {
                    let path = name.baseAddress!.assumingMemoryBound(to: CChar.self)  // `d_name`, NUL-terminated
                    if let file = File(id, { Foundation.fstatat(directory, path, $0, AT_SYMLINK_NOFOLLOW) }) {
                        files.append(file)
                    }
                } else if sweeping, name[0] == UInt8(ascii: ".") {
                    let string = String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
                    if Self.isTemporaryName(string) { temporary.append(string) }
                }
            }
        }
        for name in temporary { deleteIfStale(name, in: directory) }
        return files
    }

    /// The regular file `id` in the folder, if there is one.
    private func file(_ id: UInt64) -> File? {
        guard let directory = openFolder(create: false) else { return nil }
        return File(id) { Foundation.fstatat(directory, Self.name(id), $0, AT_SYMLINK_NOFOLLOW) }
    }

    /// Deletes the temporary file `name` if its writer is gone. Named ".<image>.<pid>.<random>.tmp":
    /// its writer is gone if that process is, or if it has not changed the file for an hour (the pid
    /// may have been reused). (A writer in another pid namespace may look gone: its rename then
    /// fails, and `write` tries once more.) A file written under that name since it was judged stays.
    private func deleteIfStale(_ name: String, in directory: Int32) {
        var judged = Foundation.stat(), now = Foundation.stat()
        guard Foundation.fstatat(directory, name, &judged, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        let changedAt = ImageCache.POSIX.dates(of: judged).changed
        let pid = name.split(separator: ".").dropFirst().first.flatMap { Int32($0) }
        let clock = Date().timeIntervalSince1970  // the real clock, like the files' own dates
        guard clock - changedAt > Self.staleTemporaryAge
            || pid.map({ Foundation.kill($0, 0) != 0 && Foundation.errno == ESRCH }) ?? true else { return }
        guard Foundation.fstatat(directory, name, &now, AT_SYMLINK_NOFOLLOW) == 0, now.st_ino == judged.st_ino,
              now.st_mode & S_IFMT == S_IFREG else { return }
        Foundation.unlinkat(directory, name, 0)
    }

    /// A file name from a stable 64-bit FNV-1a hash of the URL: the same on every launch and
    /// platform, unlike `hashValue`, and never a path outside the folder.
    static func fileName(for url: String) -> String {
        name(fileID(for: url))
    }

    /// The hash that `fileName(for:)` writes in hexadecimal.
    static func fileID(for url: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 {  // every byte: a key with a NUL is a key of its own
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// An image file's name: `id` in 16 lowercase hexadecimal digits.
    static func name(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The number an image file's name (16 lowercase hexadecimal digits, then NUL) stands for.
    static func imageID(_ name: UnsafeRawBufferPointer) -> UInt64? {
        guard name.count > 16, name[16] == 0 else { return nil }
        var id: UInt64 = 0
        for byte in name.prefix(16) {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): id = id << 4 | UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): id = id << 4 | UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return id
    }

    static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".tmp")
    }
}

nonisolated extension ImageCache {
    /// What a server said to revalidate an entry with. The disk keeps it in the file's extended
    /// attribute `user.imagecache.validators`, set before the file is renamed into place; where
    /// the file system keeps none (older tmpfs), an expired entry is downloaded again.
    fileprivate struct Validators {
        let etag: String?, lastModified: String?
        private static let attribute = "user.imagecache.validators"
        private static let shiftAttribute = "user.imagecache.shift"  // see `shift(fd:)`

        init?(etag: String?, lastModified: String?) {
            guard etag != nil || lastModified != nil else { return nil }
            (self.etag, self.lastModified) = (etag, lastModified)
        }

        init?(_ response: URLResponse?) {
            let http = response as? HTTPURLResponse
            self.init(etag: http?.value(forHTTPHeaderField: "ETag"),
                      lastModified: http?.value(forHTTPHeaderField: "Last-Modified"))
        }

        init?(fd: Int32) {
            let lines = Self.get(Self.attribute, fd: fd, capacity: 2_048)?.components(separatedBy: "\n") ?? []
            guard lines.count == 2 else { return nil }
            self.init(etag: lines[0].isEmpty ? nil : lines[0], lastModified: lines[1].isEmpty ? nil : lines[1])
        }

        func write(to fd: Int32) {
            Self.set(Self.attribute, "\(etag ?? "")\n\(lastModified ?? "")", fd: fd)
        }

        /// Makes `request` conditional: the server answers `304 Not Modified` if the entry is current.
        func ask(_ request: inout URLRequest) {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
            request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since")
        }

        /// Seconds by which the server's max-age moved a file's download date ahead (see
        /// `maxClockSkew`), in an attribute of its own; 0 if none.
        static func shift(fd: Int32) -> TimeInterval {
            get(shiftAttribute, fd: fd, capacity: 32).flatMap { TimeInterval($0) } ?? 0
        }

        static func setShift(_ seconds: TimeInterval, fd: Int32) {
            set(shiftAttribute, String(seconds.rounded(.up)), fd: fd)
        }

        /// The extended attribute `name` of `fd` as text; nil if it is missing, empty or longer than `capacity`.
        private static func get(_ name: String, fd: Int32, capacity: Int) -> String? {
            var buffer = [UInt8](repeating: 0, count: capacity)
            #if canImport(Darwin)
            let count = Darwin.fgetxattr(fd, name, &buffer, capacity, 0, 0)
            #else
            let count = getxattr.map { $0(fd, name, &buffer, capacity) } ?? -1
            #endif
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }

        private static func set(_ name: String, _ value: String, fd: Int32) {
            let bytes = Array(value.utf8)
            #if canImport(Darwin)
            _ = Darwin.fsetxattr(fd, name, bytes, bytes.count, 0, 0)
            #else
            _ = setxattr.map { $0(fd, name, bytes, bytes.count, 0) }
            #endif
        }

        #if !canImport(Darwin)
        // Glibc's module leaves out <sys/xattr.h>: the two calls are found at run time.
        private static let getxattr = Foundation.dlsym(nil, "fgetxattr").map {
            unsafeBitCast($0, to: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer?,
                                                   Int) -> Int).self)
        }
        private static let setxattr = Foundation.dlsym(nil, "fsetxattr").map {
            unsafeBitCast($0, to: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafeRawPointer?,
                                                   Int, Int32) -> Int32).self)
        }
        #endif
    }
}

// MARK: - Images

nonisolated extension ImageCache {

    /// Checks that `data` starts with a whole image of a known format and decodes it for the platform.
    ///
    /// Bytes after the image's end (see ``inspect(_:)``) are not part of it and are dropped: padding
    /// a server adds, or the video a motion photo appends to its JPEG. The result's `data` is the
    /// image's own bytes (`data` itself when nothing follows): what the cache keeps and delivers.
    ///
    /// Where the platform decodes (ImageIO), the bitmap is made at
    /// ``decodedSize(width:height:orientation:filling:maxPixels:)`` within `limits.maxPixels`, carrying
    /// `scale` (see ``displayScale(_:screen:)``: its `size` is in points), and a GIF or APNG animates
    /// if ``animates(frames:width:height:within:)`` says so.
    static func decode(_ data: Data, filling size: (width: Int, height: Int)? = nil,
                       limits: DecodeLimits = DecodeLimits(),
                       scale: Double = 1) -> Result<(image: Image, data: Data), Error> {
        let checked = inspect(data)
        #if canImport(ImageIO)
        // ImageIO decides what is an image (HEIC, AVIF, BMP...); the check finds a known format cut short.
        // Such an image shows its first frame: only GIF's and APNG's frames are counted and timed.
        if case .failure(.notAnImage) = checked,
           let image = bitmap(data, filling: size, limits: limits, frames: 1, scale: scale) {
            return .success((image, data))
        }
        #endif
        return checked.flatMap { info in
            // A copy, not a slice: a slice would keep the padding's memory alive.
            let trimmed = info.end < data.count ? Data(data.prefix(info.end)) : data
            #if canImport(ImageIO)
            guard let image = bitmap(trimmed, filling: size, limits: limits, frames: info.frames, scale: scale) else {
                return .failure(.corruptImage(info.format, "the system decoder rejected it"))
            }
            #else
            let image = Image(data: trimmed, format: info.format, width: info.width, height: info.height,
                              frameCount: info.frames)
            #endif
            return .success((image, trimmed))
        }
    }

    /// What bounds a decode: the settings when its request was made.
    struct DecodeLimits: Sendable {
        /// The longest side of an image decoded with no size to fill (``ImageCache/maxDecodedPixelSize``).
        var maxPixels = Int.max
        /// The most frames an animation may have (``ImageCache/maxAnimatedFrames``).
        var maxAnimatedFrames = 200
        /// The memory budget (``ImageCache/imageMemoryMaxBytes``); an animation may cost a quarter of it.
        var memoryMaxBytes = Int.max
    }

    /// Whether an image of `frames` frames, each decoded at `width` x `height` pixels, is shown
    /// animated: it has more than one frame, at most `limits.maxAnimatedFrames`, and its frames cost
    /// (4 bytes a pixel) at most a quarter of `limits.memoryMaxBytes`, the most that one image kept in
    /// memory may cost. Otherwise its first frame is shown.
    static func animates(frames: Int, width: Int, height: Int, within limits: DecodeLimits) -> Bool {
        frames > 1 && frames <= limits.maxAnimatedFrames
            && Double(frames) * Double(width) * Double(height) * 4 <= Double(limits.memoryMaxBytes) / 4
    }

    /// How long a frame is shown, in seconds, given the delay its file says (a GIF's unclamped one):
    /// as browsers do, a delay under 20 ms, 0 or none at all is shown for 100 ms.
    static func frameDuration(delay: Double?) -> Double {
        guard let delay, delay >= 0.02, delay.isFinite else { return 0.1 }
        return delay
    }

    /// The size, in pixels, that an image of `width` x `height` pixels as stored is decoded at,
    /// upright: turned by its EXIF `orientation` (5 to 8 swap the sides, as a camera held upright
    /// writes them), then scaled down, never up, until one side fits `size` (a binder's target,
    /// in the same orientation), or, with no target, until its longest side is at most `maxPixels`.
    /// A target larger than `maxPixels` is what its caller asked for, and is kept.
    static func decodedSize(width: Int, height: Int, orientation: Int = 1, filling size: (width: Int, height: Int)?,
                            maxPixels: Int = .max) -> (width: Int, height: Int) {
        let (width, height) = (5...8).contains(orientation) ? (height, width) : (width, height)
        guard width > 0, height > 0 else { return (width, height) }
        let scale = size.map { min(1, max(Double($0.width) / Double(width), Double($0.height) / Double(height))) }
            ?? min(1, Double(max(1, maxPixels)) / Double(max(width, height)))
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// The scale an image decoded for the screen carries, so that its `size` is in points and
    /// `size` x `scale` is its bitmap in pixels: `scale` (a view's `displayScale`) if it is one, else
    /// `screen` (the main screen's, ``screenScale``), else 1. A view not in a window says 0.
    static func displayScale(_ scale: Double?, screen: Double) -> Double {
        [scale, screen].lazy.compactMap { $0 }.first { (1...16).contains($0) } ?? 1
    }

    /// The size in points of a bitmap of `width` x `height` pixels at `scale`: the pixels over the
    /// scale, not rounded (301 pixels at 2x are 150.5 points, as `UIImage` says), so that the size
    /// times the scale is the pixels again.
    static func pointSize(width: Int, height: Int, scale: Double) -> CGSize {
        CGSize(width: Double(width) / scale, height: Double(height) / scale)
    }

    /// What the header and structure of `data` say: format, size, `end`, where the image ends
    /// (after PNG's `IEND` chunk with its CRC; after JPEG's end-of-image marker; after GIF's trailer,
    /// or its last whole frame when it has none; at WebP's RIFF size + 8, + 1 when odd unless the data
    /// ends first), and `frames` (see ``Image/frameCount``). Or why `data` does not start with a whole image.
    static func inspect(_ data: Data)
        -> Result<(format: Format, width: Int, height: Int, end: Int, frames: Int), Error> {
        guard !data.isEmpty else { return .failure(.emptyBody) }
        return data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            let reader = ByteReader(bytes: bytes)
            if reader.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return reader.png() }
            if reader.starts(with: [0xFF, 0xD8, 0xFF]) { return reader.jpeg() }
            if reader.starts(with: "GIF87a".utf8) || reader.starts(with: "GIF89a".utf8) { return reader.gif() }
            if reader.starts(with: "RIFF".utf8), reader.matches("WEBP".utf8, at: 8) { return reader.webp() }
            return .failure(.notAnImage(reader.describe()))
        }
    }

    /// Bounds-checked reads over a buffer; every accessor returns 0 past the end, and callers
    /// check lengths before trusting what they read.
    fileprivate struct ByteReader {
        let bytes: UnsafeBufferPointer<UInt8>
        var count: Int { bytes.count }
        typealias Info = Result<(format: Format, width: Int, height: Int, end: Int, frames: Int), Error>

        func byte(_ i: Int) -> Int { i >= 0 && i < bytes.count ? Int(bytes[i]) : 0 }
        func be16(_ i: Int) -> Int { byte(i) << 8 | byte(i + 1) }
        func le16(_ i: Int) -> Int { byte(i) | byte(i + 1) << 8 }
        func le24(_ i: Int) -> Int { le16(i) | byte(i + 2) << 16 }
        // 32-bit fields stay unsigned: up to 2^32 - 1, more than `Int` holds on watchOS (arm64_32).
        // They are compared with what is left (`count - offset`), never added to an offset unchecked.
        func be32(_ i: Int) -> UInt32 { UInt32(be16(i)) << 16 | UInt32(be16(i + 2)) }
        func le32(_ i: Int) -> UInt32 { UInt32(le16(i)) | UInt32(le16(i + 2)) << 16 }

        func starts(with prefix: some Collection<UInt8>) -> Bool { matches(prefix, at: 0) }
        func matches(_ pattern: some Collection<UInt8>, at offset: Int) -> Bool {
            guard offset + pattern.count <= bytes.count else { return false }
            for (i, b) in pattern.enumerated() where bytes[offset + i] != b { return false }
            return true
        }

        func png() -> Info {
            guard count >= 33, matches("IHDR".utf8, at: 12), be32(8) == 13 else {
                return corrupt(.png, "no IHDR header")
            }
            let (width, height) = (be32(16), be32(20))
            guard (1...0x7FFF_FFFF).contains(width), (1...0x7FFF_FFFF).contains(height) else {  // PNG's limit
                return corrupt(.png, "size \(width)x\(height) out of range")
            }
            var offset = 8
            var (claimed, controls): (UInt32?, Int) = (nil, 0)  // acTL's number of frames; fcTL chunks seen
            while count - offset >= 12, be32(offset) <= count - offset - 12 {
                let end = offset + 12 + Int(be32(offset))
                if matches("IEND".utf8, at: offset + 4) {
                    // An APNG's frames: as many as acTL claims, if the file holds a frame control for each.
                    let frames = claimed.map { controls < $0 ? controls : Int($0) } ?? 1
                    return .success((.png, Int(width), Int(height), end, max(1, frames)))
                }
                if matches("acTL".utf8, at: offset + 4), be32(offset) >= 8 { claimed = be32(offset + 8) }
                if matches("fcTL".utf8, at: offset + 4) { controls += 1 }
                offset = end
            }
            return corrupt(.png, "ends before IEND (truncated at \(count) bytes)")
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
                guard byte(offset) == 0xFF else { return corrupt(.jpeg, "no marker at byte \(offset)") }
                var marker = byte(offset + 1)
                while marker == 0xFF, offset + 2 < count { offset += 1; marker = byte(offset + 1) }
                if marker == 0xD9 {
                    guard let (width, height) = size else { return corrupt(.jpeg, "no frame header") }
                    return .success((.jpeg, width, height, offset + 2, 1))
                }
                if (0xD0...0xD7).contains(marker) || marker == 0x01 { offset += 2; continue }
                let length = be16(offset + 2)
                guard length >= 2, length <= count - offset - 2 else { break }
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    let (height, width) = (be16(offset + 5), be16(offset + 7))
                    guard width > 0, height > 0 else { return corrupt(.jpeg, "zero size") }
                    size = (width, height)
                }
                if marker == 0xDA {
                    guard size != nil else { return corrupt(.jpeg, "scan before frame header") }
                    inScan = true
                }
                offset += 2 + length
            }
            return corrupt(.jpeg, "ends before the end-of-image marker (truncated at \(count) bytes)")
        }

        private func nextFF(from offset: Int) -> Int? {
            guard offset < count, let base = bytes.baseAddress,
                  let found = Foundation.memchr(base + offset, 0xFF, count - offset) else { return nil }
            let index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            return index + 1 < count ? index : nil
        }

        func gif() -> Info {
            guard count >= 13 else { return corrupt(.gif, "header cut short") }
            let (width, height) = (le16(6), le16(8))
            guard width > 0, height > 0 else { return corrupt(.gif, "zero size") }
            var offset = 13
            if byte(10) & 0x80 != 0 { offset += 3 << ((byte(10) & 0x07) + 1) }
            var frames = 0
            while offset < count {
                switch byte(offset) {
                case 0x3B:
                    guard frames > 0 else { return corrupt(.gif, "no frames") }
                    return .success((.gif, width, height, offset + 1, frames))
                case 0x21:
                    guard let end = skipSubBlocks(offset + 2) else { return truncatedGIF() }
                    offset = end
                case 0x2C:
                    guard count - offset >= 10 else { return truncatedGIF() }
                    let packed = byte(offset + 9)
                    offset += 10
                    if packed & 0x80 != 0 { offset += 3 << ((packed & 0x07) + 1) }
                    guard let end = skipSubBlocks(offset + 1) else { return truncatedGIF() }
                    offset = end
                    frames += 1
                default:
                    return corrupt(.gif, "unknown block at byte \(offset)")
                }
            }
            // Many GIFs in the wild lack the trailer; a last frame that is whole is enough.
            return frames > 0 && offset == count ? .success((.gif, width, height, count, frames)) : truncatedGIF()
        }

        private func truncatedGIF() -> Info {
            corrupt(.gif, "ends inside a block (truncated at \(count) bytes)")
        }

        /// Why the bytes are not a whole image of `format`.
        private func corrupt(_ format: Format, _ reason: String) -> Info {
            .failure(.corruptImage(format, reason))
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
            let riffSize = le32(4)  // the bytes after the first 8
            guard riffSize <= count - 8 else {
                return corrupt(.webp, "RIFF says \(Int64(riffSize) + 8) bytes, got \(count) (truncated)")
            }
            guard count >= 30 else { return corrupt(.webp, "header cut short") }
            var size: (Int, Int)?
            if matches("VP8 ".utf8, at: 12), matches([0x9D, 0x01, 0x2A], at: 23) {
                size = (le16(26) & 0x3FFF, le16(28) & 0x3FFF)
            } else if matches("VP8L".utf8, at: 12), byte(20) == 0x2F {
                let bits = Int(le32(21) & 0x0FFF_FFFF)  // 14 bits of width, 14 of height
                size = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
            } else if matches("VP8X".utf8, at: 12) {
                size = (le24(24) + 1, le24(27) + 1)
            }
            guard let (width, height) = size, width > 0, height > 0 else {
                return corrupt(.webp, "no VP8, VP8L or VP8X header")
            }
            // An animated WebP (ANIM and ANMF chunks) counts as 1 frame: its frames are not walked.
            return .success((.webp, width, height, 8 + min(count - 8, Int(riffSize) + Int(riffSize & 1)), 1))
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

nonisolated extension ImageCache {
    private func observeMemoryWarnings() {
        #if canImport(UIKit) && !os(watchOS)
        memoryWarnings = NotificationCenter.default.addObserver(
            forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
        ) { [weak self] _ in
            self?.purgeMemory()
        }
        #endif
    }

    /// The main screen's scale: what an image decoded for no view in particular (a `fetch`, a
    /// prefetch, your own binder's target) carries. `UIScreen` and `NSScreen` are main-actor
    /// isolated: a cache made on the main thread reads it there, one made elsewhere has the main
    /// queue read it soon after; until then, and on Linux, 1.
    static var screenScale: Double { screen.lock.withLock { screen.scale } }

    /// The longest side of the main screen in pixels, read as ``screenScale`` is: the default of
    /// ``maxDecodedPixelSize``; 4,096 until then, and where there is no screen to read.
    static var screenPixels: Int { screen.lock.withLock { screen.pixels } }

    private static let screen = Screen()
    private final class Screen: @unchecked Sendable {
        let lock = NSLock()
        var scale = 1.0  // guarded by `lock`
        var pixels = 4_096  // guarded by `lock`
    }

    /// Reads the main screen's scale and size into ``screenScale`` and ``screenPixels``, on the
    /// main thread.
    fileprivate static func readScreenScale() {
        #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        guard Thread.isMainThread else { return DispatchQueue.main.async { readScreenScale() } }
        let (scale, pixels) = MainActor.assumeIsolated { () -> (CGFloat, CGSize?) in
            #if os(visionOS)
            return (UITraitCollection.current.displayScale, nil)  // visionOS has no UIScreen
            #elseif canImport(UIKit)
            return (UIScreen.main.scale, UIScreen.main.nativeBounds.size)
            #else
            let screen = NSScreen.main, scale = screen?.backingScaleFactor ?? 1
            let size = screen?.frame.size  // in points
            return (scale, size.map { CGSize(width: $0.width * scale, height: $0.height * scale) })
            #endif
        }
        screen.lock.withLock {
            screen.scale = Double(scale)
            if let pixels, pixels.width >= 1, pixels.height >= 1 {
                screen.pixels = Int(max(pixels.width, pixels.height))
            }
        }
        #endif
    }

    #if canImport(ImageIO)
    /// Decodes `data` with ImageIO into an upright bitmap now, on the caller's queue (the disk
    /// queue or the decode queue, never the main one), at `decodedSize` (the header's size and EXIF
    /// orientation, read without decoding a pixel), carrying `scale`: its `size` is in points. An
    /// image of `frames` frames (as `inspect` counts them, and no more than ImageIO finds) animates
    /// if ``animates(frames:width:height:within:)`` says so: on UIKit every frame is scaled like a
    /// still (if one cannot be made, the first frame is shown); on AppKit the `NSImage` stays whole,
    /// as `NSImageView` animates it, so the rule counts full frames.
    private static func bitmap(_ data: Data, filling size: (width: Int, height: Int)?, limits: DecodeLimits,
                               frames: Int, scale: Double) -> Image? {
        guard let source = CGImageSourceCreateWithData(data as CFData, nil),
              let header = CGImageSourceCopyPropertiesAtIndex(source, 0, nil) as? [CFString: Any],
              let width = header[kCGImagePropertyPixelWidth] as? Int,
              let height = header[kCGImagePropertyPixelHeight] as? Int
        else { return nil }
        let orientation = header[kCGImagePropertyOrientation] as? Int ?? 1
        let fit = decodedSize(width: width, height: height, orientation: orientation, filling: size,
                              maxPixels: limits.maxPixels)
        let options: [CFString: Any] = [kCGImageSourceCreateThumbnailFromImageAlways: true,
                                        kCGImageSourceShouldCacheImmediately: true,
                                        kCGImageSourceCreateThumbnailWithTransform: true,
                                        kCGImageSourceThumbnailMaxPixelSize: max(fit.width, fit.height)]
        let frames = min(frames, CGImageSourceGetCount(source))
        #if canImport(UIKit)
        let image = { (cgImage: CGImage) in UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up) }
        if animates(frames: frames, width: fit.width, height: fit.height, within: limits) {
            let images = (0..<frames).compactMap {
                CGImageSourceCreateThumbnailAtIndex(source, $0, options as CFDictionary).map(image)
            }
            // UIKit shows the frames evenly over the whole duration.
            let duration = (0..<frames).reduce(0) { $0 + frameDuration(delay: delay(source, at: $1)) }
            if images.count == frames, let animated = UIImage.animatedImage(with: images, duration: duration) {
                return animated
            }
        }
        return CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image)
        #else
        if animates(frames: frames, width: width, height: height, within: limits), let animated = NSImage(data: data) {
            return animated
        }
        guard let cgImage = CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary) else { return nil }
        return NSImage(cgImage: cgImage, size: pointSize(width: cgImage.width, height: cgImage.height, scale: scale))
        #endif
    }

    /// The delay, in seconds, that ImageIO reads for frame `index` of a GIF (unclamped) or an APNG.
    private static func delay(_ source: CGImageSource, at index: Int) -> Double? {
        let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any]
        let gif = properties?[kCGImagePropertyGIFDictionary] as? [CFString: Any]
        let png = properties?[kCGImagePropertyPNGDictionary] as? [CFString: Any]
        return (gif?[kCGImagePropertyGIFUnclampedDelayTime] ?? gif?[kCGImagePropertyGIFDelayTime]
            ?? png?[kCGImagePropertyAPNGUnclampedDelayTime] ?? png?[kCGImagePropertyAPNGDelayTime]) as? Double
    }
    #endif

    /// What an image costs in memory, in bytes: its decoded size where the platform decodes (on UIKit
    /// every frame of an animation), its bytes on Linux.
    fileprivate static func memoryCost(of image: Image) -> Int {
        #if canImport(UIKit)
        let frames = Double(image.images?.count ?? 1)
        let pixels = Double(image.size.width * image.scale) * Double(image.size.height * image.scale) * frames
        #elseif canImport(AppKit)
        // An animated GIF's NSImage counts one frame: its bitmap representation holds the frame it shows.
        let pixels = Double(image.representations.map { $0.pixelsWide * $0.pixelsHigh }.max() ?? 0)
        #else
        let pixels = Double(image.data.count) / 4
        #endif
        return Int(min(pixels * 4, Double(Int.max / 2)))
    }

    /// The downloaded bytes an image holds itself: all of them on Linux, none where it is decoded.
    fileprivate static func downloadedBytes(of image: Image) -> Data? {
        #if canImport(UIKit) || canImport(AppKit)
        return nil
        #else
        return image.data
        #endif
    }

    /// An image's bytes for the disk: its own on Linux, a PNG encoding on Apple platforms.
    fileprivate static func encodedBytes(of image: Image) -> Data? {
        #if canImport(UIKit)
        return image.pngData()
        #elseif canImport(AppKit)
        return image.tiffRepresentation.flatMap {
            NSBitmapImageRep(data: $0)?.representation(using: .png, properties: [:])
        }
        #else
        return image.data
        #endif
    }

    /// The disk tier's helpers around system calls, which are called by qualified names so that a
    /// copied file never picks up a host app's own `read` or `close`.
    fileprivate enum POSIX {
        /// The error `errno` names.
        static func lastError() -> POSIXError {
            POSIXError(POSIXErrorCode(rawValue: Foundation.errno) ?? .EIO)
        }

        /// Throws the error `errno` names if `result`, a system call's, is not 0.
        static func check(_ result: Int32) throws {
            if result != 0 { throw lastError() }
        }

        static func describe(_ error: Swift.Error) -> String {
            if let posix = error as? POSIXError { return String(cString: Foundation.strerror(posix.code.rawValue)) }
            return String(describing: error)
        }

        private static func seconds(_ time: Foundation.timespec) -> TimeInterval {
            TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1e9
        }

        /// The modification, access and status change dates that `stat` read.
        static func dates(of info: Foundation.stat) -> (modified: TimeInterval, accessed: TimeInterval,
                                                        changed: TimeInterval) {
            #if canImport(Darwin)
            return (seconds(info.st_mtimespec), seconds(info.st_atimespec), seconds(info.st_ctimespec))
            #else
            return (seconds(info.st_mtim), seconds(info.st_atim), seconds(info.st_ctim))
            #endif
        }

        /// Leaves a date as it is in `futimens` (UTIME_OMIT, a macro Swift does not import on Linux).
        #if canImport(Darwin)
        static let omit = Foundation.timespec(tv_sec: 0, tv_nsec: -2)
        #else
        static let omit = Foundation.timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)
        #endif

        static func time(_ seconds: TimeInterval) -> Foundation.timespec {
            // Clamped: `Int(_:)` traps past `Int.max` (2038 where `Int` is 32 bits), and on NaN.
            let seconds = seconds.isNaN ? 0 : min(max(seconds, 0), TimeInterval(Int.max).nextDown)
            let whole = seconds.rounded(.down)
            return Foundation.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        }

        /// Reads `count` bytes into fresh memory without zero-filling it first.
        static func readAll(_ fd: Int32, count: Int) -> Data? {
            guard count >= 0, let buffer = Foundation.malloc(max(1, count)) else { return nil }
            guard transfer(count, { Foundation.read(fd, buffer + $0, count - $0) }) else {
                Foundation.free(buffer)
                return nil
            }
            return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
        }

        /// Calls `io` (a `read` or `write` of the bytes from the offset it is given) until `count` bytes
        /// are done, again after a signal; false at an error (in `errno`) or the end of the file.
        static func transfer(_ count: Int, _ io: (Int) -> Int) -> Bool {
            var done = 0
            while done < count {
                let n = io(done)
                if n > 0 { done += n } else if n == 0 || Foundation.errno != EINTR { return false }
            }
            return true
        }
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

nonisolated extension ImageCache {
    /// An entry's key: the caller's key (a URL's absolute string by default), and for an image a
    /// ``Binder`` decoded to a size, that size. The size is no part of the string, so every string
    /// a caller gives is an entry of its own (NUL bytes included), and a sized entry finds its key's
    /// file by the string. Two keys are the same when their bytes are (as for file names:
    /// canonically equivalent strings in other bytes are two keys). A key hashes its bytes once,
    /// when it is made, with a hash of its own.
    fileprivate struct Key: Hashable, CustomStringConvertible {
        let string: String
        let size: UInt64  // hundredths of the scale (0 for 1x) << 48 | width << 24 | height, in pixels; 0: none
        private let hash: Int

        init(_ url: URL) { self.init(string: url.absoluteString) }

        init(string: consuming String, size: UInt64 = 0) {  // consuming: stored without a retain
            string.makeContiguousUTF8()  // a bridged string is hashed by the same bytes; free for a native one
            let bytes = string.utf8.withContiguousStorageIfAvailable(Self.hash) ?? 0  // contiguous now
            (self.string, self.size) = (string, size)
            hash = size == 0 ? bytes : Self.mix(UInt64(UInt(bitPattern: bytes)) ^ size)
        }

        static func == (a: Key, b: Key) -> Bool { a.hash == b.hash && a.size == b.size && a.string == b.string }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        /// What `Dictionary` hashes a key with: the key's hash mixed with the dictionary's seed. By
        /// default it runs a `Hasher` (SipHash-1-3), 32 ns of a 70 ns lookup on the benchmark
        /// machine, once per `peek` and twice per insert at the cap. (The requirement is the
        /// standard library's: were it gone, `hash(into:)` would be used, and nothing would break.)
        func _rawHashValue(seed: Int) -> Int {
            Self.mix(UInt64(UInt(bitPattern: hash)) ^ UInt64(UInt(bitPattern: seed)))
        }

        /// The string, then NUL and the size if it has one (as the binder's keys were written once),
        /// then the scale if it is not 1 (`@2x`).
        var description: String {
            guard size != 0 else { return string }
            let scale = size >> 48 == 0 ? "" : "@" + String(format: "%g", Double(size >> 48) / 100) + "x"
            return "\(string)\u{0}\(size >> 24 & 0xff_ffff)x\(size & 0xff_ffff)\(scale)"
        }

        /// Random per process, so that keys made to collide in one process do not in another.
        private static let seed = UInt64.random(in: 0 ... .max)

        /// Eight bytes at a time, a multiply and a shift each (the last eight overlap the ones
        /// before when the count is not a multiple of 8; the count is hashed too), then a full mix.
        private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
            guard let base = bytes.baseAddress.map(UnsafeRawPointer.init) else { return mix(seed) }
            var hash = seed ^ UInt64(bytes.count)
            func add(_ word: UInt64) {
                hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
                hash ^= hash >> 29
            }
            guard bytes.count >= 8 else {
                var word: UInt64 = 0
                for (index, byte) in bytes.enumerated() { word |= UInt64(byte) << (8 * UInt64(index)) }
                add(word)
                return mix(hash)
            }
            var offset = 0
            while bytes.count - offset > 8 {
                add(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            add(base.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
            return mix(hash)
        }

        /// SplitMix64's finalizer: every bit of the result depends on every bit of `x`.
        private static func mix(_ x: UInt64) -> Int {
            var x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
            x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int(truncatingIfNeeded: x ^ (x >> 31))
        }
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

    /// The request of an `image(for:)` call, for a cancellation that may come before it is made.
    fileprivate final class TaskBox: @unchecked Sendable {
        private let lock = NSLock()
        private var task: FetchTask?
        private var cancelled = false

        func set(_ task: FetchTask) {
            let cancelled = lock.withLock {
                self.task = task
                return self.cancelled
            }
            if cancelled { task.cancel() }
        }

        func cancel() {
            lock.withLock {
                cancelled = true
                return task
            }?.cancel()
        }
    }
}

// MARK: - For tests and benchmarks

// Compiled only where the package defines IMAGECACHE_TESTING for its own tests and benchmarks
// (Package.swift): a copied file has none of this.
#if IMAGECACHE_TESTING
nonisolated extension ImageCache {
    /// The clock, in seconds since 1970; set it before the first call that uses the instance.
    @_spi(Testing) public var clock: @Sendable () -> TimeInterval {
        get { testClock ?? { Date().timeIntervalSince1970 } }
        set { testClock = newValue }
    }

    /// How many images memory holds now.
    @_spi(Testing) public var memoryCount: Int { lock.withLock { _state.memory.count } }

    /// What the images in memory cost now, in bytes (see ``imageMemoryMaxBytes``).
    @_spi(Testing) public var memoryBytes: Int { lock.withLock { _state.memory.bytes } }

    /// The URLs in memory, least recently used first.
    @_spi(Testing) public var memoryURLs: [String] {
        lock.withLock { _state.memory.indicesFromLeastRecent().map { _state.memory[$0].key.description } }
    }

    /// Downloads on the network now, and those whose bytes are in, waiting for a decode or in one.
    @_spi(Testing) public var downloadCounts: (running: Int, decoding: Int) {
        lock.withLock { (_state.lanes.runningFast + _state.lanes.runningSlow, _state.lanes.decoding) }
    }

    /// The bounds a decode for a request made now works within (see `DecodeLimits`).
    @_spi(Testing) public var decodeLimits: (maxPixels: Int, maxAnimatedFrames: Int, memoryMaxBytes: Int) {
        let limits = lock.withLock { _decodeLimits }
        return (limits.maxPixels, limits.maxAnimatedFrames, limits.memoryMaxBytes)
    }

    /// How many image files the folder holds, after the disk work queued so far (counted: O(files)).
    @_spi(Testing) public var diskCount: Int { diskQueue.sync { disk.sizes().files } }

    /// Makes every disk write fail with `code` (nil: work again).
    @_spi(Testing) public func injectDiskWriteError(_ code: POSIXErrorCode?) {
        diskQueue.sync { disk.injectedWriteError = code }
    }

    /// The file name the disk tier uses for `url`.
    @_spi(Testing) public static func diskFileName(for url: URL) -> String {
        DiskStore.fileName(for: url.absoluteString)
    }

    /// Every broken invariant, described; empty when all hold. Checks the memory list against the
    /// dictionary, memory against its cap, the downloads listed, that every download's phase
    /// changed as its lifecycle allows (`Download.Phase.mayBecome`), and that the folder holds
    /// nothing but image files and temporary files (after queued disk work). The lanes' counts need
    /// no check: `Lanes.move` is the only way to change them.
    @_spi(Testing) public func checkInvariants() -> [String] {
        var problems: [String] = lock.withLock {
            var problems: [String] = []
            let order = _state.memory.indicesFromLeastRecent()
            if order.count != _state.memory.count {
                problems.append("memory list has \(order.count) slots, count says \(_state.memory.count)")
            }
            if _state.memory.count + _state.secondChanceOrder.count > _state.settings.memoryMaxCount {
                problems.append("memory and second chance hold \(_state.memory.count)+\(_state.secondChanceOrder.count)"
                                + " > cap \(_state.settings.memoryMaxCount)")
            }
            if _state.memory.bytes + _state.secondChanceBytes > _state.settings.memoryMaxBytes {
                problems.append("memory and second chance cost \(_state.memory.bytes)+\(_state.secondChanceBytes)"
                                + " > budget \(_state.settings.memoryMaxBytes)")
            }
            var loaded = 0
            for (key, entry) in _state.entries {
                switch entry {
                case .loaded(let slot):
                    loaded += 1
                    if _state.memory[slot].key != key {
                        problems.append("slot of \(key.string) holds \(_state.memory[slot].key.string)")
                    }
                case .loading(let download):
                    if case .done = download.phase { problems.append("finished download still listed: \(key.string)") }
                    if download.waiters.isEmpty { problems.append("download without waiters: \(key.string)") }
                case .failed:
                    break
                }
            }
            if loaded != _state.memory.count {
                problems.append("\(loaded) loaded entries, memory count \(_state.memory.count)")
            }
            problems += _state.lanes.wrongMoves.map { "download phase changed against its lifecycle: \($0)" }
            return problems
        }
        problems += diskQueue.sync {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            let known = Set(disk.list().map(\.name))
            return names.filter { !known.contains($0) && !DiskStore.isTemporaryName($0) }
                .map { "unexpected file in the folder: \($0)" }
        }
        return problems
    }

    /// Puts `image` in memory as if it had just been read from disk, with the count cap and batch
    /// eviction: the memory tier alone. Evicted images are marked as used on disk, as they are
    /// when their files exist (here they do not, and are not written).
    @_spi(Testing) public func benchmarkInsert(_ url: URL, image: Image, data: Data) {
        let key = Key(url)
        let now = currentTime()
        lock.withLock {
            let evicted = _insert(key, Payload(image: image), size: data.count, downloadedAt: now).map(\.item)
            if !evicted.isEmpty { _queueOnDisk(.touch(evicted.map(\.url), at: now)) }
        }
    }

    /// Holds the disk queue (after the work queued so far) until `gate` is signalled.
    @_spi(Testing) public func holdDiskQueue(until gate: DispatchSemaphore) {
        diskQueue.async { gate.wait() }
    }

    /// The image a ``Binder`` decoded to `size` under `key`, as `peek(key:)` finds images.
    @_spi(Testing) public func peek(key: String, filling size: (width: Int, height: Int)) -> Image? {
        peek(Self.memoryKey(key, filling: size))
    }

    /// How the memory entry of `key` at `size` is described (see `Key.description`).
    @_spi(Testing) public static func memoryKeyDescription(_ key: String, filling size: (width: Int, height: Int)?,
                                                           scale: Double = 1) -> String {
        memoryKey(key, filling: size, scale: scale).description
    }

    /// Binds `binder` to `url` at `pixelSize` for a screen of `scale`, as a view on that screen does.
    @_spi(Testing) public static func bind(_ binder: Binder, _ url: URL, pixelSize: CGSize, scale: Double,
                                           cache: ImageCache) {
        binder.bind(Load(url, key: nil), nil, nil, pixelSize, cache, .none, scale: scale)
    }

    /// Waits until every disk operation queued so far has run.
    @_spi(Testing) public func drainDisk() {
        diskQueue.sync {}
    }

    /// Waits for the sweep that the first disk lookup schedules (see `DiskStore.read`), if it has.
    @_spi(Testing) public func waitForSweep() {
        diskQueue.sync { disk.sweep }?.wait()
    }
}
#endif
