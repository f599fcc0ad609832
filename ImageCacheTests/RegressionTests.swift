import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Races and edge cases found in review, each pinned by a deterministic test.
final class RegressionTests: CacheTestCase {
    /// A clock that parks the thread marked "gate" the first time that thread reads it after
    /// `arm()`: it holds `persistCacheToDisk` between its locked part and its disk work.
    private final class GateClock: @unchecked Sendable {
        private let lock = NSLock()
        private var armed = false
        let reached = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        func arm() { lock.withLock { armed = true } }
        func now() -> TimeInterval {
            if Thread.current.threadDictionary["gate"] != nil, lock.withLock({ defer { armed = false }; return armed }) {
                reached.signal()
                go.wait()
            }
            return Date().timeIntervalSince1970
        }
    }

    private func gatedCache() -> (ImageCache, GateClock) {
        let cache = makeCache()
        let gate = GateClock()
        cache.clock = { gate.now() }
        return (cache, gate)
    }

    private func onGateThread(_ body: @escaping () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            Thread.current.threadDictionary["gate"] = true
            body()
            done.signal()
        }
        thread.start()
        return done
    }

    func testFailuresAreStillRememberedAfterThousandsOfFailures() {
        let cache = makeCache()
        let ftp = URL(string: "ftp://example.com/a.png")!
        for _ in 0..<1_100 { cache.fetch(ftp, callback: nil) }
        XCTAssertTrue(cache.failedToFetch(ftp))
        server.set("/404.png", .status(404))
        let other = server.url("/404.png")
        XCTAssertNil(fetchAndWait(cache, other))
        XCTAssertTrue(cache.failedToFetch(other), "a failure that just happened is remembered")
    }

    func testPersistRacingRemoveDoesNotBringTheImageBack() {
        let (cache, gate) = gatedCache()
        let url = serve("/u.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.reduceDiskCache(maxImageCount: 0)  // in memory, no longer on disk
        gate.arm()
        let done = onGateThread { cache.persistCacheToDisk() }
        gate.reached.wait()
        cache.remove(url)
        gate.go.signal()
        done.wait()
        cache.persistCacheToDisk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path))
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/u.png"), 2, "the removed image was not served from disk")
    }

    func testPersistRacingRemoveAllLeavesTheDiskEmpty() {
        let (cache, gate) = gatedCache()
        let urls = (0..<3).map { serve("/ra\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.reduceDiskCache(maxImageCount: 0)
        gate.arm()
        let done = onGateThread { cache.persistCacheToDisk() }
        gate.reached.wait()
        cache.removeAll()
        gate.go.signal()
        done.wait()
        XCTAssertEqual(cache.diskCount, 0)
    }

    func testConcurrentPersistsBothReturnWithTheImageOnDisk() {
        let (cache, gate) = gatedCache()
        let url = serve("/p.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.reduceDiskCache(maxImageCount: 0)
        gate.arm()
        let done = onGateThread { cache.persistCacheToDisk() }
        gate.reached.wait()
        cache.persistCacheToDisk()
        let onDisk = FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)
        gate.go.signal()
        done.wait()
        XCTAssertTrue(onDisk)
    }

    func testSecondChanceServesAnEvictedImageAndPersistWritesIt() {
        // Given a cap of 20: the 21st image evicts a batch of 2 (a tenth), and the second chance
        // may keep what memory leaves free under the cap: one image, the batch's most recent.
        let cache = makeCache()
        cache.imageMemoryMaxCount = 20
        let urls = (0..<21).map { serve("/sc\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertFalse(cache.memoryURLs.contains(urls[1].absoluteString), "evicted")
        cache.reduceDiskCache(maxImageCount: 0)
        // The disk is empty; memory, second chance included, is not changed by reduceDiskCache.
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: urls[1]).path))
        XCTAssertNil(cache.peek(urls[0]), "no room left under the cap for the batch's older image")
        XCTAssertEqual(cache.peek(urls[1])?.data, fixture("photo.png"), "back from the second chance")
        cache.persistCacheToDisk()
        XCTAssertEqual(try? Data(contentsOf: fileURL(cache, for: urls[1])), fixture("photo.png"), "persist writes it again")
        XCTAssertEqual(server.requestCount("/sc1.png"), 1)

        let more = (0..<21).map { serve("/more\($0).png") }
        for url in more { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.remove(more[1])
        XCTAssertNil(cache.peek(more[1]), "remove clears the second chance")
        assertInvariants(cache)
    }

    func testEverythingPeekCanReturnIsWithinTheCountCap() {
        // Given a cap of 10 and 30 images fetched (the second chance is part of memory's cap)
        let cache = makeCache()
        cache.imageMemoryMaxCount = 10
        let urls = (0..<30).map { serve("/cap\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        // Then at most 10 are peekable (most recent first, so that a second chance coming back
        // into memory cannot push out one not yet counted)
        XCTAssertEqual(urls.reversed().filter { cache.peek($0) != nil }.count, 10)
        assertInvariants(cache)
    }

    func testSecondChanceNeverServesAnExpiredImage() {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.imageMemoryMaxCount = 20
        let urls = (0..<21).map { serve("/exp\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }  // urls[1] goes to the second chance
        clock.advance(601)
        XCTAssertNil(cache.peek(urls[1]))
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

    func testTooLargeOrErrorBodiesAreNotReadToTheEnd() {
        let cache = makeCache()
        cache.maxImageBytes = 1_000_000
        cache.retryPolicy = .never
        var big = LoopbackServer.Response.ok(Data(count: 4_000_000))
        big.behavior = .slowBody(chunkSize: 100_000, interval: 0.05)
        server.set("/big.png", big)
        var notFound = LoopbackServer.Response.status(404, body: Data(count: 4_000_000))
        notFound.behavior = .slowBody(chunkSize: 100_000, interval: 0.05)
        server.set("/404.png", notFound)
        XCTAssertNil(fetchAndWait(cache, server.url("/big.png"), timeout: 20))
        XCTAssertEqual(cache.error(for: server.url("/big.png")), .tooLarge(limit: 1_000_000))
        XCTAssertNil(fetchAndWait(cache, server.url("/404.png"), timeout: 20))
        XCTAssertEqual(cache.error(for: server.url("/404.png")), .httpStatus(404))
        // The client hung up before the server had sent the body.
        XCTAssertTrue(server.waitForDisconnects("/big.png", count: 1, timeout: 5))
        XCTAssertTrue(server.waitForDisconnects("/404.png", count: 1, timeout: 5))
    }

    func testATruncatedBodyIsRetried() {
        let cache = makeCache()
        var short = LoopbackServer.Response.ok(fixture("photo.jpg").prefix(500))
        short.declaredLength = fixture("photo.jpg").count
        server.set("/short.jpg", sequence: [short, .ok(fixture("photo.jpg"))])
        XCTAssertEqual(fetchAndWait(cache, server.url("/short.jpg"))?.data, fixture("photo.jpg"))
        XCTAssertEqual(server.requestCount("/short.jpg"), 2)
    }

    func testRemoveInALaterLaunchHoldsAcrossTheNext() {
        let a = serve("/a.png"), b = serve("/b.png")
        populate([a, b])
        do {
            let second = makeCache()
            second.remove(a)
            second.persistCacheToDisk()
        }
        let third = makeCache()
        XCTAssertNotNil(fetchAndWait(third, a))
        XCTAssertNotNil(fetchAndWait(third, b))
        XCTAssertEqual(server.requestCount("/a.png"), 2)
        XCTAssertEqual(server.requestCount("/b.png"), 1)
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

    func testRandomFilesInTheFolderAreMissesAndNeverCrashALookup() throws {
        let url = serve("/r.png")
        var generator = SplitMix(seed: 5)
        let folder = directory.appendingPathComponent("cache")
        let name = ImageCache.diskFileName(for: url)
        for round in 0..<30 {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let junk = { (count: Int) in Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }) }
            // Random bytes under the image's own name, and under names the cache does not use.
            try junk(Int(generator.next() % 3000)).write(to: folder.appendingPathComponent(name))
            try junk(500).write(to: folder.appendingPathComponent(".index"))
            try junk(500).write(to: folder.appendingPathComponent("0123456789abcdef"))
            let cache = makeCache()
            XCTAssertEqual(fetchAndWait(cache, url)?.data, fixture("photo.png"), "round \(round)")
            cache.persistCacheToDisk()
            XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent(name)), fixture("photo.png"), "replaced")
            cache.removeAll()
        }
        XCTAssertEqual(server.requestCount("/r.png"), 30, "garbage is never served")
    }
}
