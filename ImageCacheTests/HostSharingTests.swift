import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hosts sharing the lanes: a freed slot goes to the host with the fewest transfers under way. One
/// loopback server plays two hosts: `localhost` and `127.0.0.1`. Every test waits on the server's
/// counters or the callbacks; none on a duration.
final class HostSharingTests: CacheTestCase {
    private func delivered(_ log: Locked<[Said]>) -> Int {
        log.value.filter { if case .delivered(_, true) = $0 { return true }; return false }.count
    }

    func testOneHostAloneGetsEverySlot() {
        // Given 4 slots, and one host that answers when the test says so
        let cache = makeCache()
        cache.maxConcurrentDownloads = 4
        cache.stallTime = 60  // held requests must keep their slots however slow the machine
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/held/")
        let urls = (0..<12).map { server.url("/held/\($0).png") }
        let log = Locked<[Said]>([])
        // When twelve of its images are fetched
        let done = fetch(cache, urls, log)
        // Then it gets all four slots (not a share of them), and no more
        XCTAssertTrue(eventually(10) { server.activeRequests == 4 })
        XCTAssertEqual(server.totalRequests, 4)
        gate.open()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(delivered(log), 12)
        assertInvariants(cache)
    }

    func testFreedSlotsAreSharedBetweenTwoHostsWhoseRequestsWait() {
        // Given 4 slots held by one host's blockers, then 4 more of its requests and 4 of another
        // host's waiting
        let cache = makeCache()
        cache.maxConcurrentDownloads = 4
        cache.stallTime = 60  // held requests must keep their slots however slow the machine
        let blockers = Gate(), waves = Gate()
        defer { blockers.open(); waves.open() }
        serveBehind(blockers, prefix: "/block/")
        serveBehind(waves, prefix: "/wave/")
        let log = Locked<[Said]>([])
        let blocked = fetch(cache, (0..<4).map { localhost("/block/\($0).png") }, log)
        XCTAssertTrue(eventually(10) { server.activeRequests == 4 })
        let first = (0..<4).map { localhost("/wave/first/\($0).png") }
        let other = (0..<4).map { server.url("/wave/other/\($0).png") }
        let wavesDone = fetch(cache, first + other, log)
        cache.drainDisk()  // all looked up on disk, found nothing, and queued
        // When the blockers finish
        blockers.open()
        wait(for: [blocked], timeout: 10)
        // Then the four freed slots go two to each host, not four to the host that queued first
        XCTAssertTrue(eventually(10) { (first + other).filter { server.requestCount($0.path) == 1 }.count == 4 })
        XCTAssertEqual(first.filter { server.requestCount($0.path) == 1 }.count, 2)
        XCTAssertEqual(other.filter { server.requestCount($0.path) == 1 }.count, 2)
        waves.open()
        wait(for: [wavesDone], timeout: 10)
        XCTAssertEqual(delivered(log), 12)
        assertInvariants(cache)
    }
}
