// The description of a load: what to fetch (a URL or a `URLRequest`), what it is cached under, its
// lane, the size it is shown at and the processors that make its variant. Every public entry point
// takes one (`fetch`, `image(for:)`, `peek`, `prefetch`, the views); the forms that take a URL or a
// `URLRequest` are conveniences that build it.

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
    /// One load, described once: what to fetch, what it is cached under, its lane, the size it is
    /// shown at, and the processors that make its variant. `fetch`, `image(for:)`, `peek`,
    /// `prefetch`, ``Binder``, `setImage(with:)` and the SwiftUI views each take one; their forms that
    /// take a URL or a `URLRequest` build one with the defaults.
    ///
    /// ```swift
    /// let avatar = ImageCache.Request(url: url, size: CGSize(width: 40, height: 40), processors: [.circle])
    /// cache.fetch(avatar) { url, image in cell.avatar.image = image }
    /// ```
    ///
    /// Requests are equal when they load the same thing the same way (their `URLRequest`s, keys,
    /// lanes, sizes and processors' identifiers). It grows in 1.x by new properties with defaults
    /// only (see the Contracts and limits article).
    public struct Request: Sendable, Hashable {
        /// The URL to fetch: `urlRequest`'s when there is one.
        public var url: URL? { urlRequest?.url ?? plainURL }
        /// The request to send, as given (its headers, cache policy and timeout; see
        /// `fetch(_:key:slow:onProgress:onRetry:completion:)` with a `URLRequest`); nil when the
        /// request was made from a URL, which is sent with the cache's own headers.
        public private(set) var urlRequest: URLRequest?
        private var plainURL: URL?
        /// What the image is cached under: `url.absoluteString` when nil (the default). Headers are
        /// never part of it: two users' private images at one URL need two keys.
        public var key: String? { didSet { wholeKey = Self.key(key, url, variant) } }
        /// Whether it loads on the slow lane, ahead of need (see `slowFetch(_:key:callback:)`); false
        /// by default.
        public var slow: Bool
        /// The size in points the image is shown at: it is decoded to fill it (on Apple platforms,
        /// at the main screen's scale; never larger than the image), and kept in memory as its own
        /// entry beside the whole image's; nil (the default) for the whole image, bounded as every
        /// decode is. The views give their own size when this is nil.
        public var size: CGSize?
        /// What makes the variant it loads, in order (see ``Processor``): empty (the default) for the
        /// image itself. The variant is cached under the key, the size and their identifiers.
        public var processors: [Processor] {
            didSet {
                variant = Processor.variant(of: processors)
                wholeKey = Self.key(key, url, variant)
            }
        }
        /// What names the processors' variant in a key.
        internal private(set) var variant: String
        /// Its key without a size, made once: `peek` of a request a cell keeps costs no hashing.
        private var wholeKey: ImageCache.Key
        /// Choices for this load alone (see ``Options``): none by default.
        public var options: Options = []
        /// A BlurHash of the image (woltapp/blurhash's string, as a feed's server sends it beside
        /// the URL): ``Binder``, `setImage(with:)` and the SwiftUI views show its decode, made off
        /// the main thread at 32 pixels on the longer side and cached, instead of the placeholder
        /// until the image comes. On Linux it is an ``ImageCache/Image`` in PNG (8-bit RGB). A
        /// malformed hash is ignored (the placeholder shows) and ``ImageCache/onNotice`` hears
        /// ``ImageCache/Notice/Kind/placeholderIgnored``. Nil by default; `fetch` does not use it.
        public var blurHash: String?
        /// A lower-cost URL of the image, loaded instead of ``url`` when the network is constrained
        /// (Low Data Mode) or expensive, or when ``url`` fails, as its conditions say (see
        /// ``Alternative``); the result says so (``ImageCache/Fetched/usedAlternative``), and
        /// ``ImageCache/onNotice`` hears ``ImageCache/Notice/Kind/alternativeUsed``. Its image is
        /// cached under its own URL, never under the request's key: every new load of the request
        /// (the next fetch, a view bound again) tries ``url`` first, and its image replaces the
        /// alternative's once the network allows it. A view shows the alternative's image from
        /// memory at once meanwhile. Of a download several loads share, the first load's request
        /// is sent. Nil by default.
        public var alternative: Alternative?
        /// The display scale a view asks for (its own screen's); nil for the main screen's.
        internal var scale: Double?

        /// A request for the image at `url`, sent with the cache's own headers.
        public init(url: URL, key: String? = nil, slow: Bool = false, size: CGSize? = nil,
                    processors: [Processor] = [], options: Options = []) {
            (plainURL, urlRequest, self.options) = (url, nil, options)
            (self.key, self.slow, self.size, self.processors) = (key, slow, size, processors)
            variant = Processor.variant(of: processors)
            wholeKey = Self.key(key, url, variant)
        }

        /// A request for the image that `urlRequest` loads, sent as given.
        public init(urlRequest: URLRequest, key: String? = nil, slow: Bool = false, size: CGSize? = nil,
                    processors: [Processor] = [], options: Options = []) {
            (plainURL, self.urlRequest, self.options) = (nil, urlRequest, options)
            (self.key, self.slow, self.size, self.processors) = (key, slow, size, processors)
            variant = Processor.variant(of: processors)
            wholeKey = Self.key(key, urlRequest.url, variant)
        }
    }
}

