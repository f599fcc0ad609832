// The sources of ImageCache, in folders by role; `.ci/amalgamate` joins them, in the order a load
// walks them, into the ImageCache.swift that apps copy (one `// MARK: -` per file there).
//   API/       this class (the coordinator: it holds the parts and the lock, and routes a load
//              through them), the public calls, settings, the plugins (`Plugins`), errors, events
//              and public types.
//   Views/     the targets (`ImageTarget`; an image view's `ViewTarget` and `setImage(with:)`), the
//              binder (`Binder`) and when it binds again (`Rebinding`), the SwiftUI views, the screen.
//   Pipeline/  a load (`Load`), the cache's side of a request (Requests: the route written once),
//              the ledger (`Ledger`: all the state the lock guards, and the steps over more than one
//              part), the entry table and keys, and the stages, one type per job, each with what it
//              does to the ledger beside it: a download and its lanes (`Download`), the disk look-up
//              (`DiskLookUp`), the network attempt (`NetworkAttempt`, Attempts.swift), a source's load (`SourceLoads`), a
//              variant's job (`VariantJob`), a store's decode (`StoreDecode`) and the other stores
//              (Storing); then delivery.
//   Network/   the transport (URLSession and its delegate, deadlines, stalls) and HTTP's rules.
//   Loading/   where bytes come from besides HTTP(S): the `ImageSource` protocol an app implements,
//              and the built-ins (`FileSource`, opt-in; `DataURLSource`); `SourceLoads` (Pipeline/)
//              runs them for a download.
//   Memory/    the CLOCK list, its limits and the second chance; the index of sizes; stand-ins
//              (`StandIn`: the best image of a load memory holds, shown until its own comes).
//   Disk/      the one way to the disk (`DiskWork`), the store of files (`DiskStore`), the folder
//              and its names and listing (Folder.swift), their attributes (`Validators`), a large body on its
//              way to disk (`Spool`), a failed one's part kept to resume from (`PartialBody`),
//              and system calls by qualified names (`POSIX`).
//   Decoding/  the decode workers, decoders (the internal `Decoder` making a `Payload`, and
//              `ImageDecoder`, the protocol an app plugs in), the platform's (`PlatformDecoder`) within
//              `DecodeLimits`, sizes and scales (`Sizing`), the formats' structural check, and pixels
//              written as PNG (`PNGWriter`: on Linux, the images of a plugged decoder and of a BlurHash).
//   Processing/ processors (`Processor`) and the built-ins, which make a load's variant.
//   Animation/ a file's frame timing (`FrameTiming`); frames decoded as they are shown: a player
//              per view (`AnimationPlayer`), its timeline, the budget all players share, where
//              frames come from (`FrameSource`).
//   Prefetching/ lists that load ahead: the prefetcher a list holds (`ListPrefetcher`), its
//              decisions (`ListWindow`), the release of rows beyond its window, the SwiftUI and
//              UIKit glue.
//   Support/   small helpers; the benchmarks' hooks (the package's builds only).
// A part owns its state: other parts call its methods and never write its fields. The lock is
// taken in one place, `locked(_:)`, which hands the ledger to one of its methods; disk and network
// work happens outside it, on the disk queue, the decode workers and URLSession's delegate queue.
//
// A miss, step by step: (1) `fetch` builds a `Load` and calls `request` (Requests), which has the
// ledger `route` it: nothing in memory, so a new `Download` is made; (2) its `DiskLookUp` reads no
// file on the disk queue and `Ledger.lookedUp` (beside it) queues the download on its lane;
// (3) `startNetwork` (Attempts) sends it as a `NetworkAttempt` through the `Transport`; (4) the
// transport's delegate keeps the bytes and hands the ended transfer to the attempt's `transferred`,
// which checks the body and has it decoded (`DecodeWorkers`); (5) the cache's `endAttempt` routes
// the attempt's end (a failed body's part kept, the authorization hook, the size learned), and the
// attempt's `finished` has the ledger settle it (`Ledger.attemptEnded`, beside it): the entry goes
// to memory (`Ledger.insert`, MemoryTier) and its file's write is queued (`Ledger.queueOnDisk`,
// DiskWork); (6) `deliver` and
// `complete` (Delivery) run each waiter's callback on its queue. (`python3 .ci/route -v` prints
// this route as it runs, function by function.)
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
#if os(watchOS)
import WatchKit
#endif
#if canImport(os)
import os
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
/// Every entry expires ``imageTimeToLive`` seconds after it was downloaded (or when the server's
/// HTTP freshness says, with ``usesServerMaxAge``), in both tiers, and is then revalidated if the
/// server gave an `ETag` or `Last-Modified`. A `no-store` response is kept in no tier, and a
/// `no-cache` one is revalidated before every reuse.
///
/// **Queues.** ``fetch(_:key:callback:)`` downloads on a fast lane (up to ``maxConcurrentDownloads``
/// at once); ``slowFetch(_:key:callback:)`` on a slow lane, one at a time, that starts nothing while
/// fast work is queued or running. Concurrent requests for one key share one download.
///
/// **Thread safety.** Every method and property may be used from any thread. Callbacks run on
/// the main actor on Apple platforms (they are typed `@MainActor`, so they may update views), on
/// ``callbackQueue`` on Linux; always asynchronously, exactly once per ``FetchTask`` unless it was
/// cancelled. ``peek(_:)-(URL)`` takes one lock and does one
/// dictionary lookup; it never waits for the disk or the network. Shared state lives behind one
/// lock; disk work runs on a private serial queue, network work in `URLSession`. The class and its
/// extensions are `nonisolated`, so that all of this holds in a target whose default isolation is
/// the main actor too; only the callbacks and the views (``ImageTarget``, `setImage(with:)`,
/// `RemoteImage`, `AsyncImage`) are main-actor.
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

    // `lock` guards `_state`, the ledger (see `Ledger`), and the objects that say so where they are
    // declared (each `Download`, a `FetchTask`'s answer); `locked` is the one way to it. The
    // transport has a lock of its own, taken after this one. The lock already makes each access
    // exclusive, so `_state` skips the runtime's own exclusivity check, a measurable part of
    // `peek`'s cost.
    internal let lock = NSLock()
    @exclusivity(unchecked) private var _state: Ledger

    internal let transport: Transport
    internal let diskQueue: DispatchQueue
    internal let lookUps: LookUpQueue  // what goes on `diskQueue` to look new downloads up, in which order
    // Where downloaded bytes are decoded: two at a time, off URLSession's delegate queue.
    internal let decodes: DecodeWorkers
    internal let sourceLoads = SourceLoads()  // the loads of URLs that plugged sources load
    internal let disk: DiskStore  // used only on `diskQueue` (but `knowsAbsent`, from any thread)
    internal let authorizer = Authorizer()  // guarded by `lock`
    internal let animationBudget = AnimationBudget(maxBytes: AnimationBudget.defaultMaxBytes)  // its own lock
    internal let sizes = SizeIndex()  // the size of each image seen (API/ImageSize.swift)
    private var memoryWarnings: NSObjectProtocol?  // under UIKit
    #if IMAGECACHE_TESTING
    // A clock the tests set, to move time forward (ImageCacheTests/TestHooks.swift); nil for the
    // wall clock. Set only before the instance is used, so unchecked like `_state`.
    @exclusivity(unchecked) internal var testClock: (@Sendable () -> TimeInterval)?
    #endif
    /// What the app plugged in at `init` (see ``Plugins``): set by the `init` that takes them, before
    /// the cache is returned, and fixed from then on (so unchecked, like `_state`).
    @exclusivity(unchecked) internal private(set) var plugins = Plugins()

    /// Seconds since 1970. On Linux from the coarse real-time clock (a few ms of resolution, and
    /// much cheaper than `Date()` on `peek`'s path); time to live is counted in seconds anyway.
    internal func currentTime() -> TimeInterval {
        #if IMAGECACHE_TESTING
        if let testClock { return testClock() }
        #endif
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
        settings.sources = [DataURLSource()]
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
        _state = Ledger(settings: settings)
        diskQueue = DispatchQueue(label: "ImageCache.disk.\(uniqueName)", qos: .utility)
        lookUps = LookUpQueue(diskQueue)
        decodes = DecodeWorkers(label: "ImageCache.decode.\(uniqueName)")
        disk = DiskStore(folder: folder, timeToLive: settings.timeToLive, maxBytes: settings.diskMaxBytes)
        disk.attach(to: self)
        transport.attach(self)
        // The ledger is part of the cache, so it holds the cache unowned; the disk work holds it
        // strongly, so that work queued before the cache's last use still runs.
        _state.sendDiskWork({ [unowned self] work in
            let cache = self
            cache.diskQueue.async { cache.run(work) }
        }, knowsAbsent: { [disk] key in disk.knowsAbsent(DiskStore.fileID(for: key.string)) })
        observeMemoryWarnings()
        Self.readScreen()
    }

    /// Creates a cache as ``init(uniqueName:directory:session:)`` does, with an app's own sources,
    /// decoders or encoder plugged in (see ``Plugins``); reads and writes nothing yet.
    ///
    /// ```swift
    /// let cache = ImageCache(uniqueName: "Library", plugins: .init(sources: [LibrarySource()]))
    /// ```
    public convenience init(uniqueName: String, directory: URL? = nil, session: URLSession? = nil, plugins: Plugins) {
        self.init(uniqueName: uniqueName, directory: directory, session: session)
        // Set before the cache is returned, so before any other thread can see it: fixed from then on.
        self.plugins = plugins
        locked { ledger in
            ledger.change(\.decoders, to: plugins.decoders)
            ledger.change(\.sources, to: plugins.sources + [DataURLSource()])
        }
    }

    deinit {
        memoryWarnings.map(NotificationCenter.default.removeObserver)
        transport.invalidate()
    }

    /// Purges memory on UIKit's memory warning (see ``purgeMemory()``): elsewhere the app calls it.
    private func observeMemoryWarnings() {
        #if canImport(UIKit) && !os(watchOS)
        memoryWarnings = NotificationCenter.default.addObserver(
            forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
        ) { [weak self] _ in
            self?.purgeMemory()
        }
        #endif
    }

    /// Runs `body` with the ledger under the lock: the one way into the state the lock guards.
    /// Locked by hand, not in `withLock`'s closure, which the optimizer does not always inline
    /// (`peek` runs through here).
    @inline(__always)
    internal func locked<Result>(_ body: (inout Ledger) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&_state)
    }

    /// What the public properties set.
    internal struct Settings {
        var timeToLive: TimeInterval = 600
        var memoryMaxCount = 100
        var memoryMaxBytes = ImageCache.defaultMemoryMaxBytes
        var diskMaxBytes = 256 * 1024 * 1024
        var usesServerMaxAge = false
        var servesStaleWhenOffline = false
        var maxConcurrentDownloads = 6
        var stallTime: TimeInterval = 1
        var maxStalledDownloads = 6
        var maxConcurrentSlowDownloads = 1
        var requestTimeout: TimeInterval = 30
        var downloadTimeLimit: TimeInterval = 120
        var retryPolicy = RetryPolicy.default
        var maxImageBytes = 20 * 1024 * 1024
        var maxDiskImageBytes = ImageCache.defaultMaxDiskImageBytes
        var maxDecodedPixelSize: Int?  // nil: the screen's (see `screenPixels`)
        var maxAnimatedFrames = 200
        var callbackQueue = DispatchQueue.main
        var onEvent: (@Sendable (Event) -> Void)?
        var onNotice: (@Sendable (Notice) -> Void)?
        var requestModifier: (@Sendable (URLRequest) -> URLRequest?)?
        var decoders: [any ImageDecoder] = []  // the plugged ones (`Plugins.decoders`), fixed at `init`
        var sources: [any ImageSource] = []  // the plugged ones, then `data:` URLs', fixed at `init`
        var authorization: Authorization?
        var challengeResponder: ChallengeResponder?

        /// Sets `setting` (a configuration property's, see Configuration.swift): the one place a
        /// setting is written.
        mutating func set<Value>(_ setting: WritableKeyPath<Settings, Value>, to value: Value) {
            self[keyPath: setting] = value
        }
    }
}
