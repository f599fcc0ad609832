import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Rows that do not jump (issue 53, item 3): the height a row reserves for its image before the
/// image comes, from the size the cache knows without decoding it, which the UIKit helper
/// (`reservedHeight(for:width:)`) and the SwiftUI views' `reservesAspectRatio(_:)` both take.
final class RowHeightTests: CacheTestCase {
    func testTheHeightIsTheImagesAsShownAtTheRowsWidth() {
        // A 400 x 300 image fills a 320-point row 240 high; turned a quarter (EXIF 6), 426.67
        XCTAssertEqual(ImageCache.ImageSize(width: 400, height: 300).height(forWidth: 320), 240, accuracy: 1e-9)
        XCTAssertEqual(ImageCache.ImageSize(width: 400, height: 300, orientation: 6).height(forWidth: 320),
                       CGFloat(320 * 400) / 300, accuracy: 1e-9)
    }

    func testARowReservesItsHeightOnceItsImageWasDecodedAndItsSizedRequestsToo() {
        // Given a row whose image was never seen
        let cache = makeCache()
        server.set("/tall.png", LoopbackServer.Response(body: png(width: 200, height: 500)))
        let url = server.url("/tall.png")
        let request = ImageCache.Request(url: url)
        XCTAssertNil(cache.reservedHeight(for: request, width: 100), "unknown: the row gives its estimate")

        // When it is loaded once
        XCTAssertNotNil(fetchAndWait(cache, url))

        // Then the row reserves the image's height at its width, for a sized request of it too
        XCTAssertEqual(cache.reservedHeight(for: request, width: 100), 250)
        let sized = ImageCache.Request(url: url, size: CGSize(width: 100, height: 100))
        XCTAssertEqual(cache.reservedHeight(for: sized, width: 100), 250)
        XCTAssertEqual(cache.knownAspectRatio(ofKey: url.absoluteString), 0.4)  // what a SwiftUI view takes
    }

    func testAThousandRowsOfANewLaunchReserveTheirHeightsWithNoDecode() throws {
        // Given 1,000 rows' images of different heights, cached on disk by an earlier launch
        let earlier = makeCache()
        for row in 0..<1_000 { try earlier.store(png(width: 300, height: 100 + row), for: "row\(row)") }
        earlier.persistCacheToDisk()
        let cache = makeCache()
        let rows = (0..<1_000).map {
            ImageCache.Request(url: URL(string: "https://example.invalid/\($0).png")!, key: "row\($0)",
                               size: CGSize(width: 150, height: 150))
        }
        XCTAssertTrue(rows.allSatisfy { cache.reservedHeight(for: $0, width: 150) == nil }, "peek never reads the disk")

        // When the list learns their sizes before its first layout (the files' headers)
        let group = DispatchGroup()
        for request in rows {
            group.enter()
            cache.size(of: request) { _ in group.leave() }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)

        // Then every row reserves its image's height at its width (half of it at 150 points), and
        // nothing was loaded: no request, no decode, nothing in memory
        XCTAssertEqual(rows.map { cache.reservedHeight(for: $0, width: 150) }, (0..<1_000).map { Optional(CGFloat(100 + $0) / 2) })
        XCTAssertEqual(rows.map { cache.knownAspectRatio(ofKey: $0.cacheKey.string) },
                       (0..<1_000).map { Optional(300 / Double(100 + $0)) })
        let statistics = cache.statistics()
        XCTAssertEqual(statistics.requests, 0)
        XCTAssertEqual(statistics.diskHits + statistics.memoryHits + statistics.misses, 0)
        XCTAssertEqual(statistics.memoryCount, 0)
        XCTAssertEqual(server.totalRequests, 0)
    }
}
