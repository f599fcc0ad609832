import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Progressive JPEG (issue 52, item 1): where each scan ends in the bytes so far, and when a preview
/// is due. Shared code, tested here on the bytes.
final class ProgressiveScanTests: CacheTestCase {
    /// The scan headers (FF DA) a walk of the whole file by its segments finds: the scans it has.
    private func scanHeaders(_ data: Data) -> Int {
        let bytes = [UInt8](data)
        var (offset, count) = (2, 0)
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            if marker == 0xD9 { break }
            offset += 2 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            guard marker == 0xDA else { continue }
            count += 1
            // Skip the entropy-coded data up to the next marker that is not a stuffed byte or a restart.
            while offset + 1 < bytes.count, !(bytes[offset] == 0xFF && bytes[offset + 1] != 0
                                                  && !(0xD0...0xD7).contains(bytes[offset + 1])) { offset += 1 }
        }
        return count
    }

    func testEveryScanOfAProgressiveJPEGIsFoundWhateverTheChunks() {
        // Given progressive.jpg, with as many scans as its scan headers say
        let jpeg = fixture("progressive.jpg")
        let expected = scanHeaders(jpeg)
        XCTAssertGreaterThan(expected, 2)

        for chunk in [1, 7, 100, 1_000, jpeg.count] {
            // When its bytes come in chunks of `chunk` bytes
            var scans = ImageCache.ProgressiveScans()
            var counts: [Int] = []
            var received = Data()
            while received.count < jpeg.count {
                received += jpeg[received.count..<min(jpeg.count, received.count + chunk)]
                scans.read(received)
                counts.append(scans.scans)
            }

            // Then the count only grows, each scan is found, and it is progressive and unbroken
            XCTAssertTrue(scans.isProgressive, "chunks of \(chunk)")
            XCTAssertFalse(scans.isBroken, "chunks of \(chunk)")
            XCTAssertEqual(scans.scans, expected, "chunks of \(chunk)")
            XCTAssertEqual(counts, counts.sorted(), "chunks of \(chunk)")
        }
    }

    func testEachPreviewIsAWholeJPEGOfTheScansSoFar() throws {
        // Given progressive.jpg cut in the middle of its body
        let jpeg = fixture("progressive.jpg")
        var scans = ImageCache.ProgressiveScans()
        let half = jpeg.prefix(jpeg.count / 2)
        scans.read(half)
        XCTAssertGreaterThan(scans.scans, 0)

        // When its preview is made
        let preview = try XCTUnwrap(scans.preview(of: half))

        // Then it is the bytes up to the last complete scan and an end of image, a whole JPEG of the
        // image's size, and an image on Linux too
        XCTAssertEqual(preview.suffix(2), Data([0xFF, 0xD9]))
        XCTAssertEqual(preview.dropLast(2), half.prefix(scans.end))
        guard case .success(let whole) = ImageCache.inspect(jpeg), case .success(let info) = ImageCache.inspect(preview) else {
            return XCTFail("the preview is not a whole JPEG")
        }
        XCTAssertEqual(info.width, whole.width)
        XCTAssertEqual(info.end, preview.count)
    }

    func testABaselineJPEGOrAnotherFormatHasNoScansToPreview() {
        for name in ["photo.jpg", "photo.png", "animated.gif"] {
            var scans = ImageCache.ProgressiveScans()
            scans.read(fixture(name))
            XCTAssertFalse(scans.isProgressive, name)
            XCTAssertEqual(scans.scans, 0, name)
            XCTAssertNil(scans.preview(of: fixture(name)), name)
        }
    }

    func testPreviewsAreRateBoundAndEachHasMoreScansThanTheLast() {
        // Given a schedule
        var schedule = ImageCache.PreviewSchedule()
        let interval = ImageCache.PreviewSchedule.interval

        // When scans complete faster than the bound, then slower, then with no new scan
        XCTAssertTrue(schedule.isDue(scans: 1, at: 10))
        XCTAssertFalse(schedule.isDue(scans: 2, at: 10 + interval / 2), "too soon")
        XCTAssertTrue(schedule.isDue(scans: 3, at: 10 + interval))
        XCTAssertFalse(schedule.isDue(scans: 3, at: 20), "no new scan")
        XCTAssertFalse(schedule.isDue(scans: 2, at: 30), "fewer scans")
        XCTAssertTrue(schedule.isDue(scans: 4, at: 30))

        // Then three went through, each with more scans than the last
        XCTAssertEqual(schedule.count, 3)
        XCTAssertEqual(schedule.shownScans, 4)
    }

    // MARK: Through the cache

    /// Where each scan of `jpeg` is complete: the offset just past the marker that ends it.
    private func scanEnds(_ jpeg: Data) -> [Int] {
        var (scans, ends) = (ImageCache.ProgressiveScans(), [Int]())
        for count in 1...jpeg.count {
            scans.read(jpeg.prefix(count))
            if scans.scans > ends.count { ends.append(count) }
        }
        return ends
    }

    func testAProgressiveJPEGInSlicesYieldsAPreviewPerScanThenOneImage() {
        // Given progressive.jpg served in slices, each up to where one more scan is complete, each
        // held until the test lets it go, and a clock the test moves a second before each slice
        let jpeg = fixture("progressive.jpg")
        let cuts = scanEnds(jpeg).dropLast() + [jpeg.count]  // the last scan ends with the body
        let gates = cuts.map { _ in Gate() }
        server.set("/progressive.jpg", LoopbackServer.Response(behavior: .generated(length: jpeg.count) { offset, _ in
            guard let slice = cuts.firstIndex(where: { $0 > offset }) else { return Data() }
            gates[slice].wait()
            return jpeg[offset..<cuts[slice]]
        }))
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let previews = Locked<[(scans: Int, data: Data)]>([])
        let heard = cuts.dropLast().map { expectation(description: "a preview of \($0) bytes") }
        cache.onNotice = { notice in
            guard notice.kind == .preview, let data = notice.data else { return }
            let count = previews.mutate { $0.append((notice.scans, data)); return $0.count }
            if count <= heard.count { heard[count - 1].fulfill() }
        }
        var request = ImageCache.Request(url: server.url("/progressive.jpg"))
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

        // Then there was one preview per scan but the last, each of one scan more, each a whole
        // JPEG of the bytes so far; then exactly one image, the whole file; memory holds only it
        XCTAssertEqual(previews.value.map(\.scans), Array(1...(cuts.count - 1)))
        for (index, preview) in previews.value.enumerated() {
            XCTAssertEqual(preview.data.dropLast(2), jpeg.prefix(cuts[index] - 2), "preview \(index + 1)")
            XCTAssertNotNil(ImageCache.Image(data: preview.data), "preview \(index + 1)")
        }
        XCTAssertEqual(images.value.map(\.data), [jpeg])
        XCTAssertEqual(cache.statistics().memoryCount, 1)
        XCTAssertEqual(cache.peek(server.url("/progressive.jpg"))?.data, jpeg)
    }

    func testABaselineJPEGYieldsNoPreviewAndAnOptOutLoadNone() {
        // Given a baseline JPEG asked with previews, and a progressive one asked without
        let cache = makeCache()
        let notices = Locked(0)
        cache.onNotice = { _ in notices.mutate { $0 += 1 } }
        let baseline = serve("/baseline.jpg", "photo.jpg")
        let progressive = serve("/plain-progressive.jpg", "progressive.jpg")
        var withPreviews = ImageCache.Request(url: baseline)
        withPreviews.options = [.progressivePreviews]
        let done = expectation(description: "both images")
        done.expectedFulfillmentCount = 2

        // When both load
        for request in [withPreviews, ImageCache.Request(url: progressive)] {
            cache.fetch(request) { _, image in
                XCTAssertNotNil(image)
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)

        // Then no preview was sent (notices run on the callback queue before the completions)
        callbacks.sync {}
        XCTAssertEqual(notices.value, 0)
    }
}
