import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Interlaced PNG previews (issue 52, item 1): where each Adam7 pass ends, read from the bytes as
/// they arrive, against the passes a reference (Python's zlib) found in the fixture
/// (`.ci/interlaced-fixtures`).
final class InterlacedPassTests: CacheTestCase {
    private struct Expected: Decodable {
        struct Pass: Decodable { let inflatedEnd: Int, chunkEnd: Int }
        let bytes: Int
        let passes: [Pass]
    }

    private lazy var expected: Expected = {
        guard let expected = try? JSONDecoder().decode(Expected.self, from: fixture("interlaced-passes.json")) else {
            fatalError("interlaced-passes.json")
        }
        return expected
    }()

    /// The passes complete once the fixture's first `count` bytes have come, as the reference says.
    private func expectedPasses(after count: Int) -> (passes: Int, end: Int) {
        let done = expected.passes.filter { $0.chunkEnd <= count }
        return (done.count, done.last?.chunkEnd ?? 0)
    }

    func testEveryPassIsFoundWhereTheReferenceFindsItWhateverTheSlices() {
        let png = fixture("interlaced.png")
        XCTAssertEqual(png.count, expected.bytes)
        for slice in [1, 7, 100, 512, 4_096, png.count] {
            var passes = ImageCache.InterlacedPasses()
            var seen: [Int] = []
            for count in stride(from: slice, through: png.count + slice - 1, by: slice).map({ min($0, png.count) }) {
                passes.read(png.prefix(count))
                XCTAssertEqual(passes.isInterlaced, count >= 33, "once the header has come")
                XCTAssertFalse(passes.isBroken)
                if passes.passes == 7 { break }  // the image data is whole: nothing more is read
                let reference = expectedPasses(after: count)
                XCTAssertEqual(passes.passes, reference.passes, "after \(count) bytes in slices of \(slice)")
                XCTAssertEqual(passes.end, reference.end, "after \(count) bytes in slices of \(slice)")
                if seen.last != passes.passes { seen.append(passes.passes) }
            }
            XCTAssertEqual(passes.passes, 7, "slices of \(slice)")
            XCTAssertTrue(passes.hasEnded)
            if slice < 512 { XCTAssertEqual(seen, [0, 2, 3, 4, 5, 6], "slices of \(slice)") }
        }
    }

    func testAPreviewIsTheBytesUpToThePassesChunkAndAnEnd() throws {
        let png = fixture("interlaced.png")
        var passes = ImageCache.InterlacedPasses()
        passes.read(png.prefix(1_700))
        XCTAssertEqual(passes.passes, 4)
        let preview = try XCTUnwrap(passes.preview(of: png.prefix(1_700)))
        XCTAssertEqual(preview.count, 1_605 + 12)
        XCTAssertEqual(preview.prefix(1_605), png.prefix(1_605))
        XCTAssertEqual(Array(preview.suffix(8)), Array("IEND".utf8) + [0xAE, 0x42, 0x60, 0x82])
        // The header still reads: the preview is a PNG of the whole image's size
        XCTAssertEqual(ImageCache.Image(data: preview)?.width, 64)
    }

    func testAPNGThatIsNotInterlacedOrNotAPNGHasNoPasses() {
        for data in [fixture("photo.png"), fixture("photo.jpg"), Data("not a png at all".utf8)] {
            var passes = ImageCache.InterlacedPasses()
            passes.read(data)
            XCTAssertFalse(passes.isInterlaced)
            XCTAssertEqual(passes.passes, 0)
            XCTAssertNil(passes.preview(of: data))
        }
    }

    func testBrokenImageDataStopsTheCountAndNeverTraps() {
        var png = fixture("interlaced.png")
        // A stored block's length that its complement contradicts (the fixture's zlib stream is one
        // stored block: its image data does not compress)
        png[44] ^= 0xFF
        var passes = ImageCache.InterlacedPasses()
        passes.read(png)
        XCTAssertTrue(passes.isBroken)
        XCTAssertEqual(passes.passes, 0)
        // A header that is not a zlib one
        var header = fixture("interlaced.png")
        header[41] = 0x00
        var none = ImageCache.InterlacedPasses()
        none.read(header)
        XCTAssertTrue(none.isBroken)
        XCTAssertEqual(none.passes, 0)
    }

