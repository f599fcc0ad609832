// The ledger: everything the cache's lock guards (the entries, memory, the lanes, the counts, the
// settings, the prefetches), and the steps that change more than one of them at once: routing a
// request, joining and leaving a download, a view's lowered load, forgetting a key. What a stage
// comes to is settled beside the stage (DiskLookUp.swift, Attempts.swift, VariantJob.swift,
// StoreDecode.swift, Storing.swift); memory's own steps are in MemoryTier.swift. The cache reaches
// the ledger only through `ImageCache.locked`, and other files call its methods: they never write
// its fields.

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
    /// All the state the cache's lock guards, one field per part, and the steps over them. Every
    /// method runs with the lock held (the ledger is reached only through ``ImageCache/locked(_:)``),
    /// so none is named with a leading `_`. Work for the disk is queued from here, under the lock, so
    /// that it runs in the order the bookkeeping changed.
    internal struct Ledger {
        // What `peek` reads first, together: its layout is part of `peek`'s cost.
        var entries = EntryTable(maxFailures: ImageCache.maxFailuresRemembered)
        var memory = MemoryList()  // and the second chance's records
        var counts = Statistics()  // its counters and the disk's figures; memory's are filled in by `statistics()`
        var settings: Settings
        var lanes = Lanes()
        var prefetches: [Key: FetchTask] = [:]  // the requests of `prefetch`, until answered or cancelled
        var missBook = MissBook()  // evictions by limit lately, and the miss log (MissReason.swift)
        let shelf = SecondChanceShelf()  // images evicted lately; `memory`'s second-chance records bound it
        /// Queues work on the disk queue (see `DiskWork`); set once by the cache's `init`.
        private(set) var queueOnDisk: (DiskWork) -> Void = { _ in preconditionFailure("the cache's init sets where disk work goes") }
        /// Whether the disk knows that it holds no file of a key now (`DiskStore.knowsAbsent`); set
        /// once by the cache's `init`.
        private(set) var knowsAbsentOnDisk: (Key) -> Bool = { _ in false }

        init(settings: Settings) { self.settings = settings }

        /// Sends its disk work to `queue` from now on, and asks `knowsAbsent` whether the disk holds
        /// no file of a key (the cache's `init`, once the cache exists).
        mutating func sendDiskWork(_ queue: @escaping (DiskWork) -> Void, knowsAbsent: @escaping (Key) -> Bool) {
            (queueOnDisk, knowsAbsentOnDisk) = (queue, knowsAbsent)
        }

        // The cache's types by their short names in the ledger's extensions in other files, which
        // (declared at the top level) do not see `ImageCache`'s scope.
        typealias Key = ImageCache.Key
        typealias Image = ImageCache.Image
        typealias Error = ImageCache.Error
        typealias Payload = ImageCache.Payload
        typealias Delivery = ImageCache.Delivery
        typealias Download = ImageCache.Download
        typealias FetchTask = ImageCache.FetchTask
        typealias MemoryList = ImageCache.MemoryList
        typealias SecondChance = ImageCache.SecondChance
        typealias Settings = ImageCache.Settings

        /// The bounds a decode for a request made now works within.
        var decodeLimits: DecodeLimits {
            DecodeLimits(maxPixels: settings.maxDecodedPixelSize ?? ImageCache.screenPixels,
                         maxAnimatedFrames: settings.maxAnimatedFrames, memoryMaxBytes: settings.memoryMaxBytes,
                         decoders: settings.decoders)
        }

        /// Whether an entry downloaded at `downloadedAt` and received at `receivedAt` may be served at
        /// `now`: within the time to live, and not from further ahead of the clock than a clock's
        /// skew. The one freshness rule of memory, the second chance and `peek`.
        @inline(__always)
        func isFresh(downloadedAt: TimeInterval, receivedAt: TimeInterval, now: TimeInterval) -> Bool {
            now < downloadedAt + settings.timeToLive && receivedAt <= now + ImageCache.maxClockSkew
        }

        // MARK: Requests

        /// Routes `task`, made for `load` (its key, type and lane).
        mutating func route(_ task: FetchTask, _ load: Load, now: TimeInterval) -> Route {
            if let answered = admit(task, load) { return answered }
            var memorySaid = MissReason.absent  // if memory misses (`missedInMemory`)
            if let answered = askMemory(task, load, now: now, missed: &memorySaid) { return answered }
            let (key, reload, onlyFromCache) = (load.key, load.options.contains(.reloadIgnoringCachedData),
                                                load.options.contains(.onlyFromCache))
            let source = settings.sources.first { $0.loads(task.url) }
            if source == nil, let error = Load.refusal(of: task.url) {
                if entries[key]?.isUnderWay != true { setFailed(key, error) }  // another URL's, under way
                return .answered(.failure(error), bytes: 0)
            }
            // An image evicted lately comes back; a request for another type forgets it (its
            // entry will replace it).
            if load.decoder.type != nil, memory.secondChanceCount > 0 { shelf.removeObject(forKey: key) }
            if load.decoder.type == nil, !reload, let found = secondChance(key, now: now) {
                counts.add(.memoryHits)
                let delivery = Delivery(payload: Payload(image: found.image), source: .memory)
                return .answered(.success(delivery), bytes: found.bytes)
            }
            // A variant made by processors is made from its original, which is requested as any
            // other image is (`ImageCache.makeVariant`): one job per variant, which its fetches join.
            // One that may not use the network makes its own, from what the cache has: a job it shared
            // could not tell one kind of fetch from the other.
            if !key.processors.isEmpty { return onlyFromCache ? .processFromCache : .process(startJob(task, load)) }
            // Never the network: the disk, read for this request alone (`ImageCache.readOnly`).
            if onlyFromCache { return .readFromDisk(maxBytes: settings.maxImageBytes) }
            // One download per image at a time: a request for another of its keys (a binder's size,
            // the whole image) joins one under way, and decodes its own from the same bytes
            // (`deliver(_:to:_:event:handler:)`).
            switch sharing(key) {
            case .loading(let shared)?:
                return .joined(started: join(task, shared, fast: load.lane == .fast), hurried: lookedUpFast(shared))
            case .decodingStore(let shared)?: return .joined(started: join(task, shared))
            default: return startDownload(task, load, source: source, memorySaid: memorySaid)
            }
        }

        /// The first step of a route: counts the request, and answers one that is not needed (a
        /// prefetch made already) or not valid (a refused request, contradictory options). Nil: go on.
        private mutating func admit(_ task: FetchTask, _ load: Load) -> Route? {
            if !load.isOriginal { counts.add(.requests) }  // a job's request is its variant's fetch's
            if load.isPrefetch {
                guard prefetches[load.key] == nil else {  // prefetched already: this one is not needed
                    task.answered(.delivered)
                    return Route.none
                }
                prefetches[load.key] = task
            }
            if let refusal = load.request.flatMap(Load.refusal(of:)) { return .answered(.failure(refusal), bytes: 0) }
            if !load.options.isEmpty, let why = load.options.contradiction {
                return .answered(.failure(.invalidRequest(why)), bytes: 0)
            }
            return nil
        }

        /// What the entry table has for the load's key: a hit, or a job under way to join (unless the
        /// load may not wait for the network); else nil, and `missed` says why memory missed.
        private mutating func askMemory(_ task: FetchTask, _ load: Load, now: TimeInterval,
                                        missed: inout MissReason) -> Route? {
            let (reload, onlyFromCache) = (load.options.contains(.reloadIgnoringCachedData),
                                           load.options.contains(.onlyFromCache))
            switch entries[load.key] {
            case .loaded(let slot)?:
                if reload { evict(slot) } else if let hit = memoryHit(slot, load.decoder, now: now) { return hit }
                missed = reload ? .refusedByOption : .expired
            case .loading(let download)? where !onlyFromCache:
                return .joined(started: join(task, download, fast: load.lane == .fast), hurried: lookedUpFast(download))
            case .decodingStore(let store)?:
                return .joined(started: join(task, store))
            case .processing(let job)? where !onlyFromCache:
                return .joined(started: join(task, job, fast: load.lane == .fast),
                               hurried: lookedUpFast(job.original?.download))
            case .failed?:
                missed = .failedEarlier
            case .loading?, .processing?, nil:
                break
            }
            return nil
        }

        /// The last step of a miss: a new download of the load's key, which looks on disk first (a
        /// source whose bytes never go to disk is not looked for there either).
        private mutating func startDownload(_ task: FetchTask, _ load: Load, source: (any ImageSource)?,
                                            memorySaid: MissReason) -> Route {
            let download = Download(load, limits: decodeLimits, source: source)
            missedInMemory(download, memorySaid)
            download.add(task)
            lanes.move(download, to: .checkingDisk)
            entries[load.key] = .loading(download)
            entries.noteVariant(load.key)
            let reload = load.options.contains(.reloadIgnoringCachedData)
            return .lookUp(download, maxBytes: reload || source?.writesToDisk == false ? nil : settings.maxImageBytes,
                           fast: download.lane == .fast)
        }

        /// `download`, if it is looked up on disk for the fast lane (a fast load joined it, now or
        /// before): its look-up may wait behind prefetches' in the `LookUpQueue`, and goes first now.
        /// (Called after a join, which raises a download that a fast load joins.)
        func lookedUpFast(_ download: Download?) -> Download? {
            guard let download, isCurrent(download), download.lane == .fast, case .checkingDisk = download.phase else {
                return nil
            }
            return download
        }

        /// A download (or a store's decode) under way of the image that `key` names, for another of
        /// its keys: the whole image's, or another size's (not a variant's job: it downloads nothing).
        ///
        /// - Complexity: O(the variants the key has had entries at).
        private func sharing(_ key: Key) -> Entry? {
            let variants = entries.variants(of: key.string)
            guard !key.isWhole || !variants.isEmpty else { return nil }
            for other in [Key(string: key.string)] + variants where other != key && other.processors.isEmpty {
                switch entries[other] {
                case .loading?, .decodingStore?: return entries[other]
                default: continue
                }
            }
            return nil
        }

        /// Keeps a variant of an image (its decode at another size, a processed image) in memory
        /// under `key`, with the dates of the entry `entry` it was made from, if memory keeps that
        /// (not one marked `no-store`, or stale on arrival), it is still the image the variant was
        /// made from (`from`: not one a `store` or a later download put there meanwhile), and nothing
        /// has taken `key` meanwhile (a store, a download of its own).
        mutating func keepVariant(_ payload: Payload, under key: Key, beside entry: Key, from image: Image?,
                                  now: TimeInterval) {
            guard case .loaded(let slot)? = entries[entry], let image, memory[slot].image == image else { return }
            switch entries[key] {
            case .loaded?, .loading?, .processing?, .decodingStore?: return
            case .failed?, nil: break
            }
            let kept = payload.with(bytes: nil)  // the entry it was made from has them
            let (size, dates) = (memory[slot].size, (memory[slot].downloadedAt, memory[slot].receivedAt))
            keepOnDisk(insert(key, kept, size: size, downloadedAt: dates.0, receivedAt: dates.1), usedAt: now)
            entries.noteVariant(key)
        }

        /// The entry in memory `slot` as the answer to a request for `decoder`'s type, if it is fresh
        /// and of that type (counted as a use); else nil, and the entry leaves memory (a new download
        /// will replace it).
        private mutating func memoryHit(_ slot: Int, _ decoder: Decoder, now: TimeInterval) -> Route? {
            guard isFresh(downloadedAt: memory[slot].downloadedAt, receivedAt: memory[slot].receivedAt, now: now),
                  decoder.type == memory[slot].type else {
                evict(slot)
                return nil
            }
            memory.markUsed(slot)
            counts.add(.memoryHits)
            // No bytes: the entry is of the requested type.
            let payload = Payload(image: memory[slot].image, value: memory[slot].value)
            return .answered(.success(Delivery(payload: payload, source: .memory)), bytes: memory[slot].size)
        }

        /// The image under `key` if memory (or the second chance) has it fresh, counted as a use;
        /// a stale one leaves memory. Inlined into `ImageCache.peek`: a call here is a measurable
        /// part of its cost.
        @inline(__always)
        mutating func peek(_ key: Key, now: TimeInterval) -> Image? {
            counts.add(.peeks)
            switch entries[key] {
            case .loaded(let slot)?:
                guard isFresh(downloadedAt: memory[slot].downloadedAt, receivedAt: memory[slot].receivedAt,
                              now: now) else {
                    evict(slot)
                    return nil
                }
                guard let image = memory[slot].image else { return nil }  // data, not an image
                memory.markUsed(slot)
                counts.add(.peekHits)
                return image
            case nil:
                let found = secondChance(key, now: now)?.image
                if found != nil { counts.add(.peekHits) }
                return found
            case .loading?, .processing?, .decodingStore?, .failed?:
                return nil
            }
        }

        /// The task waits for `download`, which moves to the fast lane if the task is fast. Returns
        /// the downloads that may start now.
        private mutating func join(_ task: FetchTask, _ download: Download, fast: Bool) -> [Download] {
            download.add(task)
            counts.add(.deduplicated)
            download.join(task.load.options)
            guard fast, download.lane == .slow else { return [] }
            lanes.move(download, to: download.phase, lane: .fast)
            return startReady()
        }

        /// Cancels `task` if it still waits: it leaves its download (or variant's job), which stops
        /// when no one else waits for it. Returns whether it was cancelled, and the download it stopped.
        mutating func cancel(_ task: FetchTask) -> (cancelled: Bool, stopped: Stopped?, started: [Download]) {
            guard task.answer == .waiting else { return (false, nil, []) }
            task.answered(.cancelled)
            endPrefetch(task)
            if let job = task.job { return (true, leave(job, task), isCurrent(job) ? relower(job, cancelled: task) : []) }
            guard let download = task.download, isCurrent(download) else { return (true, nil, []) }
            download.remove(task)
            if download.waiters.isEmpty { return (true, forget(download.key), []) }
            // The request that kept it fast for views that lowered theirs has gone: it goes behind
            // the visible ones too (and what that lets start, starts).
            guard wantedFast(task), download.waiters.contains(where: \.lowered) else { return (true, nil, []) }
            return (true, nil, slowDown(download))
        }

        /// Marks `task` as answered, if it still waits; returns whether it did, and the whole size
        /// for its `onProgress` if the download left it one.
        mutating func answer(_ task: FetchTask) -> (due: Bool, progress: (received: Int, expected: Int?)?) {
            guard task.answer == .waiting else { return (false, nil) }
            task.answered(.delivered)
            endPrefetch(task)
            return (true, task.finalProgress)
        }

        /// Forgets `task` as the prefetch of its key, if it is (its answer came, or it was cancelled).
        private mutating func endPrefetch(_ task: FetchTask) {
            if task.load.isPrefetch, prefetches[task.load.key] === task { prefetches[task.load.key] = nil }
        }

        /// The requests of `prefetch` for these keys still waiting, and for each key in `falling`
        /// whose alternative's key is given beside it, the load of its alternative that stands in for
        /// its own, if that is what waits now (its own was answered and moved on: see `Load.alternate`).
        func prefetchTasks(_ keys: [Key], falling: [(own: Key, alternative: Key)] = []) -> [FetchTask] {
            keys.compactMap { prefetches[$0] }
                + falling.compactMap { pair in
                    prefetches[pair.alternative].flatMap { $0.load.standsInFor == pair.own ? $0 : nil }
                }
        }

        // MARK: Views' priorities

        /// Marks `task`, still waiting, as lowered or not, and moves its download (for a variant, its
        /// original's) to match: lowered, a download that has not started moves to the slow lane when
        /// no waiter wants it fast (a transfer under way keeps its slot: its bytes are coming); raised,
        /// a fast request's download on the slow lane moves back to the fast lane, as a fast request
        /// that joins it moves it. Returns the downloads that may start now.
        mutating func lower(_ task: FetchTask, _ lowered: Bool) -> [Download] {
            guard task.answer == .waiting, task.lowered != lowered else { return [] }
            task.lower(lowered)
            if let job = task.job { return isCurrent(job) ? relower(job) : [] }
            guard let download = task.download, isCurrent(download) else { return [] }
            if lowered { return slowDown(download) }
            guard download.lane == .slow, Self.wantsFast(task) else { return [] }
            return move(download, ifIn: { _ in true }, to: download.phase, lane: .fast) ?? []
        }

        /// Moves `download`, if it is on the fast lane and has not started, to the slow lane when no
        /// waiter wants it fast (a transfer under way keeps its slot: its bytes are coming).
        mutating func slowDown(_ download: Download) -> [Download] {
            guard download.lane == .fast, !download.waiters.contains(where: Self.wantsFast) else { return [] }
            let notStarted: (Download.Phase) -> Bool = { phase in
                switch phase {
                case .running, .decoding: return false
                default: return true
                }
            }
            return move(download, ifIn: notStarted, to: download.phase, lane: .slow) ?? []
        }

        /// Whether `task`, cancelled now, wanted its download fast before (see `wantsFast`).
        func wantedFast(_ task: FetchTask) -> Bool {
            (task.load.lane == .fast || task.load.isOriginal) && !task.lowered
        }

        /// Whether `task` wants its download on the fast lane: a request for the screen, or a variant
        /// job's request for its original (its lane is its first fetch's; `lower` marks it lowered only
        /// when none of the job's fetches wants it fast), not lowered.
        static func wantsFast(_ task: FetchTask) -> Bool {
            task.answer == .waiting && (task.load.lane == .fast || task.load.isOriginal) && !task.lowered
        }

        // MARK: Downloads

        /// True while `download` is the one its key's entry waits for: not forgotten, replaced or done.
        func isCurrent(_ download: Download) -> Bool {
            if case .loading(let entry)? = entries[download.key] { return entry === download }
            return false
        }

        /// Whether `key` is being looked up, queued, downloaded, retried or decoded.
        func isLoading(_ key: Key) -> Bool {
            if entries[key]?.isUnderWay == true { return true }
            // A request of `key` that joined a download of another of the image's keys (a view's size).
            let waiters: Waiters
            switch sharing(key) {
            case .loading(let download)?: waiters = download.waiters
            case .decodingStore(let store)?: waiters = store.waiters
            default: return false
            }
            return waiters.contains { $0.load.key == key && $0.answer == .waiting }
        }

        /// Why the last load of `key` failed, if it did and nothing replaced it since.
        func error(for key: Key) -> Error? {
            if case .failed(let error, _)? = entries[key] { return error }
            return nil
        }

        /// What may start now on the lanes; the cache starts it with `startNetwork` after unlocking.
        mutating func startReady() -> [Download] {
            lanes.startReady(maxFast: settings.maxConcurrentDownloads, maxStalled: settings.maxStalledDownloads,
                             maxSlow: settings.maxConcurrentSlowDownloads)
        }

        /// Moves `download`, if it is current and in one of `phases`, to `phase` (and `lane`), then
        /// says what may start now; nil when it was not moved. The one "settle and start" step.
        mutating func move(_ download: Download, ifIn phases: (Download.Phase) -> Bool, to phase: Download.Phase,
                           lane: Lane? = nil) -> [Download]? {
            guard isCurrent(download), phases(download.phase) else { return nil }
            lanes.move(download, to: phase, lane: lane)
            return startReady()
        }

        /// Moves a fast-lane download of `key` that has not started to the back of the slow lane.
        mutating func moveToSlowLane(_ key: Key) -> [Download] {
            guard case .loading(let download)? = entries[key], download.lane == .fast else { return [] }
            // A download under way is left to finish: its bytes are coming.
            let waits: (Download.Phase) -> Bool = { phase in
                switch phase {
                case .running, .decoding: return false
                default: return true
                }
            }
            return move(download, ifIn: waits, to: download.phase, lane: .slow) ?? []
        }

        /// Marks a download's transfer as sent: `task` is its network task. The download is running
        /// with no task yet: the caller checked, in the same locked step in which it sent the task.
        /// Its first is a miss: the one place `misses` counts.
        /// Marks a download as handed to its source (see ``ImageSource``): a miss, as a download sent
        /// is. False if it was forgotten meanwhile (its source is not asked).
        mutating func handedToSource(_ download: Download) -> Bool {
            guard isCurrent(download), case .running(nil) = download.phase else { return false }
            if download.attempts == 1 { counts.add(.misses) }
            return true
        }

        mutating func sent(_ download: Download, _ task: URLSessionDataTask) {
            if download.attempts == 1 { counts.add(.misses) }
            lanes.move(download, to: .running(task))
        }

        /// A transfer of `download` (task `task`) stalled or resumed: its slot is given up or taken
        /// back and counted; nil when that changes nothing. `event` is sent in order, under the lock.
        mutating func stall(_ download: Download, task: URLSessionDataTask, _ stalled: Bool,
                            event: @autoclosure () -> Event) -> [Download] {
            guard isCurrent(download), case .running(let running?) = download.phase, running === task,
                  lanes.stall(download, stalled) else { return [] }
            counts.add(stalled ? .stalls : .resumes)
            if let handler = settings.onEvent {
                let event = event()
                settings.callbackQueue.async { handler(event) }
            }
            return startReady()
        }

        /// The `waiters` (of a download or a variant's job) to tell that `received` bytes are in: those with an `onProgress` that were told
        /// less (so never less, even after a retry, and never twice the same), marked as told.
        func progressed(_ waiters: Waiters, received: Int) -> [FetchTask] {
            waiters.filter { task in
                guard task.load.onProgress != nil, received > task.progress else { return false }
                task.reported(received)
                return true
            }
        }

        // MARK: Forgetting

        /// Removes `key` from memory and from the download bookkeeping. A download it stops leaves
        /// its lane at once, and the cache passes it to `finishStopped` after unlocking.
        mutating func forget(_ key: Key) -> Stopped? {
            switch entries[key] {
            case .loaded(let slot)?:
                evict(slot)
            case .loading(let download)?:
                entries[key] = nil
                var task: URLSessionDataTask?
                if case .running(let running) = download.phase { task = running }
                lanes.move(download, to: .done)
                return Stopped(waiters: download.takeWaiters(), task: task, download: download)
            case .processing(let job)?:
                entries[key] = nil
                let original = job.original
                job.attach(nil)  // the request for the original holds the job
                return Stopped(waiters: job.takeWaiters(), task: nil, original: original)
            case .decodingStore(let store)?:
                entries[key] = nil
                lanes.storeDecode(-1)
                return Stopped(waiters: store.takeWaiters(), task: nil)
            case .failed?:
                entries[key] = nil
            case nil:
                break
            }
            return nil
        }

        /// Forgets `key` and its variants (its sizes, its processed images), when `key` is removed or
        /// replaced.
        ///
        /// - Complexity: O(1) plus the variants `key` has had entries at.
        mutating func forgetWithVariants(_ key: Key) -> [Stopped] {
            var stopped = forget(key).map { [$0] } ?? []
            for variant in entries.takeVariants(of: key.string) {
                if let one = forget(variant) { stopped.append(one) }
            }
            return stopped
        }

        /// `remove(key:)`: the key, its variants and its second chance are forgotten, its file removed.
        mutating func remove(_ key: Key) -> [Stopped] {
            shelf.removeObject(forKey: key)
            queueOnDisk(.remove(key.string))
            return forgetWithVariants(key)
        }

        /// `removeAll`: everything is forgotten, and the folder emptied after the work queued before.
        mutating func removeAll() -> [Stopped] {
            forgetSecondChances()
            queueOnDisk(.removeAll)  // no write of an image forgotten here can follow it
            return entries.keys.compactMap { forget($0) }
        }

        mutating func setFailed(_ key: Key, _ error: Error) {
            entries.setFailed(key, error)
            counts.add(.failures)
        }

        // MARK: Settings and figures

        /// Changes a setting; `disk`, if given, applies it on the disk queue, in order with the disk
        /// work that follows.
        mutating func change<Value: Sendable>(_ setting: WritableKeyPath<Settings, Value>, to value: Value,
                                              disk: (@Sendable (DiskStore, Value) -> Void)? = nil) {
            settings.set(setting, to: value)
            if let disk { queueOnDisk(.setting { disk($0, value) }) }
        }

        /// A snapshot of the counters, with memory's figures and the stalls under way.
        var statistics: Statistics {
            counts.with(memoryCount: memory.count, memoryBytes: memory.bytes, stalledNow: lanes.stalled)
        }

        /// Takes the disk's figures (see `DiskStore.counted`), for ``ImageCache/statistics()``.
        mutating func diskCounted(_ figures: (files: Int, bytes: Int)) {
            counts.setDisk(files: figures.files, bytes: figures.bytes)
        }
    }

    /// Where `route` sent a task: answered at once (from memory, or refused), joined to a download
    /// under way (with the downloads that may start now), to a new download's look-up on disk, to a
    /// new job that makes a variant, or nowhere (a prefetch of a key prefetched already).
    internal enum Route {
        case answered(Result<Delivery, Error>, bytes: Int)
        /// `hurried`: a download that the task raised to the fast lane while it is looked up on disk.
        case joined(started: [Download], hurried: Download? = nil)
        case lookUp(Download, maxBytes: Int?, fast: Bool)  // nil: not read (a reload)
        case readFromDisk(maxBytes: Int)
        case processFromCache  // a variant that may not use the network: no job (`makeVariantFromCache`)
        case process(VariantJob)
        case none
    }

    /// A download taken out of the bookkeeping by `forget`, to be finished outside the lock: its
    /// waiters, its transfer, and a variant job's request for its original.
    internal struct Stopped {
        let waiters: [FetchTask]
        let task: URLSessionDataTask?
        var original: FetchTask? = nil
        var download: Download? = nil  // the download it stopped, whose source's load is cancelled too
    }
}
