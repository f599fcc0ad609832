import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// What a review of issues 10 and 11 found, each pinned by a test that failed before its fix.
final class ReviewRegressionTests: CacheTestCase {
    private func png(_ side: Int, _ seed: UInt8) -> Data {
        PNGEncoder.rgb(width: side, height: side, pixels: (0..<side * side * 3).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    private func fetchResult<V>(_ cache: ImageCache, _ url: URL, key: String? = nil,
                                decode: @escaping @Sendable (Data) throws -> V) -> Result<ImageCache.Fetched<V>, ImageCache.Error>? {
        let done = expectation(description: "result")
        let box = Locked<Result<ImageCache.Fetched<V>, ImageCache.Error>?>(nil)
        cache.fetch(url, key: key, decode: decode) { box.value = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        return box.value
    }

    func testAServersMaxAgeOfInfinityNeitherCrashesNorLastsForever() throws {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.usesServerMaxAge = true
        for (path, value) in [("/inf.png", "max-age=1e999"), ("/word.png", "max-age=inf"), ("/huge.png", "max-age=99999999999999999999")] {
            var response = LoopbackServer.Response.ok(fixture("photo.png"))
            response.headers["Cache-Control"] = value
            server.set(path, response)
            XCTAssertNotNil(fetchAndWait(cache, server.url(path)))
        }
        cache.drainDisk()  // the writes used to trap on `Int(infinity)`
        clock.advance(2_147_483_648.0 + 1)
        XCTAssertNil(cache.peek(server.url("/huge.png")), "max-age is cut to 2^31 seconds")
        XCTAssertNil(cache.peek(server.url("/word.png")), "not digits: the default time to live")
    }

    func testStoringForgetsTheKeysOlderImageInTheSecondChance() throws {
        let cache = makeCache()
        let small = fixture("photo.png")
        cache.imageMemoryMaxBytes = 100 * small.count  // a quarter: 27,150 bytes
        try cache.store(small, for: "k")
        for i in 1...5 { try cache.store(Data(repeating: UInt8(i), count: 20 * small.count), for: "filler\(i)") }
        XCTAssertFalse(cache.memoryURLs.contains("k"))  // evicted, into the second chance
        let big = png(100, 7)  // more than a quarter of the budget: not kept in memory
        XCTAssertGreaterThan(big.count, 25 * small.count)
        try cache.store(big, for: "k")
        XCTAssertNotEqual(cache.peek(key: "k")?.data, small, "the replaced image came back")
        cache.persistCacheToDisk()
        let file = cache.folder.appendingPathComponent(ImageCache.diskFileName(for: URL(string: "k")!))
        XCTAssertEqual(try Data(contentsOf: file), big, "the stored file was overwritten by the old image")
    }

    func testADownloadSharedByTwoTypesDeliversEachItsOwn() throws {
        let cache = makeCache()
        var response = LoopbackServer.Response.ok(Data("{\"title\":\"x\"}".utf8), contentType: "application/json")
        response.delay = 0.3
        server.set("/feed.json", response)
        let url = server.url("/feed.json")
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        let image = Locked<ImageCache.Image?>(nil)
        let data = Locked<Result<ImageCache.Fetched<Data>, ImageCache.Error>?>(nil)
        cache.fetch(url) { _, received in image.value = received; done.fulfill() }  // first: the image decoder
        cache.fetch(url, decode: { $0 }) { data.value = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.requestCount("/feed.json"), 1)
        XCTAssertNil(image.value)
        XCTAssertEqual(try data.value?.get().value, Data("{\"title\":\"x\"}".utf8))
        guard case .notAnImage? = cache.error(for: url) else { return XCTFail("the image request's failure is kept") }
    }

    func testAnImageFetchOfADataKeyLeavesItsFile() throws {
        let cache = makeCache()
        server.set("/x", .status(503))
        cache.retryPolicy = .never
        try cache.store(Data("{}".utf8), for: "draft")
        cache.drainDisk()
        let other = makeCache()  // another launch: memory empty
        XCTAssertNil(fetchAndWait(other, server.url("/x"), key: "draft"))  // an image fetch of the data key
        let back = fetchResult(other, server.url("/x"), key: "draft", decode: { $0 })
        XCTAssertEqual(try back?.get().value, Data("{}".utf8))
    }

    func testRenewingMarksTheFileUsedNowNotAtItsDownloadDate() throws {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.usesServerMaxAge = true
        var response = LoopbackServer.Response.ok(fixture("photo.png"))
        response.headers["ETag"] = "\"v1\""
        response.headers["Cache-Control"] = "max-age=1200"
        server.set("/r.png", response)
        let url = server.url("/r.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        clock.advance(1_201)
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.conditionalCount("/r.png").notModified, 1)
        cache.drainDisk()
        var info = stat()
        XCTAssertEqual(stat(fileURL(cache, for: url).path, &info), 0)
        XCTAssertLessThanOrEqual(TimeInterval(info.st_atim.tv_sec), clock.now + 1, "an access date in the future")
        // max-age 1,200 s with a time to live of 600 s: the entry counts as downloaded 600 s ahead.
        XCTAssertGreaterThan(TimeInterval(info.st_mtim.tv_sec), clock.now + 500, "the download date carries the max-age")
    }

    func testPersistNeverOverwritesANewerFileWithAnOlderCopy() throws {
        let clock = TestClock()
        let url = serve("/v.png", "photo.png")
        let first = makeCache("shared", clock: clock)
        XCTAssertNotNil(fetchAndWait(first, url))
        first.drainDisk()
        clock.advance(10)
        let second = makeCache("shared", clock: clock)  // same folder, later
        let newer = fixture("photo.jpg")
        try second.store(newer, for: url.absoluteString)
        second.drainDisk()
        first.persistCacheToDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(first, for: url)), newer, "the newer file was replaced by the older copy")
    }

    func testEachRequestCountsOnceInTheStatistics() throws {
        let url = serve("/s.png")
        populate([url])
        let cache = makeCache()
        let gate = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: gate)
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        cache.fetch(url) { _, _ in done.fulfill() }
        cache.fetch(url) { _, _ in done.fulfill() }
        gate.signal()
        wait(for: [done], timeout: 10)
        XCTAssertNotNil(fetchAndWait(cache, url))
        let stats = cache.statistics()
        XCTAssertEqual(stats.requests, 3)
        XCTAssertEqual(stats.diskHits, 1)
        XCTAssertEqual(stats.deduplicated, 1)
        XCTAssertEqual(stats.memoryHits, 1)
        XCTAssertEqual(stats.memoryHits + stats.diskHits + stats.misses + stats.deduplicated, stats.requests)
    }

