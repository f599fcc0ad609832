import Dispatch
import Foundation
import ImageCache
import LoopbackServer

/// A feed of image rows that scrolls by itself and uses the cache the way a table view does:
///
/// - each row has a display target (`RowImage`, what its cell shows) and an `ImageCache.Binder`;
///   a row that scrolls onto the screen binds its URL (the `cellForRow` pattern): an image in
///   memory is set at once, else the binder loads it, unless its last fetch failed for good
///   (`error(for:)?.isFatal`);
/// - rows about to scroll in are fetched ahead with `slowFetch` (`prefetchRowsAt`);
/// - a row that scrolls off the screen while its image is still coming goes to the slow lane
///   with `moveToSlowQueue`, and a row far away has its load cancelled;
/// - halfway through, a memory warning (`purgeMemory()`): rows off screen let their images go, and
///   take them back from disk when they scroll on screen again.
///
/// Everything here runs on `queue`, which is also the cache's `callbackQueue` and the binders'
/// queue: the cache's callbacks and events, the binders, the scrolling, the drawing. So the feed's
/// state needs no lock.
final class Feed: @unchecked Sendable {
    /// Rows on the simulated phone screen, rows prefetched ahead of it, and the distance from it
    /// beyond which a row's requests are cancelled.
    static let screenRows = 8
    static let prefetchRows = 8
    static let cancelDistance = 24

    enum RowState {
        case blank
        case prefetching       // slowFetch made before the row is on screen
        case loading           // on screen, fetch made
        case retrying(ImageCache.Error, attempt: Int)  // the cache will try again shortly
        case scrolledAway      // its fetch is still under way, moved to the slow lane
        case cancelled         // far off screen: its requests were cancelled
        case image(ImageCache.Source, String, prefetched: Bool)
        case failed(ImageCache.Error)
        case released          // off screen at the memory warning: its image was let go
    }

    /// What a row's cell shows, as an image view would: its binder sets it, on the feed's queue.
    final class RowImage: ImageCache.ImageTarget {
        var image: ImageCache.Image? { didSet { changed?() } }
        var isDisplayed = false
        var changed: (() -> Void)?
    }

    struct Row {
        let url: URL
        let name: String
        let image = RowImage()
        let binder: ImageCache.Binder
        var state = RowState.blank
        var prefetchTask: ImageCache.FetchTask?
        /// Its image arrived by prefetch while it was off screen, and it has not been shown since.
        var readyBeforeShown = false

        init(url: URL, name: String, queue: DispatchQueue) {
            (self.url, self.name) = (url, name)
            binder = ImageCache.Binder(image, queue: queue)  // holds `image` weakly: the row keeps it
        }

        var isLoading: Bool { binder.state == .loading }
        var isWaiting: Bool { isLoading || prefetchTask != nil }
    }

    struct Stats {
        var memory = 0, disk = 0, network = 0, failed = 0
        var requestsSeenByApp = 0  // used when no embedded server counts requests
        var revalidated = 0  // 304s: an expired image renewed without its body
        var retries = 0, dedup = 0, prefetched = 0, moved = 0, cancelled = 0, released = 0
        var downloadedBytes = 0
        var failures: [String: Int] = [:]
        var diskProblems: [String] = []
        var bindNanoseconds: [UInt64] = []  // binding a row: a memory lookup, and the image set on a hit

