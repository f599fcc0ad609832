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

    func testGzipBombFailsAsTooLargeAndTheCacheStaysUsable() {
        // Given: 149 KB on the wire, 150 MiB inflated, and the default limits: 20 MiB in memory, and
        // 128 MiB for a body streamed to disk, which the bomb is once it inflates past 4 MiB
        let cache = makeCache()
        XCTAssertEqual(cache.maxDiskImageBytes, 128 * 1024 * 1024)
        XCTAssertEqual(cache.maxImageBytes, 20 * 1024 * 1024)
        XCTAssertLessThan(fixture("gzip-bomb-150MiB.gz").count, cache.maxImageBytes)
        server.set("/bomb.png", gzipped("gzip-bomb-150MiB.gz"))
        let bomb = server.url("/bomb.png")
        // When
        XCTAssertNil(fetchAndWait(cache, bomb, timeout: 30))
        // Then: refused for its inflated size, once, and nothing kept (its file deleted)
        XCTAssertEqual(cache.error(for: bomb), .tooLarge(limit: 128 * 1024 * 1024))
        XCTAssertEqual(cache.error(for: bomb)?.isFatal, true)
        XCTAssertEqual(server.requestCount("/bomb.png"), 1)
        XCTAssertNil(cache.peek(bomb))
        // And the next fetches work, a compressed one included
        XCTAssertEqual(fetchAndWait(cache, serve("/photo.png"))?.data, fixture("photo.png"))
        server.set("/gzipped.png", gzipped("photo.png.gz"))
        XCTAssertEqual(fetchAndWait(cache, server.url("/gzipped.png"))?.data, fixture("photo.png"))
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 2)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cache.folder.path).count, 2)
        assertInvariants(cache)
    }

    func testGzipBombIsStoppedAtTheInflatedLimitNotReadToTheEnd() {
        // Given: the bomb's first 8 KB (they inflate to about 8 MiB), the rest held back until the
        // test says, and a 1 MB limit that its compressed bytes (149 KB) never reach, for memory and
        // disk alike (1.0's single limit)
        let cache = makeCache()
        cache.maxImageBytes = 1_000_000
        cache.maxDiskImageBytes = 0
        cache.retryPolicy = .never
        let bomb = fixture("gzip-bomb-150MiB.gz")
        let rest = Gate()
        var held = gzipped("gzip-bomb-150MiB.gz")
        held.behavior = .generated(length: bomb.count) { offset, count in
            if offset > 0 { rest.wait() }
            return bomb.subdata(in: offset..<(offset + (offset == 0 ? min(8_192, count) : count)))
        }
        server.set("/bomb.png", held)
        // When
        let image = fetchAndWait(cache, server.url("/bomb.png"), timeout: 20)
        rest.open()
        // Then: it failed at the limit while the rest of the body was still held back: the cache
        // read no further than the bytes that passed the limit
        XCTAssertNil(image)
        XCTAssertEqual(cache.error(for: server.url("/bomb.png")), .tooLarge(limit: 1_000_000))
    }
}
