import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Per-load choices (issue 40): reload, only from cache, not to disk, not in memory, a completion
/// that waits for the file, and the pairs that contradict each other.
final class OptionsTests: CacheTestCase {
    /// Fetches `request` with the Result form and waits for its result.
    private func load(_ cache: ImageCache, _ request: ImageCache.Request) -> ImageResult? {
        let done = expectation(description: "\(request)")
        let result = Locked<ImageResult?>(nil)
        cache.fetch(request) { received in
            result.value = received
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value
    }

    private func exists(_ cache: ImageCache, _ url: URL) -> Bool {
        cache.diskQueue.sync {}  // the writes queued so far are done
        return FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)
    }

    func testAReloadDownloadsAFreshImageAgainAndReplacesItInBothTiers() throws {
        let cache = makeCache()
        let url = server.url("/reload.png")
        server.set("/reload.png", .ok(png(width: 1_000)))
        XCTAssertEqual(fetchAndWait(cache, url)?.width, 1_000)
        XCTAssertTrue(exists(cache, url))
        // The server has a new image; memory and disk have the old one, fresh
        server.set("/reload.png", .ok(png(width: 2_000)))
        XCTAssertEqual(fetchAndWait(cache, url)?.width, 1_000)
        XCTAssertEqual(server.requestCount("/reload.png"), 1)
        // A reload asks the server, and what it gets replaces the old image in memory and on disk
        let reloaded = try XCTUnwrap(load(cache, ImageCache.Request(url: url, options: .reloadIgnoringCachedData))).get()
        XCTAssertEqual(reloaded.value.width, 2_000)
        XCTAssertEqual(reloaded.source, .network)
        XCTAssertEqual(server.requestCount("/reload.png"), 2)
        XCTAssertEqual(cache.peek(url)?.width, 2_000)
        cache.purgeMemory()
        let fromDisk = try XCTUnwrap(load(cache, ImageCache.Request(url: url))).get()
        XCTAssertEqual(fromDisk.value.width, 2_000)
        XCTAssertEqual(fromDisk.source, .disk)
        cache.persistCacheToDisk()
        let next = try XCTUnwrap(load(makeCache(), ImageCache.Request(url: url))).get()
        XCTAssertEqual(next.value.width, 2_000)
        XCTAssertEqual(next.source, .disk)
        XCTAssertEqual(server.requestCount("/reload.png"), 2)
    }

