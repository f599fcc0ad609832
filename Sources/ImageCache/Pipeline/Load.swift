// A load as a public entry point describes it: the URL or request, the key, the lane, the decoder
// and the hooks; and why a URL or a request is refused before anything is sent.

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
    /// Everything one load needs, as a public entry point describes it; a ``FetchTask`` keeps its
    /// own, and a ``Download`` its first requester's (whose request and decoder it uses).
    internal struct Load {
        private(set) var url: URL?  // the request's; nil only for a `URLRequest` without one, which fails at once
        private(set) var request: URLRequest?  // the app's, sent as given; nil for the URL forms (made when sent)
        private(set) var key: Key
        private(set) var lane: Lane
        private(set) var decoder: Decoder
        /// What makes the variant its key names, if it has any (see ``Processor``): a job runs them
        /// on its original, the load of the same key with none (`original`).
        private(set) var processors: [Processor] = []
        private(set) var options: Request.Options = []
        private(set) var onProgress: (@Sendable (Int, Int?) -> Void)? = nil
        private(set) var isPrefetch = false
        private(set) var isOriginal = false  // a variant's job's request for its original (see `original`)
        /// What few loads have, behind one reference (nil for none): a plain fetch's load, copied
        /// into its task and along its route, stays small.
        private var rare: Rare?

        private final class Rare: @unchecked Sendable {  // never changed: a change makes another
            let scale: Double?
            let onRetry: (@Sendable (Error, Int) -> Void)?
            let onPreview: (@Sendable (Preview) -> Void)?
            let blurHash: String?
            let alternative: Request.Alternative?
            let standsInFor: Key?

            init(scale: Double?, onRetry: (@Sendable (Error, Int) -> Void)?, onPreview: (@Sendable (Preview) -> Void)?,
                 blurHash: String?, alternative: Request.Alternative?, standsInFor: Key?) {
                (self.scale, self.onRetry, self.onPreview) = (scale, onRetry, onPreview)
                (self.blurHash, self.alternative, self.standsInFor) = (blurHash, alternative, standsInFor)
            }
        }

        var scale: Double? { rare?.scale }  // the display scale its image is for (a view's); nil: the main screen's
        var onRetry: (@Sendable (Error, Int) -> Void)? { rare?.onRetry }
        /// A view's: each preview of its download (Pipeline/Previews.swift), on its task's queue.
        var onPreview: (@Sendable (Preview) -> Void)? { rare?.onPreview }
        var blurHash: String? { rare?.blurHash }  // the request's, which a view shows until the image (Placeholders.swift)
        /// The request's lower-cost URL (Pipeline/Alternatives.swift): its conditions restrict the
        /// request sent; the load falls back to it, unless it is a job's request for its original.
        var alternative: Request.Alternative? { rare?.alternative }
        /// For the load of a request's alternative (`alternate`), the key of the request's own load.
        var standsInFor: Key? { rare?.standsInFor }

        /// Sets the rare parts given (a double optional: `.some(nil)` clears one; nil leaves it).
        private mutating func setRare(scale: Double?? = nil, onRetry: (@Sendable (Error, Int) -> Void)?? = nil,
                                      onPreview: (@Sendable (Preview) -> Void)?? = nil, blurHash: String?? = nil,
                                      alternative: Request.Alternative?? = nil, standsInFor: Key?? = nil) {
            let (scale, onRetry, onPreview) = (scale ?? self.scale, onRetry ?? self.onRetry, onPreview ?? self.onPreview)
            let (blurHash, alternative) = (blurHash ?? self.blurHash, alternative ?? self.alternative)
            let standsInFor = standsInFor ?? self.standsInFor
            let none = scale == nil && onRetry == nil && onPreview == nil && blurHash == nil && alternative == nil
                && standsInFor == nil
            rare = none ? nil : Rare(scale: scale, onRetry: onRetry, onPreview: onPreview, blurHash: blurHash,
                                     alternative: alternative, standsInFor: standsInFor)
        }

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

        /// The load of the image a variant is made from: the same request, key and size, with no
        /// processors and no hooks.
        var original: Load {
            var original = Load(url: url, request: request, key: key.original, lane: lane, decoder: decoder)
            original.isOriginal = true
            original.options = options.subtracting(.waitsForDiskWrite)  // the variant's fetch waits itself
            original.setRare(alternative: .some(alternative))  // sent restricted; the variant's fetch falls back itself
            return original
        }

        init(url: URL?, request: URLRequest?, key: Key, lane: Lane, decoder: Decoder) {
            (self.url, self.request, self.key, self.lane, self.decoder) = (url, request, key, lane, decoder)
        }

        /// The load `request` describes: its key is the request's (`Request.cacheKey`), and its decoder
        /// fills its size; on the slow lane if the request is `slow`, or `slow` says so (a prefetch's).
        init(_ request: Request, slow: Bool = false) {
            // The request's key, made once (no `URLRequest` is made for the URL form: see `Load`).
            self.init(url: request.url, request: request.urlRequest, key: request.cacheKey,
                      lane: request.slow || slow ? .slow : .fast, decoder: .image)
            options = request.options
            setRare(scale: .some(request.scale), blurHash: .some(request.blurHash), alternative: .some(request.alternative))
            guard request.size != nil || !request.processors.isEmpty else { return }
            if let size = request.size.flatMap(request.fillPixels) { decoder = .image(filling: size, scale: request.scale) }
            processors = request.processors
        }

        /// Itself with these hooks in place of its own (nil leaves a hook as it is).
        func hooked(onProgress: (@Sendable (Int, Int?) -> Void)?, onRetry: (@Sendable (Error, Int) -> Void)? = nil) -> Load {
            var load = self
            if let onProgress { load.onProgress = onProgress }
            if let onRetry { load.setRare(onRetry: .some(onRetry)) }
            return load
        }

        /// Itself as the load of `alternative` instead: its URL (a `URLRequest`'s headers kept), under
        /// its own key at the same size and processors, with no alternative; without `onProgress`
        /// if `withProgress` is false (after a failure that reported some: it never goes back).
        func alternate(_ alternative: Request.Alternative, withProgress: Bool) -> Load {
            var load = self
            load.url = alternative.url
            load.request = request.map { request in
                var request = request
                request.url = alternative.url
                return request
            }
            load.key = key.ofAlternative(alternative)
            load.setRare(alternative: .some(nil), standsInFor: .some(key))
            if !withProgress { load.onProgress = nil }
            return load
        }

        /// Itself with `onPreview` as the hook of its previews.
        func previewing(_ onPreview: @escaping @Sendable (Preview) -> Void) -> Load {
            var load = self
            load.setRare(onPreview: .some(onPreview))
            return load
        }

        /// Itself as a request of `prefetch`.
        var asPrefetch: Load {
            var load = self
            load.isPrefetch = true
            return load
        }

        /// Itself for a view: its image under `key`, decoded by `decoder` for a display `scale`.
        func sized(_ key: Key, _ decoder: Decoder, scale: Double?) -> Load {
            var load = self
            (load.key, load.decoder) = (key, decoder)
            load.setRare(scale: .some(scale))
            return load
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
}
