import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// A display target as a view is one, for the binder on Linux. Used on the binder's queue only
/// (the tests' `callbacks`), which its setter checks.
final class TestTarget: ImageCache.ImageTarget {
    let queue: DispatchQueue
    var isDisplayed = true
    /// The width of the image of the URL it was bound to last, set by the test as it binds.
    var expected: Int?
    /// Every image set, by width (nil: none).
    private(set) var history: [Int?] = []
    /// Images set that are not the latest binding's (the placeholder and failure image aside).
    private(set) var wrong = 0
    /// Called after each image is set.
    var onSet: ((ImageCache.Image?) -> Void)?

    /// The transition of each image shown through `show(_:transition:)`, by width.
    private(set) var transitions: [(width: Int?, transition: ImageCache.Transition)] = []

    init(queue: DispatchQueue) { self.queue = queue }

    func show(_ image: ImageCache.Image?, transition: ImageCache.Transition) {
        transitions.append((image?.width, transition))
        self.image = image
    }

    var image: ImageCache.Image? {
        didSet {
            dispatchPrecondition(condition: .onQueue(queue))
            history.append(image?.width)
            if let width = image?.width, width < BinderTestCase.placeholderWidth, width != expected { wrong += 1 }
            onSet?(image)
        }
    }
}

/// What the binder tests share: images told apart by their width, a placeholder and a failure image.
class BinderTestCase: CacheTestCase {
    static let placeholderWidth = 9_001, failureWidth = 9_002
    lazy var placeholder = image(width: Self.placeholderWidth)
    lazy var failureImage = image(width: Self.failureWidth)

    func image(width: Int) -> ImageCache.Image {
        guard let image = ImageCache.Image(data: png(width: width)) else { fatalError("not an image") }
        return image
    }

    /// Serves an image `width` pixels wide at `path`, answered after `delay` seconds.
    func serveImage(_ path: String, width: Int, delay: TimeInterval = 0) -> URL {
        server.set(path, LoopbackServer.Response(body: png(width: width), delay: delay))
        return server.url(path)
    }

    func makeTarget() -> (TestTarget, ImageCache.Binder) {
        let target = TestTarget(queue: callbacks)
        return (target, ImageCache.Binder(target, queue: callbacks))
    }
}

/// The binder: never the wrong image, no flicker, failures, memory warnings, sized images (issue 12).
final class BinderTests: BinderTestCase {
    // MARK: Never the wrong image

    func testRebindingOneTargetToAHundredURLsShowsOnlyTheLastURLsImage() {
        // Given 100 URLs, each with its own image, half answered at once, half after random delays
        // of up to 50 ms
        let cache = makeCache()
        let urls = (0..<100).map { serveImage("/rebind\($0).png", width: 1_000 + $0, delay: Bool.random() ? 0 : .random(in: 0...0.05)) }
        let (target, binder) = makeTarget()
        let last = expectation(description: "the last URL's image")
        target.onSet = { if $0?.width == 1_099 { last.fulfill() } }

        // When one target is bound to each in quick succession, as a cell is in a fast scroll (the
        // short random pauses only vary the timing, so that some answers land between two bindings)
        for (index, url) in urls.enumerated() {
            callbacks.sync {
                target.expected = 1_000 + index
                binder.bind(url, placeholder: placeholder, cache: cache)
            }
            if Int.random(in: 0..<3) == 0 { Thread.sleep(forTimeInterval: .random(in: 0...0.006)) }
        }
        wait(for: [last], timeout: 10)

        // Then the last URL's image is the one set at the end, and no image of an earlier binding
        // was ever set after a newer binding was made
        let (history, wrong, ignored, state) = callbacks.sync { (target.history, target.wrong, binder.ignoredCallbacks, binder.state) }
        XCTAssertEqual(wrong, 0, "images of an earlier binding set after a newer one")
        XCTAssertEqual(history.last, 1_099)
        guard case .image(.network) = state else { return XCTFail("state \(state)") }
        // Each of the 99 earlier bindings either showed its image while it was the latest, or was
        // cancelled by the next one: its callback (the cancellation) came after and was ignored.
        let shownWhileLatest = Set(history.compactMap { $0 }.filter { $0 < Self.placeholderWidth }).count - 1
        XCTAssertEqual(shownWhileLatest + ignored, 99)
        print("BinderTests: 100 bindings of one target; \(shownWhileLatest) earlier images came while their binding was the latest;"
              + " \(ignored) stale callbacks (cancellations of earlier bindings) arrived after a newer binding and were ignored;"
              + " \(wrong) images of an earlier binding set after a newer one")
        assertInvariants(cache)
    }

    func testFiftyTargetsSharingTenURLsEachShowTheirLastURLsImage() {
        // Given 10 URLs with random delays, and 50 targets, as 50 cells of a table of 10 images
        let cache = makeCache()
        let urls = (0..<10).map { serveImage("/shared\($0).png", width: 2_000 + $0, delay: .random(in: 0...0.05)) }
        let pairs = (0..<50).map { _ in makeTarget() }
        let done = expectation(description: "every target shows its last URL's image")
        done.expectedFulfillmentCount = 50

        // When each is bound to URL i % 10, then rebound to URL (i + 1) % 10, as reused cells are
        callbacks.sync {
            for (index, (target, binder)) in pairs.enumerated() {
                target.expected = 2_000 + index % 10
                binder.bind(urls[index % 10], placeholder: placeholder, cache: cache)
            }
        }
        callbacks.sync {
            for (index, (target, binder)) in pairs.enumerated() {
                target.expected = 2_000 + (index + 1) % 10
                var fulfilled = false
                target.onSet = { image in
                    if image?.width == target.expected, !fulfilled { fulfilled = true; done.fulfill() }
                }
                binder.bind(urls[(index + 1) % 10], placeholder: placeholder, cache: cache)
            }
        }
        wait(for: [done], timeout: 10)

        // Then every target shows its last URL's image, none ever showed an image of a URL it was
        // no longer bound to, and each URL was downloaded once: a rebinding joins the download
        // before it leaves the old one
        let (wrong, ignored, finals) = callbacks.sync {
            (pairs.map { $0.0.wrong }.reduce(0, +), pairs.map { $0.1.ignoredCallbacks }.reduce(0, +), pairs.map { $0.0.history.last ?? nil })
        }
        XCTAssertEqual(wrong, 0)
        XCTAssertEqual(finals, (0..<50).map { 2_000 + ($0 + 1) % 10 })
        for index in 0..<10 { XCTAssertEqual(server.requestCount("/shared\(index).png"), 1, "URL \(index)") }
        print("BinderTests: 50 targets on 10 URLs, each bound twice; \(ignored) stale callbacks arrived and were ignored;"
              + " \(wrong) images of an earlier binding set after a newer one")
        assertInvariants(cache)
    }

