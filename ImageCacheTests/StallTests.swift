import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stalled transfers: one that receives nothing for `stallTime` gives up its lane slot (within
/// `maxStalledDownloads`) and goes on within its deadlines. One loopback server plays two hosts:
/// `localhost` (the hung one) and `127.0.0.1`. Every test waits on events (the cache's, or the
/// server's counters); none on a duration.
final class StallTests: CacheTestCase {
    /// A cache whose transfers stall after 0.1 s without bytes, and which never retries.
    private func makeStallingCache() -> ImageCache {
        let cache = makeCache()
        cache.stallTime = 0.1
        cache.retryPolicy = .never
        return cache
    }

    /// Records the stalls and resumes `onEvent` hears into `log`; each stall of a path under
    /// `/hung/` fulfills `stalls` (on a loaded machine another host's transfer may stall too).
    private func record(_ cache: ImageCache, into log: Locked<[Said]>, stalls: XCTestExpectation? = nil) {
        cache.onEvent = { event in
            switch event {
            case .stalled(let url, _):
                log.mutate { $0.append(.stalled(url)) }
                if url.path.hasPrefix("/hung/") { stalls?.fulfill() }
            case .resumed(let url, _): log.mutate { $0.append(.resumed(url)) }
            default: break
            }
        }
    }

    func testAnotherHostsSixImagesArriveWhileAHungHostsSixAreStillOpenThenTheHungOnesFinish() {
        // Given a host that answers nothing until the test says so, and one that answers at once
        let cache = makeStallingCache()
        XCTAssertEqual(cache.maxConcurrentDownloads, 6)
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/hung/")
        let hung = (0..<6).map { localhost("/hung/\($0).png") }
        let quick = (0..<6).map { serve("/quick/\($0).png") }
        let log = Locked<[Said]>([])
        let stalls = expectation(description: "six stalls")
        stalls.expectedFulfillmentCount = 6
        record(cache, into: log, stalls: stalls)
        // When six requests go to the hung host and hold every slot (the server has them all),
        // then six go to the other
        let hungDone = fetch(cache, hung, log)
        XCTAssertTrue(eventually(10) { server.activeRequests == 6 })
        let quickDone = fetch(cache, quick, log)
        // Then the other host's six are delivered while the hung host's are still open, after a
        // stall gave the first of them a slot; and every hung transfer stalls
        wait(for: [quickDone, stalls], timeout: 10)
        callbacks.sync {}
        let said = log.value
        for url in quick { XCTAssertTrue(said.contains(.delivered(url, true)), "\(url)") }
        for url in hung {
            XCTAssertTrue(said.contains(.stalled(url)), "\(url)")
            XCTAssertTrue(cache.fetching(url))
        }
        XCTAssertFalse(said.contains { if case .delivered(let url, _) = $0 { return hung.contains(url) }; return false })
        let firstQuick = said.firstIndex { if case .delivered(let url, _) = $0 { return quick.contains(url) }; return false }
        let firstStall = said.firstIndex { if case .stalled = $0 { return true }; return false }
        XCTAssertLessThan(firstStall ?? .max, firstQuick ?? -1)
        XCTAssertTrue(eventually(10) { server.activeRequests == 6 })  // the quick ones' threads end too
        XCTAssertEqual(cache.statistics().stalledNow, 6)
        // When the hung host answers at last
        gate.open()
        // Then its transfers resume and deliver their images
        wait(for: [hungDone], timeout: 10)
        callbacks.sync {}
        for url in hung {
            XCTAssertTrue(log.value.contains(.resumed(url)), "\(url)")
            XCTAssertTrue(log.value.contains(.delivered(url, true)), "\(url)")
        }
        let statistics = cache.statistics()
        XCTAssertEqual(statistics.stalls, log.value.filter { if case .stalled = $0 { return true }; return false }.count)
        XCTAssertEqual(statistics.resumes, log.value.filter { if case .resumed = $0 { return true }; return false }.count)
        XCTAssertGreaterThanOrEqual(statistics.resumes, 6)
        XCTAssertEqual(statistics.stalledNow, 0)
        XCTAssertEqual(server.totalRequests, 12)
        assertInvariants(cache)
    }

    func testStalledTransfersStillFailByTheirOwnDeadline() {
        // Given a host that never answers, a 2-second limit per download, and a host that answers
        let cache = makeStallingCache()
        cache.downloadTimeLimit = 2
        server.fallback = LoopbackServer.Response(behavior: .neverAnswer)
        let dead = (0..<6).map { localhost("/dead/\($0).png") }
        let quick = (0..<6).map { serve("/quick/\($0).png") }
        let log = Locked<[Said]>([])
        record(cache, into: log)
        // When six requests go to the dead host, then six to the other
        let deadDone = fetch(cache, dead, log)
        let quickDone = fetch(cache, quick, log)
        // Then the other host's images come, and the dead host's stall and fail at their deadline
        wait(for: [quickDone, deadDone], timeout: 10)
        callbacks.sync {}
        for url in quick { XCTAssertTrue(log.value.contains(.delivered(url, true)), "\(url)") }
        for url in dead {
            XCTAssertTrue(log.value.contains(.stalled(url)), "\(url)")
            XCTAssertFalse(log.value.contains(.resumed(url)), "\(url)")
            XCTAssertTrue(log.value.contains(.delivered(url, false)), "\(url)")
            guard case .network(.timedOut, let text)? = cache.error(for: url) else {
                XCTFail("expected a timeout, got \(String(describing: cache.error(for: url)))")
                continue
            }
            XCTAssertTrue(text.contains("2-second limit"), text)
            XCTAssertTrue(server.waitForDisconnects(url.path, count: 1, timeout: 10))
        }
        XCTAssertEqual(cache.statistics().stalledNow, 0)
        assertInvariants(cache)
    }

    func testAThousandDeadURLsOpenNoMoreConnectionsThanTheLanesAndTheStallBound() {
        // Given 2 slots, room for 3 stalled transfers, and 1,000 URLs on two hosts that never
        // answer (URLSession alone would open up to 16 connections per host)
        let cache = makeStallingCache()
        cache.maxConcurrentDownloads = 2
        cache.maxStalledDownloads = 3
        cache.downloadTimeLimit = 2
        server.fallback = LoopbackServer.Response(behavior: .neverAnswer)
        let urls = (0..<1_000).map { $0 % 2 == 0 ? localhost("/dead/\($0).png") : server.url("/dead/\($0).png") }
        let failed = expectation(description: "ten deadlines passed")
        failed.expectedFulfillmentCount = 10
        failed.assertForOverFulfill = false
        // When they are all fetched, and transfers stall, time out and make room for the next
        let tasks = urls.map { url in cache.fetch(url) { _, image in if image == nil { failed.fulfill() } } }
        wait(for: [failed], timeout: 30)
        // Then the cache never had more than 2 + 3 transfers under way at once, and had more than 2
        // (stalled ones gave up their slots), and so did the server. The server's own count is not
        // bounded by 5: a transfer the cache cancelled at its deadline is over for the cache when
        // URLSession says so, and the server may not have seen its connection close by then.
        XCTAssertLessThanOrEqual(cache.mostTransfersAtOnce, 5)
        XCTAssertGreaterThan(cache.mostTransfersAtOnce, 2)
        XCTAssertGreaterThan(server.maxOpenConnections, 2)
        XCTAssertGreaterThan(cache.statistics().stalls, 2)
        XCTAssertLessThanOrEqual(cache.statistics().stalledNow, 5)
        for task in tasks { task.cancel() }
        XCTAssertTrue(eventually(10) { urls.allSatisfy { !cache.fetching($0) } })
        XCTAssertEqual(cache.statistics().stalledNow, 0)
        callbacks.sync {}
        assertInvariants(cache)
    }

    func testAStalledPrefetchLetsTheNextPrefetchOfAnotherHostRun() {
        // Given a prefetch (slow lane, one at a time) of a host that answers nothing yet
        let cache = makeStallingCache()
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/hung/")
        let hung = localhost("/hung/0.png")
        let quick = serve("/quick.png")
        let served = expectation(description: "the other host's prefetch served")
        let log = Locked<[Said]>([])
        cache.onEvent = { event in
            switch event {
            case .stalled(let url, _): log.mutate { $0.append(.stalled(url)) }
            case .served(quick, from: .network, _): served.fulfill()
            default: break
            }
        }
        // When it stalls, with another host's prefetch behind it
        cache.prefetch([hung, quick])
        // Then the other prefetch runs while the first is still open
        wait(for: [served], timeout: 10)
        XCTAssertTrue(log.value.contains(.stalled(hung)))
        XCTAssertTrue(cache.fetching(hung))
        gate.open()
        XCTAssertTrue(eventually(10) { !cache.fetching(hung) })
        XCTAssertNotNil(cache.peek(hung))
        assertInvariants(cache)
    }

    func testPrefetchesShareTheSlowLaneBetweenHostsAsFetchesShareTheFastOne() {
        // Given a prefetch of a hung host whose transfer stalled but may not give up its slot yet
        // (no room for stalled transfers), and behind it two more of that host and one of another
        let cache = makeStallingCache()
        cache.maxStalledDownloads = 0
        let gate = Gate()
        defer { gate.open() }
        let photo = fixture("photo.png")
        let order = Locked<[String]>([])
        server.handler = { path in
            order.mutate { $0.append(path) }
            if path.hasPrefix("/hung/") { gate.wait() }
            return .ok(photo)
        }
        let hung = (0..<3).map { localhost("/hung/\($0).png") }
        let quick = server.url("/quick.png")
        let log = Locked<[Said]>([])
        let stalls = expectation(description: "the first stall")
        stalls.assertForOverFulfill = false
        record(cache, into: log, stalls: stalls)
        cache.prefetch([hung[0]])
        wait(for: [stalls], timeout: 10)
        cache.prefetch(Array(hung[1...]) + [quick])
        cache.drainDisk()  // all looked up on disk, found nothing, and queued
        // When the stalled transfer may give up its slot
        cache.maxStalledDownloads = 6
        // Then the other host's prefetch goes first, though queued last: the hung host has a
        // transfer under way and the other none
        XCTAssertTrue(eventually(10) { order.value.count >= 3 })
        XCTAssertEqual(Array(order.value.prefix(3)), ["/hung/0.png", "/quick.png", "/hung/1.png"])
        gate.open()
        XCTAssertTrue(eventually(10) { hung.allSatisfy { !cache.fetching($0) } })
        assertInvariants(cache)
    }

    func testAStalledSlowDownloadMovedToTheFastLaneStaysStalledAndHoldsNoSlot() {
        // Given a slow fetch whose transfer stalled, and one fast slot
        let cache = makeStallingCache()
        cache.maxConcurrentDownloads = 1
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/hung/")
        let hung = localhost("/hung/0.png")
        let log = Locked<[Said]>([])
        let stalled = expectation(description: "stalled")
        cache.onEvent = { event in
            switch event {
            case .stalled(let url, _):
                log.mutate { $0.append(.stalled(url)) }
                if url == hung { stalled.fulfill() }
            case .resumed(let url, _): log.mutate { $0.append(.resumed(url)) }
            default: break
            }
        }
        let slowDone = fetch(cache, [hung], log, slow: true)
        wait(for: [stalled], timeout: 10)
        // When a fetch moves it to the fast lane
        let fastDone = fetch(cache, [hung], log)
        // Then it is still stalled, and the fast slot is free for another host's image
        XCTAssertEqual(cache.statistics().stalledNow, 1)
        XCTAssertEqual(cache.downloadCounts.running, 0)
        XCTAssertNotNil(fetchAndWait(cache, serve("/quick.png")))
        // And when the host answers, it resumes and both requests get the image
        gate.open()
        wait(for: [slowDone, fastDone], timeout: 10)
        XCTAssertEqual(log.value.filter { $0 == .delivered(hung, true) }.count, 2)
        XCTAssertEqual(log.value.filter { $0 == .stalled(hung) || $0 == .resumed(hung) }, [.stalled(hung), .resumed(hung)])
        XCTAssertEqual(server.requestCount("/hung/0.png"), 1)
        assertInvariants(cache)
    }
}
