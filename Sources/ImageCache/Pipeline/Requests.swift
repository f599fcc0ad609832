// Everything below the public files is internal. A miss walks them in this order: Requests,
// Downloads, Transport, Delivery; they use HTTP, MemoryTier, DiskTier, DiskFiles, Images, Platform
// and Helpers.
//
// Requests: a load (`Load`, `Payload`, `Decoder`), the request path, and cancellation.

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
    /// An entry as a decoder made it: the downloaded bytes (nil once memory no longer has them),
    /// and an image or any other value.
    internal struct Payload {
        var bytes: Data?
        var image: Image?
        var value: Box?
        var scaleStandsIn = false  // the image's scale stands in for the screen's (see `decodeScale`)
    }

    /// A decoded value that is not an image, with its type.
    internal final class Box {
        let value: Any
        let type: ObjectIdentifier
        init<Value>(_ value: Value) {
            self.value = value
            type = ObjectIdentifier(Value.self)
        }
    }

    /// How bytes become an entry: the platform image (the default), or a value of one type.
    internal struct Decoder: @unchecked Sendable {
        let type: ObjectIdentifier?  // nil for the image
        /// The bytes' entry; an image is decoded within `limits` (the settings when the request was
        /// made: the longest side without a size to fill, and when an animation animates).
        let decode: @Sendable (_ data: Data, _ limits: DecodeLimits) -> Result<Payload, Error>
        /// Runs on a decode worker even where the image's decode is cheap (the tests' decoder that
        /// waits, standing in for ImageIO's).
        var offThread = false

        /// Whether it costs so little that it runs wherever its bytes are: only the image's where
        /// images are not decoded (Linux: the structural check). ImageIO's decode and an app's
        /// `decode:` run on a decode worker.
        var isCheap: Bool {
            #if canImport(ImageIO)
            return false
            #else
            return type == nil && !offThread
            #endif
        }

        static let image = Decoder.image(filling: nil)

        /// The image, decoded to fill `size` if given (a binder's), else within the bound, for a
        /// screen of `scale` (a view's; nil or 0: the main screen's, as it is when decoded, or 1 in
        /// its place until it is read: see `decodeScale`).
        static func image(filling size: (width: Int, height: Int)?, scale: Double? = nil) -> Decoder {
            Decoder(type: nil) { data, limits in
                let (scale, standsIn) = ImageCache.decodeScale(scale, screen: ImageCache.screenScale)
                return ImageCache.decode(data, filling: size, limits: limits, scale: scale)
                    .map { Payload(bytes: $0.data, image: $0.image, scaleStandsIn: standsIn) }
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
    internal struct Load {
        let url: URL?  // the request's; nil only for a `URLRequest` without one, which fails at once
        let request: URLRequest?  // the app's, sent as given; nil for the URL forms (made when sent)
        var key: Key
        var lane: Lane
        var decoder: Decoder
        var onProgress: (@Sendable (Int, Int?) -> Void)? = nil
        var onRetry: (@Sendable (Error, Int) -> Void)? = nil
        var isPrefetch = false
        /// When `store(_:for:)` gave the bytes this load decodes; nil for a fetch. A store's
        /// download has no URL, is never sent, and stays while no one waits for it.
        var storedAt: TimeInterval?
        var isStore: Bool { storedAt != nil }

        /// A load of `url` (the forms that take a URL). No `URLRequest` is made until one is sent:
        /// on Linux each is an object, and a memory hit needs none.
        init(_ url: URL, key: String?, slow: Bool = false, _ decoder: Decoder = .image) {
            (self.url, request) = (url, nil)
            self.key = Key(string: key ?? url.absoluteString)
            (lane, self.decoder) = (slow ? .slow : .fast, decoder)
        }

        /// The load of bytes `store(_:for:)` gave at `time`, decoded by `decoder` (see ``storedAt``).
        init(storing key: Key, at time: TimeInterval, _ decoder: Decoder) {
            (url, request) = (nil, nil)
            self.key = key
            (lane, self.decoder, storedAt) = (.fast, decoder, time)
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

    /// The one path of every fetch: memory, a download under way, then a new download (which
    /// looks on disk first). `completion` runs on `queue` (``callbackQueue`` by default).
    internal func request(_ load: Load, queue: DispatchQueue? = nil,
                         completion: @escaping @Sendable (Result<Delivery, Error>) -> Void,
                         onCancel: (@Sendable () -> Void)? = nil) -> FetchTask {
        let now = currentTime()
        let (task, route, handler): (FetchTask, Route, (@Sendable (Event) -> Void)?) = lock.withLock {
            let task = FetchTask(load, cache: self, queue: queue ?? _state.settings.callbackQueue,
                                 completion: completion, onCancel: onCancel)
            _state.counts.requests &+= 1
            return (task, _route(task, load, now: now), _state.settings.onEvent)
        }
        switch consume route {
        case .answered(let result, let bytes):
            let event = handler == nil ? nil : Self.event(result, task.url, from: .memory, bytes: bytes)
            deliver(task, result, event: event, handler: handler)
        case .joined(let started):
            startNetwork(started)
        case .lookUp(let download, let maxBytes):
            diskQueue.async { self.lookUpOnDisk(download, maxBytes: maxBytes) }
        case .none:
            break
        }
        return task
    }

    /// Where `request` sent a task: answered at once (from memory, or refused), joined to a
    /// download under way (with the downloads that may start now), to a new download's look-up on
    /// disk, or nowhere (a prefetch of a key prefetched already).
    internal enum Route {
        case answered(Result<Delivery, Error>, bytes: Int)
        case joined(started: [Download])
        case lookUp(Download, maxBytes: Int)
        case none
    }

    /// Routes `task`, made for `load` (its key, type and lane), under the lock.
    private func _route(_ task: FetchTask, _ load: Load, now: TimeInterval) -> Route {
        let key = load.key
        if load.isPrefetch {
            guard _state.prefetches[key] == nil else {  // prefetched already: this one is not needed
                task.answer = .delivered
                return .none
            }
            _state.prefetches[key] = task
        }
        if let refusal = load.request.flatMap(Load.refusal(of:)) { return .answered(.failure(refusal), bytes: 0) }
        switch _state.entries[key] {
        case .loaded(let slot)?:
            if let hit = _memoryHit(slot, load.decoder, now: now) { return hit }
        case .loading(let download)?:
            return .joined(started: _join(task, download, fast: load.lane == .fast))
        case .failed?, nil:
            break
        }
        if let error = Load.refusal(of: task.url) {
            _setFailed(key, error)
            return .answered(.failure(error), bytes: 0)
        }
        // An image evicted lately comes back; a request for another type forgets it (its
        // entry will replace it).
        if load.decoder.type != nil, _state.memory.secondChanceCount > 0 { secondChance.removeObject(forKey: key) }
        if load.decoder.type == nil, let found = _secondChance(key, now: now) {
            _state.counts.memoryHits &+= 1
            let delivery = Delivery(payload: Payload(image: found.image), source: .memory)
            return .answered(.success(delivery), bytes: found.bytes)
        }
        // One download per image at a time: a request for another of its keys (a binder's size, the
        // whole image) joins one under way, and decodes its own from the same bytes (`deliver(_:to:)`).
        if let shared = _downloadSharing(key) { return .joined(started: _join(task, shared, fast: load.lane == .fast)) }
        let download = Download(load, limits: _decodeLimits)
        download.waiters.append(task)
        task.download = download
        _state.lanes.move(download, to: .checkingDisk)
        _state.entries[key] = .loading(download)
        if key.size != 0 { _state.entries.noteSize(key) }
        return .lookUp(download, maxBytes: _state.settings.maxImageBytes)
    }

    /// A download under way of the image that `key` names, for another of its keys: the whole
    /// image's, or another size's.
    ///
    /// - Complexity: O(the sizes the key has had entries at).
    private func _downloadSharing(_ key: Key) -> Download? {
        let sizes = _state.entries.sizes(of: key.string)
        guard key.size != 0 || !sizes.isEmpty else { return nil }
        for size in [0] + sizes where size != key.size {
            if case .loading(let download)? = _state.entries[Key(string: key.string, size: size)] { return download }
        }
        return nil
    }

    /// The entry in memory `slot` as the answer to a request for `decoder`'s type, if it is fresh
    /// and of that type (counted as a use); else nil, and the entry leaves memory (a new download
    /// will replace it).
    private func _memoryHit(_ slot: Int, _ decoder: Decoder, now: TimeInterval) -> Route? {
        guard now < _state.memory[slot].downloadedAt + _state.settings.timeToLive,
              _state.memory[slot].receivedAt <= now + Self.maxClockSkew,
              decoder.type == _state.memory[slot].type else {
            _evict(slot)
            return nil
        }
        _state.memory.markUsed(slot)
        _state.counts.memoryHits &+= 1
        // No bytes: the entry is of the requested type.
        let payload = Payload(image: _state.memory[slot].image, value: _state.memory[slot].value)
        return .answered(.success(Delivery(payload: payload, source: .memory)), bytes: _state.memory[slot].size)
    }

    /// The task waits for `download`, which moves to the fast lane if the task is fast. Returns the
    /// downloads that may start now.
    private func _join(_ task: FetchTask, _ download: Download, fast: Bool) -> [Download] {
        download.waiters.append(task)
        task.download = download
        _state.counts.deduplicated &+= 1
        guard fast, download.lane == .slow else { return [] }
        _state.lanes.move(download, to: download.phase, lane: .fast)
        return _startReadyDownloads()
    }

    internal func cancel(_ task: FetchTask) {
        let (cancelled, stopped): (Bool, Stopped?) = lock.withLock {
            guard task.answer == .waiting else { return (false, nil) }
            task.answer = .cancelled
            _endPrefetch(task)
            guard let download = task.download, _isCurrent(download) else { return (true, nil) }
            download.waiters.removeAll { $0 === task }
            return (true, download.waiters.isEmpty && !download.load.isStore ? _forget(download.key) : nil)
        }
        if let stopped { finishStopped([stopped]) }
        if cancelled, let onCancel = task.onCancel { task.queue.async { onCancel() } }
    }

    /// Forgets `task` as the prefetch of its key, if it is (its answer came, or it was cancelled).
    internal func _endPrefetch(_ task: FetchTask) {
        if task.load.isPrefetch, _state.prefetches[task.load.key] === task { _state.prefetches[task.load.key] = nil }
    }

}
