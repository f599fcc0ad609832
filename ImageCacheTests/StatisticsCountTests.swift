import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 49: `Statistics.misses` says "downloads that went to the network", and each request counts
/// once among the hits, misses and joins. An `onlyFromCache` miss made no request and counted a
/// miss; a download cancelled while queued counted one too (a miss was counted at the disk look-up).
final class StatisticsCountTests: CacheTestCase {
    private func request(_ cache: ImageCache, _ request: ImageCache.Request) -> ImageResult? {
        let done = expectation(description: "\(request)")
        let result = Locked<ImageResult?>(nil)
        cache.fetch(request) { result.value = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        return result.value
    }

    func testAnOnlyFromCacheMissIsAFailureNotAMiss() {
        // Given an empty cache
        let cache = makeCache()
        let url = serve("/absent.png")
        // When a load that may not use the network asks for an image it does not have
        let result = request(cache, ImageCache.Request(url: url, options: [.onlyFromCache]))
        // Then it fails, nothing was sent, and it counts as a failure, not a miss
        XCTAssertThrowsError(try result?.get())
        XCTAssertEqual(server.requestCount("/absent.png"), 0)
        let stats = cache.statistics()
        XCTAssertEqual(stats.requests, 1)
        XCTAssertEqual(stats.misses, 0)
        XCTAssertEqual(stats.failures, 1)
    }

    func testAFetchCancelledBeforeItsDownloadWasSentIsNotAMiss() {
        // Given one slot, held by a download behind a gate, and a second fetch queued behind it
        let cache = makeCache()
        cache.maxConcurrentDownloads = 1
        cache.stallTime = 60  // the held download keeps its slot however slow the machine
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/held")
        let held = expectation(description: "held")
        cache.fetch(server.url("/held.png")) { _, _ in held.fulfill() }
        XCTAssertTrue(eventually(10) { self.server.requestCount("/held.png") == 1 })
        let queued = cache.fetch(serve("/queued.png")) { _, _ in XCTFail("cancelled") }
        cache.drainDisk()  // its look-up found nothing: it waits on its lane
        // When it is cancelled before it was sent
        queued.cancel()
        gate.open()
        wait(for: [held], timeout: 10)
        // Then only the download that was sent is a miss
        XCTAssertEqual(server.requestCount("/queued.png"), 0)
        let stats = cache.statistics()
        XCTAssertEqual(stats.requests, 2)
        XCTAssertEqual(stats.misses, 1)
    }

    func testEachRequestCountsOnceInTheHitsMissesJoinsOrFailures() {
        // Given a miss and a request that joins it, a memory hit, a disk hit, an unsupported URL
        // and an onlyFromCache miss
        let cache = makeCache()
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/counted")
        let url = server.url("/counted.png")
        let both = expectation(description: "both")
        both.expectedFulfillmentCount = 2
        cache.fetch(url) { _, _ in both.fulfill() }
        cache.fetch(url) { _, _ in both.fulfill() }
        gate.open()
        wait(for: [both], timeout: 10)
        XCTAssertNotNil(fetchAndWait(cache, url))  // memory
        cache.purgeMemory()
        XCTAssertNotNil(fetchAndWait(cache, url))  // disk
        XCTAssertNil(fetchAndWait(cache, URL(string: "ftp://example.com/a.png")!))
        XCTAssertThrowsError(try request(cache, ImageCache.Request(url: serve("/none.png"), options: [.onlyFromCache]))?.get())
        // Then each counts once, where the doc says
        let stats = cache.statistics()
        XCTAssertEqual(stats.requests, 6)
        XCTAssertEqual([stats.misses, stats.deduplicated, stats.memoryHits, stats.diskHits, stats.failures],
                       [1, 1, 1, 1, 2])
        XCTAssertEqual(stats.requests, stats.memoryHits + stats.diskHits + stats.misses + stats.deduplicated + stats.failures)
        XCTAssertEqual(server.requestCount("/counted.png"), 1)
    }
}
