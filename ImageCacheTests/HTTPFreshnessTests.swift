import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// HTTP freshness as RFC 9111 has a private cache judge it (issue 30): `no-store`, in one instance
/// and in a new one on the same folder (a relaunch). The tests count requests at the server.
final class HTTPFreshnessTests: CacheTestCase {
    /// Serves photo.png at `path` with `headers` (and an `ETag` if given), and returns its URL.
    @discardableResult
    private func serve(_ path: String, _ headers: [String: String], etag: String? = nil) -> URL {
        var response = LoopbackServer.Response.ok(fixture("photo.png"))
        response.headers.merge(headers) { $1 }
        if let etag { response.headers["ETag"] = etag }
        server.set(path, response)
        return server.url(path)
    }

    /// A cache on this test's folder that lets the server's freshness decide (or not).
    private func cache(_ clock: TestClock, serverFreshness: Bool = true) -> ImageCache {
        let cache = makeCache(clock: clock)
        cache.usesServerMaxAge = serverFreshness
        return cache
    }

    /// Where a fetch of `url` came from; nil if it failed.
    private func source(_ cache: ImageCache, _ url: URL, file: StaticString = #filePath,
                        line: UInt = #line) -> ImageCache.Source? {
        guard case .success(let fetched)? = result(cache, url) else { return nil }
        XCTAssertFalse(fetched.isStale, "a fresh delivery is not marked stale", file: file, line: line)
        return fetched.source
    }

    /// `time` as an IMF-fixdate, the form servers send.
    private func httpDate(_ time: TimeInterval) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: time))
    }

    /// Asserts that `url`, fetched once, is fresh until `fresh` seconds later (from memory, and
    /// from disk in a new instance) and is downloaded again after `stale` seconds.
    private func assertFresh(_ url: URL, until fresh: TimeInterval, staleAfter stale: TimeInterval,
                             _ clock: TestClock, file: StaticString = #filePath, line: UInt = #line) {
        let path = url.path
        let first = cache(clock)
        XCTAssertEqual(source(first, url), .network, file: file, line: line)
        clock.advance(fresh)
        XCTAssertEqual(source(first, url), .memory, "fresh in memory", file: file, line: line)
        first.persistCacheToDisk()
        XCTAssertEqual(source(cache(clock), url), .disk, "fresh on disk after a relaunch", file: file, line: line)
        XCTAssertEqual(server.requestCount(path), 1, file: file, line: line)
        clock.advance(stale - fresh)
        XCTAssertNil(first.peek(url), "stale in memory", file: file, line: line)
        XCTAssertEqual(source(cache(clock), url), .network, "stale on disk after a relaunch", file: file, line: line)
        XCTAssertEqual(server.requestCount(path), 2, file: file, line: line)
    }

    func testNoStoreIsDeliveredToEveryWaiterAndKeptInNoTierInBothModes() {
        for serverFreshness in [true, false] {
            // Given a no-store response that three requests wait for (the disk look-up held meanwhile)
            let path = "/no-store-\(serverFreshness).png"
            let url = serve(path, ["Cache-Control": "private, max-age=600, no-store"])
            let cache = cache(TestClock(), serverFreshness: serverFreshness)
            let gate = DispatchSemaphore(value: 0)
            cache.holdDiskQueue(until: gate)
            let (group, images) = fetchAll(cache, [url, url, url])
            gate.signal()
            XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
            // Then all three get the image from one download
            XCTAssertEqual(images.value, 3)
            XCTAssertEqual(server.requestCount(path), 1)
            // And it is in no tier: not in memory, not on disk, also after a relaunch
            XCTAssertNil(cache.peek(url))
            cache.persistCacheToDisk()
            XCTAssertEqual(cache.diskCount, 0)
            XCTAssertEqual(source(cache, url), .network)
            XCTAssertEqual(source(makeCache(), url), .network)
            XCTAssertEqual(server.requestCount(path), 3, "usesServerMaxAge \(serverFreshness)")
        }
    }
}
