import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The decisions of a list's prefetcher (`ListWindow`), without a cache: direction, what to start,
/// what to cancel, what to let go (issue 53).
final class ListWindowTests: XCTestCase {
    func testScrollingForwardPrefetchesTheNextRowsNearestFirst() {
        // Given a window prefetching 3 rows ahead, rows 0 to 4 visible
        var window = ImageCache.ListWindow(ahead: 3, window: 5, count: 100)
        for row in 0..<5 { _ = window.appeared(row) }
        // When row 5 appears and row 0 disappears
        let plan = window.appeared(5)
        _ = window.disappeared(0)
        // Then rows 6 to 8 are prefetched, nearest first, and the scroll goes forward
        XCTAssertEqual(window.direction, .forward)
        XCTAssertEqual(plan.start, [8])  // 5, 6, 7 were asked when row 4 appeared
        XCTAssertEqual(window.prefetching, Set(1...8))  // those of rows 1 to 5 are now their views' loads
    }

    func testTurningBackCancelsThePrefetchesAheadAndPrefetchesAbove() {
        // Given rows 10 to 14 visible, scrolled forward, prefetching 15 to 17
        var window = ImageCache.ListWindow(ahead: 3, window: 5, count: 100)
        for row in 10..<15 { _ = window.appeared(row) }
        XCTAssertEqual(window.prefetching, Set(11...17))
        // When row 14 disappears and row 9 appears (the scroll turned)
        let gone = window.disappeared(14)
        let plan = window.appeared(9)
        // Then the scroll goes backward (the bottom row's leaving says so): 14 to 17 are cancelled,
        // and 9 to 7 prefetched, nearest first, then 6
        XCTAssertEqual(window.direction, .backward)
        XCTAssertEqual(gone.cancel + plan.cancel, [14, 15, 16, 17])
        XCTAssertEqual(gone.start, [9, 8, 7])
        XCTAssertEqual(plan.start, [6])
    }

    func testAFlingCancelsThePrefetchesItPassedAndLetsGoBeyondTheWindow() {
        // Given rows 0 to 3 visible
        var window = ImageCache.ListWindow(ahead: 4, window: 6, count: 1_000)
        var plans: [ImageCache.ListWindow.Plan] = []
        for row in 0..<4 { plans.append(window.appeared(row)) }
        // When the list jumps to rows 50 to 53 (a fling faster than rows can appear one by one)
        for row in 0..<4 { plans.append(window.disappeared(row)) }
        for row in 50..<54 { plans.append(window.appeared(row)) }
        // Then the prefetches of 1 to 7 are cancelled, rows 0 to 7 let go, 51 to 57 prefetched
        XCTAssertEqual(plans.flatMap(\.cancel).sorted(), Array(1...7))
        XCTAssertEqual(plans.flatMap(\.release).sorted(), Array(0..<8))
        XCTAssertEqual(window.prefetching, Set(51...57))
        XCTAssertEqual(window.held, Set(50..<58))
    }

    func testRowsWithinTheWindowStayHeldAndTheListsEndBoundsPrefetching() {
        // Given a list of 12 rows, 2 visible, window 3
        var window = ImageCache.ListWindow(ahead: 2, window: 3, count: 12)
        _ = window.appeared(0)
        _ = window.appeared(1)
        // When it scrolls to the end, one row at a time
        var released: [Int] = []
        for top in 1...10 {
            released += window.disappeared(top - 1).release
            released += window.appeared(top + 1).release
        }
        // Then rows more than 3 away from the visible span (10 and 11) were let go, in order; none
        // past the end was asked
        XCTAssertEqual(released, Array(0...6))
        XCTAssertEqual(window.held, Set(7...11))
        XCTAssertEqual(window.prefetching, [10, 11])  // the visible rows' (none past the end)
    }
}

/// A list's prefetcher through the cache and binders, on a simulated list (issue 53).
final class ListPrefetcherTests: BinderTestCase {
    /// PNG bytes of `width` padded to `bytes` with a private chunk (the structural check reads chunks
    /// and their CRCs; the decode on Linux keeps the bytes): an image that costs `bytes` in memory.
    func paddedPNG(width: Int, bytes: Int) -> Data {
        var data = png(width: width)
        let length = max(0, bytes - data.count - 12)
        data.insert(contentsOf: Self.padding(length), at: 33)  // after IHDR
        return data
    }

