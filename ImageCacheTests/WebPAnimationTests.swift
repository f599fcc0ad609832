import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Animated WebP (RIFF `VP8X`, `ANIM`, `ANMF`): its frames, durations and loop count as the shared
/// check reads them, and the inconsistent files it refuses; HEIF sequences as Linux reports them.
final class WebPAnimationTests: CacheTestCase {
    // MARK: The fixture, through the public API

    func testTheAnimatedWebPFixtureReportsItsFramesDurationsAndLoopCount() {
        // Given the fixture Pillow made: 12x8, three lossless frames of 80 ms, 10 ms and 500 ms, loop 2
        let image = ImageCache.Image(data: fixture("animated.webp"))

        // Then it has three frames, the 10 ms one shown for 100 ms as browsers do, and plays twice
        XCTAssertEqual(image?.format, .webp)
        XCTAssertEqual(image?.width, 12)
        XCTAssertEqual(image?.height, 8)
        XCTAssertEqual(image?.frameCount, 3)
        XCTAssertEqual(image?.frameDurations, [0.08, 0.1, 0.5])
        XCTAssertEqual(image?.playCount, 2)
    }

    func testAnAnimatedWebPFetchedFromTheServerReportsItsFrames() {
        // Given a cache and the fixture on the server
        let cache = makeCache()
        let url = serve("/sticker.webp", "animated.webp")

        // When it is fetched, then fetched again from disk by a new instance
        let fetched = fetchAndWait(cache, url)
        cache.persistCacheToDisk()
        let again = fetchAndWait(makeCache("cache"), url)

        // Then both report its frames and timing
        for image in [fetched, again] {
            XCTAssertEqual(image?.frameCount, 3)
            XCTAssertEqual(image?.frameDurations, [0.08, 0.1, 0.5])
            XCTAssertEqual(image?.playCount, 2)
        }
    }

    func testStillPNGGIFAndWebPReportOneFrameAndAnAnimatedWebPItsFrames() {
        for name in ["photo.png", "palette.gif", "lossy.webp", "lossless.webp", "alpha.webp"] {
            XCTAssertEqual(ImageCache.Image(data: fixture(name))?.frameCount, 1, name)
            XCTAssertEqual(ImageCache.Image(data: fixture(name))?.frameDurations, [], name)
            XCTAssertEqual(ImageCache.Image(data: fixture(name))?.playCount, 1, name)
        }
        XCTAssertEqual(ImageCache.Image(data: fixture("animated.webp"))?.frameCount, 3)
    }

    // MARK: Files built from the lossless fixture's VP8L data

    func testAWrappedLosslessWebPReportsEachFramesDurationAndItsLoopCount() {
        // Given 4 frames of the 50x70 lossless image, 0 ms, 19 ms, 20 ms and 1 s, looping forever
        let webp = animatedWebP(frames: [0, 19, 20, 1_000].map { Frame(duration: $0) }, loops: 0)

        // When it is checked
        let image = ImageCache.Image(data: webp)

        // Then each keeps its duration, under 20 ms shown for 100 ms, and it plays forever
        XCTAssertEqual(image?.frameCount, 4)
        XCTAssertEqual(image?.frameDurations, [0.1, 0.1, 0.02, 1])
        XCTAssertEqual(image?.playCount, 0)
        XCTAssertEqual(image?.width, 50)
        XCTAssertEqual(image?.height, 70)
    }

    func testAnAnimationOfOneFrameIsAStill() {
        let image = ImageCache.Image(data: animatedWebP(frames: [Frame(duration: 50)], loops: 3))
        XCTAssertEqual(image?.frameCount, 1)
        XCTAssertEqual(image?.frameDurations, [])
        XCTAssertEqual(image?.playCount, 1)
    }

    func testAnANMFFrameWithoutAnANIMChunkIsRefused() {
        assertRefused(animatedWebP(frames: [Frame(), Frame()], anim: false), "comes before any ANIM chunk")
    }

    func testAFrameOutsideTheCanvasIsRefused() {
        assertRefused(animatedWebP(frames: [Frame(), Frame(x: 2)]), "frame 2 (50x70 at 2,0) lies outside the 50x70 canvas")
        assertRefused(animatedWebP(frames: [Frame(y: 2), Frame()]), "frame 1 (50x70 at 0,2) lies outside")
        assertRefused(animatedWebP(frames: [Frame(width: 51), Frame()]), "frame 1 (51x70 at 0,0) lies outside")
    }

    func testAFirstFrameWhoseDataRunsPastItsChunkIsRefused() {
        // Given a first frame whose VP8L chunk claims 4 bytes more than its ANMF chunk holds
        assertRefused(animatedWebP(frames: [Frame(overrun: 4), Frame()]), "frame 1's chunk at byte 68 runs past its ANMF chunk")
    }

