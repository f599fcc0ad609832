import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The slow lane's start limit (`maxSlowStartsPerSecond`), measured at the loopback server: the
/// times its requests arrived. The tests wait on the deliveries, never on a duration; the limit
/// itself takes real seconds (200 prefetches at 50 a second take about four), which is the
/// behaviour under test.
final class StartLimitTests: CacheTestCase {
    func testTwoHundredPrefetchesAtFiftyASecondOpenNoMoreThanFiftyRequestsInAnySecondAndAllArrive() {
        // Given a cache whose slow lane starts at most 50 downloads a second, and 200 images
        let cache = makeCache()
        XCTAssertNil(cache.maxSlowStartsPerSecond, "off by default")
        cache.maxSlowStartsPerSecond = 50
        cache.imageMemoryMaxCount = 1_000  // memory keeps them all, for `peek` to say each arrived
        XCTAssertEqual(cache.maxSlowStartsPerSecond, 50)
        let urls = (0..<200).map { serve("/burst/\($0).png") }
        let served = expectation(description: "200 served")
        served.expectedFulfillmentCount = 200
        cache.onEvent = { if case .served(_, from: .network, _) = $0 { served.fulfill() } }
        // When all 200 are prefetched at once
        cache.prefetch(urls)
        // Then every one is delivered, and the server saw no more than 50 requests in any second:
        // the 51st request after any one arrived a second or more after it
        wait(for: [served], timeout: 60)
        let arrivals = server.arrivals.sorted()
        XCTAssertEqual(arrivals.count, 200)
        var mostInASecond = 0
        for (index, arrival) in arrivals.enumerated() {
            let within = arrivals[index...].prefix { $0 < arrival + 1 }.count
            mostInASecond = max(mostInASecond, within)
        }
        print("StartLimitTests: \(mostInASecond) requests in the busiest second, "
              + "\(String(format: "%.2f", arrivals.last! - arrivals.first!)) s from first to last")
        XCTAssertLessThanOrEqual(mostInASecond, 50)
        XCTAssertGreaterThanOrEqual(mostInASecond, 40, "the limit holds the burst back, not to a trickle")
        for url in urls { XCTAssertNotNil(cache.peek(url), "\(url)") }
    }

    func testAVisibleLoadDoesNotWaitForTheSlowLanesLimit() {
        // Given a slow lane held to one start a second, with thirty prefetches queued behind it (thirty seconds of them)
        let cache = makeCache()
        cache.maxSlowStartsPerSecond = 1
        let prefetched = (0..<30).map { serve("/later/\($0).png") }
        let visible = serve("/now.png")
        cache.prefetch(prefetched)
        XCTAssertTrue(server.waitForRequests("/later/0.png", count: 1, timeout: 10))
        // When a load for the screen comes
        let image = fetchAndWait(cache, visible)
        // Then it is delivered while the prefetches still wait for their turns
        XCTAssertNotNil(image)
        let started = (0..<30).filter { server.requestCount("/later/\($0).png") > 0 }.count
        XCTAssertLessThan(started, 30, "the visible load went first")
    }
}