        func bindPercentile(_ fraction: Double) -> Double? {
            guard !bindNanoseconds.isEmpty else { return nil }
            let sorted = bindNanoseconds.sorted()
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]) / 1_000
        }
    }

    struct Settings {
        var seconds: Double
        var speed: Double
        var plain: Bool
        var source: String       // where the images come from, for the header
        var clearCommand: String
        var lastRun: Date?       // when the last run on this cache folder ended
        var lastRunFile: URL     // where this run's end is written, for the next one
    }

    let queue = DispatchQueue(label: "ExampleApp.feed")
    let cache: ImageCache
    let server: LoopbackServer?
    let settings: Settings
    private(set) var rows: [Row]
    private(set) var stats = Stats()
    private(set) var visible = 0..<0
    private(set) var goingDown = true
    private var prefetchBand = 0..<0
    private var rowsOfURL: [URL: [Int]] = [:]
    private var lastSource: [URL: ImageCache.Source] = [:]
    private var notModified: [URL: Int] = [:]  // the 304s the embedded server counted, by URL
    private var lastBytes: [URL: Int] = [:]
    private let scroll: ScrollPlan
    private var screen: Screen?
    private var timer: DispatchSourceTimer?
    private var signalSources: [DispatchSourceSignal] = []
    private var start = DispatchTime.now()
    private var ticks = 0
    private var finished = false
    private var warned = false  // the memory warning, halfway through
    private var warmPeeks: Double?
    /// Set when the last run ended longer ago than the time to live: every image it left has expired.
    let expiredNote: String?

    init(urls: [URL], cache: ImageCache, server: LoopbackServer?, settings: Settings) {
        self.cache = cache
        self.server = server
        self.settings = settings
        rows = urls.map { [queue] in Row(url: $0, name: Self.name(of: $0, embedded: server != nil), queue: queue) }
        for (index, url) in urls.enumerated() { rowsOfURL[url, default: []].append(index) }
        scroll = ScrollPlan(rows: urls.count, screenRows: Self.screenRows, seconds: settings.seconds, speed: settings.speed)
        // The cache does not say why an image came from the network (new, expired, or evicted),
        // so the app works out the one case that matters to its story from its own records.
        let timeToLive = cache.imageTimeToLive
        if let lastRun = settings.lastRun, Date().timeIntervalSince(lastRun) > timeToLive {
            expiredNote = "last run \(Self.formatDuration(Date().timeIntervalSince(lastRun))) ago "
                + "(over \(Self.formatDuration(timeToLive))): images expired"
        } else {
            expiredNote = nil
        }
    }

    /// Takes over the screen (if any) and starts scrolling; the run ends after `settings.seconds`,
    /// or on Ctrl-C, with a summary and `exit`. Call `dispatchMain()` after this.
    func start(screen: Screen?) {
        queue.sync {
            // Ctrl-C: ignore the default action (which would leave the terminal in the alternate
            // screen), and finish on the feed's queue instead: restore the screen, persist the cache.
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
                source.setEventHandler { [unowned self] in finish(interrupted: true) }
                source.resume()
                signalSources.append(source)
            }
            self.screen = screen
            screen?.enter()
            cache.callbackQueue = queue
            cache.onEvent = { [unowned self] event in handle(event) }
            for index in rows.indices { rows[index].image.changed = { [unowned self] in imageChanged(index) } }
            start = DispatchTime.now()
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: .milliseconds(50), leeway: .milliseconds(5))
            timer.setEventHandler { [unowned self] in tick() }
            timer.resume()
            self.timer = timer
        }
    }

    var elapsed: Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    /// Requests that reached the network: counted by the embedded server, or by the app otherwise.
    var requests: Int {
        server?.totalRequests ?? stats.requestsSeenByApp
    }

    // MARK: Scrolling, as a table view would see it

    private func tick() {
        guard !finished else { return }
        let now = elapsed
        if now >= settings.seconds { return finish(interrupted: false) }
        if !warned, now >= settings.seconds / 2 {
            // As UIKit's memory warning does: the binders of rows off screen let their images go.
            warned = true
            cache.purgeMemory()
            log(nil, "memory", "memory warning: purgeMemory(); rows off screen let their images go")
        }
        let position = scroll.position(at: now)
        goingDown = position.goingDown
        let top = min(max(0, Int(position.top)), max(0, rows.count - Self.screenRows))
        let onScreen = top..<min(rows.count, top + Self.screenRows)

        for index in visible where !onScreen.contains(index) { scrolledAway(index) }
        for index in onScreen where !visible.contains(index) { cellForRow(index) }
        visible = onScreen

        let band = goingDown
            ? onScreen.upperBound..<min(rows.count, onScreen.upperBound + Self.prefetchRows)
            : max(0, onScreen.lowerBound - Self.prefetchRows)..<onScreen.lowerBound
        for index in band where !prefetchBand.contains(index) { prefetch(index) }
        prefetchBand = band

        let near = max(0, onScreen.lowerBound - Self.cancelDistance)..<min(rows.count, onScreen.upperBound + Self.cancelDistance)
        for index in rows.indices where !near.contains(index) && rows[index].isWaiting {
            cancelFarRow(index)
        }

        ticks += 1
        if ticks % 2 == 0 { screen?.draw(self) }
    }

    /// `tableView(_:cellForRowAt:)`: the row's binder sets an image in memory at once, else loads
    /// it; a URL that failed for good is not asked again.
    private func cellForRow(_ index: Int) {
        let url = rows[index].url
        rows[index].image.isDisplayed = true
        if let error = cache.error(for: url), error.isFatal {
            rows[index].state = .failed(error)
            log(index, "failed", "shown broken, not asked again: \(error)")
        } else {
            let joins = cache.fetching(url)
            let before = DispatchTime.now().uptimeNanoseconds
            rows[index].binder.bind(url, cache: cache)
            stats.bindNanoseconds.append(DispatchTime.now().uptimeNanoseconds - before)
            if case .image(.memory) = rows[index].binder.state, let image = rows[index].image.image {
                stats.memory += 1
                let prefetched = rows[index].readyBeforeShown
                if prefetched { stats.prefetched += 1 }
                rows[index].state = .image(.memory, describe(image, url), prefetched: prefetched)
                log(index, "memory", "shown from memory, at once" + (prefetched ? ", ready thanks to prefetch" : ""))
            } else {
                if joins { stats.dedup += 1 }
                rows[index].state = .loading
                log(index, "miss", "not in memory: the binder loads it")
            }
        }
        rows[index].readyBeforeShown = false
    }

    /// The row's binder set its image: the one loaded, the placeholder (none here) on a failure, or
    /// none after the memory warning.
    private func imageChanged(_ index: Int) {
        let url = rows[index].url
        switch rows[index].binder.state {
        case .image(let source):
            guard let image = rows[index].image.image else { return }
            rows[index].state = .image(source, describe(image, url), prefetched: false)
        case .failed(let error):
            rows[index].state = .failed(error)
        case .placeholder:
            stats.released += 1
            rows[index].state = .released
            log(index, "release", "off screen at the memory warning: image let go")
        case .idle, .loading:
            break  // the placeholder (none here) while loading
        }
    }

    /// `tableView(_:prefetchRowsAt:)`: ask ahead, on the slow lane.
    private func prefetch(_ index: Int) {
        let url = rows[index].url
        guard !rows[index].isWaiting, cache.error(for: url)?.isFatal != true else { return }
        if cache.fetching(url) { stats.dedup += 1 }
        rows[index].prefetchTask = cache.slowFetch(url) { [unowned self] _, image in
            prefetched(index, image)
        }
        if case .image = rows[index].state {} else { rows[index].state = .prefetching }
    }

    /// The row left the screen while its image was still coming: let what is on screen go first.
    private func scrolledAway(_ index: Int) {
        rows[index].image.isDisplayed = false
        guard rows[index].isLoading else { return }
        cache.moveToSlowQueue(rows[index].url)
        stats.moved += 1
        rows[index].state = .scrolledAway
        log(index, "moved", "scrolled away while loading: moved to the slow lane")
    }

    /// The row is far away: nobody will see it soon, so stop waiting for it.
    private func cancelFarRow(_ index: Int) {
        rows[index].binder.cancel()
        rows[index].prefetchTask?.cancel()
        rows[index].prefetchTask = nil
        stats.cancelled += 1
        switch rows[index].state {
        case .image, .failed: break
        default: rows[index].state = .cancelled
        }
        log(index, "cancel", "far off screen: requests cancelled")
    }

    /// A prefetch callback: the image, or nil and `error(for:)` says why. A row on screen shows
    /// what its binder sets.
    private func prefetched(_ index: Int, _ image: ImageCache.Image?) {
        rows[index].prefetchTask = nil
        let url = rows[index].url
        guard !visible.contains(index) else { return }
        guard let image else {
            if let error = cache.error(for: url) { rows[index].state = .failed(error) }
            return
        }
        let source = lastSource[url] ?? .memory  // the event of this delivery came just before it
        if source != .memory { rows[index].readyBeforeShown = true }
        rows[index].state = .image(source, describe(image, url), prefetched: true)
    }

    /// The p50 of `peek` in a tight loop over every row, in microseconds. The feed's own timings
    /// are taken as a table view binds a row: on a thread that has just woken for the next frame,
    /// whose CPU caches have gone cold. Here the caches are warm. (After the cache has
    /// been persisted: these uses change the recency order, which is not saved again.)
    private func measureWarmPeeks() -> Double? {
        var samples: [UInt64] = []
        for _ in 0..<3 {
            for row in rows {
                let before = DispatchTime.now().uptimeNanoseconds
                _ = cache.peek(row.url)
                samples.append(DispatchTime.now().uptimeNanoseconds - before)
            }
        }
        samples.sort()
        return samples.isEmpty ? nil : Double(samples[samples.count / 2]) / 1_000
    }

    // MARK: What the cache reports

    private func handle(_ event: ImageCache.Event) {
        switch event {
        case .served(let url, let source, let bytes):
            lastSource[url] = source
            lastBytes[url] = bytes
            switch source {
            case .memory: stats.memory += 1
            case .disk: stats.disk += 1
            case .network:
                stats.network += 1
                stats.requestsSeenByApp += 1
                if let server, server.conditionalCount(url.path).notModified > (notModified[url] ?? 0) {
                    notModified[url] = server.conditionalCount(url.path).notModified
                    stats.revalidated += 1
                    log(rowsOfURL[url]?.first, "304", "expired, revalidated: the server said 304 Not Modified, no body")
                    return
                }
                stats.downloadedBytes += bytes
            }
            log(rowsOfURL[url]?.first, source.rawValue, "\(Self.formatBytes(bytes)) from \(source.rawValue)")
        case .retrying(let url, let attempt, let delay, let error):
            stats.retries += 1
            stats.requestsSeenByApp += 1
            for index in rowsOfURL[url] ?? [] where rows[index].isWaiting {
                rows[index].state = .retrying(error, attempt: attempt)
            }
            log(rowsOfURL[url]?.first, "retry", "attempt \(attempt): \(error); again in \(String(format: "%.1f", delay)) s")
        case .failed(let url, let error):
            stats.failed += 1
            if case .unsupportedURL = error {} else { stats.requestsSeenByApp += 1 }
            stats.failures[Self.kind(of: error), default: 0] += 1
            log(rowsOfURL[url]?.first, "failed", "\(error)" + (error.isFatal ? " (fatal)" : ""))
        case .diskProblem(let problem):
            stats.diskProblems.append(problem)
            log(nil, "disk", problem)
        case .stalled(let url, let seconds):
            log(rowsOfURL[url]?.first, "stalled", "nothing for \(String(format: "%.1f", seconds)) s: its slot goes to the next")
        case .resumed(let url, let seconds):
            log(rowsOfURL[url]?.first, "resumed", "bytes again after \(String(format: "%.1f", seconds)) s")
        }
    }

    /// A short, stable name for a kind of failure, for the summary line.
    static func kind(of error: ImageCache.Error) -> String {
        if case .httpStatus(let code) = error { return "http-\(code)" }
        if case .notAnImage = error { return "not-an-image" }
        if case .corruptImage = error { return "corrupt-image" }
        if case .truncatedBody = error { return "truncated" }
        if case .network = error { return "network" }
        if case .emptyBody = error { return "empty-body" }
        if case .unsupportedURL = error { return "unsupported-url" }
        return "other"
    }

    // MARK: The end

    private func finish(interrupted: Bool) {
        guard !finished else { return }
        finished = true
        timer?.cancel()
        screen?.leave()
        cache.persistCacheToDisk()
        try? Data("\(Date().timeIntervalSince1970)\n".utf8).write(to: settings.lastRunFile)  // only for a note
        warmPeeks = measureWarmPeeks()
        output(summary(interrupted: interrupted))
        server?.stop()
        exit(interrupted ? 130 : 0)
    }

    /// What the run did, for a person, then `summary:` lines of `key=value` fields for scripts
    /// (.ci/example-check reads them): `failed.KIND=N` per kind of failure. Every line fits in
    /// 80 columns, the `summary:` lines too (a field never spans two lines), unless a path is long.
    func summary(interrupted: Bool) -> String {
        let number = { (value: Double?) in value.map { String(format: "%.1f", $0) } ?? "-" }
        let bind50 = number(stats.bindPercentile(0.5)), bind99 = number(stats.bindPercentile(0.99))
        let failures = stats.failures.sorted { $0.key < $1.key }
        let (files, bytes) = Self.folderSize(cache.folder)
        let kept = Self.formatDuration(cache.imageTimeToLive)
        let nextStep = stats.disk > 0 && stats.disk >= 2 * stats.network
            ? "most images came from disk, where an earlier run left them"
            : "run it again within \(kept): the images will come from disk"
        var lines = [
            "",
            "ImageCache example: \(rows.count) rows, \(number(min(elapsed, settings.seconds))) s"
                + (interrupted ? ", stopped by Ctrl-C" : ""),
            "  from      memory \(stats.memory), disk \(stats.disk), network \(stats.network); failed \(stats.failed)",
            "  failures  " + (failures.isEmpty ? "none" : failures.map { "\($0.key) \($0.value)" }.joined(separator: ", ")),
            "  requests  \(requests) made, \(stats.retries) of them retries; \(Self.formatBytes(stats.downloadedBytes)) downloaded",
            "  saved     \(stats.dedup) requests joined a download; \(stats.prefetched) rows ready by prefetch",
            "  lanes     \(stats.moved) moved to the slow lane on scrolling away, \(stats.cancelled) cancelled",
            "  memory    \(stats.released) rows off screen let their images go at the memory warning",
            "  revalid.  \(stats.revalidated) expired images renewed by a 304, without their bodies",
            "  stats     " + Self.describe(cache.statistics()).joined(separator: "\n            "),
            "  bind      p50 \(bind50) us, p99 \(bind99) us as the feed bound rows (\(stats.bindNanoseconds.count) binds)",
            "  peek      p50 \(number(warmPeeks)) us in a tight loop over the rows (warm CPU caches)",
            "  cache     " + Self.shortPath(cache.folder.path),
            "            \(files) files, \(Self.formatBytes(bytes)), kept \(kept) (imageTimeToLive)",
        ]
        if let expiredNote { lines.append("            " + expiredNote) }
        lines += [
            "            " + nextStep,
            "            clear it: " + settings.clearCommand,
        ]
        if let problem = stats.diskProblems.first {
            lines.append("  disk      \(stats.diskProblems.count) problems; the first: \(problem)")
        }
        var fields: [(String, Any)] = [
            ("network", stats.network), ("disk", stats.disk), ("memory", stats.memory), ("failed", stats.failed),
            ("requests", requests), ("retries", stats.retries), ("dedup", stats.dedup), ("prefetched", stats.prefetched),
            ("moved", stats.moved), ("cancelled", stats.cancelled), ("released", stats.released),
            ("revalidated", stats.revalidated),
            ("bytes", stats.downloadedBytes), ("bind_p50_us", bind50), ("bind_p99_us", bind99),
            ("peek_loop_p50_us", number(warmPeeks)),
        ]
        fields += failures.map { ("failed.\($0.key)", $0.value) }
        fields.append(("interrupted", interrupted ? "yes" : "no"))
        var line = "summary:"
        for field in fields.map({ "\($0.0)=\($0.1)" }) {
            if line.count + 1 + field.count > 79, line != "summary:" {
                lines.append(line)
                line = "summary:"
            }
            line += " " + field
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    // MARK: Helpers

    /// One line per event in --plain mode: time, row, what, details. Details that do not fit in
    /// 80 columns go on to more lines, indented to their column, cut at spaces.
    private func log(_ row: Int?, _ what: String, _ details: String) {
        guard settings.plain else { return }
        let rowText = row.map { String(format: "row %4d", $0) } ?? "        "
        let prefix = String(format: "%7.2fs  ", elapsed) + rowText + "  " + what.padding(toLength: 7, withPad: " ", startingAt: 0) + "  "
        let width = 79 - prefix.count
        var lines: [String] = []
        var current = ""
        for word in details.split(separator: " ", omittingEmptySubsequences: false) {
            if !current.isEmpty, current.count + 1 + word.count > width {
                lines.append(current)
                current = String(word)
            } else {
                current += (current.isEmpty ? "" : " ") + word
            }
        }
        lines.append(current)
        let indent = String(repeating: " ", count: prefix.count)
        output(prefix + lines.joined(separator: "\n" + indent))
    }

    private func describe(_ image: ImageCache.Image, _ url: URL) -> String {
        let renewed = notModified[url] != nil ? "  revalidated (304)" : ""
        #if canImport(UIKit) || canImport(AppKit)
        return "\(Int(image.size.width))x\(Int(image.size.height))  \(Self.formatBytes(lastBytes[url] ?? 0))" + renewed
        #else
        return "\(image.format.rawValue) \(image.width)x\(image.height)  \(Self.formatBytes(image.data.count))" + renewed
        #endif
    }

    /// The cache's own `statistics()`, in two lines of a few words.
    static func describe(_ stats: ImageCache.Statistics) -> [String] {
        ["cache.statistics(): \(stats.requests) requests, memory \(stats.memoryHits), disk \(stats.diskHits),",
         "network \(stats.misses), joined \(stats.deduplicated); \(stats.revalidated) revalidated, "
            + "\(stats.evictions) evicted, \(stats.failures) failed",
         "holds \(stats.memoryCount) in memory, \(stats.diskFiles) files (\(formatBytes(stats.diskBytes)))"]
    }

    private static func name(of url: URL, embedded: Bool) -> String {
        embedded ? url.lastPathComponent : (url.host ?? "") + (url.path.isEmpty ? "" : "/…/" + url.lastPathComponent)
    }

    /// "7 days", "1 day", "5 hours", "10 minutes", "45 s".
    static func formatDuration(_ seconds: TimeInterval) -> String {
        func count(_ value: Double, _ unit: String) -> String {
            let whole = Int(value.rounded(.down))
            return "\(whole) \(unit)\(whole == 1 ? "" : "s")"
        }
        if seconds >= 86_400 { return count(seconds / 86_400, "day") }
        if seconds >= 3_600 { return count(seconds / 3_600, "hour") }
        if seconds >= 60 { return count(seconds / 60, "minute") }
        return "\(Int(seconds)) s"
    }

    /// `path` with the home folder written `~`, so that it takes less of an 80-column line.
    static func shortPath(_ path: String) -> String {
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        guard home.count > 1, path.hasPrefix(home + "/") else { return path }
        return "~" + path.dropFirst(home.count)
    }

    static func formatBytes(_ bytes: Int) -> String {
        if bytes < 1_000 { return "\(bytes) B" }
        if bytes < 1_000_000 { return String(format: "%.1f KB", Double(bytes) / 1_000) }
        return String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }

    private static func folderSize(_ folder: URL) -> (files: Int, bytes: Int) {
        var files = 0, bytes = 0
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names {
            var info = stat()
            if stat(folder.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                files += 1
                bytes += Int(info.st_size)
            }
        }
        return (files, bytes)
    }
}

/// Where the top of the screen is at each moment: down to the bottom in short flicks, each after a
/// pause to look (70% of a round trip), then back up in a few long flicks (30%). `speed` round
/// trips fit in the run.
struct ScrollPlan {
    let bottom: Double  // the top row when the last row is on screen
    let seconds: Double
    let speed: Double

    init(rows: Int, screenRows: Int, seconds: Double, speed: Double) {
        bottom = Double(max(0, rows - screenRows))
        self.seconds = seconds
        self.speed = speed
    }

    func position(at time: Double) -> (top: Double, goingDown: Bool) {
        let trips = time / seconds * speed
        let phase = trips - trips.rounded(.down)
        func flicks(_ progress: Double, count: Int, moving: Double) -> Double {
            let scaled = progress * Double(count)
            let done = scaled.rounded(.down)
            let within = max(0, (scaled - done - (1 - moving)) / moving)  // rest, then move
            return (done + within * within * (3 - 2 * within)) / Double(count)  // ease in and out
        }
        if phase < 0.7 {
            return (bottom * flicks(phase / 0.7, count: max(1, Int(bottom / 8)), moving: 0.5), true)
        }
        return (bottom * (1 - flicks((phase - 0.7) / 0.3, count: max(1, Int(bottom / 40)), moving: 0.6)), false)
    }
}
