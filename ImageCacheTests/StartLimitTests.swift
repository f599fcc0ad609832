import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The slow lane's start limit (`maxSlowStartsPerSecond`), measured at the loopback server: the
/// times its requests arrived. The tests wait on the deliveries, never on a duration; the limit
/// itself takes real seconds (2,000 prefetches at 50 a second take at least 39), which is the
/// behaviour under test.
final class StartLimitTests: CacheTestCase {
    func testTwoThousandPrefetchesAtFiftyASecondOpenNoMoreThanFiftyRequestsInAnySecondAndAllArrive() {
        // Given a cache whose slow lane starts at most 50 downloads a second, and 2,000 images
        let cache = makeCache()
        XCTAssertNil(cache.maxSlowStartsPerSecond, "off by default")
        cache.maxSlowStartsPerSecond = 50
        XCTAssertEqual(cache.maxSlowStartsPerSecond, 50)
        let count = 2_000
        let urls = (0..<count).map { serve("/burst/\($0).png") }
        let served = expectation(description: "\(count) served")
        served.expectedFulfillmentCount = count
        let delivered = Locked<Set<URL>>([])
        cache.onEvent = { event in
            guard case .served(let url, from: .network, _) = event else { return }
            _ = delivered.mutate { $0.insert(url) }
            served.fulfill()
        }
        // When all 2,000 are prefetched at once
        cache.prefetch(urls)
        // Then every one is delivered, and the server saw no more than 50 requests in any second:
        // the 51st request after any one arrived a second or more after it. (No floor on the
        // rate: on a loaded machine fewer than 50 a second is slow, not wrong.)
        wait(for: [served], timeout: 600)
        XCTAssertEqual(delivered.value, Set(urls))
        let arrivals = server.arrivals.sorted()
        XCTAssertEqual(arrivals.count, count, "one request per image")
        var mostInASecond = 0
        var start = 0
        for (index, arrival) in arrivals.enumerated() {
            while arrivals[start] <= arrival - 1 { start += 1 }  // the arrivals in (arrival - 1 s, arrival]
            mostInASecond = max(mostInASecond, index - start + 1)
        }
        print("StartLimitTests: \(mostInASecond) requests in the busiest second, "
              + "\(String(format: "%.2f", arrivals.last! - arrivals.first!)) s from first to last")
        XCTAssertLessThanOrEqual(mostInASecond, 50)
        assertInvariants(cache)
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
