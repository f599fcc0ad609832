import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// What a SwiftUI view hears of its load beside what it shows (issue 40): the download's progress,
/// the completion, and what disappearing does to the load; decided in the binder and
/// `ViewLoads.swift`, which the views only pass on.
final class ViewLoadTests: BinderTestCase {
    typealias Progress = ImageCache.DownloadProgress

    // MARK: Progress

    func testAViewIsToldTheFirstProgressEachWholePercentAndTheLast() {
        let first = Progress(received: 5, expected: 1_000)
        XCTAssertTrue(Progress.tells(first, after: nil))
        XCTAssertFalse(Progress.tells(first, after: first), "the same again")
        XCTAssertTrue(Progress.tells(Progress(received: 10, expected: 1_000), after: first), "0% to 1%")
        XCTAssertFalse(Progress.tells(Progress(received: 19, expected: 1_000), after: Progress(received: 10, expected: 1_000)),
                       "still 1%")
        XCTAssertTrue(Progress.tells(Progress(received: 1_000, expected: 1_000), after: Progress(received: 999, expected: 1_000)),
                      "the last: all the bytes announced")
        XCTAssertFalse(Progress.tells(Progress(received: 4, expected: 1_000), after: first), "never back")
        // With no length announced, every report that grows; a new length, told
        XCTAssertTrue(Progress.tells(Progress(received: 6, expected: nil), after: Progress(received: 5, expected: nil)))
        XCTAssertTrue(Progress.tells(Progress(received: 19, expected: 2_000), after: Progress(received: 10, expected: 1_000)))
    }

    func testAFractionIsNilWithoutALengthAndNeverAboveOne() {
        XCTAssertEqual(Progress(received: 250, expected: 1_000).fraction, 0.25)
        XCTAssertNil(Progress(received: 250, expected: nil).fraction)
        XCTAssertNil(Progress(received: 250, expected: 0).fraction)
        XCTAssertEqual(Progress(received: 1_500, expected: 1_000).fraction, 1, "a body longer than announced")
    }

    func testABindingThatAsksHearsItsDownloadRiseToItsLengthThenNilBeforeTheImage() {
        // Given a 100 KB image sent in 100 chunks, 5 ms apart, and a binder whose view asks for progress
        let cache = makeCache()
        let body = png(width: 4_100) + Data(count: 100_000 - png(width: 4_100).count)
        server.set("/progress.png", LoopbackServer.Response(body: body, behavior: .slowBody(chunkSize: 1_000, interval: 0.005)))
        let (target, binder) = makeTarget()
        var told: [Progress?] = []  // on `callbacks`
        var toldWhenShown: Int?
        binder.hear(ImageCache.ViewHooks(progress: { told.append($0) }))
        let shown = expectation(description: "the image")
        target.onSet = { if $0?.width == 4_100 { toldWhenShown = told.count; shown.fulfill() } }

        // When it is bound
        callbacks.sync { _ = binder.bind(server.url("/progress.png"), cache: cache) }
        wait(for: [shown], timeout: 10)

        // Then it heard the bytes rise, each in a whole percent of its own, to the whole body, with
        // the announced length; then nil (nothing downloads), before the image was shown
        let (values, whenShown, progress) = callbacks.sync { (told, toldWhenShown, binder.progress) }
        let rising = values.compactMap { $0 }
        XCTAssertGreaterThanOrEqual(rising.count, 2, "\(values)")
        XCTAssertEqual(rising.map(\.received), rising.map(\.received).sorted())
        XCTAssertEqual(Set(rising.map { Int(($0.fraction ?? 0) * 100) }).count, rising.count, "one per whole percent")
        XCTAssertEqual(rising.last?.received, body.count)
        XCTAssertTrue(rising.allSatisfy { $0.expected == body.count })
        XCTAssertNil(values.last ?? Progress(received: 0, expected: nil), "nil once the image came")
        XCTAssertEqual(whenShown, values.count, "all told before the image")
        XCTAssertNil(progress)
    }

