import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 49: `maxImageBytes` bounds what a body holds in memory, `maxDiskImageBytes` what may be
/// cached at all (the docs said a body over `maxImageBytes` fails unless it is over 4 MiB).
final class BodyLimitTests: CacheTestCase {
    func testABodyPastMaxImageBytesStreamsToDiskAndIsDeliveredAndCached() {
        // Given a limit in memory below the photo's size
        let cache = makeCache()
        cache.maxImageBytes = 1_000
        let url = serve("/over.png")
        XCTAssertGreaterThan(fixture("photo.png").count, 1_000)
        // When it is fetched
        let image = fetchAndWait(cache, url)
        // Then it is delivered whole, and kept on disk: a new instance finds it without a request
        XCTAssertEqual(image?.data, fixture("photo.png"))
        cache.drainDisk()
        let next = makeCache()
        next.maxImageBytes = 1_000
        XCTAssertEqual(fetchAndWait(next, url)?.data, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/over.png"), 1)
    }

    func testABodyPastMaxDiskImageBytesIsNotCachedAtAll() {
        // Given both limits below the photo's size
        let cache = makeCache()
        cache.maxImageBytes = 500
        cache.maxDiskImageBytes = 800
        let url = serve("/too-large.png")
        // When it is fetched, then it fails at the larger limit, and nothing is kept
        XCTAssertNil(fetchAndWait(cache, url))
        XCTAssertEqual(cache.error(for: url), .tooLarge(limit: 800))
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 0)
    }
}