    func testOnlyFromCacheAnswersFromMemoryOrDiskAndFailsAMissAtOnceWithNoRequest() throws {
        let cache = makeCache()
        let url = serve("/cached.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        let onlyCached = ImageCache.Request(url: url, options: .onlyFromCache)
        XCTAssertEqual(try XCTUnwrap(load(cache, onlyCached)).get().source, .memory)
        cache.purgeMemory()
        let fromDisk = try XCTUnwrap(load(cache, onlyCached)).get()
        XCTAssertEqual(fromDisk.source, .disk)
        XCTAssertFalse(fromDisk.isStale)
        XCTAssertNotNil(cache.peek(url), "kept in memory")
        XCTAssertEqual(server.requestCount("/cached.png"), 1)
        // A miss: no request, a failure at once that says why, remembered nowhere
        let missing = serve("/never.png")
        guard case .failure(let error)? = load(cache, ImageCache.Request(url: missing, options: .onlyFromCache)) else {
            return XCTFail("a miss did not fail")
        }
        guard case .network(.resourceUnavailable, let why) = error else { return XCTFail("\(error)") }
        XCTAssertTrue(why.contains("onlyFromCache"), why)
        XCTAssertEqual(server.requestCount("/never.png"), 0)
        XCTAssertNil(cache.error(for: missing))
        XCTAssertFalse(cache.fetching(missing))
    }

    func testOnlyFromCacheServesAnExpiredFileMarkedStale() throws {
        // Given an expired file the disk keeps (it has a validator to revalidate it with)
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        server.set("/old.png", LoopbackServer.Response(headers: ["ETag": "\"v1\""], body: fixture("photo.png")))
        let url = server.url("/old.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.purgeMemory()
        clock.advance(cache.imageTimeToLive + 10)
        let old = try XCTUnwrap(load(cache, ImageCache.Request(url: url, options: .onlyFromCache))).get()
        XCTAssertTrue(old.isStale)
        XCTAssertEqual(old.source, .disk)
        XCTAssertNil(cache.peek(url), "an expired entry is not kept in memory")
        XCTAssertEqual(server.requestCount("/old.png"), 1)
    }

    func testALoadNotWrittenToDiskLeavesNoFileAndANewInstanceDownloadsItAgain() throws {
        let cache = makeCache()
        let url = serve("/private.png")
        let request = ImageCache.Request(url: url, options: .notWrittenToDisk)
        XCTAssertNotNil(try XCTUnwrap(load(cache, request)).get().value)
        XCTAssertNotNil(cache.peek(url), "kept in memory")
        XCTAssertFalse(exists(cache, url))
        cache.persistCacheToDisk()
        XCTAssertFalse(exists(cache, url))
        cache.imageMemoryMaxCount = 1
        XCTAssertNotNil(fetchAndWait(cache, serve("/other.png")))  // evicts it: still not written
        cache.purgeMemory()
        XCTAssertFalse(exists(cache, url))
        XCTAssertNotNil(fetchAndWait(makeCache(), url))
        XCTAssertEqual(server.requestCount("/private.png"), 2)
    }

    func testAReloadNotWrittenToDiskRemovesTheOlderFile() {
        let cache = makeCache()
        let url = serve("/older.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertTrue(exists(cache, url))
        _ = load(cache, ImageCache.Request(url: url, options: [.reloadIgnoringCachedData, .notWrittenToDisk]))
        XCTAssertFalse(exists(cache, url), "the older file is not the image memory has now")
    }

    func testALoadNotKeptInMemoryLeavesPeekEmptyAndItsFileServesTheNext() throws {
        let cache = makeCache()
        let url = serve("/disk-only.png")
        let request = ImageCache.Request(url: url, options: .notKeptInMemory)
        XCTAssertNotNil(try XCTUnwrap(load(cache, request)).get().value)
        XCTAssertNil(cache.peek(url))
        XCTAssertTrue(exists(cache, url))
        let again = try XCTUnwrap(load(cache, request)).get()
        XCTAssertEqual(again.source, .disk)
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(server.requestCount("/disk-only.png"), 1)
    }

    func testAWaitingCompletionRunsOnlyAfterTheFileIsWritten() {
        // Given a download under way, held at the server
        let cache = makeCache()
        let (network, url) = (Gate(), server.url("/waits.png"))
        serveBehind(network, prefix: "/waits")
        let plain = expectation(description: "the plain fetch")
        let waiting = expectation(description: "the waiting fetch")
        let order = Locked<[String]>([])
        cache.fetch(url) { _, _ in
            order.mutate { $0.append("plain") }
            plain.fulfill()
        }
        cache.fetch(ImageCache.Request(url: url, options: .waitsForDiskWrite)) { _ in
            let written = FileManager.default.fileExists(atPath: self.fileURL(cache, for: url).path)
            order.mutate { $0.append(written ? "waiting, written" : "waiting, not written") }
            waiting.fulfill()
        }
        XCTAssertTrue(eventually { self.server.requestCount("/waits.png") == 1 })
        // When the disk queue is held while the body arrives (its write waits behind it)
        let disk = Gate()
        cache.diskQueue.async { disk.wait() }
        network.open()
        // Then the plain fetch is answered, the waiting one not until the file is written
        wait(for: [plain], timeout: 10)
        XCTAssertEqual(order.value, ["plain"])
        disk.open()
        wait(for: [waiting], timeout: 10)
        XCTAssertEqual(order.value, ["plain", "waiting, written"])
    }

    func testOptionsThatContradictEachOtherAreRefusedAndSendNothing() {
        let cache = makeCache()
        let url = serve("/contradiction.png")
        for options: ImageCache.Request.Options in [[.onlyFromCache, .reloadIgnoringCachedData],
                                                    [.notWrittenToDisk, .waitsForDiskWrite]] {
            guard case .failure(let error)? = load(cache, ImageCache.Request(url: url, options: options)) else {
                return XCTFail("\(options) did not fail")
            }
            guard case .invalidRequest(let why) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("contradict"), why)
        }
        XCTAssertEqual(server.requestCount("/contradiction.png"), 0)
        XCTAssertNil(cache.peek(url))
    }

    func testAVariantOnlyFromCacheIsMadeFromTheFile() throws {
        let cache = makeCache()
        let url = serve("/variant-cached.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.purgeMemory()
        let wide = png(width: 1_234)
        let request = ImageCache.Request(url: url, processors: [ImageCache.Processor("wide") { _ in ImageCache.Image(data: wide) }],
                                         options: .onlyFromCache)
        let made = try XCTUnwrap(load(cache, request)).get()
        XCTAssertEqual(made.value.width, 1_234)
        XCTAssertEqual(made.source, .disk)
        XCTAssertEqual(server.requestCount("/variant-cached.png"), 1)
        // Kept in memory as a variant, and forgotten with its key
        XCTAssertEqual(cache.peek(request)?.width, 1_234)
        cache.remove(url)
        XCTAssertNil(cache.peek(request))
    }
}