    /// A private chunk of `length` zeros, with its length and CRC, made once per length.
    private static func padding(_ length: Int) -> Data {
        paddings.mutate { made in
            if let chunk = made[length] { return chunk }
            let body = Data("paDd".utf8) + Data(count: length)
            let chunk = withUnsafeBytes(of: UInt32(length).bigEndian) { Data($0) } + body
                + withUnsafeBytes(of: crc32(body).bigEndian) { Data($0) }
            made[length] = chunk
            return chunk
        }
    }

    private static let paddings = Locked<[Int: Data]>([:])

    static func crc32(_ bytes: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// `count` rows, each with its own image of `bytes` at /row<i>.png, answered after `delay`.
    func rows(_ count: Int, bytes: Int, delay: TimeInterval, size: CGSize = CGSize(width: 60, height: 40))
        -> [ImageCache.Request] {
        (0..<count).map { row in
            server.set("/row\(row).png", LoopbackServer.Response(body: paddedPNG(width: 1 + row % 4_000, bytes: bytes),
                                                                delay: delay))
            return ImageCache.Request(url: server.url("/row\(row).png"), size: size)
        }
    }

    func testPaddedImagesDecodeAtTheirSize() throws {
        let data = paddedPNG(width: 7, bytes: 50_000)
        XCTAssertEqual(data.count, 50_000)
        XCTAssertEqual(ImageCache.Image(data: data)?.width, 7)
    }

    func testAGridPrefetchesWholeLinesAheadOnTheSlowLaneAtTheRowsSize() {
        // Given a grid of 3 columns whose images wait behind a gate, lines 0 and 1 visible
        let cache = makeCache()
        let gate = Gate()
        serveBehind(gate, prefix: "/grid")
        let requests = (0..<60).map { ImageCache.Request(url: server.url("/grid\($0).png"), size: CGSize(width: 30, height: 30)) }
        let prefetcher = callbacks.sync {
            ImageCache.ListPrefetcher(requests, cache: cache, ahead: 2, window: 4, columns: 3, queue: callbacks)
        }
        // When the items of lines 0 and 1 appear
        let lanes = callbacks.sync { () -> [ImageCache.Lane?] in
            for item in 0..<6 { prefetcher.appeared(item) }
            // Then the items of the next 2 lines are prefetched, on the slow lane, under the rows' keys
            return (6..<12).map { item in
                cache.locked { ledger -> ImageCache.Lane? in
                    if case .loading(let download)? = ledger.entries[requests[item].cacheKey] { return download.lane }
                    return nil
                }
            }
        }
        XCTAssertEqual(lanes, Array(repeating: .slow, count: 6))
        XCTAssertEqual(prefetcher.counts.started, 11)  // items 1 to 5 too, before they appeared
        gate.open()
        let loaded = eventually(10) { (6..<12).allSatisfy { cache.peek(requests[$0]) != nil } }
        XCTAssertTrue(loaded, "the prefetched items are in memory at the rows' size")
    }

    // MARK: The simulated list

    /// 1,000 rows of 50 KB images answered after 200 ms, scrolled through on a real timeline: 200
    /// rows at 20 rows/s, then 800 at 200 rows/s (the fling). Reports the share of rows showing their
    /// image when they first appear; checks that every visible row's download is on the fast lane.
    func testScrollThenFlingWithPrefetching() {
        let report = simulateScrollThenFling(prefetching: true, slowDownloads: 6)
        print("ListPrefetcher prefetching on (6 slow): \(report)")
    }

    func testScrollThenFlingWithoutPrefetching() {
        let report = simulateScrollThenFling(prefetching: false, slowDownloads: 6)
        print("ListPrefetcher prefetching off: \(report)")
    }

    private func simulateScrollThenFling(prefetching: Bool, slowDownloads: Int) -> String {
        let cache = makeCache()
        cache.maxConcurrentSlowDownloads = slowDownloads
        let requests = rows(1_000, bytes: 50_000, delay: 0.2)
        let list = callbacks.sync {
            SimulatedList(cache: cache, requests: requests, visibleRows: 8, placeholder: placeholder, queue: callbacks,
                          prefetcher: prefetching ? ImageCache.ListPrefetcher(requests, cache: cache, ahead: 10,
                                                                               window: 30, queue: callbacks) : nil)
        }
        // The list opens and its first screen shows; then the scroll starts.
        let firstScreen = DispatchSemaphore(value: 0)
        callbacks.sync {
            list.start()
            list.whenVisibleShown { firstScreen.signal() }
        }
        XCTAssertEqual(firstScreen.wait(timeout: .now() + 20), .success, "the first screen shows")
        // The timeline: real time, each step at its due moment (the server's 200 ms are real).
        let scroll = runTimeline(list, steps: 200, rowsPerSecond: 20)
        let fling = runTimeline(list, steps: 992 - 200, rowsPerSecond: 200)
        let wasted = callbacks.sync { () -> Int in
            (200..<1_000).filter { server.requestCount("/row\($0).png") > 0 && !list.everShown($0) }.count
        }
        let counts = callbacks.sync { list.prefetcher?.counts }
        callbacks.sync { XCTAssertEqual(list.visibleRowsNotOnTheFastLane, [], "a visible row's download waited on the slow lane") }
        return String(format: "at 20 rows/s %.1f%% shown at first appearance (%d of %d), at 200 rows/s %.1f%% (%d of %d); "
                      + "prefetches started %d, cancelled %d; fling: %d downloads of rows never shown",
                      scroll.share * 100, scroll.shown, scroll.appeared, fling.share * 100, fling.shown, fling.appeared,
                      counts?.started ?? 0, counts?.cancelled ?? 0, wasted)
    }

    /// Scrolls `list` down `steps` rows at `rowsPerSecond` on the real clock; returns what the rows
    /// that appeared for the first time meanwhile showed.
    private func runTimeline(_ list: SimulatedList, steps: Int, rowsPerSecond: Double)
        -> (shown: Int, appeared: Int, share: Double) {
        let before = callbacks.sync { (list.shownAtFirstAppearance, list.firstAppearances) }
        let start = Date()
        for step in 1...steps {
            Thread.sleep(until: start.addingTimeInterval(Double(step) / rowsPerSecond))  // the pace, not a wait
            callbacks.sync { list.scroll(to: list.top + 1) }
        }
        let after = callbacks.sync { (list.shownAtFirstAppearance, list.firstAppearances) }
        let (shown, appeared) = (after.0 - before.0, after.1 - before.1)
        return (shown, appeared, appeared == 0 ? 0 : Double(shown) / Double(appeared))
    }

    /// 10,000 rows of 4 KB images scrolled end to end, one row per step, each step's new row shown
    /// before the next (a virtual timeline: the clock is the events). The images are on disk
    /// (stored first, memory emptied): 10,000 round trips to the loopback server take minutes on a
    /// loaded machine, and where the bytes come from changes nothing of what memory holds. Views
    /// and memory hold no more than the window's rows at any step; then, scrolled back 50 rows,
    /// the rows within the window are memory hits that show no placeholder.
    func testTenThousandRowsEndToEndStayWithinTheWindowAndScrollBackFindsThem() throws {
        let cache = makeCache()
        cache.maxConcurrentSlowDownloads = 6
        let (rowBytes, visible, window, total) = (4_096, 8, 20, 10_000)
        let requests = (0..<total).map {
            ImageCache.Request(url: server.url("/row\($0).png"), size: CGSize(width: 60, height: 40))
        }
        for (row, request) in requests.enumerated() {
            try cache.store(paddedPNG(width: 1 + row % 4_000, bytes: rowBytes), for: request.url!.absoluteString)
        }
        XCTAssertTrue(eventually(60) { !requests.contains { cache.fetching($0.url!) } }, "the stores are decoded")
        cache.persistCacheToDisk()
        cache.purgeMemory()
        let evictionsBefore = exactStatistics(cache).evictions
        let list = callbacks.sync {
            SimulatedList(cache: cache, requests: requests, visibleRows: visible, placeholder: placeholder, queue: callbacks,
                          prefetcher: ImageCache.ListPrefetcher(requests, cache: cache, ahead: 10, window: window,
                                                                queue: callbacks))
        }
        callbacks.sync { list.start() }
        var most = (views: 0, count: 0, bytes: 0)
        let bound = visible + 2 * window  // rows held at most: the visible ones and the window on each side
        scroll(list, through: Array(1...(total - visible))) { top in
            let (count, bytes) = cache.locked { ($0.memory.count, $0.memory.bytes) }
            let views = list.viewsHoldingImages
            most = (max(most.views, views), max(most.count, count), max(most.bytes, bytes))
            guard views > bound || count > bound || bytes > bound * rowBytes else { return nil }
            return "at row \(top): \(views) views hold images, memory \(count) images, \(bytes) bytes"
        }
        XCTAssertEqual(exactStatistics(cache).evictions, evictionsBefore, "memory's limits never had to evict")
        // Scrolled back 50 rows
        callbacks.sync { list.resetReappearances(window: window) }
        scroll(list, through: Array(stride(from: total - visible - 1, through: total - visible - 50, by: -1))) { _ in nil }
        let (memoryHits, reappeared, placeholdersWithinWindow) = callbacks.sync {
            (list.reappearedFromMemory, list.reappeared, list.placeholdersWithinTheWindow)
        }
        let counts = callbacks.sync { list.prefetcher!.counts }
        print("ListPrefetcher 10,000 rows: at most \(most.views) views holding images, \(most.count) images and "
              + "\(most.bytes) bytes in memory (bound \(bound) rows, \(bound * rowBytes) bytes); scrolling back 50 rows: "
              + "\(memoryHits) of \(reappeared) rows memory hits; prefetcher \(counts)")
        XCTAssertEqual(placeholdersWithinWindow, 0, "a row within the window showed its placeholder again")
        XCTAssertGreaterThanOrEqual(memoryHits, window, "the rows within the window were memory hits")
        XCTAssertGreaterThan(counts.releasedImages, total - bound - 10, "rows beyond the window left memory")
        XCTAssertEqual(server.totalRequests, 0, "every row came from disk")
    }

    /// Scrolls `list` to each of `tops` in turn, on the list's queue, going on to the next only
    /// once the visible rows show their images (waiting for them when they do not yet: the clock of
    /// this timeline is the events). After each step, `check` (on the list's queue) says what is
    /// wrong, if anything: then it stops there, and fails.
    private func scroll(_ list: SimulatedList, through tops: [Int], check: @escaping (Int) -> String?) {
        var next = 0
        while next < tops.count {
            let shown = DispatchSemaphore(value: 0)
            let (reached, failure) = callbacks.sync { () -> (Int, String?) in
                var next = next
                while next < tops.count {
                    list.scroll(to: tops[next])
                    next += 1
                    if let failure = check(tops[next - 1]) { return (next, failure) }
                    if !list.visibleShown {
                        list.whenVisibleShown { shown.signal() }
                        return (next, nil)
                    }
                }
                shown.signal()  // the last step's rows show: nothing to wait for
                return (next, nil)
            }
            if let failure { return XCTFail(failure) }
            if shown.wait(timeout: .now() + 20) == .timedOut {
                return XCTFail("the visible rows were not shown: \(callbacks.sync { list.visibleStates })")
            }
            next = reached
        }
    }
}

/// A list as a lazy stack shows one, simulated: a viewport of `visibleRows` over the rows; a row
/// appears when it enters it and disappears when it leaves, and keeps its view (a target and its
/// binder) once made, as `LazyVStack` keeps its rows' state. Used on `queue` only.
final class SimulatedList {
    let cache: ImageCache
    let requests: [ImageCache.Request]
    let visibleRows: Int
    let placeholder: ImageCache.Image
    let queue: DispatchQueue
    let prefetcher: ImageCache.ListPrefetcher?
    private(set) var top = 0
    private var views: [Int: (target: TestTarget, binder: ImageCache.Binder)] = [:]
    private var seen: Set<Int> = []
    private var shown: Set<Int> = []  // rows whose target has shown their image
    private(set) var shownAtFirstAppearance = 0, firstAppearances = 0
    private(set) var reappeared = 0, reappearedFromMemory = 0
    private var placeholdersAgain: [Int] = []  // rows that showed their placeholder again when they reappeared
    /// Rows whose download, when they appeared, was not on the fast lane.
    private(set) var visibleRowsNotOnTheFastLane: [Int] = []
    private var waiting: (() -> Void)?

