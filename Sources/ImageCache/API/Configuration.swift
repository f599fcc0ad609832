// The settings (time to live, memory and disk limits, lanes, timeouts, retries, decoding limits,
// callbacks) and the one way they are read and changed under the lock.

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
    /// How long an image stays valid after it was downloaded, in seconds, in memory and on disk
    /// alike (also across launches), unless ``usesServerMaxAge`` lets the server's freshness decide
    /// (a `no-cache` entry is revalidated before every reuse in any case). 600 by default; values
    /// below 1 are clamped to 1.
    public var imageTimeToLive: TimeInterval {
        get { setting(\.timeToLive) }
        set {
            change(\.timeToLive, to: max(1, newValue.isNaN ? 1 : newValue)) { disk, timeToLive in
                disk.set(timeToLive: timeToLive)
            }
        }
    }

    /// How many images memory holds, the second chance included: the most that ``peek(_:)-(URL)`` can
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
        locked { $0.settings[keyPath: setting] }
    }

    /// Changes a setting under the lock. `disk`, if given, applies it on the disk queue, in order
    /// with the disk work that follows.
    private func change<Value: Sendable>(_ setting: WritableKeyPath<Settings, Value>, to value: Value,
                                         disk: (@Sendable (DiskStore, Value) -> Void)? = nil) {
        locked { $0.change(setting, to: value, disk: disk) }
    }

    /// Changes a memory limit; what no longer fits leaves memory at once.
    private func changeMemoryLimit(_ limit: WritableKeyPath<Settings, Int>, to value: Int) {
        let now = currentTime()
        locked { $0.changeMemoryLimit(limit, to: value, now: now) }
    }

    internal static let defaultMemoryMaxBytes =
        defaultMemoryMaxBytes(bundlePath: Bundle.main.bundlePath,
                              physicalMemory: ProcessInfo.processInfo.physicalMemory)

    /// The default of ``imageMemoryMaxBytes``; an app extension's bundle ends in `.appex`.
    internal static func defaultMemoryMaxBytes(bundlePath: String, physicalMemory: UInt64) -> Int {
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

    /// Whether the server's HTTP freshness decides how long each entry is fresh, as RFC 9111 has a
    /// private cache compute it, instead of ``imageTimeToLive``: the response's `max-age` (else
    /// `Expires` minus `Date`, else the time to live) less its age when it arrived (`Age`, or the
    /// time since its `Date`). False by default. In both modes `no-store` is obeyed (the entry goes
    /// to the requests waiting for it and is kept in no tier) and so is `no-cache` (the entry is
    /// kept, and revalidated before every reuse), and an entry marked `no-cache` or
    /// `must-revalidate` is never served stale.
    public var usesServerMaxAge: Bool {
        get { setting(\.usesServerMaxAge) }
        set { change(\.usesServerMaxAge, to: newValue) }
    }

    /// Whether an expired entry is delivered, marked ``Fetched/isStale``, when its refetch fails
    /// for a reason that is not fatal (no network, a timeout, a 5xx; not a 404). False by default.
    /// Never an entry whose server said `must-revalidate` or `no-cache` (RFC 9111 forbids it): its
    /// fetch fails.
    /// When true, expired files stay on disk until a fetch replaces them (the disk limit and
    /// `reduceDiskCache` still delete the least recently used).
    public var servesStaleWhenOffline: Bool {
        get { setting(\.servesStaleWhenOffline) }
        set {
            change(\.servesStaleWhenOffline, to: newValue) { disk, keepsExpired in disk.set(keepsExpired: keepsExpired) }
        }
    }

    /// The queue callbacks run on, on Linux: a serial queue of the instance's own by default, so that
    /// a command-line program needs no run loop; set `.main` for a program that runs one
    /// (`dispatchMain()` or `RunLoop.main.run()`). On Apple platforms the public API's callbacks are
    /// main-actor isolated and run on the main queue whatever this says (see ``FetchCallback``);
    /// there it is the queue of ``onEvent``, `.main` by default.
    public var callbackQueue: DispatchQueue {
        get { setting(\.callbackQueue) }
        set { change(\.callbackQueue, to: newValue) }
    }

    /// How many fast-lane downloads run at once. 6 by default; values below 1 are clamped to 1.
    public var maxConcurrentDownloads: Int {
        get { setting(\.maxConcurrentDownloads) }
        set {
            let started = locked { ledger in
                ledger.change(\.maxConcurrentDownloads, to: max(1, newValue))
                return ledger.startReady()
            }
            startNetwork(started)
        }
    }

    /// How many slow-lane downloads (prefetches, `slowFetch`, views that lowered their priority)
    /// may start in any second; nil (the default) for no limit. Values are clamped to 1...10,000. It
    /// applies after deduplication and the lanes, to the slow lane only: a load for the screen never
    /// waits on it. A start counts from when its request is sent until one second after its
    /// transfer ends, so a server sees no more than this many of the slow lane's requests in any
    /// second, whatever the network's delays: a burst of thousands of prefetches opens at most this
    /// many requests a second, and each is delivered in its turn.
    ///
    /// ```swift
    /// cache.maxSlowStartsPerSecond = 50
    /// cache.prefetch(twoThousandURLs)  // at most 50 requests in any second
    /// ```
    public var maxSlowStartsPerSecond: Int? {
        get { locked { $0.lanes.startLimit?.perSecond } }
        set { setStartLimit(newValue.map { min(max(1, $0), 10_000) }) }
    }

    /// How many slow-lane downloads (``slowFetch(_:key:callback:)``, `prefetch`, a
    /// ``ListPrefetcher``'s, views' loads lowered when they disappear) run at once; the slow lane
    /// still starts nothing while fast-lane work is queued or under way. 1 by default, as in 1.0;
    /// values below 1 are clamped to 1. A list whose rows each take one round trip keeps ahead of a
    /// scroll of up to this many rows per round trip (4 for 20 rows a second of images that take
    /// 200 ms; 6 leaves room). Keep ``maxConcurrentDownloads`` plus ``maxStalledDownloads`` plus this
    /// within 16, the transport's connections per host, so that no visible row's request waits for
    /// a connection behind a prefetch.
    public var maxConcurrentSlowDownloads: Int {
        get { setting(\.maxConcurrentSlowDownloads) }
        set {
            let started = locked { ledger in
                ledger.change(\.maxConcurrentSlowDownloads, to: max(1, newValue))
                return ledger.startReady()
            }
            startNetwork(started)
        }
    }

    /// Seconds a transfer may receive nothing (no response yet, or no bytes since the last) before
    /// it counts as stalled: it then holds no slot of its lane, so that the next download (another
    /// host's, say, while this one's server hangs) starts, and it goes on within its own deadlines
    /// (``requestTimeout``, ``downloadTimeLimit``): it may still finish. It takes a slot back when
    /// bytes come again; `onEvent` hears `.stalled` and `.resumed`. 1 by default; values are clamped
    /// to 0.1...86,400. Applies to attempts that start after it changes.
    public var stallTime: TimeInterval {
        get { setting(\.stallTime) }
        set { change(\.stallTime, to: min(max(0.1, newValue.isNaN ? 1 : newValue), 86_400)) }
    }

    /// How many stalled transfers (see ``stallTime``) may hold no lane slot at once. Those beyond it
    /// hold a fast-lane slot each, so that no more than ``maxConcurrentDownloads`` plus this many
    /// transfers (and the slow lane's one) are under way: a thousand URLs of a dead server do not
    /// open a thousand connections. 6 by default; values below 0 are clamped to 0 (every stalled
    /// transfer then holds a fast-lane slot).
    public var maxStalledDownloads: Int {
        get { setting(\.maxStalledDownloads) }
        set {
            let started = locked { ledger in
                ledger.change(\.maxStalledDownloads, to: max(0, newValue))
                return ledger.startReady()
            }
            startNetwork(started)
        }
    }

    /// Seconds a request may wait for data before it fails with a timeout. 30 by default; values
    /// below 1 are clamped to 1 (URLSession on Linux counts whole seconds: 0.5 would mean none).
    public var requestTimeout: TimeInterval {
        get { setting(\.requestTimeout) }
        set {
            // Under the lock, so that the settings and the transport's session agree.
            locked { ledger in
                ledger.change(\.requestTimeout, to: max(1, newValue.isNaN ? 30 : newValue))
                transport.setTimeout(ledger.settings.requestTimeout)
            }
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

    /// What the cache does when a server refuses the credentials a request carried (401, or the
    /// statuses the app names): nil by default (the load fails with ``Error/httpStatus(_:)``). Set,
    /// the refused request waits, holding no lane slot, while the app's ``Authorization/refresh``
    /// runs, once for every request refused meanwhile (a request sent before a refresh ended and
    /// refused after it is sent again without another); then each is sent again, its credentials
    /// put in by ``requestModifier``, or, if the refresh threw, fails with
    /// ``Error/network(_:_:)`` `.userAuthenticationRequired` and the refresh's error in its text. A
    /// request refused again after a refresh fails with its status. Credentials follow a redirect
    /// to the same origin only, as every header the app sets does.
    public var authorization: Authorization? {
        get { setting(\.authorization) }
        set { change(\.authorization, to: newValue) }
    }

    /// What answers the authentication challenges of the cache's `URLSession`: a server's trust
    /// (to pin certificates), a client certificate, HTTP Basic credentials. Nil by default: the
    /// system's handling (`.performDefaultHandling`), as before. A credential it gives answers
    /// the challenge it was asked, for that challenge's host only. On Apple platforms it hears the
    /// session's challenges, of the connection and of each task. On Linux, swift-corelibs-foundation
    /// (6.3) raises a task's HTTP challenge only, after the whole 401 has been read, and sends a
    /// credential to the task's first URL, whoever asked. So, with this set, a 401 asking for Basic
    /// credentials of the URL first requested (not after a redirect) is read (its body, up to
    /// 64 KiB, is not kept) and this answers it: a credential sends the request again with it;
    /// anything else fails the load with ``Error/httpStatus(_:)`` 401, the system's handling
    /// included (corelibs 6.3 proposes no stored credential, and never completes a task so handled:
    /// the cache cancels the challenge instead). Any other 401
    /// fails at its head, as without it, then goes to ``authorization`` if that is set. A
    /// challenge is answered by the responder set when it comes.
    public var challengeResponder: ChallengeResponder? {
        get { setting(\.challengeResponder) }
        set { change(\.challengeResponder, to: newValue) }
    }

    /// How transient failures are retried; see ``RetryPolicy``.
    public var retryPolicy: RetryPolicy {
        get { setting(\.retryPolicy) }
        set { change(\.retryPolicy, to: newValue) }
    }

    /// The most bytes of a body held in memory. 20 MiB by default; values below 1 are clamped to 1.
    /// It bounds memory, not what may be cached (that is ``maxDiskImageBytes``): a response body
    /// that announces more, or grows past it (or past 4 MiB, whichever is less), is streamed on to
    /// a file in the cache's folder as it arrives, and delivered and cached from there (see "Large
    /// images" in the Memory and disk article). A body fails as ``Error/tooLarge(limit:)`` at this
    /// limit only where it cannot be streamed (the folder cannot be used), as soon as its announced
    /// length or its received bytes (inflated, if compressed) pass it, without reading the rest.
    /// It also bounds the bytes given to `store`, which are held in memory.
    public var maxImageBytes: Int {
        get { setting(\.maxImageBytes) }
        set { change(\.maxImageBytes, to: max(1, newValue)) }
    }

    /// The largest response body that may be cached at all, in bytes: a body past
    /// ``maxImageBytes`` or 4 MiB is written to a temporary file in the cache's folder as it
    /// arrives, never held in memory whole, and becomes its entry's file once it is whole and
    /// valid. 128 MiB by default; values below 0 are
    /// clamped to 0. The limit for such a body is the larger of this and ``maxImageBytes``: 0 (or
    /// anything up to ``maxImageBytes``) keeps 1.0's limit. A larger response fails as
    /// ``Error/tooLarge(limit:)`` as soon as its announced length or its received bytes (inflated,
    /// if compressed) pass the limit, and its file is deleted. Keep it well below ``diskMaxBytes``:
    /// a file counts there like any other. Applies to downloads that start after it changes, and
    /// to files read from disk after that.
    public var maxDiskImageBytes: Int {
        get { setting(\.maxDiskImageBytes) }
        set { change(\.maxDiskImageBytes, to: max(0, newValue)) { disk, limit in disk.set(maxStreamedBytes: limit) } }
    }

    internal static let defaultMaxDiskImageBytes = 128 * 1024 * 1024

    /// The longest side, in pixels, of an image decoded with no size to fill (a `fetch`, a
    /// prefetch, a view not laid out yet, with bounds of zero): a larger one is decoded scaled down
    /// to it, so that no unsized decode makes a huge bitmap (a 12-megapixel photo is 48 MB). A
    /// binder or view with a size decodes to fill it, whatever this says. By default the main
    /// screen's longest side in pixels (2,796 on a 6.7-inch iPhone, 2,752 on a 13-inch iPad), read
    /// with its scale: under UIKit from the screen of a window scene that becomes active, under
    /// AppKit from `NSScreen.main` on the main thread, on watchOS from `WKInterfaceDevice`; 4,096
    /// until it is read, and where there is none to read (Linux, visionOS, an app extension with no
    /// scene). `Int.max` decodes at full size; values below 1 are clamped to 1. Applies to requests
    /// made after it changes. On Linux an image is its
    /// bytes, and this decides nothing but `Sizing.decodedSize(width:height:orientation:filling:maxPixels:)`.
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

    /// The bound, in bytes, on the decoded frames of every animation played frame by frame through
    /// this cache, together. Each playing animation keeps the frame it shows and a few decoded
    /// ahead at its view's pixel size (4 bytes a pixel): an even share of this bound, between 1
    /// and 8 frames ahead, so that when more play each buffers fewer, and an animation off screen
    /// holds nothing (<doc:Animation>, which says what plays so today). 48 MiB by default; values
    /// below 0 are clamped to 0 (each animation then buffers one frame ahead). Takes effect on the
    /// players' next frame.
    public var animationMemoryMaxBytes: Int {
        get { animationBudget.maxBytes }
        set { animationBudget.maxBytes = newValue }
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

        /// A policy with the given limits; a negative one counts as 0.
        ///
        /// - Parameters:
        ///   - maxRetries: Retries after the first attempt.
        ///   - baseDelay: The first wait in seconds, before jitter.
        ///   - maxRetryAfter: The longest `Retry-After` honoured, in seconds.
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
        internal func delay(attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
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

    /// The longest side of a whole decode (see ``Rebinding/Rebinding.replacesWhole(_:for:decodeBound:)``): the setting or
    /// the screen's where the platform decodes; nil on Linux, where an image is its bytes.
    internal var wholeDecodeBound: Int? {
        #if canImport(ImageIO)
        return locked { $0.decodeLimits.maxPixels }
        #else
        return nil
        #endif
    }
}
