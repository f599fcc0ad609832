import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// HTTP freshness as RFC 9111 has a private cache judge it (issue 30): the lifetime from `max-age`
/// or `Expires` minus `Date`, the age from `Age` and `Date`, `no-cache`, `no-store` and
/// `must-revalidate`, in one instance and in a new one on the same folder (a relaunch). The server
/// sets the dates and ages from the tests' clock; the tests move that clock, and count requests at
/// the server.
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

    // MARK: - Freshness lifetime

    func testMaxAgeCountsInAnyCaseAmongOtherDirectivesAndSMaxAgeIsIgnored() {
        // Given a response whose list names max-age in mixed case, after an s-maxage a private cache ignores
        let clock = TestClock()
        let url = serve("/listed.png", ["Cache-Control": "public, S-MAXAGE=9000, Max-Age=100"])
        // Then it is fresh for 100 s, not 9,000 s nor the time to live's 600 s
        assertFresh(url, until: 99, staleAfter: 101, clock)
    }

    func testExpiresMinusDateIsTheLifetimeInEachOfTheThreeDateForms() {
        // Given responses without max-age whose Expires is 300 s after their Date, in each form HTTP allows
        let clock = TestClock(1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        let date = httpDate(clock.now)
        let forms = ["Tue, 14 Nov 2023 22:18:20 GMT", "Tuesday, 14-Nov-23 22:18:20 GMT", "Tue Nov 14 22:18:20 2023",
                     "TUE, 14 nov 2023 22:18:20 gmt"]  // names in any case (issue 43)
        for (index, expires) in forms.enumerated() {
            let url = serve("/expires\(index).png", ["Date": date, "Expires": expires])
            // Then each is fresh for 300 s
            assertFresh(url, until: 299, staleAfter: 301, clock)
            clock.advance(-301)
        }
    }

    func testAnExpiresInThePastOrInvalidIsAlreadyStale() {
        let clock = TestClock()
        let values = ["0", "tomorrow", httpDate(clock.now - 10), "Tue, 14 Nov 2023 2:18:20 GMT",
                      httpDate(clock.now + 3_600).replacingOccurrences(of: " ", with: "  ")]  // runs of spaces (issue 43)
        for (index, expires) in values.enumerated() {
            // Given a response whose Expires is past, or not a date
            let url = serve("/expired\(index).png", ["Expires": expires])
            let cache = cache(clock)
            XCTAssertEqual(source(cache, url), .network)
            // Then it is delivered, but not reused: neither from memory nor from disk
            XCTAssertNil(cache.peek(url), "Expires: \(expires)")
            XCTAssertEqual(source(cache, url), .network, "Expires: \(expires)")
            XCTAssertEqual(server.requestCount(url.path), 2, "Expires: \(expires)")
        }
    }

    func testMaxAgeWinsOverExpiresAndAnInvalidMaxAgeIsStale() {
        let clock = TestClock()
        // Given max-age with an Expires in the past: max-age decides
        let overriding = serve("/both.png", ["Cache-Control": "max-age=100", "Expires": "0"])
        assertFresh(overriding, until: 99, staleAfter: 101, clock)
        // And a max-age that is not a number: stale at once
        let invalid = serve("/invalid.png", ["Cache-Control": "max-age=ten"])
        let cache = cache(clock)
        XCTAssertEqual(source(cache, invalid), .network)
        XCTAssertEqual(source(cache, invalid), .network)
    }

    func testWithoutMaxAgeOrExpiresTheTimeToLiveIsTheLifetime() {
        let clock = TestClock()
        let url = serve("/plain.png", [:])
        assertFresh(url, until: 599, staleAfter: 601, clock)
    }

    // MARK: - Current age

    func testAgeCountsAgainstTheLifetime() {
        // Given an image a CDN has held for 3,000 s of its 3,600
        let clock = TestClock()
        let url = serve("/aged.png", ["Cache-Control": "max-age=3600", "Age": "3000"])
        // Then it is fresh for the 600 s left
        assertFresh(url, until: 599, staleAfter: 601, clock)
    }

    func testTheTimeSinceDateCountsAgainstTheLifetime() {
        // Given an image whose Date is 3,000 s ago, with max-age=3600 and an Age smaller than that
        let clock = TestClock()
        let url = serve("/dated.png", ["Cache-Control": "max-age=3600", "Age": "10",
                                       "Date": httpDate(clock.now - 3_000)])
        // Then its apparent age decides: fresh for 600 s, less the fraction of a second Date leaves out
        assertFresh(url, until: 598, staleAfter: 601, clock)
    }

    func testADateAheadOfTheClockMakesNoResponseYounger() {
        // Given a server whose clock is a day ahead, with max-age=600
        let clock = TestClock()
        let url = serve("/ahead.png", ["Cache-Control": "max-age=600", "Date": httpDate(clock.now + 86_400)])
        // Then the entry is fresh for 600 s, no longer
        assertFresh(url, until: 599, staleAfter: 601, clock)
    }

    func testAnAgeOverTheLifetimeOrHugeIsStaleOnArrival() {
        let clock = TestClock()
        for (index, age) in ["7200", "99999999999999999999"].enumerated() {
            let url = serve("/old\(index).png", ["Cache-Control": "max-age=3600", "Age": age])
            let cache = cache(clock)
            XCTAssertEqual(source(cache, url), .network)
            XCTAssertNil(cache.peek(url))
            XCTAssertEqual(source(cache, url), .network, "Age: \(age)")
        }
    }

    func testAnEntryReceivedWhileTheClockWasFarAheadIsNotTrustedLater() {
        // Given an entry fresh for a year, received while the clock was two days ahead
        let clock = TestClock()
        let url = serve("/year.png", ["Cache-Control": "max-age=31536000"])
        clock.advance(2 * 86_400)
        let first = cache(clock)
        XCTAssertEqual(source(first, url), .network)
        first.persistCacheToDisk()
        // When the clock is set right
        clock.advance(-2 * 86_400)
        // Then the entry is not trusted, in memory or on disk (the clock-skew rule): it is downloaded again
        XCTAssertNil(first.peek(url))
        XCTAssertEqual(source(cache(clock), url), .network)
    }

    // MARK: - no-cache, no-store

    func testNoCacheIsStoredButRevalidatedBeforeEveryReuseInBothModes() {
        for serverFreshness in [true, false] {
            // Given a response marked no-cache with a long max-age and an ETag
            let clock = TestClock()
            let path = "/no-cache-\(serverFreshness).png"
            let url = serve(path, ["Cache-Control": "max-age=10000, No-Cache"], etag: "\"v1\"")
            let first = cache(clock, serverFreshness: serverFreshness)
            XCTAssertEqual(source(first, url), .network)
            // Then it is never reused without asking: not peeked, and each fetch is conditional, a
            // 304 each time, in this instance and after a relaunch
            XCTAssertNil(first.peek(url))
            XCTAssertEqual(source(first, url), .network)
            first.persistCacheToDisk()
            XCTAssertEqual(source(cache(clock, serverFreshness: serverFreshness), url), .network)
            XCTAssertEqual(server.requestCount(path), 3, "usesServerMaxAge \(serverFreshness)")
            XCTAssertEqual(server.conditionalCount(path).notModified, 2, "usesServerMaxAge \(serverFreshness)")
            XCTAssertEqual(server.lastRequestHeaders(path)?["if-none-match"], "\"v1\"")
        }
    }

    func testNoCacheWithoutValidatorsIsDownloadedAgainForEachUse() {
        let clock = TestClock()
        let url = serve("/no-cache-plain.png", ["Cache-Control": "no-cache"])
        let first = cache(clock, serverFreshness: false)
        XCTAssertEqual(source(first, url), .network)
        XCTAssertEqual(source(first, url), .network)
        first.persistCacheToDisk()
        XCTAssertEqual(source(cache(clock, serverFreshness: false), url), .network)
        XCTAssertEqual(server.requestCount("/no-cache-plain.png"), 3)
        XCTAssertEqual(server.conditionalCount("/no-cache-plain.png").asked, 0)
    }

    func testA304WithoutCacheControlLeavesTheStoredNoCacheInForce() {
        // Given a no-cache response, whose revalidations the server answers with a 304 that has no
        // Cache-Control (only its ETag)
        let clock = TestClock()
        var first = LoopbackServer.Response.ok(fixture("photo.png"))
        first.headers["Cache-Control"] = "no-cache"
        first.headers["ETag"] = "\"v1\""
        var later = LoopbackServer.Response.ok(fixture("photo.png"))
        later.headers["ETag"] = "\"v1\""
        server.set("/kept.png", sequence: [first, later])
        let url = server.url("/kept.png")
        let cache = self.cache(clock)
        XCTAssertEqual(source(cache, url), .network)
        // Then after a 304, the stored no-cache still says: ask again, in this instance and after a relaunch
        XCTAssertEqual(source(cache, url), .network)
        XCTAssertEqual(source(cache, url), .network)
        cache.persistCacheToDisk()
        XCTAssertEqual(source(self.cache(clock), url), .network)
        XCTAssertEqual(server.conditionalCount("/kept.png").notModified, 3)
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

    // MARK: - Never stale; the time to live

    func testMustRevalidateAndNoCacheAreNeverServedStaleOffline() throws {
        for serverFreshness in [true, false] {
            // Given expired entries with ETags, one plain, one must-revalidate, one no-cache, and a
            // cache that serves stale entries when offline
            let clock = TestClock()
            let lifetime = serverFreshness ? "max-age=60" : "max-age=6000"  // off: the time to live decides
            let prefix = "/\(serverFreshness)-"
            let plain = serve(prefix + "plain.png", ["Cache-Control": lifetime], etag: "\"p\"")
            let strict = serve(prefix + "strict.png", ["Cache-Control": lifetime + ", Must-Revalidate"], etag: "\"s\"")
            let noCache = serve(prefix + "no-cache.png", ["Cache-Control": "no-cache"], etag: "\"n\"")
            let first = cache(clock, serverFreshness: serverFreshness)
            first.servesStaleWhenOffline = true
            first.retryPolicy = .never
            for url in [plain, strict, noCache] { XCTAssertEqual(source(first, url), .network) }
            first.persistCacheToDisk()
            clock.advance(601)
            // When the server cannot be reached
            for url in [plain, strict, noCache] { server.set(url.path, LoopbackServer.Response(behavior: .hangUp)) }
            let relaunched = cache(clock, serverFreshness: serverFreshness)
            relaunched.servesStaleWhenOffline = true
            relaunched.retryPolicy = .never
            for cache in [first, relaunched] {
                // Then only the plain one is served stale; the others fail, in both instances
                let stale = try XCTUnwrap(result(cache, plain)).get()
                XCTAssertTrue(stale.isStale)
                for url in [strict, noCache] {
                    guard case .failure(let error)? = result(cache, url) else {
                        return XCTFail("\(url.path) served stale (usesServerMaxAge \(serverFreshness))")
                    }
                    XCTAssertFalse(error.isFatal)
                }
            }
        }
    }

    func testWithoutUsesServerMaxAgeTheTimeToLiveDecides() {
        // Given a response whose max-age, Age and Expires would make it stale at once
        let clock = TestClock()
        let url = serve("/ttl.png", ["Cache-Control": "max-age=60", "Age": "5000", "Expires": "0"])
        let first = cache(clock, serverFreshness: false)
        XCTAssertEqual(source(first, url), .network)
        // Then the time to live (600 s) decides, in memory and after a relaunch
        clock.advance(599)
        XCTAssertEqual(source(first, url), .memory)
        first.persistCacheToDisk()
        XCTAssertEqual(source(cache(clock, serverFreshness: false), url), .disk)
        clock.advance(2)
        XCTAssertEqual(source(cache(clock, serverFreshness: false), url), .network)
        XCTAssertEqual(server.requestCount("/ttl.png"), 2)
    }

    // MARK: - Reading the headers

    func testHTTPDatesInTheThreeFormsAndNothingElse() {
        let expected: TimeInterval = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT
        XCTAssertEqual(ImageCache.HTTP.date("Sun, 06 Nov 1994 08:49:37 GMT"), expected)
        XCTAssertEqual(ImageCache.HTTP.date("Sunday, 06-Nov-94 08:49:37 GMT"), expected)
        XCTAssertEqual(ImageCache.HTTP.date("Sun Nov  6 08:49:37 1994"), expected)
        XCTAssertEqual(ImageCache.HTTP.date("Thu, 01 Jan 1970 00:00:00 GMT"), 0)
        XCTAssertEqual(ImageCache.HTTP.date("Tue, 29 Feb 2028 23:59:60 GMT"), 1_835_481_600)
        // A month in lowercase is a date (issue 43: as RFC 9110 lets a recipient read it).
        XCTAssertEqual(ImageCache.HTTP.date("Sun, 06 nov 1994 08:49:37 GMT"), expected)
        for invalid in ["0", "", "-1", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 8:49:37 GMT",
                        "Sun, 06  Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
                        "Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
                        "Sun, 06 Nov 1994 24:00:00 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT"] {
            XCTAssertNil(ImageCache.HTTP.date(invalid), invalid)
        }
    }

    func testCacheControlDirectives() {
        let read = ImageCache.HTTP.CacheControl.init
        XCTAssertEqual(read("max-age=5, max-age=500").maxAge, 5, "the first counts")
        XCTAssertEqual(read("MAX-AGE=\"7\"").maxAge, 7, "the quoted form is tolerated")
        XCTAssertEqual(read("max-age=-1").maxAge, 0, "invalid: stale")
        XCTAssertEqual(read("max-age=").maxAge, 0, "invalid: stale")
        XCTAssertEqual(read("max-age =60").maxAge, 0, "no space around =: invalid, stale")
        XCTAssertEqual(read("max-age= 60").maxAge, 0, "no space around =: invalid, stale")
        XCTAssertEqual(read("  max-age=60 ").maxAge, 60, "space around a directive is the list's")
        XCTAssertEqual(read("s-maxage=60").maxAge, nil)
        XCTAssertEqual(read("max-age=99999999999").maxAge, 2_147_483_648)
        XCTAssertTrue(read("no-cache=\"Set-Cookie\"").noCache)
        XCTAssertTrue(read("private, must-revalidate").forbidsStale)
        XCTAssertFalse(read("public, proxy-revalidate, max-age=1").forbidsStale, "for shared caches only")
        XCTAssertTrue(read(" No-Store ").noStore)
    }

    func testAgeIsTheFirstMemberOfAListAndAnInvalidOneIsIgnored() {
        func age(_ value: String, date: String? = nil, sentAt: TimeInterval = 1_000) -> TimeInterval {
            var fields = ["Age": value]
            fields["Date"] = date
            let response = HTTPURLResponse(url: server.url("/"), statusCode: 200, httpVersion: nil,
                                           headerFields: fields)
            return ImageCache.HTTP.Freshness(response, .init(response), sentAt: sentAt, receivedAt: 1_000).age
        }
        XCTAssertEqual(age("7200, 10"), 7_200)
        XCTAssertEqual(age("-5"), 0)
        XCTAssertEqual(age("60.5"), 0)
        XCTAssertEqual(age("60", sentAt: 990), 70, "plus the time the request took")
        XCTAssertEqual(age("60", date: "Thu, 01 Jan 1970 00:00:00 GMT"), 1_000, "the time since Date when larger")
    }
}
