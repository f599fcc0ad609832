import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Metrics of a load (`Fetched.metrics`), against the loopback server's own figures: the bytes it
/// sent, the delay it waited before answering, the redirect it made.
final class TransferMetricsTests: CacheTestCase {
    func testALoadsMetricsGiveTheServersBytesAndADurationWithinTheServersAndTheTests() throws {
        // Given a server that answers after 0.2 s with the photo
        let cache = makeCache()
        let body = fixture("photo.png")
        var response = LoopbackServer.Response.ok(body)
        response.delay = 0.2
        server.set("/measured.png", response)
        // When it is fetched, the test timing the whole fetch
        let before = Date()
        let fetched = try XCTUnwrap(result(cache, server.url("/measured.png"))).get()
        let span = Date().timeIntervalSince(before)
        // Then the metrics give the bytes the server sent, its status, no redirect, and a duration
        // no shorter than the server's delay and no longer than the fetch
        let metrics = try XCTUnwrap(fetched.metrics)
        XCTAssertEqual(metrics.bytesReceived, body.count)
        XCTAssertEqual(metrics.statusCode, 200)
        XCTAssertEqual(metrics.redirects, 0)
        XCTAssertGreaterThanOrEqual(metrics.duration, 0.2)
        XCTAssertLessThanOrEqual(metrics.duration, span)
        XCTAssertGreaterThanOrEqual(metrics.sentAt.timeIntervalSince(before), -0.1)  // the coarse clock's resolution
        // And a load from memory has none
        XCTAssertNil(try XCTUnwrap(result(cache, server.url("/measured.png"))).get().metrics)
    }

    func testARedirectIsCounted() throws {
        // Given a path that redirects to the photo
        let cache = makeCache()
        let target = serve("/target.png")
        server.set("/moved.png", LoopbackServer.Response(status: 302, headers: ["Location": target.absoluteString]))
        // When it is fetched
        let fetched = try XCTUnwrap(result(cache, server.url("/moved.png"))).get()
        // Then its metrics count one redirect, and the target's bytes
        XCTAssertEqual(fetched.metrics?.redirects, 1)
        XCTAssertEqual(fetched.metrics?.bytesReceived, fixture("photo.png").count)
    }
}
