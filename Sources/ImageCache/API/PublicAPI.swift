// The public calls: fetch (callbacks, Result, async), prefetch, store, peek, remove, and the
// disk's maintenance calls. Each form that takes a URL or a `URLRequest` loads what a `Request` of
// it with the defaults describes (`Load(url, key:slow:)` is `Load(Request(url:key:slow:))`, which
// a test checks); they build the load directly, not the request first, which showed in the
// memory hit's figure (see CHANGELOG).

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
    /// Fetches an image for the screen: memory, then disk, then the network on the fast lane.
    ///
    /// The callback runs once, asynchronously, where callbacks run (see ``FetchCallback``), with
    /// `url` and the image, or nil (see ``error(for:)-(URL)``), unless the task is cancelled first (see
    /// ``FetchTask/cancel()``). A download of `url` waiting on the slow lane moves to the fast lane.
    /// - Parameters:
    ///   - url: The image's http or https URL.
    ///   - key: What the image is cached under: `url.absoluteString` by default. Give one
    ///     when the URL changes but the image does not (a signed URL's token, say): URLs under one
    ///     key share one entry, and one URL under two keys makes two.
    ///   - callback: Gets `url` and the image, or nil; nil for no callback (the image is still cached).
    @discardableResult
    public func fetch(_ url: URL, key: String? = nil, callback: FetchCallback?) -> FetchTask {
        fetch(Load(url, key: key), url, callback)
    }

    /// Fetches what `request` describes (see ``Request``): its image, or the variant its size and
    /// processors make, with the callback contract of ``fetch(_:key:callback:)``; the URL passed to
    /// the callback is the request's (`about:blank` for a `URLRequest` without one).
    @discardableResult
    public func fetch(_ request: Request, callback: FetchCallback?) -> FetchTask {
        let load = Load(request)
        return fetch(load, load.url ?? Self.blank, callback)
    }

    /// Fetches an image ahead of need on the slow lane: one download at a time, started only
    /// while no fast work is queued or running. Same callback contract as ``fetch(_:key:callback:)``.
    @discardableResult
    public func slowFetch(_ url: URL, key: String? = nil,
                          callback: FetchCallback? = nil) -> FetchTask {
        fetch(Load(url, key: key, slow: true), url, callback)
    }

    /// Fetches an image and says where it came from, or why it could not be had.
    ///
    /// Each closure runs where callbacks run (see ``Completion``). `completion` runs once unless the task is cancelled
    /// first, with the image and its ``Source``, or an ``Error`` (see ``Error/isFatal``). `onRetry`
    /// runs before each retry, with the error that caused it and the number of the attempt that
    /// failed (from 1). `onProgress` runs while the image downloads, with the bytes received so far
    /// and the length the server announced (nil if none): at most about 20 times a second,
    /// `received` never smaller than the call before (not even after a retry), and a last call with
    /// the whole size before `completion`. A request that joins a download under way is told from
    /// where it is. Memory and disk hits do not call it.
    @discardableResult
    public func fetch(_ url: URL, key: String? = nil, slow: Bool = false,
                      onProgress: ProgressCallback? = nil,
                      onRetry: RetryCallback? = nil,
                      completion: @escaping Completion<Image>) -> FetchTask {
        fetch(Load(url, key: key, slow: slow), onProgress, onRetry, completion)
    }

    /// Fetches what `request` describes (see ``Request``), and says where it came from, or why it
    /// could not be had, with the contract of `fetch(_:key:slow:onProgress:onRetry:completion:)`. A
    /// variant made by processors comes from where its original came from.
    @discardableResult
    public func fetch(_ request: Request, onProgress: ProgressCallback? = nil, onRetry: RetryCallback? = nil,
                      completion: @escaping Completion<Image>) -> FetchTask {
        fetch(Load(request), onProgress, onRetry, completion)
    }

    /// Fetches an image with `request`, as `fetch(_:key:slow:onProgress:onRetry:completion:)` does a
    /// URL: its headers (an `Authorization`, a cookie), `cachePolicy` and `timeoutInterval` are sent
    /// as they are (plus the cache's `Accept` and `Accept-Encoding: identity` where it has none, which
    /// its session adds after ``requestModifier`` has seen the request before each attempt). Its
    /// headers go to a redirect's target only on the same origin (see the Requests article).
    ///
    /// The key is `request.url.absoluteString` unless `key` is given: **headers are not part of it**,
    /// so two users' private images at one URL need two keys. Downloads of one key are shared, with
    /// the headers of the request that started it. Anything but a `GET` with no body of an http(s)
    /// URL fails at once, caching nothing, with the fatal ``Error/invalidRequest(_:)`` (or
    /// ``Error/unsupportedURL(_:)``).
    @discardableResult
    public func fetch(_ request: URLRequest, key: String? = nil, slow: Bool = false,
                      onProgress: ProgressCallback? = nil,
                      onRetry: RetryCallback? = nil,
                      completion: @escaping Completion<Image>) -> FetchTask {
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
    public func fetch<Value: Sendable>(_ url: URL, key: String? = nil, slow: Bool = false,
                             decode: @escaping @Sendable (Data) throws -> Value,
                             onProgress: ProgressCallback? = nil,
                             onRetry: RetryCallback? = nil,
                             completion: @escaping Completion<Value>) -> FetchTask {
        fetch(Load(url, key: key, slow: slow, .value(decode)), onProgress, onRetry, completion)
    }

    /// Fetches any data with `request`, as the `decode:` form fetches a URL; the request is sent as
    /// `fetch(_:key:slow:onProgress:onRetry:completion:)` sends it.
    @discardableResult
    public func fetch<Value: Sendable>(_ request: URLRequest, key: String? = nil, slow: Bool = false,
                             decode: @escaping @Sendable (Data) throws -> Value,
                             onProgress: ProgressCallback? = nil,
                             onRetry: RetryCallback? = nil,
                             completion: @escaping Completion<Value>) -> FetchTask {
        fetch(Load(request, key: key, slow: slow, .value(decode)), onProgress, onRetry, completion)
    }

    /// Fetches an image with Swift concurrency. Throws an ``ImageCache/Error`` and nothing else:
    /// why the image could not be had, or ``Error/cancelled`` if the calling task is cancelled first.
    public func image(for url: URL, key: String? = nil, slow: Bool = false) async throws -> Image {
        try await image(for: Request(url: url, key: key, slow: slow))
    }

    /// Fetches what `request` describes (see ``Request``) with Swift concurrency, as
    /// `image(for:key:slow:)` fetches a URL.
    public func image(for request: Request) async throws -> Image {
        try await image(Load(request))
    }

    /// Fetches an image with `request` and Swift concurrency, as `image(for:key:slow:)` fetches a
    /// URL; the request is sent as `fetch(_:key:slow:onProgress:onRetry:completion:)` sends it.
    public func image(for request: URLRequest, key: String? = nil, slow: Bool = false) async throws -> Image {
        try await image(for: Request(urlRequest: request, key: key, slow: slow))
    }

    /// Fetches each URL ahead of need, on the slow lane, with no callback: what a collection view's
    /// `prefetchItemsAt` hands over. A URL in memory or on disk costs no network request, one being
    /// prefetched is not asked again, and one that a fetch is downloading shares that download.
    ///
    /// - Complexity: O(n) in the URLs.
    public func prefetch(_ urls: [URL]) {
        prefetch(urls.map { Request(url: $0) })
    }

    /// Prefetches each request, as `prefetch(_:)` prefetches URLs, with its headers.
    public func prefetch(_ requests: [URLRequest]) {
        prefetch(requests.map { Request(urlRequest: $0) })
    }

    /// Prefetches what each request describes (see ``Request``), on the slow lane whatever its lane,
    /// as `prefetch(_:)` prefetches URLs: the variant its size and processors make is made ahead of
    /// need too.
    ///
    /// - Complexity: O(n) in the requests.
    public func prefetch(_ requests: [Request]) {
        for request in requests { prefetch(Load(request, slow: true)) }
    }

    /// Stops prefetching each URL: only the requests of `prefetch(_:)` are cancelled, so a
    /// download that a fetch or a binder also waits for goes on; one that only the prefetch wanted
    /// stops, and nothing is cached from it. A URL not being prefetched is ignored.
    ///
    /// - Complexity: O(n) in the URLs.
    public func cancelPrefetching(_ urls: [URL]) {
        let tasks = locked { $0.prefetchTasks(urls.map(Key.init)) }
        for task in tasks { task.cancel() }
    }

    /// Stops prefetching what each request describes, as `cancelPrefetching(_:)` stops URLs: the
    /// load of its alternative too, where that stands in for its own (see ``Request/alternative``).
    /// (Disfavored, so that `cancelPrefetching([])`, which 1.0 read as URLs, still compiles.)
    ///
    /// - Complexity: O(n) in the requests.
    @_disfavoredOverload
    public func cancelPrefetching(_ requests: [Request]) {
        let keys = requests.map(\.cacheKey)
        // A prefetch whose own URL failed may be loading its alternative now, under that one's key.
        let falling = zip(requests, keys).compactMap { request, key in
            request.alternative.map { (own: key, alternative: key.ofAlternative($0)) }
        }
        let tasks = locked { $0.prefetchTasks(keys, falling: falling) }
        for task in tasks { task.cancel() }
    }

    /// The URL a callback gets for a `URLRequest` without one.
    private static let blank = URL(string: "about:blank")!

    /// The callback forms of `fetch`: the URL and the image, or nil.
    private func fetch(_ load: consuming Load, _ url: URL, _ callback: FetchCallback?) -> FetchTask {
        let options = load.options  // not the whole load: the closure would copy it, for every fetch
        return request(consume load, queue: Self.callbackActorQueue) { result in
            Self.onCallbackActor(Self.imageOnly(result, options)) { callback?(url, $0) }
        }
    }

    /// The image Result forms of `fetch`, with their hooks.
    private func fetch(_ load: Load, _ onProgress: ProgressCallback?, _ onRetry: RetryCallback?,
                       _ completion: @escaping Completion<Image>) -> FetchTask {
        let options = load.options  // not the whole load (see above)
        return request(hooked(load, onProgress, onRetry), queue: Self.callbackActorQueue) { result in
            Self.onCallbackActor(Self.image(result, options)) { completion($0) }
        }
    }

    /// The `decode:` forms of `fetch`, with their hooks.
    private func fetch<Value: Sendable>(_ load: Load, _ onProgress: ProgressCallback?, _ onRetry: RetryCallback?,
                                        _ completion: @escaping Completion<Value>) -> FetchTask {
        let decoder = load.decoder
        return request(hooked(load, onProgress, onRetry), queue: Self.callbackActorQueue) { result in
            Self.onCallbackActor(result.flatMap { Self.resolve($0, decoder) }) { completion($0) }
        }
    }

    /// `load` with the public hooks, which run where its callback runs.
    private func hooked(_ load: Load, _ onProgress: ProgressCallback?, _ onRetry: RetryCallback?) -> Load {
        var progress: (@Sendable (Int, Int?) -> Void)?
        if let onProgress {
            progress = { received, expected in Self.onCallbackActor((received, expected)) { onProgress($0.0, $0.1) } }
        }
        var retry: (@Sendable (Error, Int) -> Void)?
        if let onRetry {
            retry = { error, attempt in Self.onCallbackActor((error, attempt)) { onRetry($0.0, $0.1) } }
        }
        return load.hooked(onProgress: progress, onRetry: retry)
    }

    private func image(_ load: Load) async throws -> Image {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Unchecked<Image>, Swift.Error>) in
                // The continuation resumes on a global queue: the main queue may not be running.
                let task = request(load, queue: .global()) { result in
                    continuation.resume(with: Self.image(result, load.options).map { Unchecked($0.value) }.mapError { $0 })
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
        _ = request(load.asPrefetch, queue: Self.prefetchQueue) { _ in }
    }

    /// Where a prefetch's answer goes: nowhere the app waits on (not the main queue).
    private static let prefetchQueue = DispatchQueue(label: "ImageCache.prefetch", qos: .utility)

    /// Puts `data` in the cache under `key` as if it had just been downloaded: on disk, and in memory
    /// as an image if it is one, else as the bytes. Returns at once: the file is queued for the disk
    /// queue, and the bytes are decoded off the caller's thread, on a decode worker (on Linux, where
    /// an image is its bytes, their structure is checked at once). Until the decode is done,
    /// ``peek(_:)-(URL)`` finds nothing under `key`, and fetches of `key` wait for it as for a download
    /// under way: none goes to the network, nor reads the key's older file. Callers waiting for a
    /// download under `key` get it too (the download stops). Bytes that are not an image are kept
    /// as bytes: an image fetch of `key` fails with the decoder's reason, a `decode:` fetch reads
    /// them.
    ///
    /// Throws ``Error/tooLarge(limit:)``, storing nothing, when `data` is larger than
    /// ``maxImageBytes`` (the most of a body held in memory); nothing else.
    ///
    /// - Complexity: O(1) amortized in the entries, plus the sizes a ``Binder`` decoded the key's
    ///   image to; the decode and the file's write are not the caller's.
    public func store(_ data: Data, for key: String) throws {
        try store(data, under: Key(string: key))
    }

    /// Puts `image` in the cache under `key`: in memory at once (``peek(_:)-(URL)`` and fetches find it as
    /// soon as this returns, and callers waiting for a download under `key` get it), and on disk
    /// after, off the caller's thread, with the image's original bytes wherever there are some: its
    /// own on Linux; on Apple platforms those of the entry memory holds it in (an image the cache
    /// delivered, under any key: a photo keeps its EXIF orientation, a GIF its frames; not a variant
    /// processors made, whose entry's file is its original's), else an encoding, made off the
    /// caller's thread on a queue of its own (not the decode workers that downloads use): a JPEG (quality 0.9) for an opaque still such as a camera's photo, a PNG for
    /// one with transparency or an animation, under UIKit with the image's orientation (and an
    /// animation's frames, their times and its play count) and no larger than a whole decode shows
    /// (``maxDecodedPixelSize`` on its longest side), under AppKit of the image as drawn. Until the
    /// file is written, look-ups of `key` on disk wait for it rather than read the key's older file.
    /// An image that memory does not keep (it would cost more than a quarter of
    /// ``imageMemoryMaxBytes``: a 48 MP photo, most photos in an app extension) is encoded off the
    /// caller's thread too: ``peek(_:)-(URL)`` finds nothing meanwhile, and fetches of `key` wait
    /// for its file.
    ///
    /// Throws, storing nothing, ``Error/tooLarge(limit:)`` when the bytes are known at once (its own,
    /// or its entry's) and are larger than ``maxImageBytes``, and ``Error/decodingFailed(_:)`` when
    /// the image has no bitmap (a `UIImage` made from a `CIImage`: render it first). The outcome of
    /// an encoding made after this returns comes later: one that fails, or is larger than the
    /// limit, leaves no file under `key` (an older one is deleted; memory keeps the image if it
    /// can), and ``onEvent`` hears ``Event/diskProblem(_:)`` saying why.
    ///
    /// - Complexity: O(1) amortized in the entries where an image has bytes of its own (Linux); on
    ///   Apple platforms O(n) in memory's entries, to find the one holding it.
    public func store(_ image: Image, for key: String) throws {
        try store(image, under: Key(string: key))
    }

    /// Moves a fast-lane download of `url` that has not started yet to the back of the slow lane.
    ///
    /// A download that is already running is left to finish: stopping it would throw away the
    /// bytes already received. Nothing happens if `url` is not being fetched.
    public func moveToSlowQueue(_ url: URL, key: String? = nil) {
        let key = Key(string: key ?? url.absoluteString)
        let started = locked { $0.moveToSlowLane(key) }
        startNetwork(started)
    }

    /// The image for `url` if it is in memory and fresh, else nil. Never touches the disk or the
    /// network and never waits for them; counts as a use of the image.
    ///
    /// - Complexity: O(1): one lock, one dictionary lookup.
    public func peek(_ url: URL) -> Image? {
        peek(key: url.absoluteString)
    }

    /// The image cached under `key`, as ``peek(_:)-(URL)`` finds it.
    public func peek(key: String) -> Image? {
        peek(Key(string: key))
    }

    /// What `request` describes, as ``peek(_:)-(URL)`` finds an image: for a request with a size or
    /// processors, only that variant (never the whole image, nor another variant).
    public func peek(_ request: Request) -> Image? {
        peek(request.cacheKey)
    }

    /// The image under `key` (a binder's, at a size, too), as ``peek(_:)-(URL)`` finds it.
    internal func peek(_ key: Key) -> Image? {
        let now = currentTime()
        return locked { $0.peek(key, now: now) }
    }

    /// True when the last fetch of `url` failed; cleared when `url` is fetched again or removed.
    public func failedToFetch(_ url: URL) -> Bool {
        error(for: url) != nil
    }

    /// True when the last fetch under `key` failed; cleared when it is fetched again or removed.
    public func failedToFetch(key: String) -> Bool {
        error(forKey: key) != nil
    }

    /// True while `url` is being looked up on disk, queued, downloaded, or waiting to retry (or while
    /// bytes stored under its key are decoded).
    public func fetching(_ url: URL) -> Bool {
        let key = Key(url)
        return locked { $0.isLoading(key) }
    }

    /// Why the last fetch of `url` failed; nil if it did not, or was fetched again or removed since.
    public func error(for url: URL) -> ImageCache.Error? {
        error(forKey: url.absoluteString)
    }

    /// Why the last fetch of what `request` describes failed (its variant's processors, or its
    /// original), as `error(for:)` says of a URL.
    public func error(for request: Request) -> ImageCache.Error? {
        let key = request.cacheKey
        return locked { $0.error(for: key) }
    }

    /// Why the last fetch under `key` failed, as `error(for:)` says.
    public func error(forKey key: String) -> ImageCache.Error? {
        let key = Key(string: key)
        return locked { $0.error(for: key) }
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
        let stopped = locked { $0.remove(key) }
        finishStopped(stopped)
    }

    /// Forgets everything, in memory and on disk. Downloads in flight are cancelled and their
    /// callbacks run with nil. Returns when the disk is empty; given a `completion`, returns at
    /// once (memory is empty then) and runs it (see ``DoneCallback``) when the disk is. Another
    /// process's write that is under way at that moment may still land.
    public func removeAll(completion: DoneCallback? = nil) {
        let stopped = locked { $0.removeAll() }
        finishStopped(stopped)
        finishDiskWork(completion)
    }

    /// Empties memory; the disk keeps everything (an image whose file is missing is written
    /// again), and downloads in flight go on and deliver their images. Called on a memory warning
    /// under UIKit. Targets of a ``Binder`` that are not displayed let their images go.
    public func purgeMemory() {
        let now = currentTime()
        locked { $0.purge(now: now) }
        NotificationCenter.default.post(name: Self.memoryPurged, object: self)  // for the binders
    }

    /// Makes sure every image in memory is on disk, with how recently it was used. Images are
    /// written as they arrive, so this only writes again what could not be written then, or was
    /// deleted since while memory still holds its downloaded bytes (always on Linux; on Apple
    /// platforms, until they are on disk). Returns when done, with the disk work queued before;
    /// given a `completion`, returns at once and runs it (see ``DoneCallback``) when done.
    public func persistCacheToDisk(completion: DoneCallback? = nil) {
        let now = currentTime()
        locked { $0.persist(now: now) }
        finishDiskWork(completion)
    }

    /// Deletes expired images from disk, then the least recently used beyond the `maxImageCount`
    /// most recent, or beyond the most recent whose sizes add up to `maxBytes`. Images in memory
    /// count as used now, in their order of use; memory is not changed. Returns when done; given a
    /// `completion`, returns at once and runs it (see ``DoneCallback``) when done. (The disk keeps
    /// within ``diskMaxBytes`` without this call.)
    ///
    /// - Complexity: O(n log n) in the number of files in the folder.
    public func reduceDiskCache(maxImageCount: Int = .max, maxBytes: Int = .max,
                                completion: DoneCallback? = nil) {
        let now = currentTime()
        locked { ledger in
            ledger.queueOnDisk(.reduce(recency: ledger.recency, maxCount: max(0, maxImageCount),
                                       maxBytes: max(0, maxBytes), now: now))
        }
        finishDiskWork(completion)
    }

    /// Waits for the disk work queued so far, or has `completion` run after it.
    private func finishDiskWork(_ completion: DoneCallback?) {
        guard let completion else { return diskQueue.sync {} }
        let queue = Self.callbackActorQueue ?? callbackQueue
        diskQueue.async { queue.async { Self.onCallbackActor(()) { completion() } } }
    }
}
