import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Callbacks, the two lanes, deduplication and cancellation, against a real loopback server.
final class FetchTests: CacheTestCase {
    // MARK: Callbacks

    func testNetworkFetchDeliversTheServedImageOnTheCallbackQueue() {
        let cache = makeCache()
        let url = serve("/photo.png")

        let done = expectation(description: "callback")
        cache.fetch(url) { received, image in
            dispatchPrecondition(condition: .onQueue(self.callbacks))
            XCTAssertEqual(received, url)
            XCTAssertEqual(image?.data, self.fixture("photo.png"))
            XCTAssertEqual(image?.format, .png)
            XCTAssertEqual(image?.width, 64)
            XCTAssertEqual(image?.height, 48)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.requestCount("/photo.png"), 1)
        XCTAssertFalse(cache.fetching(url))
        XCTAssertFalse(cache.failedToFetch(url))
    }

    /// One miss through both tiers to its callback and its file: the route `.ci/route` measures.
    func testOneMissReachesItsCallbackAndItsFile() throws {
        let cache = makeCache()
        let url = serve("/miss.png")
        let done = expectation(description: "callback")
        cache.fetch(url) { _, image in
            XCTAssertEqual(image?.data, self.fixture("photo.png"))
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        cache.drainDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(cache, for: url)), fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/miss.png"), 1)
    }

    func testCallbackQueueIsTheOneSetWhenFetchWasCalled() {
        let cache = makeCache()
        let url = serve("/q.png", delay: 0.2)
        let first = DispatchQueue(label: "first"), second = DispatchQueue(label: "second")
        cache.callbackQueue = first
        let done = expectation(description: "callback")
        cache.fetch(url) { _, _ in
            dispatchPrecondition(condition: .onQueue(first))
            done.fulfill()
        }
        cache.callbackQueue = second
        wait(for: [done], timeout: 5)
    }

