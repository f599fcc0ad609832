import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The format checks that stand in for a decoder on Linux (and guard the platform decoder).
final class FormatTests: CacheTestCase {
    func testRecognisesEveryFixtureWithItsSize() {
        let expected: [(String, ImageCache.Format, Int, Int)] = [
            ("photo.png", .png, 64, 48), ("tiny.png", .png, 1, 1),
            ("photo.jpg", .jpeg, 120, 80), ("progressive.jpg", .jpeg, 120, 80),
            ("palette.gif", .gif, 40, 30), ("animated.gif", .gif, 32, 32),
            ("lossy.webp", .webp, 90, 60), ("lossless.webp", .webp, 50, 70), ("alpha.webp", .webp, 30, 20),
        ]
        for (name, format, width, height) in expected {
            let image = ImageCache.Image(data: fixture(name))
            XCTAssertEqual(image?.format, format, name)
            XCTAssertEqual(image?.width, width, name)
            XCTAssertEqual(image?.height, height, name)
            XCTAssertEqual(image?.data, fixture(name), name)
        }
    }

    func testEveryTruncationOfEveryFixtureIsRejected() {
        for name in ["photo.png", "photo.jpg", "progressive.jpg", "palette.gif", "animated.gif", "lossy.webp", "lossless.webp"] {
            let data = fixture(name)
            for length in stride(from: 0, to: data.count - 1, by: 7) {
                XCTAssertNil(ImageCache.Image(data: data.prefix(length)), "\(name) cut at \(length) of \(data.count)")
            }
        }
    }

    func testRandomBytesAreNotImages() {
        var generator = SplitMix(seed: 1)
        for seed in 0..<300 {
            let count = Int(generator.next() % 4096)
            let bytes = Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            XCTAssertNil(ImageCache.Image(data: bytes), "seed \(seed)")
        }
    }

