import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Compressed transfers: the cache asks for none, takes a compressed body for what it is once
/// URLSession has inflated it, and counts `maxImageBytes` in inflated bytes (a gzip bomb).
///
/// Fixtures (made once with Python's gzip module, level 9, mtime 0): `photo.png.gz` is
/// `photo.png` gzipped (1,109 bytes, more than the PNG's 1,086: images do not compress), and
/// `gzip-bomb-150MiB.gz` is 150 MiB of zeros gzipped (152,907 bytes).
final class CompressedTransferTests: CacheTestCase {

    private func gzipped(_ fixtureName: String) -> LoopbackServer.Response {
        LoopbackServer.Response(headers: ["Content-Type": "image/png", "Content-Encoding": "gzip"], body: fixture(fixtureName))
    }

    func testRequestsAskForTheIdentityEncoding() {
        // Given
        let cache = makeCache()
        let url = serve("/photo.png")
        // When
        XCTAssertNotNil(fetchAndWait(cache, url))
        // Then: libcurl would otherwise send "deflate, gzip, br, zstd"
        XCTAssertEqual(server.lastRequestHeaders("/photo.png")?["accept-encoding"], "identity")
    }

    func testGzipBodyIsDeliveredInflatedNotTakenForTruncated() {
        // Given: a server that compresses anyway; its Content-Length (1,109) counts the gzip bytes
        let cache = makeCache()
        cache.retryPolicy = .never
        server.set("/photo.png", gzipped("photo.png.gz"))
        let url = server.url("/photo.png")
        XCTAssertGreaterThan(fixture("photo.png.gz").count, fixture("photo.png").count)
        // When
        let image = fetchAndWait(cache, url)
        // Then: the PNG itself, in memory and on disk
        XCTAssertEqual(image?.data, fixture("photo.png"))
        XCTAssertNil(cache.error(for: url))
        cache.persistCacheToDisk()
        XCTAssertEqual(try? Data(contentsOf: fileURL(cache, for: url)), fixture("photo.png"))
    }

    func testIdentityBodyCutShortIsStillTruncated() {
        // Given: an explicit identity encoding, which leaves Content-Length meaningful
        let cache = makeCache()
        cache.retryPolicy = .never
        var short = LoopbackServer.Response(headers: ["Content-Encoding": "identity"], body: fixture("photo.jpg").prefix(500))
        short.declaredLength = fixture("photo.jpg").count
        server.set("/short.jpg", short)
        let url = server.url("/short.jpg")
        // When
        XCTAssertNil(fetchAndWait(cache, url))
        // Then
        XCTAssertEqual(cache.error(for: url), .truncatedBody(expected: Int64(fixture("photo.jpg").count), received: 500))
    }
}