    func testTruncatedOrInconsistentChunksAreRefused() {
        assertRefused(animatedWebP(frames: [Frame(headerOnly: true), Frame()]), "frame 1 has no VP8 or VP8L data")
        assertRefused(animatedWebP(frames: [Frame(), Frame()], animFlag: false), "VP8X header is not animated")
        assertRefused(animatedWebP(frames: [], animFlag: true, still: true), "no ANMF frame follows")
        var shortANIM = [UInt8](animatedWebP(frames: [Frame(), Frame()]))
        shortANIM[34] = 4  // the ANIM chunk's size: 4 of its 6 bytes (the next chunk then starts inside it)
        XCTAssertNotNil(ImageCache.PlatformDecoder.decode(Data(shortANIM)).failure)
        // Every cut of a valid animation is refused, as a WebP cut short, never accepted as fewer frames
        let whole = animatedWebP(frames: [Frame(), Frame(), Frame()])
        for length in stride(from: 12, to: whole.count, by: 7) {
            guard case .failure(let error) = ImageCache.PlatformDecoder.decode(whole.prefix(length)) else {
                return XCTFail("\(length) of \(whole.count) bytes accepted")
            }
            XCTAssertEqual(error.isFatal, true)
        }
    }

    func testAnANMFChunkShorterThanItsHeaderIsRefused() {
        assertRefused(animatedWebP(frames: [Frame(headerBytes: 10), Frame()]), "has 10 bytes, under its 16-byte header")
    }

    // MARK: HEIF sequences on Linux

    func testAHEIFSequenceIsNotAnImageOnLinuxAndSaysWhatItIs() {
        // Given the first box of a HEICS file (major brand msf1, compatible msf1 and hevc) and of a HEIC still
        let sequence = ftyp("msf1", compatible: ["msf1", "hevc", "iso8"]) + [UInt8](repeating: 0, count: 40)
        let still = ftyp("heic", compatible: ["mif1", "heic"]) + [UInt8](repeating: 0, count: 40)

        // Then neither is one of the 1.0 formats: each fails with a description that names it
        XCTAssertEqual(ImageCache.HEIFBrands(sequence)?.isSequence, true)
        XCTAssertEqual(ImageCache.HEIFBrands(still)?.isSequence, false)
        XCTAssertNil(ImageCache.HEIFBrands(ftyp("isom", compatible: ["mp41"])), "an MP4 is not HEIF")
        // And where ImageIO decodes, it takes every frame of the sequence, the first image of the still
        XCTAssertEqual(ImageCache.PlatformDecoder.framesForImageIO(Data(sequence)), .max)
        XCTAssertEqual(ImageCache.PlatformDecoder.framesForImageIO(Data(still)), 1)
        XCTAssertEqual(ImageCache.PlatformDecoder.framesForImageIO(Data(ftyp("isom", compatible: ["mp41"]))), 1)
        #if !canImport(ImageIO)
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data(sequence)).failure,
                       .notAnImage("a HEIF image sequence (HEICS; brands msf1, hevc, iso8)"))
        XCTAssertEqual(ImageCache.PlatformDecoder.decode(Data(still)).failure, .notAnImage("a HEIF image (HEIC; brands heic, mif1)"))
        #endif
    }

    // MARK: Helpers

    /// A frame of an animation built from the lossless fixture's 50x70 VP8L data.
    struct Frame {
        var duration = 100, x = 0, y = 0, width = 50
        var overrun = 0, headerOnly = false, headerBytes = 16
    }

    /// An extended WebP: VP8X (50x70, the animation flag unless `animFlag` is false), ANIM with
    /// `loops` unless `anim` is false, one ANMF per frame; `still` adds the fixture's VP8L chunk.
    func animatedWebP(frames: [Frame], loops: Int = 0, anim: Bool = true, animFlag: Bool = true,
                      still: Bool = false) -> Data {
        let lossless = [UInt8](fixture("lossless.webp"))
        let vp8l = Array(lossless[12...])  // its one chunk: VP8L, size, data (and pad)
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        func chunk(_ tag: String, _ payload: [UInt8]) -> [UInt8] {
            Array(tag.utf8) + le(payload.count, 4) + payload + (payload.count & 1 == 1 ? [0] : [])
        }
        var body = chunk("VP8X", [animFlag ? 0x02 : 0x00, 0, 0, 0] + le(49, 3) + le(69, 3))
        if anim { body += chunk("ANIM", [0, 0, 0, 0] + le(loops, 2)) }
        for frame in frames {
            var data = vp8l
            if frame.overrun > 0 { data.replaceSubrange(4..<8, with: le(vp8l.count - 8 + frame.overrun, 4)) }
            let header = le(frame.x / 2, 3) + le(frame.y / 2, 3) + le(frame.width - 1, 3) + le(69, 3)
                + le(frame.duration, 3) + [0]
            let payload = frame.headerBytes < 16 ? Array(header.prefix(frame.headerBytes))
                : frame.headerOnly ? header : header + data
            body += chunk("ANMF", payload)
        }
        if still { body += vp8l }
        return Data(Array("RIFF".utf8) + le(body.count + 4, 4) + Array("WEBP".utf8) + body)
    }

    private func ftyp(_ major: String, compatible: [String]) -> [UInt8] {
        let payload = Array(major.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
        let size = 8 + payload.count
        return [0, 0, 0, UInt8(size)] + Array("ftyp".utf8) + payload
    }

    private func assertRefused(_ data: Data, _ reason: String, file: StaticString = #filePath, line: UInt = #line) {
        guard case .failure(.corruptImage(.webp, let said)) = ImageCache.PlatformDecoder.decode(data) else {
            return XCTFail("not refused as a corrupt WebP: \(ImageCache.PlatformDecoder.decode(data))", file: file, line: line)
        }
        XCTAssertTrue(said.contains(reason), "\(said) does not say \(reason)", file: file, line: line)
    }
}