    func testAnImageInMemoryOrOnDiskTellsNoProgress() {
        // Given an image fetched once (in memory and on disk)
        let cache = makeCache()
        let url = serveImage("/known.png", width: 4_200)
        XCTAssertNotNil(fetchAndWait(cache, url))
        let (target, binder) = makeTarget()
        var told: [Progress?] = []
        binder.hear(ImageCache.ViewHooks(progress: { told.append($0) }))

        // When a view that asks for progress binds it from memory, then (memory purged) from disk
        callbacks.sync { _ = binder.bind(url, cache: cache) }
        cache.purgeMemory()
        let shown = expectation(description: "from disk")
        target.onSet = { if $0?.width == 4_200 { shown.fulfill() } }
        callbacks.sync { _ = binder.bind(nil, cache: cache); _ = binder.bind(url, cache: cache) }
        wait(for: [shown], timeout: 10)

        // Then it was told no progress: nothing downloaded
        XCTAssertEqual(callbacks.sync { told.compactMap { $0 }.count }, 0)
        XCTAssertEqual(server.requestCount("/known.png"), 1)
    }

    // MARK: Completion

    func testTheCompletionHearsEachLoadOnceWithWhereItCameFrom() {
        // Given an image on the server, and a view's completion
        let cache = makeCache()
        let url = serveImage("/done.png", width: 4_300)
        let (target, binder) = makeTarget()
        var heard: [String] = []  // on `callbacks`
        var shownFirst = true
        let first = expectation(description: "from the network")
        binder.hear(ImageCache.ViewHooks(completion: { result in
            shownFirst = shownFirst && target.image?.width == 4_300
            switch result {
            case .success(let fetched): heard.append("\(fetched.source) \(fetched.value.width)")
            case .failure(let error): heard.append("\(error)")
            }
            if heard.count == 1 { first.fulfill() }
        }))

        // When it is bound (the network), then bound again (memory)
        callbacks.sync { _ = binder.bind(url, cache: cache) }
        wait(for: [first], timeout: 10)
        callbacks.sync { _ = binder.bind(url, cache: cache) }

        // Then the completion heard each, once, with its source, after the image was shown
        XCTAssertEqual(callbacks.sync { heard }, ["network 4300", "memory 4300"])
        XCTAssertTrue(callbacks.sync { shownFirst })
    }

    func testTheCompletionHearsAFailureWithItsError() {
        let cache = makeCache()
        server.set("/missing.png", .status(404))
        let (_, binder) = makeTarget()
        let failed = expectation(description: "the failure")
        var heard: [Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>] = []
        binder.hear(ImageCache.ViewHooks(completion: { heard.append($0); failed.fulfill() }))

        callbacks.sync { _ = binder.bind(server.url("/missing.png"), placeholder: placeholder, cache: cache) }
        wait(for: [failed], timeout: 10)

        let results = callbacks.sync { heard }
        XCTAssertEqual(results.count, 1)
        guard case .failure(.httpStatus(404))? = results.first else { return XCTFail("\(results)") }
    }

    func testTheCompletionNeverHearsACancelledOrReplacedLoad() {
        // Given three images held at the server until the test lets them go
        let cache = makeCache()
        let gate = Gate()
        serveBehind(gate, prefix: "/held")
        let (_, binder) = makeTarget()
        var heard: [String] = []
        let last = expectation(description: "the last binding's image")
        binder.hear(ImageCache.ViewHooks(completion: { result in
            heard.append((try? result.get().value.width).map(String.init) ?? "failure")
            last.fulfill()
        }))

        // When one load is cancelled, one is cancelled by disappearing, one is replaced by a new
        // binding, and the last goes on
        callbacks.sync {
            _ = binder.bind(server.url("/held1.png"), cache: cache)
            binder.cancel()
            _ = binder.bind(server.url("/held2.png"), cache: cache)
            binder.disappeared(.cancel)
            _ = binder.bind(server.url("/held3.png"), cache: cache)
            _ = binder.bind(server.url("/held4.png"), cache: cache)
        }
        gate.open()
        wait(for: [last], timeout: 10)

        // Then the completion heard the last alone
        XCTAssertEqual(callbacks.sync { heard }, [String(fixtureWidth)])
        XCTAssertTrue(server.waitForRequests("/held4.png", count: 1, timeout: 1))
    }

