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
}
