import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `downloadTimeLimit`: the cache's own deadline per download attempt, which URLSession on Linux
/// does not enforce. Every test waits on events; none depends on how long anything takes.
final class DeadlineTests: CacheTestCase {
    /// Serves a real PNG one byte every 200 ms at `path`: it would succeed after about 3.5 minutes.
    @discardableResult
    private func serveDripFed(_ path: String) -> URL {
        var response = LoopbackServer.Response.ok(fixture("photo.png"))
        response.behavior = .slowBody(chunkSize: 1, interval: 0.2)
        server.set(path, response)
        return server.url(path)
    }

    /// A cache whose downloads may take 1 second each.
    private func makeLimitedCache(retryPolicy: ImageCache.RetryPolicy = .never) -> ImageCache {
        let cache = makeCache()
        cache.downloadTimeLimit = 1
        cache.retryPolicy = retryPolicy
        return cache
    }

    /// Fetches `url` and fulfills the returned expectation when its callback runs; `images` gets the image or nil.
    private func fetchExpecting(_ cache: ImageCache, _ url: URL, _ images: Locked<[URL: ImageCache.Image?]>) -> XCTestExpectation {
        let done = expectation(description: "callback for \(url.path)")
        cache.fetch(url) { url, image in
            images.mutate { $0[url] = .some(image) }
            done.fulfill()
        }
        return done
    }

    private func assertTimedOut(_ error: ImageCache.Error?, limit: String = "1-second limit",
                                file: StaticString = #filePath, line: UInt = #line) {
        guard case .network(.timedOut, let text)? = error else {
            return XCTFail("expected .network(.timedOut, …), got \(String(describing: error))", file: file, line: line)
        }
        XCTAssertTrue(text.contains(limit), text, file: file, line: line)
        XCTAssertTrue(error?.description.contains(limit) ?? false, error?.description ?? "nil", file: file, line: line)
        XCTAssertEqual(error?.isFatal, false, file: file, line: line)
    }

    func testADripFedResponseFailsWithATimeoutThatNamesTheLimit() {
        // Given a 1-second limit and no retries
        let cache = makeLimitedCache()
        let url = serveDripFed("/drip.png")
        // When a server drips a whole image too slowly
        let image = fetchAndWait(cache, url)
        // Then the fetch fails as timed out, says why, and the connection is dropped
        XCTAssertNil(image)
        assertTimedOut(cache.error(for: url))
        XCTAssertFalse(cache.fetching(url))
        XCTAssertTrue(server.waitForDisconnects("/drip.png", count: 1, timeout: 10))
        XCTAssertEqual(server.requestCount("/drip.png"), 1)
        assertInvariants(cache)
    }