    /// The zlib stream of a PNG's IDAT chunks, joined.
    private func idat(_ png: Data) -> [UInt8] {
        var stream: [UInt8] = []
        var offset = 33
        while offset + 8 <= png.count {
            let length = png[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            if png[(offset + 4)..<(offset + 8)].elementsEqual("IDAT".utf8) { stream += png[(offset + 8)..<(offset + 8 + length)] }
            offset += 12 + length
        }
        return stream
    }

    func testTheInflaterMakesWhatZlibMadeInAnyPieces() {
        // The fixture's zlib stream (a stored block) inflates to the passes' total; photo.png's
        // (compressed: Huffman codes) to its rows, each a filter byte and 3 bytes a pixel
        let photo = fixture("photo.png")
        let rows = photo[16..<24].reduce(0) { $0 << 8 | Int($1) }  // width, height
        XCTAssertEqual(photo[24], 8)
        XCTAssertEqual(photo[25], 2, "RGB")
        let photoSize = (rows & 0xFFFF_FFFF) * (1 + (rows >> 32) * 3)
        for (stream, size) in [(idat(fixture("interlaced.png")), expected.passes.last?.inflatedEnd ?? 0), (idat(photo), photoSize)] {
            for piece in [1, 3, 64, stream.count] {
                var inflater = ImageCache.Inflater(limit: .max)
                for start in stride(from: 0, to: stream.count, by: piece) {
                    inflater.feed(stream[start..<min(start + piece, stream.count)])
                }
                XCTAssertEqual(inflater.made, size, "pieces of \(piece)")
                XCTAssertTrue(inflater.hasEnded)
                XCTAssertFalse(inflater.isBroken)
            }
        }
    }
}

/// Interlaced PNG previews through a load: served in slices, paced by the server (each slice once
/// the test's clock moved past the rate bound), it yields a preview per newly complete pass, then
/// exactly one final image; memory holds only the final image.
final class InterlacedPreviewLoadTests: CacheTestCase {
    func testAnInterlacedPNGInSlicesYieldsAPreviewPerPassThenOneImage() throws {
        // Given interlaced.png served in slices, each up to the chunk that completes one more pass
        // (the reference's), each held until the test lets it go, and a clock the test moves a
        // second before each slice
        let png = fixture("interlaced.png")
        struct Pass: Decodable { let chunkEnd: Int }
        struct Passes: Decodable { let passes: [Pass] }
        let ends = try JSONDecoder().decode(Passes.self, from: fixture("interlaced-passes.json")).passes.map(\.chunkEnd)
        let cuts = Array(Set(ends)).sorted().filter { $0 < ends[6] } + [png.count]  // the 7th: the image is whole
        let gates = cuts.map { _ in Gate() }
        server.set("/interlaced.png", LoopbackServer.Response(behavior: .generated(length: png.count) { offset, _ in
            guard let slice = cuts.firstIndex(where: { $0 > offset }) else { return Data() }
            gates[slice].wait()
            return png[offset..<cuts[slice]]
        }))
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let previews = Locked<[(passes: Int, data: Data)]>([])
        let heard = cuts.dropLast().map { expectation(description: "a preview of \($0) bytes") }
        cache.onNotice = { notice in
            guard notice.kind == .preview, let data = notice.data else { return }
            let count = previews.mutate { $0.append((notice.scans, data)); return $0.count }
            if count <= heard.count { heard[count - 1].fulfill() }
        }
        var request = ImageCache.Request(url: server.url("/interlaced.png"))
        request.options = [.progressivePreviews]
        let done = expectation(description: "the image")
        let images = Locked<[ImageCache.Image]>([])
        cache.fetch(request) { _, image in
            if let image { images.mutate { $0.append(image) } }
            done.fulfill()
        }

        // When each slice is let go after the previous slice's preview was heard
        for (slice, gate) in gates.enumerated() {
            clock.advance(1)
            gate.open()
            if slice < heard.count { wait(for: [heard[slice]], timeout: 10) }
        }
        wait(for: [done], timeout: 10)

        // Then one preview per chunk that completed passes, with the passes complete (2 at once
        // first: the first chunk completes both), each the bytes up to that chunk and an IEND;
        // then exactly one image, the whole file; memory holds only it
        XCTAssertEqual(previews.value.map(\.passes), [2, 3, 4, 5, 6])
        for (index, preview) in previews.value.enumerated() {
            XCTAssertEqual(preview.data.dropLast(12), png.prefix(cuts[index]), "preview \(index + 1)")
        }
        XCTAssertEqual(images.value.map(\.data), [png])
        XCTAssertEqual(cache.statistics().memoryCount, 1)
    }
}
