import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The size before the image (issue 52, item 3): headers read without a decode, an index in memory
/// fed by decodes and disk reads, and a new instance that knows a disk-cached image's size.
final class ImageSizeTests: CacheTestCase {
    // MARK: Headers

    func testHeadersGiveTheSizeTheStructuralCheckReads() {
        // Given every image fixture
        for name in ["photo.png", "tiny.png", "animated.gif", "palette.gif", "photo.jpg", "progressive.jpg",
                     "lossy.webp", "lossless.webp", "alpha.webp"] {
            let data = fixture(name)
            guard case .success(let info) = ImageCache.inspect(data) else { XCTFail("\(name) does not inspect"); continue }

            // When only its first 64 KiB are read for the size
            let size = ImageCache.ImageSize(header: data.prefix(ImageCache.ImageSize.headerBytes))

            // Then it is the size the whole image's check finds, upright
            XCTAssertEqual(size, ImageCache.ImageSize(width: info.width, height: info.height), name)
        }
    }

    func testAJPEGsExifOrientationTurnsItsShownSize() throws {
        // Given photo.jpg with an Exif segment saying orientation 6 (a phone held upright), in
        // Motorola and in Intel byte order
        let photo = fixture("photo.jpg")
        guard case .success(let info) = ImageCache.inspect(photo) else { return XCTFail("photo.jpg does not inspect") }
        for littleEndian in [false, true] {
            let jpeg = Self.jpeg(photo, orientation: 6, littleEndian: littleEndian)

            // When its header is read
            let size = try XCTUnwrap(ImageCache.ImageSize(header: jpeg))

            // Then the orientation is 6 and the shown size is turned
            XCTAssertEqual(size.orientation, 6)
            XCTAssertEqual(size.width, info.width)
            XCTAssertEqual(size.displayWidth, info.height)
            XCTAssertEqual(size.aspectRatio, Double(info.height) / Double(info.width), accuracy: 1e-9)
        }
    }

    func testBytesCutBeforeTheSizeOrNotAnImageGiveNone() {
        XCTAssertNil(ImageCache.ImageSize(header: fixture("photo.png").prefix(20)))
        XCTAssertNil(ImageCache.ImageSize(header: Data("<html>not an image</html>".utf8)))
        XCTAssertNil(ImageCache.ImageSize(header: Data()))
        XCTAssertNil(ImageCache.ImageSize(header: Data([0xFF, 0xD8, 0xFF, 0xDA, 0, 2])))  // a scan before a frame
    }

    // MARK: The index

    func testADecodedImagesSizeIsKnownFromMemoryAtOnce() {
        // Given an image not yet loaded
        let cache = makeCache()
        let url = serveImage("/sized.png", width: 321, height: 123)
        let request = ImageCache.Request(url: url)
        XCTAssertNil(cache.peekSize(request))

        // When it is fetched
        XCTAssertNotNil(fetchAndWait(cache, url))

        // Then its size is known synchronously, for the request and for a sized one of the same URL
        XCTAssertEqual(cache.peekSize(request), ImageCache.ImageSize(width: 321, height: 123))
        XCTAssertEqual(cache.peekSize(ImageCache.Request(url: url, size: CGSize(width: 10, height: 10))),
                       ImageCache.ImageSize(width: 321, height: 123))
    }

    func testANewInstanceKnowsADiskCachedImagesSizeWithNoDecodeAndNoRequest() {
        // Given an image cached on disk by an earlier instance (a previous launch)
        let url = serveImage("/earlier.png", width: 640, height: 480)
        populate([url])
        server.resetCounters()

        // When a new instance on the same folder is asked for its size
        let cache = makeCache()
        let request = ImageCache.Request(url: url)
        XCTAssertNil(cache.peekSize(request), "peekSize never waits for the disk")
        let answered = expectation(description: "the size")
        let size = Locked<ImageCache.ImageSize?>(nil)
        cache.size(of: request) { size.value = $0; answered.fulfill() }
        wait(for: [answered], timeout: 10)

        // Then the header gave it: no load at all (so no decode), no request, nothing in memory
        XCTAssertEqual(size.value, ImageCache.ImageSize(width: 640, height: 480))
        let statistics = cache.statistics()
        XCTAssertEqual(statistics.requests, 0)
        XCTAssertEqual(statistics.diskHits + statistics.memoryHits + statistics.misses, 0)
        XCTAssertEqual(statistics.memoryCount, 0)
        XCTAssertEqual(server.totalRequests, 0)
        // and memory knows it now
        XCTAssertEqual(cache.peekSize(request), ImageCache.ImageSize(width: 640, height: 480))
    }

    func testAThousandRowsReserveTheirHeightsBeforeAnyImageArrives() throws {
        // Given 1,000 images of different heights stored on disk by an earlier instance
        let earlier = makeCache()
        for row in 0..<1_000 { try earlier.store(png(width: 300, height: 100 + row), for: "row\(row)") }
        earlier.persistCacheToDisk()
        let cache = makeCache()
        let rows = (0..<1_000).map { ImageCache.Request(url: URL(string: "https://example.invalid/\($0).png")!, key: "row\($0)") }

        // When a list asks for every row's size before loading any image
        let group = DispatchGroup()
        let heights = Locked([Int?](repeating: nil, count: rows.count))
        for (row, request) in rows.enumerated() {
            group.enter()
            cache.size(of: request) { size in
                heights.mutate { $0[row] = size?.displayHeight }
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)

        // Then every row's height is known, with no image loaded, and each is in memory now
        XCTAssertEqual(heights.value, (0..<1_000).map { 100 + $0 })
        XCTAssertEqual(cache.statistics().requests, 0)
        XCTAssertEqual(cache.statistics().memoryCount, 0)
        XCTAssertEqual(rows.enumerated().filter { cache.peekSize($0.element)?.displayHeight == 100 + $0.offset }.count, 1_000)
    }

    // MARK: Helpers

    private func serveImage(_ path: String, width: Int, height: Int) -> URL {
        server.set(path, LoopbackServer.Response(body: png(width: width, height: height)))
        return server.url(path)
    }

    /// `jpeg` with an APP1 Exif segment right after its SOI, whose first IFD has one entry:
    /// Orientation = `orientation`.
    private static func jpeg(_ jpeg: Data, orientation: UInt16, littleEndian: Bool) -> Data {
        func u16(_ v: UInt16) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] {
            littleEndian ? u16(UInt16(v & 0xFFFF)) + u16(UInt16(v >> 16)) : u16(UInt16(v >> 16)) + u16(UInt16(v & 0xFFFF))
        }
        let tiff: [UInt8] = (littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]) + u16(42) + u32(8)
            + u16(1) + u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0) + u32(0)
        let body: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        let segment: [UInt8] = [0xFF, 0xE1, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        return jpeg.prefix(2) + Data(segment) + jpeg.dropFirst(2)
    }
}
