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
                guard case .failure(let error) = ImageCache.decode(data) else { return XCTFail("\(name) + garbage decoded") }
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
                _ = ImageCache.decode(data)  // must return, never trap
            }
        }
    }

    func testDescribesWhatIsNotAnImage() {
        XCTAssertEqual(ImageCache.decode(Data("{\"error\": 1}".utf8)).failure, .notAnImage("JSON-like text"))
        XCTAssertEqual(ImageCache.decode(Data("  <html><body>".utf8)).failure, .notAnImage("an HTML page"))
        XCTAssertEqual(ImageCache.decode(Data("plain words".utf8)).failure, .notAnImage("text starting \"plain words\""))
        XCTAssertEqual(ImageCache.decode(Data([0, 1, 2, 0xFE])).failure, .notAnImage("unknown bytes 00 01 02 FE"))
        XCTAssertEqual(ImageCache.decode(Data()).failure, .emptyBody)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
