import Foundation
import XCTest
@testable import ImageCache
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
        let cache = makeCache()
        cache.imageMemoryMaxCount = 10
        let urls = (0..<11).map { serve("/sc\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertFalse(cache.memoryURLs.contains(urls[0].absoluteString), "evicted")
        cache.reduceDiskCache(maxImageCount: 0)
        // reduceDiskCache dropped sc0's file: the second chance no longer has it either.
        XCTAssertNil(cache.peek(urls[0]))

        let more = (0..<11).map { serve("/more\($0).png") }
        for url in more { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertEqual(cache.peek(more[0])?.data, fixture("photo.png"), "served from the second chance")
        XCTAssertEqual(server.requestCount("/more0.png"), 1)
        cache.persistCacheToDisk()
        assertInvariants(cache)
        cache.remove(more[1])
        XCTAssertNil(cache.peek(more[1]), "remove clears the second chance")
    }

    func testSecondChanceNeverServesAnExpiredImage() {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.imageMemoryMaxCount = 1
        let a = serve("/a.png"), b = serve("/b.png")
        XCTAssertNotNil(fetchAndWait(cache, a))
        XCTAssertNotNil(fetchAndWait(cache, b))  // a goes to the second chance
        clock.advance(601)
        XCTAssertNil(cache.peek(a))
    }

    func testCancelReturningMeansTheCallbackNeverStarts() {
        let cache = makeCache()
        let url = serve("/same.png", delay: 0.2)
        let cancelReturned = Locked(Set<Int>())
        let late = Locked([Int]())
        let firstStarted = DispatchSemaphore(value: 0)
        var tasks: [ImageCache.FetchTask] = []
        let group = DispatchGroup()
        for i in 0..<20 {
            group.enter()
            tasks.append(cache.fetch(url) { _, _ in
                if i == 0 { firstStarted.signal() }
                if cancelReturned.value.contains(i) { late.mutate { $0.append(i) } }
                Thread.sleep(forTimeInterval: 0.01)  // a callback that does some work
                group.leave()
            })
        }
        firstStarted.wait()
        for (i, task) in tasks.enumerated().dropFirst() {  // from another thread than callbackQueue
            task.cancel()
            cancelReturned.mutate { _ = $0.insert(i) }
            group.leave()  // its callback will not run to leave for it
        }
        XCTAssertEqual(group.wait(timeout: .now() + 5), .success)
        callbacks.sync {}
        XCTAssertEqual(late.value, [])
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

    func testAsyncImageThrowsCancellationErrorWhenItsTaskIsCancelled() async {
        let cache = makeCache()
        let url = serve("/slow.png", delay: 2)
        let task = Task { try await cache.image(for: url) }
        XCTAssertTrue(server.waitForRequests("/slow.png", count: 1, timeout: 5))
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected CancellationError")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
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

    func testATornJournalLineDoesNotSwallowTheNextRecord() throws {
        let x = serve("/x.png"), y = serve("/y.png")
        populate([x])
        let journal = directory.appendingPathComponent("cache/.journal")
        let handle = try FileHandle(forWritingTo: journal)
        handle.seekToEndOfFile()
        handle.write(Data("+\t17952".utf8))  // a record cut short, no newline
        handle.closeFile()
        do {
            let second = makeCache()
            XCTAssertNotNil(fetchAndWait(second, y))
            second.persistCacheToDisk()
        }
        let third = makeCache()
        XCTAssertNotNil(fetchAndWait(third, x))
        XCTAssertNotNil(fetchAndWait(third, y))
        XCTAssertEqual(server.totalRequests, 2, "both rows survived")
        assertInvariants(third)
    }

    func testRemoveBeforeTheIndexLoadsHoldsAcrossARelaunch() {
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

    func testTheIndexLoadsOnFirstNeedNotInInitOrPeek() {
        let url = serve("/lazy.png")
        populate([url])
        let second = makeCache()
        XCTAssertNil(second.peek(url))
        XCTAssertFalse(second.diskIndexLoaded)
        XCTAssertNotNil(fetchAndWait(second, url))
        XCTAssertTrue(second.diskIndexLoaded)
        XCTAssertEqual(server.requestCount("/lazy.png"), 1)
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

    func testRandomIndexAndJournalBytesNeverCrashTheLoad() throws {
        let url = serve("/r.png")
        var generator = SplitMix(seed: 5)
        let folder = directory.appendingPathComponent("cache")
        for round in 0..<30 {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let junk = { (count: Int) in Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }) }
            var journal = Data("+\t1\t2\t3\thttp://x/\nu\t\t\n-\n+\t\t\t\t\n".utf8)
            journal.append(junk(Int(generator.next() % 3000)))
            try journal.write(to: folder.appendingPathComponent(".journal"))
            try (Data("ImageCache index 1\n".utf8) + junk(500)).write(to: folder.appendingPathComponent(".index"))
            let cache = makeCache()
            XCTAssertNotNil(fetchAndWait(cache, url), "round \(round)")
            cache.persistCacheToDisk()
            assertInvariants(cache)
            cache.removeAll()
        }
    }

    func testAnAbsurdRowIsSkippedNotACrash() throws {
        let url = serve("/ok.png")
        let folder = directory.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let rows = ["+\t1\t2\t1e19\thttp://x/a", "+\tinf\t2\t3\thttp://x/b", "+\t1\tnan\t3\thttp://x/c",
                    "+\t1\t2\t9223372036854775807\thttp://x/d", "+\t1\t2\t-5\thttp://x/e", "+\t1\t2\t2.5\thttp://x/f"]
        try Data((rows.joined(separator: "\n") + "\n").utf8).write(to: folder.appendingPathComponent(".journal"))
        let cache = makeCache()
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(cache.diskCount, 1, "only the real image has a row")
    }

    func testACutLastJournalLineIsIgnoredAndCutOff() throws {
        let a = serve("/a.png"), ab = serve("/a.pngx")
        populate([a, ab])
        // "-\t<ab>" cut one byte short would read as a removal of a.png.
        let journal = directory.appendingPathComponent("cache/.journal")
        let handle = try FileHandle(forWritingTo: journal)
        handle.seekToEndOfFile()
        handle.write(Data("-\t\(ab.absoluteString.dropLast())".utf8))
        handle.closeFile()
        let second = makeCache()
        XCTAssertNotNil(fetchAndWait(second, a))
        XCTAssertEqual(server.requestCount("/a.png"), 1, "a.png kept its row")
        XCTAssertEqual(try Data(contentsOf: journal).last, UInt8(ascii: "\n"), "the cut line was cut off the file")
        second.persistCacheToDisk()
        assertInvariants(second)
    }
}
