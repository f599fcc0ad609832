import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Misses that explain themselves: each reason a tier gives is read from the load that got it
/// (`Fetched.misses`), summed in `statistics().missReasons`, and written by `missLog`.
final class MissReasonTests: CacheTestCase {
    private func serve(_ path: String, headers: [String: String], body: Data? = nil) -> URL {
        var response = LoopbackServer.Response.ok(body ?? fixture("photo.png"))
        response.headers.merge(headers) { $1 }
        server.set(path, response)
        return server.url(path)
    }

    /// The result of fetching `request` (a `Request`), waited for.
    private func result(_ cache: ImageCache, _ request: ImageCache.Request) -> ImageResult? {
        let done = expectation(description: "result")
        let result = Locked<ImageResult?>(nil)
        cache.fetch(request) { received in
            result.value = received
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value
    }

    func testAFirstLoadSaysNotThereInMemoryAndOnDiskAndALaterOneFromDiskSaysMemoryOnly() throws {
        // Given an image never fetched
        let url = serve("/first.png")
        let lines = Locked<[String]>([])
        let cache = makeCache()
        cache.missLog = ImageCache.MissLog { line in lines.mutate { $0.append(line) } }
        // When it is fetched, then fetched by a new instance (its memory empty)
        let first = try XCTUnwrap(result(cache, url)).get()
        cache.drainDisk()
        let second = try XCTUnwrap(result(makeCache(), url)).get()
        let third = try XCTUnwrap(result(cache, url)).get()
        // Then the first says that memory and disk had nothing, the second that memory had nothing,
        // and the memory hit says nothing
        XCTAssertEqual(first.source, .network)
        XCTAssertEqual(first.misses.memory, .absent)
        XCTAssertEqual(first.misses.disk, .absent)
        XCTAssertNil(first.misses.network)
        XCTAssertEqual(second.source, .disk)
        XCTAssertEqual(second.misses.memory, .absent)
        XCTAssertNil(second.misses.disk)
        XCTAssertEqual(third.source, .memory)
        XCTAssertEqual(third.misses, ImageCache.Misses())
        // And the log said it in words, and the statistics count it
        callbacks.sync {}
        XCTAssertEqual(lines.value, ["\(url.absoluteString) from network: memory: not there; disk: not there"])
        XCTAssertEqual(cache.statistics().missReasons, [.absent: 2])
    }

    func testAnExpiredEntrySaysExpiredAndHowItWasRevalidated() throws {
        // Given an image with an ETag, expired since it was fetched
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let url = serve("/tagged.png", headers: ["ETag": "\"v1\""])
        XCTAssertNotNil(try result(cache, url)?.get())
        clock.advance(601)
        // When it is fetched again and the server says 304
        let renewed = try XCTUnwrap(result(cache, url)).get()
        // Then memory and disk said expired, and the network not modified
        XCTAssertEqual(renewed.misses.memory, .expired)
        XCTAssertEqual(renewed.misses.disk, .expired)
        XCTAssertEqual(renewed.misses.network, .notModified)
        XCTAssertEqual(renewed.misses.description,
                       "memory: expired; disk: expired; network: revalidated: 304 Not Modified")
        // When it expires again and the server has changed it
        clock.advance(601)
        _ = serve("/tagged.png", headers: ["ETag": "\"v2\""], body: fixture("photo.jpg"))
        let changed = try XCTUnwrap(result(cache, url)).get()
        // Then the network said it changed (a 200)
        XCTAssertEqual(changed.misses.network, .modified)
        XCTAssertEqual(cache.statistics().missReasons[.notModified], 1)
        XCTAssertEqual(cache.statistics().missReasons[.modified], 1)
        XCTAssertEqual(cache.statistics().missReasons[.expired], 4)
    }

    func testAReloadSaysTheOptionRefusedBothTiers() throws {
        // Given an image in memory and on disk
        let cache = makeCache()
        let url = serve("/reload.png")
        XCTAssertNotNil(try result(cache, url)?.get())
        // When it is fetched with reloadIgnoringCachedData
        let reloaded = try XCTUnwrap(result(cache, ImageCache.Request(url: url, options: .reloadIgnoringCachedData))).get()
        // Then memory and disk said the option kept them from being read
        XCTAssertEqual(reloaded.source, .network)
        XCTAssertEqual(reloaded.misses.memory, .refusedByOption)
        XCTAssertEqual(reloaded.misses.disk, .refusedByOption)
    }

    func testAnImageEvictedByTheCountLimitSaysSo() throws {
        // Given memory that holds one image, and two images fetched in turn
        let cache = makeCache()
        cache.imageMemoryMaxCount = 1
        let (first, second) = (serve("/one.png"), serve("/two.png"))
        XCTAssertNotNil(try result(cache, first)?.get())
        XCTAssertNotNil(try result(cache, second)?.get())
        // When the first is fetched again
        let again = try XCTUnwrap(result(cache, first)).get()
        // Then memory says the count limit evicted it, and the disk had it
        XCTAssertEqual(again.source, .disk)
        XCTAssertEqual(again.misses.memory, .evictedByCountLimit)
        XCTAssertNil(again.misses.disk)
    }

    func testAnImageEvictedByTheByteLimitSaysSo() throws {
        // Given memory that holds four images' bytes (one may cost a quarter), and five fetched in turn
        let cache = makeCache()
        cache.imageMemoryMaxBytes = 4 * fixture("photo.png").count + 10
        let urls = (0..<5).map { serve("/bytes/\($0).png") }
        for url in urls { XCTAssertNotNil(try result(cache, url)?.get()) }
        // When the first is fetched again
        let again = try XCTUnwrap(result(cache, urls[0])).get()
        // Then memory says the byte limit evicted it
        XCTAssertEqual(again.misses.memory, .evictedByByteLimit)
    }

    func testALoadAfterAFailureSaysAnEarlierLoadFailed() throws {
        // Given a URL whose first load failed with a 404, then fixed
        let cache = makeCache()
        server.set("/later.png", .status(404))
        guard case .failure(.httpStatus(404))? = result(cache, server.url("/later.png")) else { return XCTFail() }
        let url = serve("/later.png")
        // When it is fetched again
        let fetched = try XCTUnwrap(result(cache, url)).get()
        // Then memory says an earlier load failed
        XCTAssertEqual(fetched.misses.memory, .failedEarlier)
        XCTAssertEqual(fetched.misses.disk, .absent)
    }

    func testAnImageInMemoryAtAnotherSizeOnlySaysSo() throws {
        // Given an image in memory at one size
        let cache = makeCache()
        let url = serve("/sized.png")
        let small = ImageCache.Request(url: url, size: CGSize(width: 10, height: 10))
        XCTAssertNotNil(try result(cache, small)?.get())
        // When the whole image is fetched
        let whole = try XCTUnwrap(result(cache, url)).get()
        // Then memory says it had another size only
        XCTAssertEqual(whole.misses.memory, .otherVariantOnly)
    }
}
