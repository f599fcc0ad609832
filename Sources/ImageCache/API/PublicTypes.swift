// The public values: the image (Linux's own), its formats, `Fetched` and its `Source`, and a
// request's `FetchTask`.

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

// Callbacks. On Apple platforms, where callbacks update views, every callback the public API takes
// is main-actor isolated and runs on the main queue: a Swift 6 app writes
// `fetch(url) { url, image in cell.imageView?.image = image }` with nothing else. On Linux they
// are plain `@Sendable` closures that run on `callbackQueue`.
nonisolated extension ImageCache.Fetched: Sendable where Value: Sendable {}

nonisolated extension ImageCache {
    /// Where a delivered image came from.
    public enum Source: String, Sendable {
        /// Memory: found at once, with no decode.
        case memory
        /// The cache's folder on disk.
        case disk
        /// A download.
        case network
    }

    /// What a fetch delivers: the value, where it came from, and whether it is stale (an expired
    /// entry delivered because the network failed).
    public struct Fetched<Value> {
        /// The image, or the value the request's `decode` made.
        public let value: Value
        /// Where it came from.
        public let source: Source
        /// Whether it is an expired entry, delivered because the network failed
        /// (``ImageCache/servesStaleWhenOffline``).
        public let isStale: Bool
        /// What each tier said before the one that answered (see ``Misses``): empty for a memory
        /// hit. A load that joined a download under way gets that download's.
        public internal(set) var misses = Misses()
        /// What the transfer that answered it measured (see ``TransferMetrics``): nil unless it
        /// came from the network. A load that joined a download under way gets that download's.
        public internal(set) var metrics: TransferMetrics?
        /// What it used instead of the request's own URL (see ``Request/alternative``): nil when the
        /// request's own URL answered.
        public internal(set) var usedAlternative: UsedAlternative?
    }

    #if canImport(UIKit) || canImport(AppKit)
    /// What ``fetch(_:key:callback:)`` calls with the URL and its image, or nil: on the main actor.
    public typealias FetchCallback = @MainActor @Sendable (URL, Image?) -> Void
    /// A fetch's completion, with the value and where it came from, or why not: on the main actor.
    public typealias Completion<Value> = @MainActor @Sendable (Result<Fetched<Value>, Error>) -> Void
    /// A download's progress: the bytes received so far, and the length announced: on the main actor.
    public typealias ProgressCallback = @MainActor @Sendable (_ received: Int, _ expected: Int?) -> Void
    /// Called before a retry, with the error and the number of the attempt that failed: on the main actor.
    public typealias RetryCallback = @MainActor @Sendable (Error, _ attempt: Int) -> Void
    /// Called when disk work asked for is done: on the main actor.
    public typealias DoneCallback = @MainActor @Sendable () -> Void
    /// Called with a snapshot of the statistics: on the main actor.
    public typealias StatisticsCallback = @MainActor @Sendable (Statistics) -> Void
    #else
    /// What ``fetch(_:key:callback:)`` calls with the URL and its image, or nil: on ``callbackQueue``.
    public typealias FetchCallback = @Sendable (URL, Image?) -> Void
    /// A fetch's completion, with the value and where it came from, or why not: on ``callbackQueue``.
    public typealias Completion<Value> = @Sendable (Result<Fetched<Value>, Error>) -> Void
    /// A download's progress: the bytes received so far, and the length announced: on ``callbackQueue``.
    public typealias ProgressCallback = @Sendable (_ received: Int, _ expected: Int?) -> Void
    /// Called before a retry, with the error and the number of the attempt that failed: on ``callbackQueue``.
    public typealias RetryCallback = @Sendable (Error, _ attempt: Int) -> Void
    /// Called when disk work asked for is done: on ``callbackQueue``.
    public typealias DoneCallback = @Sendable () -> Void
    /// Called with a snapshot of the statistics: on ``callbackQueue``.
    public typealias StatisticsCallback = @Sendable (Statistics) -> Void
    #endif
}

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
        /// `acTL` chunk claims, but no more than it has `fcTL` chunks for; an animated WebP's `ANMF`
        /// chunks; 1 for a still PNG, GIF or WebP and a JPEG. Where the platform decodes, the
        /// rule of ``ImageCache/maxAnimatedFrames``, tested here, decides whether an image animates.
        public let frameCount: Int
        /// How long each frame shows, in seconds, as the file says (a GIF's graphic control, an
        /// APNG's `fcTL`, a WebP's `ANMF`), a delay under 20 ms shown for 100 ms as browsers do; empty for a still
        /// image. Where the platform decodes, UIKit and AppKit play the frames so.
        ///
        /// - Complexity: O(n) in the bytes: read from them when asked, so that an image, which
        ///   memory hits copy, carries nothing more.
        public var frameDurations: [Double] { timing.durations }
        /// How many times the animation plays: 0 for forever, 1 for once (and for a still image).
        /// An APNG's `num_plays`; an animated WebP's `ANIM` loop count; a GIF's NETSCAPE2.0 loop count plus one (the count is of the
        /// repetitions after the first play, as browsers read it), or 1 when it has none.
        ///
        /// - Complexity: O(n) in the bytes, as ``frameDurations``.
        public var playCount: Int { timing.plays }

        private var timing: FrameTiming {
            guard frameCount > 1, case .success(let info) = ImageCache.inspect(data) else { return FrameTiming() }
            return info.timing
        }

        /// DecodeWorkers `data`; nil when it does not start with a whole PNG, JPEG, GIF or WebP image.
        /// Bytes after the image's end are dropped.
        public init?(data: Data) {
            guard case .success(let decoded) = ImageCache.PlatformDecoder.decode(data) else { return nil }
            self = decoded.image
        }

        internal init(data: Data, format: Format, width: Int, height: Int, frameCount: Int) {
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
        /// PNG, animated (APNG) or not.
        case png
        /// JPEG.
        case jpeg
        /// GIF, animated or not.
        case gif
        /// WebP.
        case webp
    }

    /// A request made by one of the `fetch` methods or ``ImageCache/slowFetch(_:key:callback:)``.
    public final class FetchTask: @unchecked Sendable {
        /// The URL that was requested (`about:blank` for a `URLRequest` without one).
        public let url: URL
        fileprivate let cache: ImageCache
        internal let load: Load  // this request's own: its hooks, and the key
        internal let queue: DispatchQueue
        internal let completion: @Sendable (Result<Delivery, ImageCache.Error>) -> Void
        internal let onCancel: (@Sendable () -> Void)?
        internal let followUp: FollowUp?  // the load of its request's alternative, if it may have one (Alternatives.swift)
        internal private(set) var answer = Answer.waiting  // guarded by `cache.lock`
        internal private(set) weak var download: Download?  // the download it waits for; guarded by `cache.lock`
        internal private(set) weak var job: VariantJob?  // or the variant's job; guarded by `cache.lock`
        internal private(set) var progress = 0  // the bytes last reported to `onProgress`; guarded by `cache.lock`
        internal private(set) var lowered = false  // its view disappeared and let it go on behind others (`Ledger.lower`); guarded by `cache.lock`
        // The whole size, for `onProgress` just before the completion, in its block; guarded by `cache.lock`.
        internal private(set) var finalProgress: (received: Int, expected: Int?)?
        internal enum Answer { case waiting, delivered, cancelled }

        /// Waits for `download` now (see ``Download/add(_:)``).
        internal func waits(for download: Download) { self.download = download }
        /// Waits for `job` now (see ``VariantJob/add(_:)``).
        internal func waits(for job: VariantJob) { self.job = job }
        /// Is answered (delivered, or cancelled): no hook runs after.
        internal func answered(_ answer: Answer) { self.answer = answer }
        /// Was told of `received` bytes.
        internal func reported(_ received: Int) { progress = received }
        /// Its view disappeared and let it go on behind others (`lowered`), or appeared again.
        internal func lower(_ lowered: Bool) { self.lowered = lowered }
        /// Keeps the whole size for its `onProgress` just before the completion.
        internal func keepFinalProgress(_ whole: (received: Int, expected: Int?)) { finalProgress = whole }

        internal init(_ load: consuming Load, cache: ImageCache, queue: DispatchQueue,
                         completion: @escaping @Sendable (Result<Delivery, ImageCache.Error>) -> Void,
                         onCancel: (@Sendable () -> Void)?, followUp: FollowUp? = nil) {
            url = load.url ?? URL(string: "about:blank")!
            self.followUp = followUp
            self.cache = cache
            self.load = consume load
            self.queue = queue
            self.completion = completion
            self.onCancel = onCancel
        }

        /// Cancels this request, from any thread. When `cancel()` returns, the callback either has
        /// already started or will never start, and ``isCancelled`` says which. Called on the queue
        /// the callback runs on (the main queue on Apple platforms; a serial
        /// ``ImageCache/callbackQueue`` on Linux) before the callback ran, it always wins. When no
        /// other request waits for the same URL, the download itself stops and nothing is cached
        /// from it. Cancelling twice, or after the callback started, does nothing.
        /// A running callback is not waited for (that would deadlock one that waits for this thread).
        public func cancel() {
            cache.cancel(self)
        }

        /// True once ``cancel()`` has been called before the callback started: it never runs.
        public var isCancelled: Bool {
            cache.locked { _ in answer == .cancelled } || followUp?.isCancelled == true
        }

        /// Neither answered nor cancelled yet: a hook (progress, retry) may still run.
        /// Its completion waits for the image's file (`Request.Options.waitsForDiskWrite`).
        internal var waitsForDiskWrite: Bool { load.options.contains(.waitsForDiskWrite) }

        internal var isWaiting: Bool {
            cache.locked { _ in answer == .waiting }
        }
    }
}
