import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport: a task that a download starts off the session's delegate queue is resumed on it;
/// one cancelled, or whose session is replaced, before that resume runs still ends.
final class TransportTests: CacheTestCase {
    /// The transport's session and its transfers under way, read through reflection (no hook in the
    /// library); the count is read with no transfer starting or ending.
    private func session(_ cache: ImageCache) -> URLSession {
        Mirror(reflecting: cache.transport).children.first { $0.label == "session" }!.value as! URLSession
    }

    private func transfers(_ cache: ImageCache) -> Int {
        (Mirror(reflecting: cache.transport).children.first { $0.label == "transfers" }!.value as! [ObjectIdentifier: Any]).count
    }

    /// A fetch cancelled while its resume waits on the delegate queue (behind a callback, here one
    /// that blocks): its task is cancelled before it was ever resumed.
    func testAFetchCancelledBeforeItsQueuedResumeLeavesNoTransfer() {
        let url = serve("/held.png", delay: 0.2)
        let cache = makeCache()
        let block = DispatchSemaphore(value: 0)
        session(cache).delegateQueue.addOperation { block.wait() }
        let task = cache.fetch(url) { _, _ in XCTFail("a cancelled fetch's callback ran") }
        XCTAssertTrue(eventually { self.transfers(cache) == 1 }, "sent")
        task.cancel()
        XCTAssertTrue(task.isCancelled)
        block.signal()
        XCTAssertTrue(eventually(5) { self.transfers(cache) == 0 }, "a transfer left in Transport.transfers")
        XCTAssertEqual(cache.downloadCounts.running, 0)
        // And the cache still works.
        XCTAssertNotNil(fetchAndWait(cache, serve("/after.png")))
    }

    /// Many fetches cancelled right after they start, from several threads: every transfer ends.
    func testFetchesCancelledRightAfterTheyStartLeaveNoTransfer() {
        let cache = makeCache()
        let urls = (0..<300).map { serve("/quick\($0).png", delay: 0.05) }
        DispatchQueue.concurrentPerform(iterations: urls.count) { index in
            let task = cache.fetch(urls[index]) { _, _ in }
            if index % 3 != 0 { usleep(UInt32.random(in: 0...300)) }
            task.cancel()
        }
        XCTAssertTrue(eventually(10) { self.transfers(cache) == 0 }, "transfers left: \(transfers(cache))")
        assertInvariants(cache)
    }

    /// `requestTimeout` set (a new session, the old one finishing its tasks) while a resume waits.
    func testATimeoutChangedWhileAResumeWaitsStillDelivers() {
        let url = serve("/retimed.png")
        let cache = makeCache()
        let block = DispatchSemaphore(value: 0)
        session(cache).delegateQueue.addOperation { block.wait() }
        let done = expectation(description: "callback")
        let got = Locked<ImageCache.Image?>(nil)
        cache.fetch(url) { _, image in got.value = image; done.fulfill() }
        XCTAssertTrue(eventually { self.transfers(cache) == 1 }, "sent")
        cache.requestTimeout = 17
        block.signal()
        wait(for: [done], timeout: 10)
        XCTAssertNotNil(got.value)
        XCTAssertTrue(eventually { self.transfers(cache) == 0 })
    }
}
