import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Revalidation with ETag and Last-Modified, Cache-Control, offline delivery of stale entries, and
/// statistics (issue 11).
final class FreshnessTests: CacheTestCase {
    private func serve(_ path: String, headers: [String: String], body: Data? = nil) -> URL {
        var response = LoopbackServer.Response.ok(body ?? fixture("photo.png"))
        response.headers.merge(headers) { $1 }
        server.set(path, response)
        return server.url(path)
    }

    func testAnExpiredEntryIsRevalidatedAndA304RenewsItWithoutABody() throws {
        // Given an image the server tags with an ETag, expired since
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let url = serve("/tagged.png", headers: ["ETag": "\"v1\""])
        XCTAssertEqual(try result(cache, url)?.get().source, .network)
        clock.advance(601)
        // When it is fetched again, the request is conditional, and the server says 304
        let renewed = try XCTUnwrap(result(cache, url)).get()
        XCTAssertEqual(renewed.value.data, fixture("photo.png"))
        XCTAssertFalse(renewed.isStale)
        XCTAssertEqual(server.lastRequestHeaders("/tagged.png")?["if-none-match"], "\"v1\"")
        XCTAssertEqual(server.conditionalCount("/tagged.png").notModified, 1)
        XCTAssertEqual(cache.statistics().revalidated, 1)
        // Then the entry is fresh again for a whole time to live, on disk too
        cache.drainDisk()
        clock.advance(300)
        XCTAssertEqual(try result(makeCache(clock: clock), url)?.get().source, .disk)
        XCTAssertEqual(server.requestCount("/tagged.png"), 2)
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

    func testLastModifiedAloneIsEnoughToRevalidate() throws {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let date = "Wed, 21 Oct 2026 07:28:00 GMT"
        let url = serve("/dated.png", headers: ["Last-Modified": date])
        XCTAssertNotNil(try result(cache, url)?.get())
        clock.advance(601)
        XCTAssertNotNil(try result(cache, url)?.get())
        XCTAssertEqual(server.lastRequestHeaders("/dated.png")?["if-modified-since"], date)
        XCTAssertEqual(server.conditionalCount("/dated.png").notModified, 1)
    }

    func testAChangedImageIsDownloadedAgainInFull() throws {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let url = serve("/changes.png", headers: ["ETag": "\"v1\""])
        XCTAssertNotNil(try result(cache, url)?.get())
        clock.advance(601)
        _ = serve("/changes.png", headers: ["ETag": "\"v2\""], body: fixture("photo.jpg"))
        XCTAssertEqual(try result(cache, url)?.get().value.data, fixture("photo.jpg"))
        XCTAssertEqual(server.conditionalCount("/changes.png").asked, 1)
        XCTAssertEqual(server.conditionalCount("/changes.png").notModified, 0)
        cache.drainDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(cache, for: url)), fixture("photo.jpg"))
    }

    func testNoStoreIsDeliveredButKeptInNoTier() throws {
        let cache = makeCache()
        let url = serve("/private.png", headers: ["Cache-Control": "private, no-store"])
        XCTAssertNotNil(try result(cache, url)?.get())
        XCTAssertNil(cache.peek(url), "not in memory either (issue 30: it was kept in memory before)")
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertEqual(cache.statistics().bytesDownloaded, fixture("photo.png").count, "downloaded, if not kept on disk")
        XCTAssertEqual(try result(makeCache(), url)?.get().source, .network)
    }

    func testTheServersMaxAgeSetsTheTimeToLiveOnlyWhenAsked() throws {
        let clock = TestClock()
        let url = serve("/short-lived.png", headers: ["Cache-Control": "max-age=60"])
        let obeying = makeCache("obeying", clock: clock)
        obeying.usesServerMaxAge = true
        let ignoring = makeCache("ignoring", clock: clock)
        XCTAssertNotNil(try result(obeying, url)?.get())
        XCTAssertNotNil(try result(ignoring, url)?.get())
        clock.advance(61)
        XCTAssertNil(obeying.peek(url), "expired after max-age")
        XCTAssertNotNil(ignoring.peek(url), "imageTimeToLive (600 s) applies")
        XCTAssertEqual(try result(obeying, url)?.get().source, .network)
        XCTAssertEqual(server.requestCount("/short-lived.png"), 3)
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

    func testOfflineAnExpiredEntryIsDeliveredMarkedStaleAndKeptUntilAFetchSucceeds() throws {
        // Given an expired entry, an option to serve it when offline, and a server that hangs up
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.servesStaleWhenOffline = true
        cache.retryPolicy = .never
        let url = serve("/offline.png")
        XCTAssertNotNil(try result(cache, url)?.get())
        clock.advance(601)
        server.set("/offline.png", LoopbackServer.Response(behavior: .hangUp))
        // Then it is delivered from disk, marked stale, twice (it stays)
        for _ in 0..<2 {
            let stale = try XCTUnwrap(result(cache, url)).get()
            XCTAssertTrue(stale.isStale)
            XCTAssertEqual(stale.source, .disk)
            XCTAssertEqual(stale.value.data, fixture("photo.png"))
        }
        XCTAssertNil(cache.peek(url), "a stale entry is not put in memory")
        // And a 404 is not "offline": it fails
        server.set("/offline.png", .status(404))
        guard case .failure(.httpStatus(404))? = result(cache, url) else { return XCTFail("a 404 fails") }
        // And once a fetch succeeds, the entry is fresh again
        _ = serve("/offline.png", headers: [:], body: fixture("photo.jpg"))
        let fresh = try XCTUnwrap(result(cache, url)).get()
        XCTAssertFalse(fresh.isStale)
        XCTAssertEqual(fresh.value.data, fixture("photo.jpg"))
    }

    func testWithoutTheOptionAnOfflineFetchOfAnExpiredEntryFails() {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.retryPolicy = .never
        let url = serve("/gone-offline.png", headers: ["ETag": "\"a\""])
        XCTAssertNotNil(fetchAndWait(cache, url))
        clock.advance(601)
        server.set("/gone-offline.png", LoopbackServer.Response(behavior: .hangUp))
        guard case .failure(let error)? = result(cache, url) else { return XCTFail("expected a failure") }
        XCTAssertFalse(error.isFatal)
    }

    func testStatisticsCountWhatHappened() throws {
        let cache = makeCache()
        let urls = (0..<3).map { serve("/s\($0).png", headers: [:]) }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertNotNil(fetchAndWait(cache, urls[0]))  // memory
        _ = cache.peek(urls[1])
        _ = cache.peek(server.url("/absent.png"))
        cache.drainDisk()
        XCTAssertNotNil(fetchAndWait(makeCache(), urls[2]))  // another instance: its own counts
        let stats = exactStatistics(cache)
        XCTAssertEqual(stats.requests, 4)
        XCTAssertEqual(stats.memoryHits, 1)
        XCTAssertEqual(stats.misses, 3)
        XCTAssertEqual(stats.diskHits, 0)
        XCTAssertEqual(stats.bytesDownloaded, 3 * fixture("photo.png").count)
        XCTAssertEqual(stats.peeks, 2)
        XCTAssertEqual(stats.peekHits, 1)
        XCTAssertEqual(stats.memoryCount, 3)
        XCTAssertEqual(stats.memoryBytes, 3 * fixture("photo.png").count)
        XCTAssertEqual(stats.diskFiles, 3)
        XCTAssertEqual(stats.diskBytes, 3 * fixture("photo.png").count)
    }

    func testStatisticsCountDiskHitsDeduplicationAndEvictions() {
        populate([serve("/p.png", headers: [:])])
        let cache = makeCache()
        cache.imageMemoryMaxCount = 1
        let slow = serve("/slow.png", delay: 0.2)
        let (group, images) = fetchAll(cache, [slow, slow, slow, server.url("/p.png")])
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(images.value, 4)
        let stats = cache.statistics()
        XCTAssertEqual(stats.deduplicated, 2)
        XCTAssertEqual(stats.diskHits, 1)
        XCTAssertEqual(stats.evictions, 1)
        XCTAssertEqual(server.requestCount("/slow.png"), 1)
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
}

extension FreshnessTests {
    func testAnEntryIsRevalidatedAgainAndAgainAcrossLaunches() throws {
        // Given an image the server keeps 2 s (max-age, obeyed) and tags with an ETag
        let clock = TestClock()
        var response = LoopbackServer.Response.ok(fixture("photo.png"))
        response.headers["ETag"] = "\"v1\""
        response.headers["Cache-Control"] = "max-age=2"
        server.set("/again.png", response)
        let url = server.url("/again.png")
        for launch in 0..<3 {
            let cache = makeCache(clock: clock)
            cache.usesServerMaxAge = true
            XCTAssertNotNil(fetchAndWait(cache, url))
            cache.purgeMemory()
            clock.advance(3)
            XCTAssertNotNil(fetchAndWait(cache, url))
            cache.persistCacheToDisk()
            XCTAssertEqual(server.conditionalCount("/again.png").notModified, 2 * launch + 1, "launch \(launch)")
            clock.advance(3)
        }
    }
}