nonisolated extension ImageCache.Request {
    /// Choices for one load, beside Kingfisher's and Nuke's names in the Migrating article. A set:
    /// `[.reloadIgnoringCachedData, .notWrittenToDisk]`. Two that contradict each other
    /// (`onlyFromCache` with `reloadIgnoringCachedData`, `notWrittenToDisk` with `waitsForDiskWrite`)
    /// fail the load at once with ``ImageCache/Error/invalidRequest(_:)``, caching nothing.
    ///
    /// When several loads share one download (one key at a time), it is not written to disk if any
    /// of them asks so, and kept out of memory only if all of them ask so. It grows in 1.x by new
    /// static members only.
    public struct Options: OptionSet, Sendable, Hashable {
        /// The bits of the options (see the static members).
        public let rawValue: Int

        /// Options of these bits (see the static members).
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Downloads the image even when memory or disk has it fresh, with no conditional request:
        /// pull to refresh. What it downloads replaces what was cached, in both tiers; memory lets
        /// the old image go at once.
        public static let reloadIgnoringCachedData = Options(rawValue: 1 << 0)

        /// Never the network: memory, else the disk (an expired file too, if the disk keeps it to
        /// revalidate or for ``ImageCache/servesStaleWhenOffline``, marked stale, unless its server
        /// forbade serving it stale); a miss fails at once with
        /// ``ImageCache/Error/network(_:_:)`` `.resourceUnavailable`, remembered nowhere. For offline
        /// screens and share extensions.
        public static let onlyFromCache = Options(rawValue: 1 << 1)

        /// Not written to disk: what it downloads stays in memory only (and an older file of the key
        /// is removed, as for a response marked `no-store`), and memory never writes it later. The
        /// disk is still read, as by any load. For private or one-off images.
        public static let notWrittenToDisk = Options(rawValue: 1 << 2)

        /// Not kept in memory: what it loads, from the network or the disk, goes to disk only; one
        /// in memory already is still served from there.
        public static let notKeptInMemory = Options(rawValue: 1 << 3)

        /// The completion runs once the image's file is written (on the disk queue first), for an app
        /// that hands the file to another process. If there is no file then (a response marked
        /// `no-store`, a load of the same download that asked `notWrittenToDisk`, a failed write),
        /// it fails with ``ImageCache/Error/network(_:_:)`` `.cannotWriteToFile`, which says so.
        public static let waitsForDiskWrite = Options(rawValue: 1 << 4)

        /// Previews while a progressive JPEG downloads: each time more of its scans are complete
        /// (at most 4 a second, each with more scans than the last, none once the body is whole),
        /// ``ImageCache/onNotice`` hears a ``ImageCache/Notice`` of kind `preview` with the bytes so
        /// far (a whole JPEG of the complete scans) and the scan count; then the final image comes as
        /// usual. An interlaced PNG (Adam7) has previews too, as its passes complete (see
        /// ``ImageCache/Notice/Kind/preview``). Memory and disk keep only the final image. Of a
        /// download several loads share, the first load's options decide. A baseline JPEG, a PNG
        /// that is not interlaced, or another format has none. Off by default. (Views show the
        /// previews without it: see ``withoutPreviews``.)
        public static let progressivePreviews = Options(rawValue: 1 << 5)

        /// Only the first frame of an animated image (GIF, APNG, animated WebP, HEICS): what the load
        /// hands over is a still, and a view shows it without playing anything. On Linux, the image
        /// keeps its bytes and says it has one frame (its `frameCount` 1, no durations,
        /// played once). Memory and disk keep the image as usual, so another load of it still
        /// animates. A still is handed over as it is. Off by default.
        public static let firstFrameOnly = Options(rawValue: 1 << 6)

        /// No previews in a view: ``ImageCache/Binder``, `setImage(with:)` and the SwiftUI views show
        /// a progressive JPEG's (or an interlaced PNG's) previews as its scans arrive by default, at
        /// most 4 a second, each sharper than the last, never after the final image; this turns them
        /// off for this load (a thumbnail that arrives at once gains nothing from them). A load whose
        /// processors make a variant has none either way. Off by default.
        public static let withoutPreviews = Options(rawValue: 1 << 7)

        /// Why these options cannot go together, if they cannot.
        internal var contradiction: String? {
            if isSuperset(of: [.onlyFromCache, .reloadIgnoringCachedData]) {
                return "options onlyFromCache and reloadIgnoringCachedData contradict each other"
            }
            if isSuperset(of: [.notWrittenToDisk, .waitsForDiskWrite]) {
                return "options notWrittenToDisk and waitsForDiskWrite contradict each other"
            }
            return nil
        }
    }

    /// What it is cached under: the key (the URL's string by default), the size in pixels at the
    /// view's display scale (else the main screen's), and the processors' variant.
    internal var cacheKey: ImageCache.Key {
        guard let size else { return wholeKey }
        return ImageCache.memoryKey(wholeKey.string, filling: fillPixels(size), scale: displayScale, processors: variant)
    }

    /// The key of `key` (else `url`'s string) and the processors' `variant`, without a size.
    fileprivate static func key(_ key: String?, _ url: URL?, _ variant: String) -> ImageCache.Key {
        ImageCache.Key(string: key ?? url?.absoluteString ?? "", processors: variant)
    }

    /// The display scale its size is decoded at (see ``ImageCache/Sizing/displayScale(_:screen:)``).
    private var displayScale: Double { ImageCache.Sizing.displayScale(scale, screen: ImageCache.screenScale) }

    /// `points` in whole pixels at its display scale (nil: not a size to fill).
    internal func fillPixels(_ points: CGSize) -> (width: Int, height: Int)? {
        ImageCache.pixels(ImageCache.pixelSize(points: points, scale: displayScale))
    }
}
