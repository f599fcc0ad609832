import Foundation
import XCTest
@testable import ImageCache

/// The clock that ticks a playing animation: a timer on a queue, on every platform.
final class FrameClockTests: XCTestCase {
    func testAClockTicksOnItsQueueUntilItsTickSaysStop() {
        // Given a clock on a queue of its own whose tick asks for three ticks
        let queue = DispatchQueue(label: "FrameClockTests")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let third = expectation(description: "third tick")
        let ticks = Locked(0), offQueue = Locked(0)
        let clock = ImageCache.FrameClock(queue: queue, interval: 0.001) {
            if DispatchQueue.getSpecific(key: key) != true { offQueue.mutate { $0 += 1 } }
            let count = ticks.mutate { $0 += 1; return $0 }
            if count == 3 { third.fulfill() }
            return count < 3
        }

        // When it starts
        queue.sync { clock.start() }

        // Then it ticks three times on its queue, and then no more: it stopped itself
        wait(for: [third], timeout: 10)
        queue.sync {
            XCTAssertFalse(clock.isRunning)
            XCTAssertEqual(ticks.value, 3)
        }
        XCTAssertEqual(offQueue.value, 0)
    }
}