    // MARK: Disappearing

    func testALoadLoweredOnDisappearingGoesOnAndItsImageIsShownWhenItComes() {
        // Given an image held at the server, bound and requested
        let cache = makeCache()
        let gate = Gate()
        serveBehind(gate, prefix: "/away")
        let url = server.url("/away.png")
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the image, while away")
        target.onSet = { if $0?.width == self.fixtureWidth { shown.fulfill() } }
        var heard = 0
        binder.hear(ImageCache.ViewHooks(completion: { _ in heard += 1 }))
        callbacks.sync { _ = binder.bind(url, placeholder: placeholder, cache: cache) }
        XCTAssertTrue(server.waitForRequests("/away.png", count: 1, timeout: 5))

        // When its view disappears with `.lowerPriority`, then the server answers
        callbacks.sync {
            target.isDisplayed = false
            binder.disappeared(.lowerPriority)
        }
        gate.open()
        wait(for: [shown], timeout: 10)

        // Then the image came, once, with no cancel, and the completion heard it; a view that
        // appears again finds it in memory
        XCTAssertEqual(server.requestCount("/away.png"), 1)
        XCTAssertEqual(server.disconnectCount("/away.png"), 0)
        let state = callbacks.sync { binder.state }
        guard case .image(.network) = state else { return XCTFail("\(state)") }
        XCTAssertEqual(callbacks.sync { heard }, 1)
        XCTAssertNotNil(cache.peek(url))
    }

    func testALoweredLoadNotStartedWaitsBehindTheVisibleOnes() {
        // Given one download slot, held by a download until the test lets it go, and two views
        // bound after it, A before B: both wait for the slot, A first
        let (cache, order, gate) = oneSlotBehindABlocker()
        let a = makeTarget(), b = makeTarget()
        callbacks.sync {
            _ = a.1.bind(server.url("/row-a.png"), cache: cache)
            _ = b.1.bind(server.url("/row-b.png"), cache: cache)
        }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-a.png", "/row-b.png"]) })

        // When A's view disappears with `.lowerPriority`, and the slot frees
        callbacks.sync { a.1.disappeared(.lowerPriority) }
        let both = shown([a.0, b.0])
        gate.open()
        wait(for: [both], timeout: 10)

        // Then B's download went first and A's after it: A's kept going (no second request)
        XCTAssertEqual(order.value, ["/blocker.png", "/row-b.png", "/row-a.png"])
        assertInvariants(cache)
    }

    func testADownloadAnotherViewWantsStaysOnTheFastLane() {
        // Given the one slot held, and two views of A then one of B bound after it
        let (cache, order, gate) = oneSlotBehindABlocker()
        let a = makeTarget(), alsoA = makeTarget(), b = makeTarget()
        callbacks.sync {
            _ = a.1.bind(server.url("/row-a.png"), cache: cache)
            _ = alsoA.1.bind(server.url("/row-a.png"), cache: cache)
            _ = b.1.bind(server.url("/row-b.png"), cache: cache)
        }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-a.png", "/row-b.png"]) })

        // When only one of A's views disappears with `.lowerPriority`
        callbacks.sync { a.1.disappeared(.lowerPriority) }
        let all = shown([a.0, alsoA.0, b.0])
        gate.open()
        wait(for: [all], timeout: 10)

        // Then A's download kept its place, before B's: the other view still wants it
        XCTAssertEqual(order.value, ["/blocker.png", "/row-a.png", "/row-b.png"])
    }

