// A load as a request describes it (`Load`), what a decoder makes of bytes (`Payload`, `Decoder`),
// and the cache's side of a request: routed through the ledger (`Ledger.route`), then delivered,
// joined to a download, or looked up on disk; and cancellation.

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
        /// A binder's request at a size may take the whole image of a download of its key under way
        /// (false: the size is asked for itself, for a view laid out at it).
        var takesWholeUnderWay = true
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
        let (task, route, handler): (FetchTask, Route, (@Sendable (Event) -> Void)?) = locked { ledger in
            let task = FetchTask(load, cache: self, queue: queue ?? ledger.settings.callbackQueue,
                                 completion: completion, onCancel: onCancel)
            return (task, ledger.route(task, load, now: now), ledger.settings.onEvent)
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

    internal func cancel(_ task: FetchTask) {
        let (cancelled, stopped) = locked { $0.cancel(task) }
        if let stopped { finishStopped([stopped]) }
        if cancelled, let onCancel = task.onCancel { task.queue.async { onCancel() } }
    }
}