    init(cache: ImageCache, requests: [ImageCache.Request], visibleRows: Int, placeholder: ImageCache.Image,
         queue: DispatchQueue, prefetcher: ImageCache.ListPrefetcher?) {
        (self.cache, self.requests, self.visibleRows, self.placeholder) = (cache, requests, visibleRows, placeholder)
        (self.queue, self.prefetcher) = (queue, prefetcher)
    }

    var visible: Range<Int> { top..<min(requests.count, top + visibleRows) }

    func start() { for row in visible { appear(row) } }

    /// Moves the viewport to `newTop`, one row at a time.
    func scroll(to newTop: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        while top != newTop {
            let down = newTop > top
            let (leaving, entering) = down ? (top, top + visibleRows) : (top + visibleRows - 1, top - 1)
            top += down ? 1 : -1
            disappear(leaving)
            if entering < requests.count { appear(entering) }
        }
    }

    func everShown(_ row: Int) -> Bool { shown.contains(row) }

    /// Rows whose views hold an image (not the placeholder).
    var viewsHoldingImages: Int { holding.count }
    private var holding: Set<Int> = []

    var visibleStates: [ImageCache.Binder.State] { visible.compactMap { views[$0]?.binder.state } }

    /// Whether every visible row shows its image.
    var visibleShown: Bool { visible.allSatisfy(isShowing) }