    func testBytesAfterTheImageAreNeitherDeliveredNorCached() throws {
        let cache = makeCache()
        let served = Locked<Int?>(nil)
        cache.onEvent = { event in if case .served(_, from: .network, let bytes) = event { served.value = bytes } }
        var generator = SplitMix(seed: 8)
        let png = fixture("photo.png")
        let padding = Data((0..<1_000_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        server.set("/padded.png", .ok(png + padding))
        let url = server.url("/padded.png")

        XCTAssertEqual(fetchAndWait(cache, url)?.data, png)
        cache.drainDisk()

        XCTAssertEqual(try Data(contentsOf: fileURL(cache, for: url)), png, "the file holds the PNG alone")
        XCTAssertEqual(cache.peek(url)?.data, png, "and so does memory")
        XCTAssertEqual(served.value, png.count, "the event counts the PNG's bytes")
    }

    func testMemoryHitCallbackRunsLaterNotOnTheCallersStack() {
        let cache = makeCache()
        let url = serve("/photo.png")
        XCTAssertNotNil(fetchAndWait(cache, url))

        // Given the image in memory, when fetched from the callback queue itself...
        let returned = Locked(false)
        let done = expectation(description: "memory hit")
        callbacks.sync {
            cache.fetch(url) { _, image in
                dispatchPrecondition(condition: .onQueue(self.callbacks))
                // ...then the callback runs only after `fetch` has returned.
                XCTAssertTrue(returned.value)
                XCTAssertNotNil(image)
                done.fulfill()
            }
            returned.value = true
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(server.requestCount("/photo.png"), 1, "a memory hit makes no request")
    }

    func testCallbacksNeedNoMainQueueByDefaultOnLinux() {
        let cache = ImageCache(uniqueName: "default-queue", directory: directory)
        let url = serve("/photo.png")
        let done = DispatchSemaphore(value: 0)
        let sawImage = Locked(false)
        cache.fetch(url) { _, image in
            dispatchPrecondition(condition: .notOnQueue(.main))
            sawImage.value = image != nil
            done.signal()
        }
        // A semaphore, not XCTest's wait (which runs the main queue): as a command-line tool waits.
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertTrue(sawImage.value)
    }

    func testSharedLivesInAFolderNamedAfterTheProgram() {
        let program = ImageCache.shared.folder.deletingLastPathComponent().lastPathComponent
        XCTAssertEqual(ImageCache.shared.folder.lastPathComponent, "ImageCache")
        XCTAssertTrue(program.hasPrefix(ProcessInfo.processInfo.processName.prefix(20)), program)
    }

    func testEveryCallbackRunsExactlyOnce() {
        let cache = makeCache()
        let urls = (0..<20).map { serve("/image\($0).png", delay: 0.01) }
        let calls = Locked([URL: Int]())
        let group = DispatchGroup()
        for url in urls + urls + urls {
            group.enter()
            cache.fetch(url) { received, _ in
                calls.mutate { $0[received, default: 0] += 1 }
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        Thread.sleep(forTimeInterval: 0.1)  // a second call, if any, would land here
        XCTAssertEqual(calls.value.count, 20)
        XCTAssertTrue(calls.value.values.allSatisfy { $0 == 3 }, "\(calls.value)")
    }

    // MARK: Deduplication

    func testConcurrentFetchesOfOneURLMakeOneRequest() {
        let cache = makeCache()
        let url = serve("/shared.png", delay: 0.2)
        let delivered = Locked(0)
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 200) { i in
            group.enter()
            let callback: @Sendable (URL, ImageCache.Image?) -> Void = { _, image in
                if image != nil { delivered.mutate { $0 += 1 } }
                group.leave()
            }
            if i % 3 == 0 { cache.slowFetch(url, callback: callback) } else { cache.fetch(url, callback: callback) }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(delivered.value, 200)
        XCTAssertEqual(server.requestCount("/shared.png"), 1)
        assertInvariants(cache)
    }

    // MARK: Lanes

    func testFastLaneRunsAtMostSixDownloadsAtOnce() {
        let cache = makeCache()
        XCTAssertEqual(cache.maxConcurrentDownloads, 6)
        let urls = (0..<12).map { serve("/slow\($0).png", delay: 0.3) }
        let group = DispatchGroup()
        for url in urls {
            group.enter()
            cache.fetch(url) { _, image in
                XCTAssertNotNil(image)
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(server.maxConcurrentRequests, 6)
    }

    func testSlowLaneRunsOneAtATime() {
        let cache = makeCache()
        let urls = (0..<4).map { serve("/prefetch\($0).png", delay: 0.1) }
        let group = DispatchGroup()
        for url in urls {
            group.enter()
            cache.slowFetch(url) { _, image in
                XCTAssertNotNil(image)
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(server.maxConcurrentRequests, 1)
        XCTAssertEqual(server.totalRequests, 4)
    }

    func testSlowLaneWaitsWhileFastWorkRuns() {
        let cache = makeCache()
        let urgent = serve("/urgent.png", delay: 0.5)
        let later = serve("/later.png")

        let urgentDone = expectation(description: "urgent")
        cache.fetch(urgent) { _, _ in urgentDone.fulfill() }
        XCTAssertTrue(server.waitForRequests("/urgent.png", count: 1, timeout: 5))
        let laterDone = expectation(description: "later")
        cache.slowFetch(later) { _, image in
            XCTAssertNotNil(image)
            laterDone.fulfill()
        }
        // While the urgent download runs, the prefetch does not start.
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(server.requestCount("/later.png"), 0)
        XCTAssertTrue(cache.fetching(later))
        wait(for: [urgentDone, laterDone], timeout: 10, enforceOrder: true)
        XCTAssertEqual(server.requestCount("/later.png"), 1)
    }

    func testMoveToSlowQueueLetsOtherUrgentWorkGoFirst() {
        let cache = makeCache()
        cache.maxConcurrentDownloads = 1
        let running = serve("/running.png", delay: 0.3)
        let demoted = serve("/demoted.png")
        let urgent = serve("/urgent.png", delay: 0.3)

        let group = DispatchGroup()
        for url in [running, demoted, urgent] {
            group.enter()
            cache.fetch(url) { _, image in
                XCTAssertNotNil(image)
                group.leave()
            }
            if url == running { XCTAssertTrue(server.waitForRequests("/running.png", count: 1, timeout: 5)) }
        }
        cache.moveToSlowQueue(demoted)
        // A running download is left to finish.
        cache.moveToSlowQueue(running)

        XCTAssertTrue(server.waitForRequests("/urgent.png", count: 1, timeout: 5))
        XCTAssertEqual(server.requestCount("/demoted.png"), 0, "the demoted request waits for urgent work")
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(server.requestCount("/demoted.png"), 1)
        XCTAssertEqual(server.requestCount("/running.png"), 1)
    }

    func testMoveToSlowQueueWhileWaitingToRetryLetsUrgentWorkGoFirst() {
        let cache = makeCache()
        cache.retryPolicy = .init(maxRetries: 1, baseDelay: 0.3)
        cache.maxConcurrentDownloads = 2  // a free fast slot: only the demotion can hold the retry back
        let waiting = expectation(description: "waiting to retry")
        cache.onEvent = { event in if case .retrying = event { waiting.fulfill() } }
        server.set("/flaky.png", sequence: [.status(503), .ok(fixture("photo.png"))])
        let flaky = server.url("/flaky.png")
        let urgent = serve("/urgent.png", delay: 0.5)
        let group = DispatchGroup()
        group.enter()
        cache.fetch(flaky) { _, image in XCTAssertNotNil(image); group.leave() }
        wait(for: [waiting], timeout: 5)
        cache.moveToSlowQueue(flaky)
        group.enter()
        cache.fetch(urgent) { _, image in XCTAssertNotNil(image); group.leave() }
        XCTAssertTrue(server.waitForRequests("/urgent.png", count: 1, timeout: 5))
        Thread.sleep(forTimeInterval: 0.35)  // past the retry wait, while urgent still runs
        XCTAssertEqual(server.requestCount("/flaky.png"), 1, "the demoted retry waits for urgent work")
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(server.requestCount("/flaky.png"), 2)
    }

    func testFetchPromotesAURLWaitingOnTheSlowLane() {
        let cache = makeCache()
        let blocker = serve("/blocker.png", delay: 1.0)
        let wanted = serve("/wanted.png")

        let blockerDone = expectation(description: "blocker")
        cache.fetch(blocker) { _, _ in blockerDone.fulfill() }
        XCTAssertTrue(server.waitForRequests("/blocker.png", count: 1, timeout: 5))
        cache.slowFetch(wanted)
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(server.requestCount("/wanted.png"), 0)

        // When the screen needs it, it starts at once, while the blocker still runs.
        let wantedDone = expectation(description: "wanted")
        cache.fetch(wanted) { _, image in
            XCTAssertNotNil(image)
            wantedDone.fulfill()
        }
        wait(for: [wantedDone, blockerDone], timeout: 10, enforceOrder: true)
        XCTAssertEqual(server.requestCount("/wanted.png"), 1)
        assertInvariants(cache)
    }

    // MARK: Cancellation

    func testCancellingTheOnlyCallerCancelsTheDownloadAndCachesNothing() {
        let cache = makeCache()
        let url = serve("/cancel.png", delay: 1.0)
        let called = Locked(false)
        let task = cache.fetch(url) { _, _ in called.value = true }
        XCTAssertTrue(server.waitForRequests("/cancel.png", count: 1, timeout: 5))
        task.cancel()

        XCTAssertTrue(server.waitForDisconnects("/cancel.png", count: 1, timeout: 5), "the server sees the connection go away")
        Thread.sleep(forTimeInterval: 1.2)  // past the server's delay: a late response would have landed
        callbacks.sync {}
        XCTAssertFalse(called.value)
        XCTAssertTrue(task.isCancelled)
        XCTAssertFalse(cache.fetching(url))
        XCTAssertFalse(cache.failedToFetch(url))
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(cache.diskCount, 0)
        assertInvariants(cache)

        // Fetching again downloads again.
        server.set("/cancel.png", .ok(fixture("photo.png")))
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/cancel.png"), 2)
    }

    func testCancellingOneOfTwoCallersKeepsTheDownload() {
        let cache = makeCache()
        let url = serve("/two.png", delay: 0.3)
        let cancelledCalled = Locked(false)
        let cancelled = cache.fetch(url) { _, _ in cancelledCalled.value = true }
        let done = expectation(description: "other caller")
        cache.fetch(url) { _, image in
            XCTAssertNotNil(image)
            done.fulfill()
        }
        cancelled.cancel()
        wait(for: [done], timeout: 10)
        callbacks.sync {}
        XCTAssertFalse(cancelledCalled.value)
        XCTAssertEqual(server.requestCount("/two.png"), 1)
        XCTAssertEqual(server.disconnectCount("/two.png"), 0)
    }

    func testCancelOnTheCallbackQueueBeforeAMemoryHitIsDeliveredWins() {
        let cache = makeCache()
        let url = serve("/photo.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        let called = Locked(false)
        callbacks.sync {
            // The hit's callback is queued behind this block, so cancel comes first.
            let task = cache.fetch(url) { _, _ in called.value = true }
            task.cancel()
        }
        callbacks.sync {}
        XCTAssertFalse(called.value)
    }

    func testCancelledSlowPrefetchIsNeverRequested() {
        let cache = makeCache()
        let blocker = serve("/blocker.png", delay: 0.4)
        let prefetch = serve("/prefetch.png")
        let blockerDone = expectation(description: "blocker")
        cache.fetch(blocker) { _, _ in blockerDone.fulfill() }
        XCTAssertTrue(server.waitForRequests("/blocker.png", count: 1, timeout: 5))
        let called = Locked(false)
        let task = cache.slowFetch(prefetch) { _, _ in called.value = true }
        task.cancel()
        wait(for: [blockerDone], timeout: 10)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(server.requestCount("/prefetch.png"), 0)
        XCTAssertFalse(called.value)
        assertInvariants(cache)
    }

    func testWhenCancelReturnsIsCancelledSaysWhetherTheCallbackCanStillRun() {
        let cache = makeCache()
        let url = serve("/same.png", delay: 0.2)
        let concurrent = DispatchQueue(label: "ImageCacheTests.concurrent", attributes: .concurrent)
        cache.callbackQueue = concurrent
        let count = 200
        let ran = Locked(Set<Int>()), won = Locked(Set<Int>())
        let firstStarted = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        var tasks: [ImageCache.FetchTask] = []
        for i in 0..<count {
            group.enter()
            tasks.append(cache.fetch(url) { _, _ in
                ran.mutate { _ = $0.insert(i) }
                if i == 0 {
                    firstStarted.signal()
                    release.wait()  // hold the delivery until some cancels are in, then race the rest
                }
                group.leave()
            })
        }
        firstStarted.wait()  // the delivery is under way: cancel the others from many threads
        DispatchQueue.concurrentPerform(iterations: count - 1) { j in
            let task = tasks[j + 1]
            if j == count / 4 { release.signal() }
            task.cancel()
            if task.isCancelled {
                won.mutate { _ = $0.insert(j + 1) }
                group.leave()  // its callback must never run to leave for it
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        concurrent.sync(flags: .barrier) {}
        XCTAssertTrue(ran.value.isDisjoint(with: won.value), "a callback ran after its cancel() won")
        XCTAssertEqual(ran.value.count + won.value.count, count, "every callback either ran or was cancelled")
        print("cancel race: \(won.value.count) of \(count - 1) cancels won, \(ran.value.count) callbacks ran")
    }

    // MARK: Nothing drops a callback

    func testRemoveWhileDownloadingDeliversNil() {
        let cache = makeCache()
        let url = serve("/removed.png", delay: 0.5)
        let done = expectation(description: "nil after remove")
        cache.fetch(url) { _, image in
            XCTAssertNil(image)
            done.fulfill()
        }
        XCTAssertTrue(server.waitForRequests("/removed.png", count: 1, timeout: 5))
        cache.remove(url)
        wait(for: [done], timeout: 5)
        XCTAssertFalse(cache.fetching(url))
        XCTAssertFalse(cache.failedToFetch(url))
        XCTAssertNil(cache.peek(url))
    }

    func testRemoveAllWhileDownloadingDeliversNilToEveryCaller() {
        let cache = makeCache()
        let urls = (0..<8).map { serve("/all\($0).png", delay: 0.5) }
        let (group, images) = fetchAll(cache, urls)
        XCTAssertTrue(server.waitForRequests("/all0.png", count: 1, timeout: 5))
        cache.removeAll()
        XCTAssertEqual(group.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(images.value, 0)
        assertInvariants(cache)
    }

    func testPurgeWhileDownloadingStillDeliversTheImage() {
        let cache = makeCache()
        let url = serve("/purged.png", delay: 0.3)
        let done = expectation(description: "image after purge")
        cache.fetch(url) { _, image in
            XCTAssertNotNil(image)
            done.fulfill()
        }
        XCTAssertTrue(server.waitForRequests("/purged.png", count: 1, timeout: 5))
        cache.purgeMemory()
        wait(for: [done], timeout: 5)
    }

    func testEvictionWhileDownloadingStillDeliversEveryImage() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 3
        let urls = (0..<12).map { serve("/evict\($0).png", delay: 0.05) }
        let (group, images) = fetchAll(cache, urls)
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(images.value, 12)
        XCTAssertLessThanOrEqual(cache.memoryCount, 3)
        assertInvariants(cache)
    }

    // MARK: Async

    func testAsyncImageReturnsTheImageAndThrowsTheCause() async throws {
        let cache = makeCache()
        let url = serve("/async.png")
        let image = try await cache.image(for: url)
        XCTAssertEqual(image.data, fixture("photo.png"))
        server.set("/gone.png", .status(404))
        do {
            _ = try await cache.image(for: server.url("/gone.png"))
            XCTFail("expected an error")
        } catch let error as ImageCache.Error {
            XCTAssertEqual(error, .httpStatus(404))
        }
    }

    func testAsyncImageThrowsCancelledWhenItsTaskIsCancelled() async {
        let cache = makeCache()
        let url = serve("/slow.png", delay: 2)
        let task = Task { try await cache.image(for: url) }
        XCTAssertTrue(server.waitForRequests("/slow.png", count: 1, timeout: 5))
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected ImageCache.Error.cancelled")
        } catch {
            XCTAssertEqual(error as? ImageCache.Error, .cancelled, "\(error)")
        }
        XCTAssertTrue(server.waitForDisconnects("/slow.png", count: 1, timeout: 5))
    }
}