    func testStoringMoreThanALookupWouldReadIsRefused() throws {
        let cache = makeCache()
        cache.maxImageBytes = 1_000
        XCTAssertThrowsError(try cache.store(Data(repeating: 1, count: 2_000), for: "doc")) { error in
            XCTAssertEqual(error as? ImageCache.Error, .tooLarge(limit: 1_000))
        }
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertNil(cache.error(forKey: "doc"))
    }

    func testOnRetryDoesNotRunAfterCancelReturned() throws {
        let cache = makeCache()
        cache.retryPolicy = ImageCache.RetryPolicy(maxRetries: 1, baseDelay: 0.2)
        server.set("/flaky.png", sequence: [.status(503), .ok(fixture("photo.png"))])
        let retried = Locked(0)
        let gate = DispatchSemaphore(value: 0)
        callbacks.async { gate.wait() }  // holds the callback queue: the retry notice waits behind it
        let task = cache.fetch(server.url("/flaky.png"), onRetry: { _, _ in retried.mutate { $0 += 1 } }) { _ in }
        // The second request proves the retry was decided, and its notice queued behind the gate.
        XCTAssertTrue(server.waitForRequests("/flaky.png", count: 2, timeout: 10))
        task.cancel()
        gate.signal()
        let drained = expectation(description: "callback queue drained")
        callbacks.async { drained.fulfill() }
        wait(for: [drained], timeout: 10)
        XCTAssertEqual(retried.value, 0)
        XCTAssertTrue(task.isCancelled)
    }
}
