import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 49: a variant's fetch heard no progress before its completion, about one run in ten under
/// load. The job's request for its original runs its hooks on `variantQueue`, which is concurrent:
/// the progress call (checked with `isWaiting`) and the request's answer were two blocks there, and
/// when the answer ran first the progress was dropped, so the job's fetches heard nothing. These
/// tests hold that queue shut (a gate, not a delay) while the download ends: the fetch must have
/// heard its progress and its retries before the original's answer can run.
final class ProgressOrderTests: CacheTestCase {
    /// Holds `variantQueue` shut until `open` (or the test's end).
    private final class HeldQueue {
        private var held = true
        init() { ImageCache.variantQueue.suspend() }
        func open() {
            if held { ImageCache.variantQueue.resume() }
            held = false
        }
        deinit { open() }
    }

    func testAVariantsFetchHearsProgressBeforeItsOriginalsAnswerRuns() {
        let cache = makeCache()
        let url = serve("/held.png")
        let heard = Locked<[Int]>([])
        let done = expectation(description: "done")
        let request = ImageCache.Request(url: url, processors: [ImageCache.Processor("same") { $0 }])
        let gate = HeldQueue()
        cache.fetch(request, onProgress: { received, _ in heard.mutate { $0.append(received) } }) { _ in done.fulfill() }
        // While the original's answer cannot run, the download's progress has reached the fetch
        XCTAssertTrue(eventually { !heard.value.isEmpty })
        gate.open()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(heard.value.last, fixture("photo.png").count)
    }

    func testAVariantsFetchHearsItsRetryBeforeItsOriginalsAnswerRuns() {
        let cache = makeCache()
        server.set("/held-flaky.png", sequence: [.status(503), .ok(fixture("photo.png"))])
        let retried = Locked(0)
        let done = expectation(description: "done")
        let request = ImageCache.Request(url: server.url("/held-flaky.png"), processors: [ImageCache.Processor("same") { $0 }])
        let gate = HeldQueue()
        cache.fetch(request, onRetry: { _, _ in retried.mutate { $0 += 1 } }) { _ in done.fulfill() }
        XCTAssertTrue(eventually { retried.value == 1 })
        gate.open()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(retried.value, 1)
    }
}
