import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Retries, hostile servers, odd URLs and a disk under attack.
final class ResilienceTests: CacheTestCase {
    private func recordEvents(_ cache: ImageCache) -> Locked<[ImageCache.Event]> {
        let events = Locked([ImageCache.Event]())
        cache.onEvent = { event in events.mutate { $0.append(event) } }
        return events
    }

    private func retries(_ events: [ImageCache.Event]) -> [(attempt: Int, delay: TimeInterval, error: ImageCache.Error)] {
        events.compactMap {
            if case .retrying(_, let attempt, let delay, let error) = $0 { return (attempt, delay, error) }
            return nil
        }
    }

    // MARK: Retry policy

    func testDefaultPolicyRetriesTwiceAndFirstWaitsAtMostOneSecond() {
        let policy = ImageCache.RetryPolicy.default
        XCTAssertGreaterThanOrEqual(policy.maxRetries, 2)
        for _ in 0..<1_000 {
            let first = policy.delay(attempt: 1, retryAfter: nil)
            XCTAssertLessThanOrEqual(first, 1)
            XCTAssertGreaterThan(first, 0)
        }
        XCTAssertEqual(makeCache("default").retryPolicy.maxRetries, 2)
        XCTAssertEqual(ImageCache(uniqueName: "plain", directory: directory).retryPolicy, .default)
    }

    func testServerErrorThenSuccessRetriesAndDelivers() {
        let cache = makeCache()
        let events = recordEvents(cache)
        server.set("/flaky.png", sequence: [.status(500), .ok(fixture("photo.png"))])
        XCTAssertEqual(fetchAndWait(cache, server.url("/flaky.png"))?.data, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/flaky.png"), 2)
        XCTAssertFalse(cache.failedToFetch(server.url("/flaky.png")))
        callbacks.sync {}
        let seen = retries(events.value)
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen.first?.attempt, 1)
        XCTAssertEqual(seen.first?.error, .httpStatus(500))
    }

