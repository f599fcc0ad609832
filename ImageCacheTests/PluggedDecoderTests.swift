import Foundation
import LoopbackServer
import XCTest
@_spi(Testing) @testable import ImageCache

/// A decoder of a format the platform lacks: binary PPM (`P6 <width> <height> 255`, then RGB),
/// made into an image as Linux makes one (`Image(rgba:width:height:)`). It counts what it is asked.
final class PPMDecoder: ImageCache.ImageDecoder, @unchecked Sendable {
    private let lock = NSLock()
    private var asked = 0, decoded = 0
    var counts: (asked: Int, decoded: Int) { lock.withLock { (asked, decoded) } }

    func decodes(_ data: Data, mimeType: String?) -> Bool {
        lock.withLock { asked += 1 }
        return data.starts(with: Array("P6".utf8))
    }

    func decode(_ data: Data, context: ImageCache.DecodingContext) throws -> ImageCache.Image {
        lock.withLock { decoded += 1 }
        let fields = data.prefix(64).split(whereSeparator: { $0 == 0x20 || $0 == 0x0A }).prefix(4)
            .map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 4, let width = Int(fields[1]), let height = Int(fields[2]), fields[3] == "255" else {
            throw ImageCache.Error.corruptImage(.png, "not a P6 header")
        }
        let headerLength = fields.map(\.utf8.count).reduce(0, +) + 4
        let rgb = data.dropFirst(headerLength)
        guard rgb.count == width * height * 3 else { throw PPMError.short(rgb.count) }
        var rgba = [UInt8](); rgba.reserveCapacity(width * height * 4)
        var index = rgb.startIndex
        for _ in 0..<(width * height) {
            rgba += [rgb[index], rgb[index + 1], rgb[index + 2], 255]
            index += 3
        }
        guard let image = ImageCache.Image(rgba: rgba, width: width, height: height) else { throw PPMError.short(0) }
        return image
    }

    enum PPMError: Swift.Error { case short(Int) }

    static func ppm(width: Int, height: Int) -> Data {
        var data = Data("P6 \(width) \(height) 255\n".utf8)
        data += Data((0..<(width * height * 3)).map { UInt8($0 % 251) })
        return data
    }
}

final class PluggedDecoderTests: BinderTestCase {
    private func serve(_ path: String, _ body: Data) -> URL {
        server.set(path, .ok(body))
        return server.url(path)
    }

    func testAPluggedDecoderDecodesItsFormatAndIsNotUsedForPNGOrJPEG() throws {
        // Given a PPM decoder plugged in, and a PPM, a PNG and a JPEG served
        let decoder = PPMDecoder()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [decoder]))
        let ppm = serve("/a.ppm", PPMDecoder.ppm(width: 30, height: 20))
        let png = serve("/a.png", fixture("photo.png"))
        let jpeg = serve("/a.jpg", fixture("photo.jpg"))
        // When all three are fetched
        let fromPPM = try XCTUnwrap(fetchAndWait(cache, ppm))
        XCTAssertNotNil(fetchAndWait(cache, png))
        XCTAssertNotNil(fetchAndWait(cache, jpeg))
        // Then the PPM is its image, and the decoder decoded it alone (asked of all three)
        XCTAssertEqual(fromPPM.width, 30)
        XCTAssertEqual(fromPPM.height, 20)
        XCTAssertEqual(fromPPM.format, .png)
        XCTAssertEqual(decoder.counts.decoded, 1)
        XCTAssertEqual(decoder.counts.asked, 3)
        // And it is in memory
        XCTAssertEqual(cache.peek(ppm)?.width, 30)
    }

    func testAPluggedDecodersImageComesFromDiskInANewInstance() throws {
        // Given a PPM fetched by one instance, its bytes on disk
        let decoder = PPMDecoder()
        let plugins = ImageCache.Plugins(decoders: [decoder])
        let ppm = serve("/b.ppm", PPMDecoder.ppm(width: 12, height: 7))
        let first = makeCache("shared", plugins: plugins)
        XCTAssertNotNil(fetchAndWait(first, ppm))
        first.persistCacheToDisk()
        first.drainDisk()
        // When another instance on the folder fetches it
        let second = makeCache("shared", plugins: plugins)
        let fetched = try XCTUnwrap(result(second, ppm)?.get())
        // Then it is a disk hit, decoded by the plugged decoder, with one request in all
        XCTAssertEqual(fetched.source, .disk)
        XCTAssertEqual(fetched.value.width, 12)
        XCTAssertEqual(decoder.counts.decoded, 2)
        XCTAssertEqual(server.requestCount("/b.ppm"), 1)
    }

    func testStoredDataAndALargeBodyAreDecodedByThePluggedDecoder() throws {
        let decoder = PPMDecoder()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [decoder]))
        // Stored bytes
        try cache.store(PPMDecoder.ppm(width: 5, height: 4), for: "stored")
        XCTAssertTrue(eventually { cache.peek(key: "stored") != nil })
        XCTAssertEqual(cache.peek(key: "stored")?.width, 5)
        // A body large enough to stream to disk (over 4 MiB)
        let large = serve("/large.ppm", PPMDecoder.ppm(width: 1_300, height: 1_100))
        let image = try XCTUnwrap(fetchAndWait(cache, large, timeout: 60))
        XCTAssertEqual(image.width, 1_300)
        XCTAssertEqual(decoder.counts.decoded, 2)
    }

    func testAPluggedDecodersFailureSaysWhichDecoderAndWhy() throws {
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [PPMDecoder()]))
        var cut = PPMDecoder.ppm(width: 10, height: 10)
        cut.removeLast(7)
        let url = serve("/cut.ppm", cut)
        guard case .failure(let error)? = result(cache, url) else { return XCTFail("no failure") }
        XCTAssertEqual(error, .decodingFailed("PPMDecoder: short(293)"))
    }

    func testAViewShowsAPluggedDecodersImage() throws {
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [PPMDecoder()]))
        let url = serve("/view.ppm", PPMDecoder.ppm(width: 33, height: 3))
        let (target, binder) = makeTarget()
        let shown = expectation(description: "shown")
        callbacks.async {
            target.expected = 33
            target.onSet = { image in if image?.width == 33 { shown.fulfill() } }
            _ = binder.bind(url, placeholder: self.placeholder, cache: cache)
        }
        wait(for: [shown], timeout: 10)
        callbacks.sync { XCTAssertEqual(target.wrong, 0) }
    }

    func testImageFromPixelsIsAPNGOfThosePixels() throws {
        let image = try XCTUnwrap(ImageCache.Image(rgba: [UInt8](repeating: 200, count: 3 * 2 * 4), width: 3, height: 2))
        XCTAssertEqual(image.format, .png)
        XCTAssertEqual([image.width, image.height], [3, 2])
        XCTAssertNil(ImageCache.Image(rgba: [1, 2, 3], width: 1, height: 1))
        XCTAssertNil(ImageCache.Image(rgba: [], width: 0, height: 0))
    }
}
