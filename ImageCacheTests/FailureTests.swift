import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Bad answers from the server: each delivers nil, says why, and caches nothing.
final class FailureTests: CacheTestCase {
    /// Fetches `path` as served by `response` and checks the common failure contract.
    @discardableResult
    private func assertFails(_ path: String, _ response: LoopbackServer.Response, timeout: TimeInterval = 10,
                             file: StaticString = #filePath, line: UInt = #line) -> ImageCache.Error? {
        let cache = makeCache(UUID().uuidString)
        server.set(path, response)
        let url = server.url(path)
        XCTAssertNil(fetchAndWait(cache, url, timeout: timeout, file: file, line: line), file: file, line: line)
        XCTAssertTrue(cache.failedToFetch(url), file: file, line: line)
        XCTAssertFalse(cache.fetching(url), file: file, line: line)
        XCTAssertNil(cache.peek(url), file: file, line: line)
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 0, "nothing is cached", file: file, line: line)
        return cache.error(for: url)
    }

    func testNotFoundSaysTheStatusAndIsFatal() {
        let error = assertFails("/missing.png", .status(404))
        XCTAssertEqual(error, .httpStatus(404))
        XCTAssertEqual(error?.isFatal, true)
        XCTAssertTrue(error?.description.contains("404") ?? false)
    }

    func testOther4xxIsFatal() {
        XCTAssertEqual(assertFails("/forbidden.png", .status(403))?.isFatal, true)
        XCTAssertEqual(assertFails("/gone.png", .status(410))?.isFatal, true)
    }

    func testServerErrorIsNotFatal() {
        let error = assertFails("/boom.png", .status(500))
        XCTAssertEqual(error, .httpStatus(500))
        XCTAssertEqual(error?.isFatal, false)
    }

    func testHTMLPageIsNotAnImage() {
        let html = Data("<!DOCTYPE html><html><body>Sign in</body></html>".utf8)
        let error = assertFails("/page.png", .ok(html, contentType: "text/html"))
        XCTAssertEqual(error, .notAnImage("an HTML page"))
        XCTAssertTrue(error?.description.contains("not an image") ?? false)
        XCTAssertEqual(error?.isFatal, true)
    }

    func testEmptyBodyIsNotAnImage() {
        let error = assertFails("/empty.png", .ok(Data()))
        XCTAssertEqual(error, .emptyBody)
        XCTAssertTrue(error?.description.contains("not an image") ?? false)
    }

    func testBodyShorterThanItsContentLengthFails() {
        var response = LoopbackServer.Response.ok(fixture("photo.jpg").prefix(1000))
        response.declaredLength = fixture("photo.jpg").count
        let error = assertFails("/short.jpg", response)
        XCTAssertEqual(error?.isFatal, false)
        // libcurl reports it as a transfer closed early; the message names it.
        XCTAssertTrue(error?.description.contains("remaining") ?? false || error?.description.contains("truncated") ?? false,
                      error?.description ?? "nil")
    }

    func testImageCutShortWithAMatchingLengthIsCorrupt() {
        let cut = fixture("photo.png").prefix(600)
        let error = assertFails("/cut.png", .ok(Data(cut)))
        guard case .corruptImage(.png, let reason)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertTrue(reason.contains("truncated"), reason)
    }

    func testHangUpIsANetworkError() {
        var response = LoopbackServer.Response.ok(Data())
        response.behavior = .hangUp
        let error = assertFails("/hangup.png", response)
        guard case .network? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(error?.isFatal, false)
    }

    func testRefusedConnectionIsANetworkError() {
        let cache = makeCache()
        let url = server.url("/refused.png")
        server.stop()
        XCTAssertNil(fetchAndWait(cache, url))
        guard case .network(let code, _)? = cache.error(for: url) else {
            return XCTFail("\(String(describing: cache.error(for: url)))")
        }
        XCTAssertEqual(code, .cannotConnectToHost)
    }

    func testUnsupportedSchemeFailsAtOnceWithoutARequest() {
        let cache = makeCache()
        // (`data:` URLs load since issue 48; `file:` only through a `FileSource`, which this cache has not.)
        for string in ["ftp://127.0.0.1/a.png", "file:///etc/passwd", "library:///a.png"] {
            let url = URL(string: string)!
            XCTAssertNil(fetchAndWait(cache, url))
            XCTAssertEqual(cache.error(for: url), .unsupportedURL(string))
            XCTAssertEqual(cache.error(for: url)?.isFatal, true)
        }
        XCTAssertEqual(server.totalRequests, 0)
    }

    func testFailureClearsWhenFetchedAgainOrRemoved() {
        let cache = makeCache()
        cache.retryPolicy = .never
        server.set("/flaky.png", sequence: [.status(500), .ok(fixture("photo.png"))])
        let url = server.url("/flaky.png")
        XCTAssertNil(fetchAndWait(cache, url))
        XCTAssertTrue(cache.failedToFetch(url))
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertFalse(cache.failedToFetch(url))
        XCTAssertNil(cache.error(for: url))

        server.set("/bad.png", .status(404))
        let bad = server.url("/bad.png")
        XCTAssertNil(fetchAndWait(cache, bad))
        XCTAssertTrue(cache.failedToFetch(bad))
        cache.remove(bad)
        XCTAssertFalse(cache.failedToFetch(bad))
        XCTAssertNil(cache.error(for: bad))
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

    func testFailingURLDoesNotDisturbOthers() {
        let cache = makeCache()
        server.set("/bad.png", .status(404))
        let good = serve("/good.png")
        XCTAssertNil(fetchAndWait(cache, server.url("/bad.png")))
        XCTAssertNotNil(fetchAndWait(cache, good))
        XCTAssertNotNil(cache.peek(good))
    }
}
