import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// BlurHash placeholders (issue 52, item 4): the decoder against the reference's pixels, its bounds,
/// and the binder showing a request's hash until the image comes.
final class BlurHashTests: BinderTestCase {
    private struct Reference: Decodable {
        let hash: String, width: Int, height: Int, rgb: String
    }

    // MARK: The decoder

    func testDecodedPixelsMatchTheReferenceDecodersWithinOnePerChannel() throws {
        // Given the reference decoder's pixels (PyPI's `blurhash`, .ci/blurhash-fixtures) of 15
        // hashes, each at three sizes
        let references = try JSONDecoder().decode([Reference].self, from: fixture("blurhash.json"))
        XCTAssertGreaterThanOrEqual(Set(references.map(\.hash)).count, 10)

        for reference in references {
            // When each is decoded here at the same size
            guard case .success(let blurHash) = ImageCache.BlurHash.parse(reference.hash) else {
                XCTFail("\(reference.hash) did not parse"); continue
            }
            let decoded = blurHash.pixels(width: reference.width, height: reference.height)

            // Then every channel of every pixel is within 1 of the reference's
            let expected = Self.bytes(hex: reference.rgb)
            XCTAssertEqual(decoded.rgb.count, expected.count, reference.hash)
            let worst = zip(decoded.rgb, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 1, "\(reference.hash) at \(reference.width)x\(reference.height)")
        }
    }

    func testMalformedAndHostileHashesAreRefusedWithAReason() {
        // Given strings that are not BlurHashes: too short, a length that does not match the
        // components, characters outside base 83, 10 components along y (a first character the
        // encoder never writes, at the length it would need), and a very long string
        let hostile = [
            "", "LEHV6", "LEHV6nWB2yk8pyo0adR*.7kCMdn", "LEHV6nWB2yk8pyo0adR*.7kCMdnjj", "LEHV6nWB2yk8pyo0adR*.7kCMdn\u{E9}",
            "LEHV6nWB2yk8pyo0adR*.7kCMd\"j", "~" + String(repeating: "0", count: 43), String(repeating: "L", count: 100_000),
        ]
        for text in hostile {
            // When each is read, Then it is refused with a reason, not decoded
            guard case .failure(let malformed) = ImageCache.BlurHash.parse(text) else {
                XCTFail("\(text.prefix(40)) parsed"); continue
            }
            XCTAssertTrue(malformed.description.hasPrefix("malformed BlurHash: "), malformed.description)
        }
    }

    func testDecodingIsBoundedToTheLargestSide() throws {
        // Given a valid hash
        let blurHash = try ImageCache.BlurHash.parse("LEHV6nWB2yk8pyo0adR*.7kCMdnj").get()

        // When it is asked for a huge or an empty size
        let huge = blurHash.pixels(width: 1_000_000, height: -5)

        // Then it is decoded within the bound, 128 x 1 here
        XCTAssertEqual(huge.width, ImageCache.BlurHash.maxSide)
        XCTAssertEqual(huge.height, 1)
        XCTAssertEqual(huge.rgb.count, ImageCache.BlurHash.maxSide * 3)
    }

    func testThePlaceholderIsAPNGOfTheDecodedPixels() throws {
        // Given a hash decoded for a view twice as wide as it is high
        let size = ImageCache.BlurHash.decodeSize(aspect: 2)
        XCTAssertEqual(size.width, 32)
        XCTAssertEqual(size.height, 16)

        // When its placeholder is made
        let image = try ImageCache.Placeholders.image("LEHV6nWB2yk8pyo0adR*.7kCMdnj", size).get().value

        // Then it is a PNG of that size that the structural check accepts whole
        XCTAssertEqual(image.format, .png)
        XCTAssertEqual(image.width, 32)
        XCTAssertEqual(image.height, 16)
        guard case .success(let info) = ImageCache.inspect(image.data) else { return XCTFail("not a whole PNG") }
        XCTAssertEqual(info.end, image.data.count)
        // The stored pixels are the decoder's: its IDAT holds them after a zlib header and a
        // stored block's header, each row behind its filter byte
        let rgb = try ImageCache.BlurHash.parse("LEHV6nWB2yk8pyo0adR*.7kCMdnj").get().pixels(width: 32, height: 16).rgb
        let firstRow = image.data[(33 + 8 + 2 + 5 + 1)...].prefix(32 * 3)
        XCTAssertEqual(Array(firstRow), Array(rgb.prefix(32 * 3)))
    }

    // MARK: The views

    func testABinderShowsTheBlurHashUntilTheImageComes() {
        // Given a request with a BlurHash whose image is answered only when the test opens a gate
        let cache = makeCache()
        let gate = Gate()
        let photo = png(width: 700)
        server.handler = { path in
            guard path == "/blurred.png" else { return nil }
            gate.wait()
            return .ok(photo)
        }
        var request = ImageCache.Request(url: server.url("/blurred.png"))
        request.blurHash = "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
        let (target, binder) = makeTarget()
        target.expected = 700
        let placeholderShown = expectation(description: "the BlurHash's image")
        let imageShown = expectation(description: "the image")
        target.onSet = { image in
            if image?.width == 32 { placeholderShown.fulfill() }
            if image?.width == 700 { imageShown.fulfill() }
        }

        // When the binder binds it
        callbacks.sync { _ = binder.bind(request, placeholder: placeholder, cache: cache) }

        // Then the target shows the placeholder, then the BlurHash's decode (32 x 32, a PNG) while
        // the binder still loads, then the image, and nothing else
        wait(for: [placeholderShown], timeout: 10)
        callbacks.sync { XCTAssertEqual(binder.state, .loading) }
        gate.open()
        wait(for: [imageShown], timeout: 10)
        callbacks.sync {
            XCTAssertEqual(target.history, [Self.placeholderWidth, 32, 700])
            XCTAssertEqual(binder.state, .image(.network))
        }
    }

    func testAMalformedBlurHashIsIgnoredWithANotice() {
        // Given a request whose BlurHash is malformed, and a cache whose notices are heard
        let cache = makeCache()
        let notices = Locked<[ImageCache.Notice]>([])
        let noticed = expectation(description: "a notice")
        cache.onNotice = { notice in
            notices.mutate { $0.append(notice) }
            noticed.fulfill()
        }
        let gate = Gate()
        server.handler = { path in
            gate.wait()
            return .ok(self.fixture("photo.png"))
        }
        defer { gate.open() }
        let url = server.url("/malformed.png")
        var request = ImageCache.Request(url: url)
        request.blurHash = "not a BlurHash"
        let (target, binder) = makeTarget()

        // When the binder binds it
        callbacks.sync { _ = binder.bind(request, placeholder: placeholder, cache: cache) }

        // Then the notice names the URL and why, and the target shows only the placeholder
        wait(for: [noticed], timeout: 10)
        let notice = notices.value.first
        XCTAssertEqual(notice?.kind, .placeholderIgnored)
        XCTAssertEqual(notice?.url, url)
        XCTAssertTrue(notice?.detail.hasPrefix("malformed BlurHash") == true, notice?.detail ?? "")
        callbacks.sync {
            XCTAssertEqual(target.history, [Self.placeholderWidth])
            XCTAssertEqual(binder.state, .loading)
        }
    }

    private static func bytes(hex: String) -> [UInt8] {
        var bytes = [UInt8]()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }
}