    func testAViewThatAppearsAgainTakesItsLoadBackToTheFastLane() {
        // Given the one slot held, a prefetch S on the slow lane, A and B waiting on the fast lane,
        // and A's view gone with `.lowerPriority` (A now waits behind S)
        let (cache, order, gate) = oneSlotBehindABlocker()
        let prefetched = expectation(description: "S")
        cache.slowFetch(server.url("/row-s.png")) { _, _ in prefetched.fulfill() }
        let a = makeTarget(), b = makeTarget()
        let loadA = ImageCache.Load(server.url("/row-a.png"), key: nil)
        callbacks.sync {
            a.1.bindView(loadA, nil, nil, nil, cache, scale: nil)
            _ = b.1.bind(server.url("/row-b.png"), cache: cache)
        }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-s.png", "/row-a.png", "/row-b.png"]) })
        callbacks.sync { a.1.disappeared(.lowerPriority) }
        XCTAssertTrue(callbacks.sync { a.1.isLowered })

        // When A's view appears again (binds the same load) before the slot frees
        callbacks.sync { a.1.bindView(loadA, nil, nil, nil, cache, scale: nil) }
        let both = shown([a.0, b.0])
        gate.open()
        wait(for: [both, prefetched], timeout: 10)

        // Then A's load went on (one request), back on the fast lane (at its back, behind B), and
        // so before the slow lane's S
        XCTAssertFalse(callbacks.sync { a.1.isLowered })
        XCTAssertEqual(order.value, ["/blocker.png", "/row-b.png", "/row-a.png", "/row-s.png"])
    }

    func testAViewThatAppearsAgainAtAnotherSizeTakesItsLoadBackToTheFastLane() {
        // Given A (bound at 100 x 100 pixels) lowered behind a prefetch S, as above
        let (cache, order, gate) = oneSlotBehindABlocker()
        let prefetched = expectation(description: "S")
        cache.slowFetch(server.url("/row-s.png")) { _, _ in prefetched.fulfill() }
        let a = makeTarget()
        let loadA = ImageCache.Load(server.url("/row-a.png"), key: nil)
        callbacks.sync { a.1.bindView(loadA, nil, nil, CGSize(width: 100, height: 100), cache, scale: nil) }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-s.png"]) && self.server.requestCount("/row-a.png") == 0 })
        callbacks.sync { a.1.disappeared(.lowerPriority) }
        XCTAssertTrue(callbacks.sync { a.1.isLowered })

        // When its view appears again a little smaller (a size that decodes nothing anew)
        callbacks.sync { a.1.bindView(loadA, nil, nil, CGSize(width: 90, height: 90), cache, scale: nil) }
        let shownA = shown([a.0])
        gate.open()
        wait(for: [shownA, prefetched], timeout: 10)

        // Then its load is raised all the same: before the slow lane's S
        XCTAssertFalse(callbacks.sync { a.1.isLowered })
        XCTAssertEqual(order.value, ["/blocker.png", "/row-a.png", "/row-s.png"])
    }

    func testAPlainViewLoweredLeavesTheDownloadFastForAVisibleVariantsViewThatJoinedAPrefetch() {
        // Given the one slot held, a prefetch of A's variant (its original's download on the slow
        // lane), a visible view of the same variant (which moves it to the fast lane), a plain view
        // of A, and a prefetch S
        let (cache, order, gate) = oneSlotBehindABlocker()
        let same = ImageCache.Processor("same") { $0 }
        let variant = ImageCache.Request(url: server.url("/row-a.png"), processors: [same])
        cache.prefetch([variant])
        let prefetched = expectation(description: "S")
        cache.slowFetch(server.url("/row-s.png")) { _, _ in prefetched.fulfill() }
        let v = makeTarget(), p = makeTarget()
        callbacks.sync {
            _ = v.1.bind(variant, cache: cache)
            p.1.bindView(ImageCache.Load(server.url("/row-a.png"), key: nil), nil, nil, nil, cache, scale: nil)
        }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-a.png", "/row-s.png"]) })

        // When the plain view disappears with `.lowerPriority`
        callbacks.sync { p.1.disappeared(.lowerPriority) }
        let shownV = shown([v.0])
        gate.open()
        wait(for: [shownV, prefetched], timeout: 10)

        // Then the download stayed on the fast lane for the visible variant: before S
        XCTAssertEqual(order.value, ["/blocker.png", "/row-a.png", "/row-s.png"])
    }