    /// The binding's generation is taken before the placeholder is set: a binding made from inside
    /// the target's callback as the placeholder is set (re-entrant) wins, and the older URL's image,
    /// which comes after, is not shown.
    func testABindingMadeWhileThePlaceholderIsSetWins() {
        let cache = makeCache()
        let older = serveImage("/outer.png", width: 7_500, delay: 0.3), newer = serveImage("/inner.png", width: 7_501)
        let (target, binder) = makeTarget()
        var rebound = false
        let olderCame = expectation(description: "the older URL's callback")
        target.onSet = { image in
            if image?.width == Self.placeholderWidth, !rebound {
                rebound = true
                target.expected = 7_501
                binder.bind(newer, placeholder: self.placeholder, cache: cache)  // re-entrant
            }
            if image?.width == 7_500 { olderCame.fulfill() }
        }
        callbacks.sync { target.expected = 7_500; _ = binder.bind(older, placeholder: placeholder, cache: cache) }
        _ = XCTWaiter.wait(for: [olderCame], timeout: 2)
        XCTAssertEqual(callbacks.sync { target.history.last }, 7_501, "history \(callbacks.sync { target.history })")  // before the fix: 7500
    }

    // MARK: No flicker

    func testAnImageInMemoryIsSetInsideBindAndThePlaceholderNever() {
        // Given an image in memory
        let cache = makeCache()
        let url = serveImage("/memory.png", width: 3_000)
        XCTAssertNotNil(fetchAndWait(cache, url))
        let (target, binder) = makeTarget()

        // When a target is bound to it with a placeholder
        let (task, history, state) = callbacks.sync {
            target.expected = 3_000
            let task = binder.bind(url, placeholder: placeholder, cache: cache)
            return (task, target.history, binder.state)  // read in the same block: before any callback could run
        }

        // Then the image is set before `bind` returns, the placeholder is never set, nothing is requested
        XCTAssertNil(task)
        XCTAssertEqual(history, [3_000])
        guard case .image(.memory) = state else { return XCTFail("state \(state)") }
        XCTAssertEqual(server.requestCount("/memory.png"), 1)

        // And an image not in memory shows the placeholder until it comes
        let other = serveImage("/other.png", width: 3_001)
        let shown = expectation(description: "the other image")
        target.onSet = { if $0?.width == 3_001 { shown.fulfill() } }
        let before = callbacks.sync { () -> [Int?] in
            target.expected = 3_001
            XCTAssertNotNil(binder.bind(other, placeholder: placeholder, cache: cache))
            return target.history
        }
        XCTAssertEqual(before, [3_000, Self.placeholderWidth])
        wait(for: [shown], timeout: 10)
        XCTAssertEqual(callbacks.sync { target.history }, [3_000, Self.placeholderWidth, 3_001])
    }