    /// Calls `done` once every visible row shows its image: now, or when the last comes.
    func whenVisibleShown(_ done: @escaping () -> Void) {
        if visibleShown { return done() }
        waiting = done
    }

    /// Counts reappearances from now on; the rows within `window` of the viewport now are those
    /// ``placeholdersWithinTheWindow`` looks at.
    func resetReappearances(window: Int) {
        (reappeared, reappearedFromMemory, placeholdersAgain) = (0, 0, [])
        heldAtTurn = (top - window)..<(top + visibleRows + window)
    }

    private var heldAtTurn = 0..<0

    /// Rows within the window when the counts were reset that showed their placeholder again when
    /// they reappeared.
    var placeholdersWithinTheWindow: Int { placeholdersAgain.filter(heldAtTurn.contains).count }

    private func isShowing(_ row: Int) -> Bool {
        guard let view = views[row], case .image = view.binder.state else { return false }
        return view.target.image != nil && view.target.image != placeholder
    }

    private func appear(_ row: Int) {
        let view = views[row] ?? makeView(row)
        view.target.isDisplayed = true
        let first = seen.insert(row).inserted
        let placeholdersBefore = view.target.history.filter { $0 == BinderTestCase.placeholderWidth }.count
        view.binder.bind(requests[row], placeholder: placeholder, cache: cache)
        let fromMemory = view.binder.state == .image(.memory)
        if first {
            firstAppearances += 1
            if fromMemory { shownAtFirstAppearance += 1 }
        } else {
            reappeared += 1
            if fromMemory { reappearedFromMemory += 1 }
            if view.target.history.filter({ $0 == BinderTestCase.placeholderWidth }).count > placeholdersBefore {
                placeholdersAgain.append(row)
            }
        }
        if case .loading = view.binder.state {
            let lane = cache.locked { ledger -> ImageCache.Lane? in
                if case .loading(let download)? = ledger.entries[requests[row].cacheKey] { return download.lane }
                return nil
            }
            if lane != .fast { visibleRowsNotOnTheFastLane.append(row) }
        }
        prefetcher?.register(view.binder, row: row)
        prefetcher?.appeared(row)
    }

    private func disappear(_ row: Int) {
        guard let view = views[row] else { return }
        view.target.isDisplayed = false
        view.binder.disappeared(.cancel)
        prefetcher?.disappeared(row)
    }

    private func makeView(_ row: Int) -> (target: TestTarget, binder: ImageCache.Binder) {
        let target = TestTarget(queue: queue)
        let binder = ImageCache.Binder(target, queue: queue)
        target.onSet = { [weak self] image in
            guard let self else { return }
            guard let image, image != self.placeholder else { self.holding.remove(row); return }
            self.holding.insert(row)
            self.shown.insert(row)
            if let waiting = self.waiting, self.visible.allSatisfy({ self.isShowing($0) || $0 == row }) {
                self.waiting = nil
                self.queue.async { waiting() }  // after the binder's state says so too
            }
        }
        views[row] = (target, binder)
        return (target, binder)
    }
}