    func testTheDeadlineFreesTheOnlySlotForTheNextDownload() {
        // Given one download slot, held by a drip-fed response
        let cache = makeLimitedCache()
        cache.maxConcurrentDownloads = 1
        let drip = serveDripFed("/drip.png")
        let normal = serve("/normal.png")
        let images = Locked<[URL: ImageCache.Image?]>([:])
        let dripDone = fetchExpecting(cache, drip, images)
        XCTAssertTrue(server.waitForRequests("/drip.png", count: 1, timeout: 10))
        // When a normal image is fetched behind it
        let normalDone = fetchExpecting(cache, normal, images)
        // Then the drip fails at its deadline, and only then is the normal one downloaded
        wait(for: [dripDone, normalDone], timeout: 10, enforceOrder: true)
        XCTAssertEqual(images.value[drip], .some(nil))
        assertTimedOut(cache.error(for: drip))
        XCTAssertEqual(images.value[normal]??.data, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/normal.png"), 1)
        assertInvariants(cache)
    }

    func testSixDripFedResponsesDoNotStopAnUrgentFetch() {
        // Given six drip-fed responses that hold every fast-lane slot (6 by default)
        let cache = makeLimitedCache()
        XCTAssertEqual(cache.maxConcurrentDownloads, 6)
        let drips = (0..<6).map { serveDripFed("/drip/\($0).png") }
        let images = Locked<[URL: ImageCache.Image?]>([:])
        let dripsDone = drips.map { fetchExpecting(cache, $0, images) }
        for index in 0..<6 { XCTAssertTrue(server.waitForRequests("/drip/\(index).png", count: 1, timeout: 10)) }
        // When an urgent image is fetched
        let urgent = serve("/urgent.png")
        let urgentDone = fetchExpecting(cache, urgent, images)
        // Then it is delivered once a deadline frees a slot, and every drip fails as timed out
        wait(for: [urgentDone] + dripsDone, timeout: 10)
        XCTAssertEqual(images.value[urgent]??.data, fixture("photo.png"))
        for drip in drips {
            XCTAssertEqual(images.value[drip], .some(nil))
            assertTimedOut(cache.error(for: drip))
        }
        assertInvariants(cache)
    }

    func testALimitLoweredWhileADownloadRunsAppliesToTheNextOneAtOnce() {
        // Given a download running under a 60-second limit (one timer serves every deadline)
        let cache = makeLimitedCache()
        cache.downloadTimeLimit = 60
        let long = serveDripFed("/drip/long.png")
        let images = Locked<[URL: ImageCache.Image?]>([:])
        let longDone = fetchExpecting(cache, long, images)
        XCTAssertTrue(server.waitForRequests("/drip/long.png", count: 1, timeout: 10))
        // When the limit drops to 1 second and another drip-fed download starts
        cache.downloadTimeLimit = 1
        let short = serveDripFed("/drip/short.png")
        let shortDone = fetchExpecting(cache, short, images)
        // Then the second fails at its own deadline, long before the first's, which runs on
        wait(for: [shortDone], timeout: 10)
        assertTimedOut(cache.error(for: short))
        XCTAssertTrue(cache.fetching(long))
        cache.remove(long)
        wait(for: [longDone], timeout: 10)
        XCTAssertEqual(images.value[long], .some(nil))
        assertInvariants(cache)
    }

    func testEachRetryGetsADeadlineOfItsOwn() {
        // Given one retry after a short wait
        let cache = makeLimitedCache(retryPolicy: ImageCache.RetryPolicy(maxRetries: 1, baseDelay: 0.01))
        let retries = Locked<[ImageCache.Error]>([])
        cache.onEvent = { event in
            if case .retrying(_, _, _, let error) = event { retries.mutate { $0.append(error) } }
        }
        let url = serveDripFed("/drip.png")
        // When both attempts are drip-fed
        let image = fetchAndWait(cache, url)
        // Then each attempt times out: two requests, one retry, a timeout at the end
        XCTAssertNil(image)
        XCTAssertEqual(server.requestCount("/drip.png"), 2)
        XCTAssertEqual(retries.value.count, 1)
        assertTimedOut(retries.value.first)
        assertTimedOut(cache.error(for: url))
        assertInvariants(cache)
    }

    func testTheLimitDefaultsTo120SecondsOrToTheGivenSessionsResourceTimeout() {
        // Given a session whose configuration allows 7 seconds per resource
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForResource = 7
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        // When caches are made with and without it
        let withSession = ImageCache(uniqueName: "session", directory: directory, session: session)
        let plain = ImageCache(uniqueName: "plain", directory: directory)
        // Then the session's limit is the default, else 120 s; too small a limit is clamped to 1 s
        XCTAssertEqual(withSession.downloadTimeLimit, 7)
        XCTAssertEqual(plain.downloadTimeLimit, 120)
        plain.downloadTimeLimit = 0.2
        XCTAssertEqual(plain.downloadTimeLimit, 1)
        plain.downloadTimeLimit = .nan
        XCTAssertEqual(plain.downloadTimeLimit, 120)
    }
}