    /// No flicker for an image in memory: in `cellForRow` a fresh cell's image view has zero bounds
    /// (unsized key), a reused one has its laid-out bounds (sized key). Scrolling back to a row first
    /// shown in a fresh cell sets the whole image that memory holds at once: no placeholder, disk
    /// read, decode, or second copy in memory.
    func testAWholeImageInMemoryIsSetAtOnceForASizedBinding() {
        let cache = makeCache()
        let url = serveImage("/fresh-then-reused.png", width: 7_200)
        let (fresh, freshBinder) = makeTarget(), (reused, reusedBinder) = makeTarget()
        let shown = expectation(description: "shown in the fresh cell")
        fresh.onSet = { if $0?.width == 7_200 { shown.fulfill() } }
        callbacks.sync { _ = freshBinder.bind(url, placeholder: placeholder, pixelSize: .zero, cache: cache) }  // bounds zero
        wait(for: [shown], timeout: 10)

        let (task, history) = callbacks.sync { () -> (ImageCache.FetchTask?, [Int?]) in
            reused.expected = 7_200
            let task = reusedBinder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 300, height: 300), cache: cache)
            return (task, reused.history)
        }
        XCTAssertNil(task, "a request for an image memory holds")  // there was one before the fix
        XCTAssertEqual(history, [7_200])  // before the fix: [9001] (the placeholder)
    }

    /// A whole image in memory that a bounded decode made smaller than a binding's size is shown at
    /// once and replaced by the size's own decode, and so is one at least twice the size on both
    /// sides (issue 42); one that fills the size within that, or is its original (a decode's bound
    /// not reached; on Linux always) and no larger, stays, with no request.
    func testAWholeImageIsShownMeanwhileAndReplacedWhenADecodeShrankItOrItIsTwiceTheSize() {
        // Shrunk to the bound of 4,096 and smaller than the target: replaced
        XCTAssertTrue(ImageCache.Rebinding.replacesWhole((4_096, 3_072), for: (5_000, 5_000), decodeBound: 4_096))
        XCTAssertTrue(ImageCache.Rebinding.replacesWhole((2_048, 1_536), for: (2_049, 10), decodeBound: 2_048))
        // Twice the target or more on both sides: replaced, whether shrunk or not, decoded or not.
        // (Before issue 42 this first one stayed: a prefetched photo kept at 2,556 px in a 300 px cell.)
        XCTAssertTrue(ImageCache.Rebinding.replacesWhole((4_096, 3_072), for: (300, 300), decodeBound: 4_096))
        XCTAssertTrue(ImageCache.Rebinding.replacesWhole((2_556, 1_917), for: (300, 300), decodeBound: 2_556))
        XCTAssertTrue(ImageCache.Rebinding.replacesWhole((600, 600), for: (300, 300), decodeBound: nil))
        // Fills the target, within twice it on a side: stays
        XCTAssertFalse(ImageCache.Rebinding.replacesWhole((4_096, 3_072), for: (2_100, 1_000), decodeBound: 4_096))
        XCTAssertFalse(ImageCache.Rebinding.replacesWhole((599, 1_000), for: (300, 300), decodeBound: nil))
        // Under the bound, so its original: no decode would be sharper
        XCTAssertFalse(ImageCache.Rebinding.replacesWhole((1_000, 750), for: (2_000, 2_000), decodeBound: 4_096))
        // Not decoded at all (Linux): the original
        XCTAssertFalse(ImageCache.Rebinding.replacesWhole((64, 48), for: (300, 300), decodeBound: nil))
        // What it saves: a 4,032 x 3,024 photo decoded whole within a 2,556 px screen, and for a
        // 100-point cell at 3x (4 bytes a pixel)
        let whole = ImageCache.Sizing.decodedSize(width: 4_032, height: 3_024, filling: nil, maxPixels: 2_556)
        let own = ImageCache.Sizing.decodedSize(width: 4_032, height: 3_024, filling: (300, 300))
        XCTAssertEqual(whole.width * whole.height * 4, 19_599_408)
        XCTAssertEqual(own.width * own.height * 4, 480_000)
        XCTAssertTrue(ImageCache.Rebinding.replacesWhole(whole, for: (300, 300), decodeBound: 2_556))
        XCTAssertNil(makeCache().wholeDecodeBound, "Linux keeps images whole")
    }

    /// Rebinding a target that already shows the right image (RemoteImage's `onAppear` after a
    /// navigation pop; `reloadData`/`reloadRows` in UIKit) keeps that image, with no placeholder over
    /// it, also when the cache's memory no longer holds it (LRU eviction, or a purge, which displayed
    /// targets survive).
    func testRebindingToTheURLAlreadyShownKeepsTheImage() {
        let cache = makeCache()
        let url = serveImage("/shown-again.png", width: 7_300)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "shown")
        target.onSet = { if $0?.width == 7_300 { shown.fulfill() } }
        callbacks.sync { target.expected = 7_300; _ = binder.bind(url, placeholder: placeholder, cache: cache) }
        wait(for: [shown], timeout: 10)
        callbacks.sync { target.onSet = nil }

        cache.purgeMemory()  // the target is displayed: it keeps its image
        callbacks.sync {}
        let history = callbacks.sync { () -> [Int?] in
            _ = binder.bind(url, placeholder: placeholder, cache: cache)  // onAppear / reloadData
            return target.history
        }
        XCTAssertEqual(history, [Self.placeholderWidth, 7_300], "the placeholder flashed over the image shown")  // before the fix: [.., 7300, 9001]
    }

    func testABindingAtASizeSharesAPrefetchUnderWayAndOutlivesItsCancellation() {
        // Given a prefetch of an image that the server is still answering
        let cache = makeCache()
        let url = serveImage("/prefetched.png", width: 3_003, delay: 0.3)
        cache.prefetch([url])
        XCTAssertTrue(server.waitForRequests("/prefetched.png", count: 1, timeout: 10))
        // When a cell binds it at a size, and the prefetch is cancelled (the cell is on screen now)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the image")
        target.onSet = { if $0?.width == 3_003 { shown.fulfill() } }
        callbacks.sync {
            target.expected = 3_003
            XCTAssertNotNil(binder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 80, height: 80), cache: cache))
        }
        cache.cancelPrefetching([url])
        // Then the cell gets the image from the one download, which the cancellation did not stop
        wait(for: [shown], timeout: 10)
        XCTAssertEqual(server.requestCount("/prefetched.png"), 1)
        XCTAssertEqual(server.disconnectCount("/prefetched.png"), 0)
        assertInvariants(cache)
    }

    func testAFadeIsForImagesThatWereNotInMemory() throws {
        // Given an image on the server, bound with a fade
        let cache = makeCache()
        let url = serveImage("/fade.png", width: 3_004)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "from the network")
        target.onSet = { if $0?.width == 3_004 { shown.fulfill() } }
        callbacks.sync {
            target.expected = 3_004
            binder.bind(url, placeholder: placeholder, cache: cache, transition: .fade(0.25))
        }
        wait(for: [shown], timeout: 10)
        // When it is bound again, now in memory, in another target, and from disk in a new cache
        let (again, againBinder) = makeTarget()
        callbacks.sync { _ = againBinder.bind(url, placeholder: placeholder, cache: cache, transition: .fade(0.25)) }
        cache.persistCacheToDisk()
        let relaunched = makeCache()
        let fromDisk = expectation(description: "from disk")
        let (other, otherBinder) = makeTarget()
        other.onSet = { if $0?.width == 3_004 { fromDisk.fulfill() } }
        callbacks.sync {
            other.expected = 3_004
            otherBinder.bind(url, placeholder: placeholder, cache: relaunched, transition: .fade(0.5))
        }
        wait(for: [fromDisk], timeout: 10)
        // Then the placeholder came at once, the downloaded image and the one from disk faded in,
        // and the one from memory came at once
        let first = callbacks.sync { target.transitions.map { "\($0.width ?? 0) \($0.transition)" } }
        XCTAssertEqual(first, ["\(Self.placeholderWidth) none", "3004 fade(0.25)"])
        XCTAssertEqual(callbacks.sync { again.transitions.map { "\($0.width ?? 0) \($0.transition)" } }, ["3004 none"])
        let second = callbacks.sync { other.transitions.map { "\($0.width ?? 0) \($0.transition)" } }
        XCTAssertEqual(second, ["\(Self.placeholderWidth) none", "3004 fade(0.5)"])
        XCTAssertEqual(server.requestCount("/fade.png"), 1)
    }

    func testBindingNilShowsThePlaceholderAndABindingToARequestSendsItsHeaders() {
        // Given a target showing an image bound through a request with a header
        let cache = makeCache()
        let url = serveImage("/request.png", width: 3_002)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the image")
        target.onSet = { if $0?.width == 3_002 { shown.fulfill() } }
        var request = URLRequest(url: url)
        request.setValue("Bearer b", forHTTPHeaderField: "Authorization")
        callbacks.sync {
            target.expected = 3_002
            XCTAssertNotNil(binder.bind(request, placeholder: placeholder, cache: cache))
        }
        wait(for: [shown], timeout: 10)
        XCTAssertEqual(server.lastRequestHeaders("/request.png")?["authorization"], "Bearer b")
        // When it is bound to nil (the URL form: a nil request is not a thing)
        let state = callbacks.sync {
            binder.bind(nil, placeholder: placeholder, cache: cache)
            return binder.state
        }
        // Then it shows the placeholder
        XCTAssertEqual(state, .placeholder)
        XCTAssertEqual(callbacks.sync { target.history.last }, Self.placeholderWidth)
    }

    // MARK: Failure

    func testAFailureLeavesTheFailureImageOrThePlaceholderAndSaysWhy() {
        // Given two URLs that answer 404
        let cache = makeCache()
        server.set("/gone.png", .status(404))
        server.set("/gone-too.png", .status(404))
        let (target, binder) = makeTarget()
        let (plain, plainBinder) = makeTarget()
        let failed = expectation(description: "both failed")
        failed.expectedFulfillmentCount = 2
        target.onSet = { if $0?.width == Self.failureWidth { failed.fulfill() } }
        plain.onSet = { _ in if case .failed = plainBinder.state { failed.fulfill() } }

        // When one target is bound with a failure image and one with a placeholder only
        callbacks.sync {
            binder.bind(server.url("/gone.png"), placeholder: placeholder, failureImage: failureImage, cache: cache)
            plainBinder.bind(server.url("/gone-too.png"), placeholder: placeholder, cache: cache)
        }
        wait(for: [failed], timeout: 10)

        // Then the failure image stays, else the placeholder, and each binder says why
        let (history, plainHistory, state, plainState) = callbacks.sync { (target.history, plain.history, binder.state, plainBinder.state) }
        XCTAssertEqual(history, [Self.placeholderWidth, Self.failureWidth])
        XCTAssertEqual(plainHistory, [Self.placeholderWidth, Self.placeholderWidth])
        guard case .failed(.httpStatus(404)) = state, case .failed(.httpStatus(404)) = plainState else {
            return XCTFail("states \(state), \(plainState)")
        }
    }

    func testCancellingKeepsWhatTheTargetShowsAndNoCallbackFollows() {
        // Given a target loading an image that the server is holding back
        let cache = makeCache()
        let url = serveImage("/slow.png", width: 3_100, delay: 30)
        let (target, binder) = makeTarget()
        let task = callbacks.sync { binder.bind(url, placeholder: placeholder, cache: cache) }
        XCTAssertTrue(server.waitForRequests("/slow.png", count: 1, timeout: 5))

        // When its load is cancelled
        callbacks.sync { binder.cancel() }

        // Then the request is cancelled (its callback never runs), the placeholder stays, and the
        // binder is idle
        XCTAssertEqual(task?.isCancelled, true)
        XCTAssertTrue(server.waitForDisconnects("/slow.png", count: 1, timeout: 5), "the download stops")
        let (history, state) = callbacks.sync { (target.history, binder.state) }
        XCTAssertEqual(history, [Self.placeholderWidth])
        guard case .idle = state else { return XCTFail("state \(state)") }
    }

    func testATaskCancelledDirectlyLeavesTheBinderIdle() {
        // Given a target loading a slow image
        let cache = makeCache()
        let url = serveImage("/direct.png", width: 3_200, delay: 30)
        let (_, binder) = makeTarget()
        let task = callbacks.sync { binder.bind(url, cache: cache) }

        // When the returned task is cancelled, not the binder
        task?.cancel()

        // Then the binder hears of it on its queue (where `cancel` sent the notice) and is idle
        guard case .idle = callbacks.sync(execute: { binder.state }) else { return XCTFail("not idle") }
    }

    /// `Binder.State` says `idle` is "the load cancelled", and the failure image is for an image that
    /// "cannot be had": `removeAll()` (a "clear cache" button) while rows load leaves every loading
    /// target idle with its placeholder, not the failure image with `.failed(.cancelled)`.
    func testRemoveAllWhileLoadingDoesNotShowTheFailureImage() {
        let cache = makeCache()
        let url = serveImage("/clear.png", width: 7_100, delay: 30)
        let (target, binder) = makeTarget()
        callbacks.sync { _ = binder.bind(url, placeholder: placeholder, failureImage: failureImage, cache: cache) }
        XCTAssertTrue(server.waitForRequests("/clear.png", count: 1, timeout: 5))

        cache.removeAll()
        XCTAssertTrue(eventually { self.callbacks.sync { binder.state != .loading } })

        let (history, state) = callbacks.sync { (target.history, binder.state) }
        XCTAssertEqual(history.last, Self.placeholderWidth, "history \(history)")  // before the fix: 9002
        XCTAssertEqual(state, .idle)  // before the fix: .failed(.cancelled)
    }

    // MARK: Memory warning

    func testTargetsNotDisplayedLetTheirImagesGoOnPurgeAndTakeThemBackWhenDisplayedAgain() {
        // Given two targets showing images, one displayed and one not, and a third on another cache
        let cache = makeCache(), otherCache = makeCache("other")
        let shownURL = serveImage("/shown.png", width: 4_000), hiddenURL = serveImage("/hidden.png", width: 4_001)
        let (shown, shownBinder) = makeTarget(), (hidden, hiddenBinder) = makeTarget(), (other, otherBinder) = makeTarget()
        let loaded = expectation(description: "three images")
        loaded.expectedFulfillmentCount = 3
        for target in [shown, hidden, other] { target.onSet = { if (4_000..<5_000).contains($0?.width ?? 0) { loaded.fulfill() } } }
        callbacks.sync {
            shownBinder.bind(shownURL, placeholder: placeholder, cache: cache)
            hiddenBinder.bind(hiddenURL, placeholder: placeholder, cache: cache)
            otherBinder.bind(hiddenURL, placeholder: placeholder, cache: otherCache)
            hidden.isDisplayed = false
            other.isDisplayed = false
        }
        wait(for: [loaded], timeout: 10)
        callbacks.sync { for target in [shown, hidden, other] { target.onSet = nil } }

        // When the cache purges its memory (a memory warning)
        cache.purgeMemory()
        callbacks.sync {}  // the binders hear of it on their queue, after the purge

        // Then the target not displayed shows its placeholder; the displayed one, and the one on
        // the other cache, keep their images
        callbacks.sync {
            XCTAssertEqual(hidden.history.last, Self.placeholderWidth)
            if case .placeholder = hiddenBinder.state {} else { XCTFail("state \(hiddenBinder.state)") }
            XCTAssertEqual(shown.history.last, 4_000)
            XCTAssertEqual(other.history.last, 4_001)
        }

        // And when it is displayed again and bound again (as `cellForRow` or `onAppear` does), it
        // takes its image back from disk: memory no longer has it, and the network is not asked
        let back = expectation(description: "the image again")
        let task = callbacks.sync { () -> ImageCache.FetchTask? in
            hidden.isDisplayed = true
            hidden.expected = 4_001
            hidden.onSet = { if $0?.width == 4_001 { back.fulfill() } }
            return hiddenBinder.bind(hiddenURL, placeholder: placeholder, cache: cache)
        }
        XCTAssertNotNil(task, "not from memory")
        wait(for: [back], timeout: 10)
        guard case .image(.disk) = callbacks.sync(execute: { hiddenBinder.state }) else { return XCTFail("not from disk") }
        XCTAssertEqual(server.requestCount("/hidden.png"), 2, "one per cache")
    }

    // MARK: Sized images

    func testAnImageWithNoTargetIsDecodedWithinTheBound() {
        // A 12-megapixel photo fetched with no size: its longest side comes down to the bound
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 4_032, height: 3_024, filling: nil, maxPixels: 2_796) == (2_796, 2_097))
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 3_024, height: 4_032, filling: nil, maxPixels: 4_096) == (3_024, 4_032),
                      "within the bound: as it is")
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 10_000, height: 100, filling: nil, maxPixels: 1) == (1, 1), "at least a pixel")
        // A target larger than the bound is what the caller asked for
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 8_000, height: 6_000, filling: (6_000, 6_000), maxPixels: 2_000) == (8_000, 6_000))
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 8_000, height: 6_000, filling: (4_000, 3_000), maxPixels: 2_000) == (4_000, 3_000))
        // The setting: 4,096 by default, at least 1
        let cache = makeCache()
        XCTAssertEqual(cache.maxDecodedPixelSize, 4_096)
        cache.maxDecodedPixelSize = 0
        XCTAssertEqual(cache.maxDecodedPixelSize, 1)
        cache.maxDecodedPixelSize = .max
        XCTAssertEqual(cache.maxDecodedPixelSize, .max)
    }

    func testTheFitIsComputedOnTheImageAsShownInEveryOrientation() {
        // An iPhone photo stored 4032x3024 landscape; EXIF orientations 5-8 show it portrait
        for orientation in 1...8 {
            let upright = orientation >= 5 ? (width: 3_024, height: 4_032) : (width: 4_032, height: 3_024)
            // filling a target of the shape it is shown at: exactly the target, no larger, no blurrier
            let target = (width: upright.width / 10, height: upright.height / 10)
            let fit = ImageCache.Sizing.decodedSize(width: 4_032, height: 3_024, orientation: orientation, filling: target)
            XCTAssertTrue(fit == (target.width, target.height), "orientation \(orientation): \(fit) for \(target)")
            // and with no target, bounded on its longest side, in the shape it is shown at
            let bounded = ImageCache.Sizing.decodedSize(width: 4_032, height: 3_024, orientation: orientation, filling: nil, maxPixels: 2_016)
            XCTAssertTrue(bounded == (orientation >= 5 ? (1_512, 2_016) : (2_016, 1_512)), "orientation \(orientation): \(bounded)")
        }
        // Out-of-range orientations are taken as upright
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 40, height: 30, orientation: 0, filling: nil) == (40, 30))
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 40, height: 30, orientation: 9, filling: nil) == (40, 30))
    }

    func testTheDecodedSizeFillsTheTargetAndIsNeverLarger() {
        // A 4000x3000 photo filling a 100-point square cell at 3x (300x300 pixels) is decoded at
        // 400x300: 480 KB of bitmap instead of 48 MB.
        let photo = ImageCache.Sizing.decodedSize(width: 4_000, height: 3_000, filling: (300, 300))
        XCTAssertTrue(photo == (400, 300), "\(photo)")
        XCTAssertEqual(photo.width * photo.height * 4, 480_000)
        let tall = ImageCache.Sizing.decodedSize(width: 1_000, height: 4_000, filling: (300, 200))
        XCTAssertTrue(tall == (300, 1_200), "\(tall)")
        // Never up: an image smaller than its target, or without one, is decoded at its size.
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 200, height: 100, filling: (300, 300)) == (200, 100))
        XCTAssertTrue(ImageCache.Sizing.decodedSize(width: 200, height: 100, filling: nil) == (200, 100))
        // Target sizes: whole pixels, rounded up; none for an empty, absurd or missing size.
        XCTAssertTrue(ImageCache.pixels(CGSize(width: 99.2, height: 100)).map { $0 == (100, 100) } ?? false)
        XCTAssertNil(ImageCache.pixels(CGSize(width: 0, height: 100)))
        XCTAssertNil(ImageCache.pixels(CGSize(width: CGFloat.nan, height: 100)))
        XCTAssertNil(ImageCache.pixels(CGSize(width: CGFloat.infinity, height: 100)))
        XCTAssertNil(ImageCache.pixels(nil))
        // Memory keys: the key alone without a size (described as the key, NUL, the size with one).
        XCTAssertEqual(ImageCache.memoryKeyDescription("k", filling: (100, 50)), "k\u{0}100x50")
        XCTAssertEqual(ImageCache.memoryKeyDescription("k", filling: nil), "k")
        // A screen's scale other than 1 is part of a sized key: the image's size is in its points.
        XCTAssertEqual(ImageCache.memoryKeyDescription("k", filling: (100, 50), scale: 2), "k\u{0}100x50@2x")
        XCTAssertEqual(ImageCache.memoryKeyDescription("k", filling: (100, 50), scale: 2.5), "k\u{0}100x50@2.5x")
        XCTAssertEqual(ImageCache.memoryKeyDescription("k", filling: nil, scale: 2), "k")
    }

    func testTwoScreensOfOneSizeInPixelsGetAnImageEachInTheirOwnPoints() {
        // Given an image bound at 200x200 pixels for a 2x screen (a 100-point view)
        let cache = makeCache()
        let url = serveImage("/scaled.png", width: 400)
        let (retina, retinaBinder) = makeTarget(), (plain, plainBinder) = makeTarget()
        let first = expectation(description: "the 2x view")
        retina.onSet = { if $0 != nil { first.fulfill() } }
        callbacks.sync { ImageCache.bind(retinaBinder, url, pixelSize: CGSize(width: 200, height: 200), scale: 2, cache: cache) }
        wait(for: [first], timeout: 10)
        // When a view of 200 points on a 1x screen (the same pixels) binds it
        // (the 2x image stands in at once, issue 52, and its own follows)
        let second = expectation(description: "the 1x view's own")
        plain.onSet = { _ in if plain.history.count == 2 { second.fulfill() } }
        callbacks.sync { ImageCache.bind(plainBinder, url, pixelSize: CGSize(width: 200, height: 200), scale: 1, cache: cache) }
        wait(for: [second], timeout: 10)
        // Then it did not keep the 2x image from memory: it decoded its own from the file
        guard case .image(.disk) = callbacks.sync(execute: { plainBinder.state }) else {
            return XCTFail("the 1x view got the 2x view's image")
        }
        cache.drainDisk()
        let key = url.absoluteString
        XCTAssertEqual(Set(cache.memoryURLs), [key + "\u{0}200x200@2x", key + "\u{0}200x200"])
        XCTAssertEqual(server.requestCount("/scaled.png"), 1)
        assertInvariants(cache)
    }

    func testEachSizeHasItsOwnMemoryEntryAndAllShareOneFileAndOneDownload() {
        // Given an image bound at 100x100 pixels
        let cache = makeCache()
        let url = serveImage("/sized.png", width: 5_000)
        let (small, smallBinder) = makeTarget(), (tiny, tinyBinder) = makeTarget()
        let first = expectation(description: "the first size")
        small.onSet = { if $0?.width == 5_000 { first.fulfill() } }
        callbacks.sync { _ = smallBinder.bind(url, pixelSize: CGSize(width: 100, height: 100), cache: cache) }
        wait(for: [first], timeout: 10)

        // When a second target binds it at 50x50
        let second = expectation(description: "the second size")
        tiny.onSet = { if $0?.width == 5_000 { second.fulfill() } }
        callbacks.sync { _ = tinyBinder.bind(url, pixelSize: CGSize(width: 50, height: 50), cache: cache) }
        wait(for: [second], timeout: 10)

        // Then memory has an entry per size, each counted against the budget (on Linux an image
        // costs its bytes), the disk one file, and the second size came from that file
        let key = url.absoluteString
        cache.drainDisk()
        XCTAssertEqual(Set(cache.memoryURLs), [key + "\u{0}100x100", key + "\u{0}50x50"])
        XCTAssertEqual(cache.memoryBytes, 2 * png(width: 5_000).count)
        XCTAssertEqual(cache.diskCount, 1)
        XCTAssertEqual(server.requestCount("/sized.png"), 1)
        guard case .image(.disk) = callbacks.sync(execute: { tinyBinder.state }) else { return XCTFail("not from disk") }
        XCTAssertNil(cache.peek(url), "the image at its own size is not in memory")

        // And removing the URL forgets every size
        XCTAssertNotNil(cache.peek(key: key, filling: (100, 100)))
        cache.remove(url)
        XCTAssertNil(cache.peek(key: key, filling: (100, 100)))
        XCTAssertNil(cache.peek(key: key, filling: (50, 50)))
        XCTAssertEqual(cache.memoryCount, 0)
        assertInvariants(cache)
    }

    /// A view bound before layout (bounds zero, or a nib's size) is bound again at its laid-out size
    /// when it was decoded for a wrong one: smaller (blurry) or twice as large and more.
    func testAWrongSizeIsDecodedAgainAtTheLaidOutSizeAndOnlyThen() {
        // Smaller on a side: blurry
        XCTAssertTrue(ImageCache.Rebinding.redecodes(bound: (50, 50), laidOut: (300, 300), decodeBound: 4_096))
        XCTAssertTrue(ImageCache.Rebinding.redecodes(bound: (300, 299), laidOut: (300, 300), decodeBound: 4_096))
        // Twice as large on both sides: four times the memory
        XCTAssertTrue(ImageCache.Rebinding.redecodes(bound: (600, 600), laidOut: (300, 300), decodeBound: 4_096))
        // No size (bounds zero): a whole decode, of up to the bound
        XCTAssertTrue(ImageCache.Rebinding.redecodes(bound: nil, laidOut: (180, 180), decodeBound: 2_796))
        XCTAssertFalse(ImageCache.Rebinding.redecodes(bound: nil, laidOut: (3_000, 3_000), decodeBound: 4_096))
        // Right, or within twice: stays
        XCTAssertFalse(ImageCache.Rebinding.redecodes(bound: (300, 300), laidOut: (300, 300), decodeBound: 4_096))
        XCTAssertFalse(ImageCache.Rebinding.redecodes(bound: (590, 600), laidOut: (300, 300), decodeBound: 4_096))
    }

    func testABinderResizedAfterLayoutBindsAgainAtTheNewSizeKeepingItsImage() {
        // Given a target bound at a nib's 10 x 10 pixels, showing its image
        let cache = makeCache()
        let url = serveImage("/laid-out.png", width: 7_400)
        let (target, binder) = makeTarget()
        let first = expectation(description: "shown at the nib's size")
        target.onSet = { if $0?.width == 7_400 { first.fulfill() } }
        callbacks.sync {
            target.expected = 7_400
            _ = binder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 10, height: 10), cache: cache)
        }
        wait(for: [first], timeout: 10)

        // When layout gives it 500 x 500 pixels
        let second = expectation(description: "shown at the laid-out size")
        target.onSet = { if $0?.width == 7_400 { second.fulfill() } }
        callbacks.sync { binder.resized(to: CGSize(width: 500, height: 500), scale: nil, binding: binder.generation) }
        wait(for: [second], timeout: 10)

        // Then the image came again at that size, from the file, with no placeholder in between
        let key = url.absoluteString
        XCTAssertNotNil(cache.peek(key: key, filling: (500, 500)))
        XCTAssertEqual(callbacks.sync { target.history }, [Self.placeholderWidth, 7_400, 7_400])
        XCTAssertEqual(server.requestCount("/laid-out.png"), 1)
        guard case .image(.disk) = callbacks.sync(execute: { binder.state }) else { return XCTFail("not from disk") }

        // And a layout that changes nothing that matters binds nothing
        let requests = cache.statistics().requests
        callbacks.sync { binder.resized(to: CGSize(width: 400, height: 500), scale: nil, binding: binder.generation) }
        XCTAssertEqual(cache.statistics().requests, requests)
    }

    func testABinderBoundWholeAndLaidOutSmallerGetsItsOwnSizeNotTheWholeImageAgain() {
        // Given a target bound before layout (no size: the whole image), showing it
        let cache = makeCache()
        let url = serveImage("/whole-then-laid-out.png", width: 7_500)
        let (target, binder) = makeTarget()
        let first = expectation(description: "shown whole")
        target.onSet = { if $0?.width == 7_500 { first.fulfill() } }
        callbacks.sync {
            target.expected = 7_500
            _ = binder.bind(url, placeholder: placeholder, cache: cache)
        }
        wait(for: [first], timeout: 10)

        // When layout gives it 180 x 180 pixels
        let second = expectation(description: "shown at its own size")
        target.onSet = { if $0?.width == 7_500 { second.fulfill() } }
        callbacks.sync { binder.resized(to: CGSize(width: 180, height: 180), scale: nil, binding: binder.generation) }
        wait(for: [second], timeout: 10)

        // Then it asked for its own size (an entry of its own, from the file), not the whole image in
        // memory, with no placeholder in between
        XCTAssertNotNil(cache.peek(key: url.absoluteString, filling: (180, 180)))
        XCTAssertEqual(callbacks.sync { target.history }, [Self.placeholderWidth, 7_500, 7_500])
        guard case .image(.disk) = callbacks.sync(execute: { binder.state }) else { return XCTFail("not from disk") }
    }

    func testALayoutLookedAtForAnEarlierBindingLeavesALaterOneAlone() {
        // Given a binding to the bounds, then at once one with a size of its own
        let cache = makeCache()
        let url = serveImage("/rebound.png", width: 7_600)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "shown at the given size")
        target.onSet = { if $0?.width == 7_600 { shown.fulfill() } }
        let earlier: Int = callbacks.sync {
            _ = binder.bind(url, placeholder: placeholder, cache: cache)
            let earlier = binder.generation
            target.expected = 7_600
            _ = binder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 40, height: 40), cache: cache)
            return earlier
        }
        wait(for: [shown], timeout: 10)

        // When the look at the layout made for the first one comes
        let requests = cache.statistics().requests
        callbacks.sync { binder.resized(to: CGSize(width: 500, height: 500), scale: nil, binding: earlier) }

        // Then nothing is bound again
        XCTAssertEqual(cache.statistics().requests, requests)
        XCTAssertNil(cache.peek(key: url.absoluteString, filling: (500, 500)))
    }

    func testStoringAKeyReplacesItsSizesInMemory() throws {
        // Given an image bound at a size
        let cache = makeCache()
        let url = serveImage("/replaced.png", width: 6_000)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the image")
        target.onSet = { if $0?.width == 6_000 { shown.fulfill() } }
        callbacks.sync { _ = binder.bind(url, pixelSize: CGSize(width: 80, height: 80), cache: cache) }
        wait(for: [shown], timeout: 10)

        // When new bytes are stored under its key
        try cache.store(png(width: 6_001), for: url.absoluteString)

        // Then binding it again at that size shows the new image (read from the new file)
        let again = expectation(description: "the new image")
        target.onSet = { if $0?.width == 6_001 { again.fulfill() } }
        callbacks.sync { target.expected = 6_001; binder.bind(url, pixelSize: CGSize(width: 80, height: 80), cache: cache) }
        wait(for: [again], timeout: 10)
        XCTAssertEqual(server.requestCount("/replaced.png"), 1)
    }

    /// `store(_:for:)` promises: "callers waiting for a download under `key` get it at once". A binder
    /// with a pixel size (what `setImage` always uses once the view is laid out) is one of them: it
    /// shows the stored image, not its failure image with `.cancelled`.
    func testStoringAKeyWhileASizedBindingLoadsShowsTheStoredImage() throws {
        let cache = makeCache()
        let url = serveImage("/store-sized.png", width: 7_000, delay: 30)
        let (target, binder) = makeTarget()
        callbacks.sync { _ = binder.bind(url, placeholder: placeholder, failureImage: failureImage,
                                         pixelSize: CGSize(width: 100, height: 100), cache: cache) }
        XCTAssertTrue(server.waitForRequests("/store-sized.png", count: 1, timeout: 5))

        try cache.store(png(width: 7_001), for: url.absoluteString)
        XCTAssertTrue(eventually { self.callbacks.sync { binder.state != .loading } })

        let (history, state) = callbacks.sync { (target.history, binder.state) }
        XCTAssertEqual(history.last, 7_001, "history \(history), state \(state)")  // before the fix: 9002 (the failure image)
        XCTAssertEqual(state, .image(.memory))  // before the fix: .failed(.cancelled)
    }

    // MARK: One download per image (issue 42)

    /// Serves an image `width` x `height` pixels at `path` once `gate` opens.
    func serveImage(_ path: String, width: Int, height: Int = 48, behind gate: Gate) -> URL {
        let body = png(width: width, height: height)
        let previous = server.handler
        server.handler = { asked in
            guard asked == path else { return previous?(asked) }
            gate.wait()
            return .ok(body)
        }
        return server.url(path)
    }

    /// A new cell binds before layout (bounds zero: the whole image) and again after it, at its size,
    /// while the download is under way: the second binding joins that download and decodes its own
    /// size from its bytes; no second request, no cancelled transfer.
    func testABindingBeforeLayoutAndItsRebindingAfterItShareOneDownload() {
        // Given a binding before layout, whose download the server holds
        let cache = makeCache()
        let gate = Gate()
        let url = serveImage("/before-layout.png", width: 7_700, behind: gate)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the image at the laid-out size")
        target.onSet = { if $0?.width == 7_700 { shown.fulfill() } }
        let generation = callbacks.sync { () -> Int in
            target.expected = 7_700
            _ = binder.bind(url, placeholder: placeholder, cache: cache)
            return binder.generation
        }

        XCTAssertTrue(server.waitForRequests("/before-layout.png", count: 1, timeout: 10))

        // When the layout pass rebinds it at its size (as `setImage` does on the main queue's next
        // turn), after its request reached the server (a rebinding made before that cancels a
        // download that never left the disk look-up, and never doubled one)
        callbacks.sync { binder.resized(to: CGSize(width: 180, height: 180), scale: nil, binding: generation) }
        gate.open()
        wait(for: [shown], timeout: 10)

        // Then the server saw one request, none cut off; the target shows the image decoded for its
        // size, which memory keeps under that size, with no placeholder over the first
        XCTAssertEqual(server.requestCount("/before-layout.png"), 1)  // before the fix: 2
        XCTAssertEqual(server.disconnectCount("/before-layout.png"), 0)  // before the fix: 1
        let key = url.absoluteString
        cache.drainDisk()
        XCTAssertEqual(callbacks.sync { target.image }, cache.peek(key: key, filling: (180, 180)))
        XCTAssertEqual(callbacks.sync { target.history }, [Self.placeholderWidth, 7_700])
        XCTAssertEqual(callbacks.sync { binder.state }, .image(.network))
        assertInvariants(cache)
    }

    /// Two cells of two sizes and a fetch of the whole image, all at once: one request, and each gets
    /// its own decode, kept in memory under its own key.
    func testTwoSizesAndTheWholeImageAskedAtOnceShareOneDownload() {
        let cache = makeCache()
        let gate = Gate()
        let url = serveImage("/three-ways.png", width: 7_800, behind: gate)
        let (small, smallBinder) = makeTarget(), (large, largeBinder) = makeTarget()
        let done = expectation(description: "both targets and the fetch")
        done.expectedFulfillmentCount = 3
        small.onSet = { if $0?.width == 7_800 { done.fulfill() } }
        large.onSet = { if $0?.width == 7_800 { done.fulfill() } }
        callbacks.sync {
            smallBinder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 40, height: 40), cache: cache)
            largeBinder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 400, height: 400), cache: cache)
        }
        cache.fetch(url) { _, image in if image?.width == 7_800 { done.fulfill() } }
        XCTAssertTrue(server.waitForRequests("/three-ways.png", count: 1, timeout: 10))
        gate.open()
        wait(for: [done], timeout: 10)

        XCTAssertEqual(server.requestCount("/three-ways.png"), 1)  // before the fix: 3
        let key = url.absoluteString
        XCTAssertNotNil(cache.peek(key: key, filling: (40, 40)))
        XCTAssertNotNil(cache.peek(key: key, filling: (400, 400)))
        XCTAssertNotNil(cache.peek(key: key))
        assertInvariants(cache)
    }

    // MARK: A rebinding of the image shown (issue 42)

    /// A reload of a visible cell (`reconfigureItems`, a like-count update) binds the URL it shows:
    /// the target is not told anything, so an animation it plays goes on.
    func testRebindingTheImageATargetShowsShowsNothingNew() {
        // Given a target showing an image, bound with a fade
        let cache = makeCache()
        let url = serveImage("/reloaded.png", width: 7_900)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "shown")
        target.onSet = { if $0?.width == 7_900 { shown.fulfill() } }
        callbacks.sync { target.expected = 7_900; _ = binder.bind(url, placeholder: placeholder, cache: cache, transition: .fade(0.3)) }
        wait(for: [shown], timeout: 10)
        let before = callbacks.sync { target.transitions.count }

        // When it is bound to it again, twice, found in memory
        let (tasks, state) = callbacks.sync { () -> ([ImageCache.FetchTask?], ImageCache.Binder.State) in
            let tasks = (0..<2).map { _ in binder.bind(url, placeholder: placeholder, cache: cache, transition: .fade(0.3)) }
            return (tasks, binder.state)
        }

        // Then nothing was shown again, nothing requested, and the binder says the image is from memory
        XCTAssertEqual(callbacks.sync { target.transitions.count }, before)  // before the fix: before + 2
        XCTAssertEqual(callbacks.sync { target.history }, [Self.placeholderWidth, 7_900])
        XCTAssertEqual(tasks.compactMap { $0 }.count, 0)
        XCTAssertEqual(state, .image(.memory))
        XCTAssertEqual(server.requestCount("/reloaded.png"), 1)
    }

    func testOnlyTheImageShownWithNoTransitionIsShownAlready() {
        let one = image(width: 10), other = image(width: 11)
        XCTAssertTrue(ImageCache.showsAlready(one, one, transition: .none))
        XCTAssertFalse(ImageCache.showsAlready(one, other, transition: .none))
        XCTAssertFalse(ImageCache.showsAlready(one, one, transition: .fade(0.2)))  // asked to fade: it does
        XCTAssertFalse(ImageCache.showsAlready(nil, one, transition: .none))
        XCTAssertFalse(ImageCache.showsAlready(one, nil, transition: .none))
        XCTAssertFalse(ImageCache.showsAlready(nil, nil, transition: .none))  // the placeholder phase may change
    }

    // MARK: A view keeps what it shows (issue 42)

    /// A prefetched photo (a whole decode) bound into a small cell is shown at once, then replaced
    /// by the cell's own decode, read from the file: no request, and memory keeps both entries (the
    /// cache may let the whole one go; the view holds only its own).
    func testAPrefetchedImageBoundIntoASmallTargetEndsWithTheTargetsOwnDecode() {
        // Given a 4,032 x 3,024 photo prefetched (whole) and in memory
        let cache = makeCache()
        let served = expectation(description: "prefetched")
        cache.onEvent = { if case .served(_, from: .network, _) = $0 { served.fulfill() } }
        server.set("/prefetched-photo.png", LoopbackServer.Response(body: png(width: 4_032, height: 3_024)))
        let url = server.url("/prefetched-photo.png")
        cache.prefetch([url])
        wait(for: [served], timeout: 10)
        let key = url.absoluteString
        let whole = try? XCTUnwrap(cache.peek(key: key))

        // When a 300 x 300 pixel cell binds it
        let (target, binder) = makeTarget()
        let own = expectation(description: "the cell's own decode")
        target.onSet = { _ in if case .image(.disk) = binder.state { own.fulfill() } }
        let (task, history) = callbacks.sync { () -> (ImageCache.FetchTask?, [Int?]) in
            target.expected = 4_032
            let task = binder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 300, height: 300), cache: cache)
            return (task, target.history)
        }
        XCTAssertEqual(history, [4_032], "the whole image at once, no placeholder")
        XCTAssertNotNil(task, "the cell's own decode is asked for")  // before the fix: nil, the whole image kept
        wait(for: [own], timeout: 10)

        // Then the cell shows its own decode, which memory keeps under its size, the whole image was
        // shown only meanwhile, and the server was asked once
        let (shown, count) = callbacks.sync { (target.image, target.history.count) }
        XCTAssertEqual(count, 2)
        XCTAssertNotNil(whole)
        XCTAssertEqual(shown, cache.peek(key: key, filling: (300, 300)))
        XCTAssertEqual(server.requestCount("/prefetched-photo.png"), 1)
        assertInvariants(cache)
    }
}