    func testTransientFailuresStopAfterTheRetriesAndSayItWasNotFatal() {
        let cache = makeCache()
        let events = recordEvents(cache)
        var unavailable = LoopbackServer.Response.status(503)
        unavailable.delay = 0.1
        server.set("/down.png", unavailable)
        let url = server.url("/down.png")
        let done = expectation(description: "gave up")
        cache.fetch(url) { _, image in
            XCTAssertNil(image)
            done.fulfill()
        }
        XCTAssertTrue(server.waitForRequests("/down.png", count: 2, timeout: 5))
        XCTAssertTrue(cache.fetching(url), "still fetching while it retries")
        XCTAssertFalse(cache.failedToFetch(url))
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.requestCount("/down.png"), 3, "one attempt and two retries")
        XCTAssertEqual(cache.error(for: url), .httpStatus(503))
        XCTAssertEqual(cache.error(for: url)?.isFatal, false)
        callbacks.sync {}
        XCTAssertEqual(retries(events.value).map(\.attempt), [1, 2])
        guard case .failed(_, let error)? = events.value.last else { return XCTFail("no failed event") }
        XCTAssertEqual(error, .httpStatus(503))
    }

    func testFatalFailuresAreNeverRetried() {
        let cache = makeCache()
        let cases: [(String, LoopbackServer.Response)] = [
            ("/404.png", .status(404)), ("/410.png", .status(410)), ("/403.png", .status(403)),
            ("/html.png", .ok(Data("<!doctype html><title>x</title>".utf8), contentType: "text/html")),
            ("/zero.png", .ok(Data())),
            ("/garbage.jpg", .ok(fixture("photo.jpg").prefix(30) + Data(repeating: 0x5A, count: 4000))),
        ]
        for (path, response) in cases {
            server.set(path, response)
            XCTAssertNil(fetchAndWait(cache, server.url(path)), path)
            XCTAssertEqual(cache.error(for: server.url(path))?.isFatal, true, path)
            XCTAssertEqual(server.requestCount(path), 1, "\(path) was retried")
        }
    }

    func testRetryAfterIsHonouredUpToTheCap() {
        let cache = makeCache()
        cache.retryPolicy = .init(maxRetries: 2, baseDelay: 0.01, maxRetryAfter: 0.3)
        let events = recordEvents(cache)
        var busy = LoopbackServer.Response.status(503)
        busy.headers["Retry-After"] = "0.2"
        var later = LoopbackServer.Response.status(429)
        later.headers["Retry-After"] = "3600"
        server.set("/busy.png", sequence: [busy, later, .ok(fixture("photo.png"))])
        XCTAssertNotNil(fetchAndWait(cache, server.url("/busy.png")))
        callbacks.sync {}
        let delays = retries(events.value).map(\.delay)
        XCTAssertEqual(delays, [0.2, 0.3], "Retry-After as sent, then cut to the cap")
        XCTAssertEqual(ImageCache.HTTP.retryAfter(HTTPURLResponse(url: server.url("/"), statusCode: 503, httpVersion: nil,
                                                              headerFields: ["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"])), 0)
    }

    func testAServerThatNeverAnswersTimesOut() {
        let cache = makeCache()
        cache.requestTimeout = 1
        cache.retryPolicy = .never
        var silent = LoopbackServer.Response()
        silent.behavior = .neverAnswer
        server.set("/silent.png", silent)
        let url = server.url("/silent.png")
        XCTAssertNil(fetchAndWait(cache, url, timeout: 10))
        XCTAssertEqual(cache.error(for: url), .network(.timedOut, cache.error(for: url).map { error -> String in
            if case .network(_, let text) = error { return text }
            return ""
        } ?? ""))
        XCTAssertEqual(cache.error(for: url)?.isFatal, false)
    }

    func testTooLargeFailsFatallyAndNamesItsLimit() {
        // A body over 4 MiB streams to disk, within 128 MiB by default: one of 130 MiB is refused
        // at its head
        let cache = makeCache()
        XCTAssertEqual(cache.maxImageBytes, 20 * 1024 * 1024)
        XCTAssertEqual(cache.maxDiskImageBytes, 128 * 1024 * 1024)
        let huge = LoopbackServer.Response(status: 200, headers: ["Content-Type": "image/png"],
                                           behavior: .generated(length: 130 * 1024 * 1024) { Data(count: $1) })
        server.set("/huge.png", huge)
        let url = server.url("/huge.png")
        XCTAssertNil(fetchAndWait(cache, url))
        XCTAssertEqual(cache.error(for: url), .tooLarge(limit: 128 * 1024 * 1024))
        XCTAssertEqual(cache.error(for: url)?.isFatal, true)
        XCTAssertEqual(server.requestCount("/huge.png"), 1)

        // With 1.0's single limit, `maxImageBytes` applies to every body
        cache.maxDiskImageBytes = 0
        cache.maxImageBytes = 500
        let photo = serve("/photo.png")
        XCTAssertNil(fetchAndWait(cache, photo))
        XCTAssertEqual(cache.error(for: photo), .tooLarge(limit: 500))
    }

    func testTooLargeOrErrorBodiesAreNotReadToTheEnd() {
        let cache = makeCache()
        cache.maxImageBytes = 1_000_000
        cache.maxDiskImageBytes = 0  // 1.0's single limit: no more on disk either
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

    func testBodyCutShortSaysTruncatedAndIsNotFatal() {
        let cache = makeCache()
        cache.retryPolicy = .never
        var short = LoopbackServer.Response.ok(fixture("photo.jpg").prefix(500))
        short.declaredLength = fixture("photo.jpg").count
        server.set("/short.jpg", short)
        let url = server.url("/short.jpg")
        XCTAssertNil(fetchAndWait(cache, url))
        XCTAssertEqual(cache.error(for: url), .truncatedBody(expected: Int64(fixture("photo.jpg").count), received: 500))
        XCTAssertEqual(cache.error(for: url)?.isFatal, false)
    }

    func testATruncatedBodyIsRetried() {
        let cache = makeCache()
        var short = LoopbackServer.Response.ok(fixture("photo.jpg").prefix(500))
        short.declaredLength = fixture("photo.jpg").count
        server.set("/short.jpg", sequence: [short, .ok(fixture("photo.jpg"))])
        XCTAssertEqual(fetchAndWait(cache, server.url("/short.jpg"))?.data, fixture("photo.jpg"))
        XCTAssertEqual(server.requestCount("/short.jpg"), 2)
    }

    func testRedirectLoopFailsFatally() {
        let cache = makeCache()
        var loop = LoopbackServer.Response.status(302)
        loop.headers["Location"] = "/loop.png"
        server.set("/loop.png", loop)
        let url = server.url("/loop.png")
        XCTAssertNil(fetchAndWait(cache, url, timeout: 20))
        XCTAssertEqual(cache.error(for: url)?.isFatal, true, String(describing: cache.error(for: url)))
        let requests = server.requestCount("/loop.png")
        XCTAssertNil(fetchAndWait(cache, url, timeout: 20))
        XCTAssertEqual(server.requestCount("/loop.png"), 2 * requests, "no retries: each fetch follows the loop once")
    }

    func testRandomBodiesAreNeverCached() {
        let cache = makeCache()
        var generator = SplitMix(seed: 9)
        for seed in 0..<200 {
            let body = Data((0..<Int(generator.next() % 2000 + 1)).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            server.set("/random\(seed)", .ok(body, contentType: "image/jpeg"))
        }
        let group = DispatchGroup()
        for seed in 0..<200 {
            group.enter()
            cache.fetch(server.url("/random\(seed)")) { _, image in
                XCTAssertNil(image)
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        for seed in 0..<200 { XCTAssertEqual(cache.error(for: server.url("/random\(seed)"))?.isFatal, true) }
        XCTAssertEqual(cache.memoryCount, 0)
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertEqual(server.totalRequests, 200)
    }

    func testOddURLsWorkAndStayInsideTheFolder() throws {
        let strings = [
            "/caf%C3%A9/%E2%98%95.png",
            "/with%20space.png",
            "/q.png?" + String(repeating: "a=1&", count: 400) + "z=%2F..%2F..%2Fescape",
            "/frag.png#section",
            "/../../etc/passwd.png",
        ]
        let cache = makeCache()
        for string in strings {
            let url = try XCTUnwrap(URL(string: "http://127.0.0.1:\(server.port)\(string)"), string)
            var components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: false))
            components.fragment = nil
            let sent = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
            server.set(sent, .ok(fixture("photo.png")))
            server.set(URL(string: sent, relativeTo: server.url("/"))!.standardized.path, .ok(fixture("photo.png")))  // dot segments resolved by the client
            XCTAssertNotNil(fetchAndWait(cache, url), string)
            XCTAssertNotNil(cache.peek(url), string)
        }
        cache.persistCacheToDisk()
        let files = try FileManager.default.contentsOfDirectory(atPath: cache.folder.path)
        XCTAssertTrue(files.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) }, "\(files)")
        let relaunched = makeCache()
        for string in strings { XCTAssertNotNil(fetchAndWait(relaunched, URL(string: "http://127.0.0.1:\(server.port)\(string)")!)) }
        XCTAssertEqual(server.totalRequests, strings.count)
    }

    // MARK: The disk under attack

    func testFolderDeletedWhileRunningHeals() throws {
        let cache = makeCache()
        let events = recordEvents(cache)
        let before = (0..<3).map { serve("/before\($0).png") }
        for url in before { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.persistCacheToDisk()
        try FileManager.default.removeItem(at: cache.folder)

        let after = (0..<3).map { serve("/after\($0).png") }
        for url in after { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.persistCacheToDisk()
        for url in after { XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)) }
        assertInvariants(cache)
        callbacks.sync {}
        XCTAssertTrue(events.value.contains { if case .diskProblem(let text) = $0 { return text.contains("deleted") }; return false })

        // What was in memory is still served; what only the deleted files held is fetched again.
        for url in before { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.purgeMemory()
        cache.persistCacheToDisk()
        let relaunched = makeCache()
        let requests = server.totalRequests
        for url in before + after { XCTAssertNotNil(fetchAndWait(relaunched, url)) }
        XCTAssertEqual(server.totalRequests, requests, "every image is on disk again after the purge")
        assertInvariants(relaunched)
    }

    func testFailingWritesAreReportedOnceAndHealWhenTheDiskComesBack() throws {
        let cache = makeCache()
        let events = recordEvents(cache)
        // The folder's place is taken by a file: every write fails, even for root.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("not a folder".utf8).write(to: cache.folder)
        let urls = (0..<5).map { serve("/w\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.persistCacheToDisk()
        callbacks.sync {}
        let problems = events.value.filter { if case .diskProblem = $0 { return true }; return false }
        XCTAssertEqual(problems.count, 1, "\(problems)")
        for url in urls { XCTAssertNotNil(cache.peek(url), "memory still serves") }

        // The disk comes back: the next persist writes what memory holds.
        try FileManager.default.removeItem(at: cache.folder)
        cache.persistCacheToDisk()
        for url in urls { XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)) }
        assertInvariants(cache)
        let relaunched = makeCache()
        for url in urls { XCTAssertNotNil(fetchAndWait(relaunched, url)) }
        XCTAssertEqual(server.totalRequests, 5)
    }

    func testDiskFullKeepsServingAndHeals() {
        let cache = makeCache()
        let events = recordEvents(cache)
        cache.injectDiskWriteError(.ENOSPC)
        let urls = (0..<4).map { serve("/full\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 0)
        callbacks.sync {}
        let problems: [String] = events.value.compactMap { if case .diskProblem(let text) = $0 { return text }; return nil }
        XCTAssertEqual(problems.count, 1)
        XCTAssertTrue(problems.first?.contains("No space left") ?? false, "\(problems)")

        cache.injectDiskWriteError(nil)
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 4)
        assertInvariants(cache)
    }
}