    func testAValidHeaderFollowedByGarbageIsCorrupt() {
        var generator = SplitMix(seed: 2)
        for name in ["photo.jpg", "photo.png", "palette.gif"] {
            for _ in 0..<50 {
                var data = fixture(name).prefix(40)
                data.append(contentsOf: (0..<3000).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
                guard case .failure(let error) = ImageCache.PlatformDecoder.decode(data) else { return XCTFail("\(name) + garbage decoded") }
                guard case .corruptImage = error else { return XCTFail("\(error)") }
            }
        }
    }

    func testMutatedImagesNeverCrashTheChecks() {
        var generator = SplitMix(seed: 3)
        for name in ["photo.png", "photo.jpg", "progressive.jpg", "animated.gif", "lossy.webp", "alpha.webp"] {
            let original = fixture(name)
            for _ in 0..<200 {
                var data = original
                for _ in 0..<8 {
                    let index = Int(generator.next() % UInt64(data.count))
                    data[index] = UInt8(truncatingIfNeeded: generator.next())
                }
                _ = ImageCache.PlatformDecoder.decode(data)  // must return, never trap
            }
        }
    }

    // MARK: Bytes after the image

    private let everyFixture = ["photo.png", "tiny.png", "photo.jpg", "progressive.jpg", "palette.gif", "animated.gif",
                                "lossy.webp", "lossless.webp", "alpha.webp"]

    func testEveryFixtureFollowedByRandomBytesDecodesToExactlyTheFixture() {
        var generator = SplitMix(seed: 5)
        let padding = randomBytes(1024 * 1024, &generator)
        for name in everyFixture {
            let original = fixture(name)
            for count in [4 * 1024, padding.count] {
                guard case .success(let decoded) = ImageCache.PlatformDecoder.decode(original + padding.prefix(count)) else {
                    return XCTFail("\(name) + \(count) bytes rejected")
                }
                XCTAssertEqual(decoded.data, original, "\(name) + \(count) bytes")
                XCTAssertEqual(decoded.image.data, original, "\(name) + \(count) bytes")
            }
        }
    }

    func testAMotionPhotoIsTrimmedToItsJPEG() {
        // A JPEG, then the MP4 a motion photo appends: an `ftyp` box, then an `mdat` box.
        var generator = SplitMix(seed: 6)
        let jpeg = fixture("photo.jpg")
        let mp4 = Data([0, 0, 0, 0x18]) + Data("ftypmp42".utf8) + Data([0, 0, 0, 0]) + Data("isommp42".utf8)
            + Data([0, 0, 0x10, 0x08]) + Data("mdat".utf8) + randomBytes(4096, &generator)
        guard case .success(let decoded) = ImageCache.PlatformDecoder.decode(jpeg + mp4) else { return XCTFail("motion photo rejected") }
        XCTAssertEqual(decoded.data, jpeg)
        XCTAssertEqual(decoded.image.format, .jpeg)
        XCTAssertEqual(decoded.image.width, 120)
    }

    func testBytesAfterACutImageDoNotMakeItWhole() {
        var generator = SplitMix(seed: 7)
        for name in everyFixture {
            let data = fixture(name)
            // Cuts that lose more than the end marker: a PNG cut in IEND's CRC has all its pixels.
            for length in stride(from: 0, to: data.count - 12, by: 5) {
                let cut = data.prefix(length)
                // WebP's end is its RIFF size: what fills the missing bytes cannot be told from them.
                let zeros = name.hasSuffix(".webp") ? data.count - length - 1 : 4096
                XCTAssertNil(ImageCache.Image(data: cut + Data(count: zeros)), "\(name) cut at \(length), then zeros")
                if name.hasSuffix(".png") {  // random bytes do not make a chunk called IEND where one starts
                    XCTAssertNil(ImageCache.Image(data: cut + randomBytes(4096, &generator)), "\(name) cut at \(length)")
                }
            }
        }
    }

    func testAGIFWithoutTrailerEndsAtItsLastWholeFrame() {
        let gif = fixture("palette.gif").dropLast()  // without its trailer, 0x3B
        guard case .success(let decoded) = ImageCache.PlatformDecoder.decode(gif) else { return XCTFail("GIF without trailer rejected") }
        XCTAssertEqual(decoded.data, gif)
    }

    func testAWebPWithAnOddRIFFSizeEndsAfterItsPadByteIfThere() {
        // RIFF pads an odd size with one byte. Shorten the RIFF size by one: the old last byte is now that pad.
        let webp = fixture("lossy.webp")
        let odd = patched(webp, at: 4, UInt32(webp.count - 9), bigEndian: false)
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(odd + Data([1, 2, 3])).success?.data, odd, "the pad byte is kept")
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(odd).success?.data, odd, "and may be missing at the very end")
    }

    private func randomBytes(_ count: Int, _ generator: inout SplitMix) -> Data {
        var data = Data(capacity: count + 8)
        while data.count < count { withUnsafeBytes(of: generator.next()) { data.append(contentsOf: $0) } }
        return data.prefix(count)
    }

    // MARK: Lengths near 2^31 and 2^32 (a 32-bit `Int` on watchOS must neither trap nor stop advancing)

    func testPNGChunkLengthsNear2To31And2To32AreCorrupt() {
        let original = fixture("photo.png")
        for offset in [33, original.count - 12] {  // the chunk after IHDR, and IEND
            for length: UInt32 in [0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FFF0] {
                let data = patched(original, at: offset, length, bigEndian: true)
                guard case .corruptImage(.png, let reason)? = ImageCache.PlatformDecoder.decode(data).failure else {
                    return XCTFail("chunk length \(length) at \(offset): \(ImageCache.PlatformDecoder.decode(data))")
                }
                XCTAssertTrue(reason.contains("ends before IEND"), reason)
            }
        }
    }

    func testWebPRIFFSizesNear2To31And2To32AreCorrupt() {
        for size: UInt32 in [0x7FFF_FFF8, 0xFFFF_FFF8, 0xFFFF_FFFF] {
            let data = patched(fixture("lossy.webp"), at: 4, size, bigEndian: false)
            guard case .corruptImage(.webp, let reason)? = ImageCache.PlatformDecoder.decode(data).failure else {
                return XCTFail("RIFF size \(size): \(ImageCache.PlatformDecoder.decode(data))")
            }
            XCTAssertEqual(reason, "RIFF says \(UInt64(size) + 8) bytes, got 1460 (truncated)")
        }
    }

    func testPNGSizesPastTheFormatsLimitAreCorrupt() {
        for (offset, value): (Int, UInt32) in [(16, 0xFFFF_FFFF), (20, 0xFFFF_FFFF), (16, 0x8000_0000), (20, 0)] {
            let data = patched(fixture("photo.png"), at: offset, value, bigEndian: true)
            guard case .corruptImage(.png, let reason)? = ImageCache.PlatformDecoder.decode(data).failure else {
                return XCTFail("\(value) at \(offset): \(ImageCache.PlatformDecoder.decode(data))")
            }
            XCTAssertTrue(reason.contains("out of range"), reason)
        }
    }

    func testLengthFieldsNear2To31And2To32NeverTrapOrHang() {
        var generator = SplitMix(seed: 4)
        let near: [UInt32] = [0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FFF0, 0x7FFF_FFF8, 0xFFFF_FFF8]
        for name in ["photo.png", "tiny.png", "photo.jpg", "progressive.jpg", "palette.gif", "animated.gif",
                     "lossy.webp", "lossless.webp", "alpha.webp"] {
            let original = fixture(name)
            let fields = lengthFields(original)
            for _ in 0..<300 {
                var data = original
                for _ in 0...(generator.next() % 3) {
                    // Half the writes hit a real length field, half land anywhere.
                    let offset = generator.next() % 2 == 0 && !fields.isEmpty
                        ? fields[Int(generator.next() % UInt64(fields.count))]
                        : Int(generator.next() % UInt64(data.count - 3))
                    let value = near[Int(generator.next() % UInt64(near.count))] &- UInt32(generator.next() % 16)
                    data = patched(data, at: offset, value, bigEndian: generator.next() % 2 == 0)
                }
                if case .success(let decoded) = ImageCache.PlatformDecoder.decode(data) {  // returns, never traps
                    XCTAssertEqual(decoded.data, data.prefix(decoded.data.count), "the image is a prefix of the bytes")
                }
            }
        }
    }

    /// `data` with the four bytes at `offset` replaced by `value`.
    private func patched(_ data: Data, at offset: Int, _ value: UInt32, bigEndian: Bool) -> Data {
        var data = data
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        data.replaceSubrange(offset..<offset + 4, with: bigEndian ? bytes.reversed() : bytes)
        return data
    }

    /// Where a PNG's chunk lengths and a WebP's RIFF and chunk sizes are.
    private func lengthFields(_ data: Data) -> [Int] {
        let bytes = [UInt8](data)
        func field(_ i: Int, bigEndian: Bool) -> Int {
            let value = (0..<4).reduce(0) { $0 | Int(bytes[i + $1]) << (8 * $1) }
            return bigEndian ? Int(UInt32(value).byteSwapped) : value
        }
        var fields: [Int] = []
        if bytes.starts(with: [0x89, 0x50]) {
            var offset = 8
            while offset + 12 <= bytes.count { fields.append(offset); offset += 12 + field(offset, bigEndian: true) }
        } else if bytes.starts(with: Array("RIFF".utf8)) {
            fields = [4]
            var offset = 12
            while offset + 8 <= bytes.count { fields.append(offset + 4); offset += 8 + (field(offset + 4, bigEndian: false) + 1) / 2 * 2 }
        }
        return fields
    }

    func testDescribesWhatIsNotAnImage() {
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data("{\"error\": 1}".utf8)).failure, .notAnImage("JSON-like text"))
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data("  <html><body>".utf8)).failure, .notAnImage("an HTML page"))
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data("plain words".utf8)).failure, .notAnImage("text starting \"plain words\""))
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data([0, 1, 2, 0xFE])).failure, .notAnImage("unknown bytes 00 01 02 FE"))
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data()).failure, .emptyBody)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