    func testALoweredLoadWhoseDownloadAnotherRequestKeptFastGoesBehindWhenThatRequestIsCancelled() {
        // Given the one slot held, a prefetch S, and one image wanted by a lowered view A and a
        // fetch F (which keeps its download on the fast lane)
        let (cache, order, gate) = oneSlotBehindABlocker()
        let prefetched = expectation(description: "S")
        cache.slowFetch(server.url("/row-s.png")) { _, _ in prefetched.fulfill() }
        let a = makeTarget()
        callbacks.sync { a.1.bindView(ImageCache.Load(server.url("/row-a.png"), key: nil), nil, nil, nil, cache, scale: nil) }
        let fetch = cache.fetch(server.url("/row-a.png")) { _, _ in }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-s.png", "/row-a.png"]) })
        callbacks.sync { a.1.disappeared(.lowerPriority) }

        // When the fetch is cancelled
        fetch.cancel()
        let shownA = shown([a.0])
        gate.open()
        wait(for: [shownA, prefetched], timeout: 10)

        // Then A's download went behind: to the slow lane, after S (queued there first)
        XCTAssertEqual(order.value, ["/blocker.png", "/row-s.png", "/row-a.png"])
    }

    func testALoweredVariantLowersItsOriginalsDownload() {
        // Given the one slot held, a view of A's variant (made by a processor) and one of B
        let (cache, order, gate) = oneSlotBehindABlocker()
        let a = makeTarget(), b = makeTarget()
        let same = ImageCache.Processor("same") { $0 }
        callbacks.sync {
            _ = a.1.bind(ImageCache.Request(url: server.url("/row-a.png"), processors: [same]), cache: cache)
            _ = b.1.bind(server.url("/row-b.png"), cache: cache)
        }
        XCTAssertTrue(eventually { self.queued(cache, ["/row-a.png", "/row-b.png"]) })

        // When the variant's view disappears with `.lowerPriority`
        callbacks.sync { a.1.disappeared(.lowerPriority) }
        let both = shown([a.0, b.0])
        gate.open()
        wait(for: [both], timeout: 10)

        // Then its original's download waited behind B's, and the variant still came
        XCTAssertEqual(order.value, ["/blocker.png", "/row-b.png", "/row-a.png"])
    }

    // MARK: Helpers

    private var fixtureWidth: Int { ImageCache.Image(data: fixture("photo.png"))!.width }

    /// A cache with one download slot, taken by `/blocker.png` until the gate opens; every path is
    /// answered with the photo, and `order` lists the paths in the order their requests came.
    private func oneSlotBehindABlocker() -> (ImageCache, Locked<[String]>, Gate) {
        let cache = makeCache()
        cache.maxConcurrentDownloads = 1
        let gate = Gate(), order = Locked<[String]>([])
        let photo = fixture("photo.png")
        server.handler = { path in
            order.mutate { $0.append(path) }
            if path == "/blocker.png" { gate.wait() }
            return .ok(photo)
        }
        cache.fetch(server.url("/blocker.png")) { _, _ in }
        XCTAssertTrue(server.waitForRequests("/blocker.png", count: 1, timeout: 5))
        return (cache, order, gate)
    }

    /// Whether the downloads of `paths` are all queued for the network (past their look-up on disk).
    private func queued(_ cache: ImageCache, _ paths: [String]) -> Bool {
        cache.locked { ledger in
            paths.allSatisfy { path in
                guard case .loading(let download)? = ledger.entries[ImageCache.Key(string: server.url(path).absoluteString)],
                      case .queued = download.phase else { return false }
                return true
            }
        }
    }

    /// Fulfilled once each target has been set the photo.
    private func shown(_ targets: [TestTarget]) -> XCTestExpectation {
        let done = expectation(description: "\(targets.count) images")
        done.expectedFulfillmentCount = targets.count
        let width = fixtureWidth
        callbacks.sync {
            for target in targets {
                target.onSet = { if $0?.width == width { done.fulfill() } }
            }
        }
        return done
    }
}
