import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Progressive previews in views (issue 52, item 1): a binder shows a progressive JPEG's previews as
/// its scans arrive, each sharper than the last, then the final image; never a preview after it.
/// On Linux a preview is the image of the scans so far (a whole JPEG); Apple platforms make its
/// pixels with ImageIO's incremental source from the same decision.
final class ViewPreviewTests: BinderTestCase {
    /// Where each scan of `jpeg` is complete: the offset just past the marker that ends it.
    private func scanEnds(_ jpeg: Data) -> [Int] {
        var (scans, ends) = (ImageCache.ProgressiveScans(), [Int]())
        for count in 1...jpeg.count {
            scans.read(jpeg.prefix(count))
            if scans.scans > ends.count { ends.append(count) }
        }
        return ends
    }

    func testTheDecisionShowsPreviewsOnlyWhileLoadingEachSharperThanTheLast() {
        // A preview shows over the placeholder, then only one with more scans
        XCTAssertTrue(ImageCache.showsPreview(scans: 1, shown: 0, state: .loading, replaces: false))
        XCTAssertTrue(ImageCache.showsPreview(scans: 3, shown: 1, state: .loading, replaces: false))
        XCTAssertFalse(ImageCache.showsPreview(scans: 3, shown: 3, state: .loading, replaces: false), "as sharp")
        XCTAssertFalse(ImageCache.showsPreview(scans: 2, shown: 3, state: .loading, replaces: false), "blurrier")
        // Never over an image the load replaces (a stand-in, another size), nor once the load ended
        XCTAssertFalse(ImageCache.showsPreview(scans: 5, shown: 0, state: .loading, replaces: true))
        for state: ImageCache.Binder.State in [.image(.network), .image(.memory), .failed(.httpStatus(500)), .idle,
                                               .placeholder] {
            XCTAssertFalse(ImageCache.showsPreview(scans: 9, shown: 1, state: state, replaces: false), "\(state)")
        }
    }

    func testAViewShowsAPreviewPerScanThenTheFinalImageAndNothingAfter() {
        // Given progressive.jpg served in slices, each up to where one more scan is complete, each
        // held until the test lets it go, and a clock the test moves a second before each slice
        let jpeg = fixture("progressive.jpg")
        let cuts = scanEnds(jpeg).dropLast() + [jpeg.count]
        let gates = cuts.map { _ in Gate() }
        server.set("/view-progressive.jpg", LoopbackServer.Response(behavior: .generated(length: jpeg.count) { offset, _ in
            guard let slice = cuts.firstIndex(where: { $0 > offset }) else { return Data() }
            gates[slice].wait()
            return jpeg[offset..<cuts[slice]]
        }))
        defer { gates.forEach { $0.open() } }
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let url = server.url("/view-progressive.jpg")
        let width = ImageCache.Image(data: jpeg)!.width
        // And a view bound to it, which records every image it is given
        let (target, binder) = makeTarget()
        let shown = Locked<[Data]>([])
        let previews = cuts.dropLast().map { expectation(description: "a preview of \($0) bytes") }
        let final = expectation(description: "the final image")
        target.onSet = { image in
            guard let image, image.width == width else { return }
            let count = shown.mutate { $0.append(image.data); return $0.count }
            if image.data == jpeg { final.fulfill() } else if count <= previews.count { previews[count - 1].fulfill() }
        }
        callbacks.sync {
            target.expected = width
            binder.bind(url, placeholder: placeholder, cache: cache)
        }

        // When each slice is let go after the previous slice's preview was shown
        for (slice, gate) in gates.enumerated() {
            clock.advance(1)
            gate.open()
            if slice < previews.count { wait(for: [previews[slice]], timeout: 10) }
        }
        wait(for: [final], timeout: 10)
        callbacks.sync {}  // anything queued behind the final image

        // Then the view showed the placeholder, one preview per scan but the last, each of the
        // bytes up to one scan more, then the final image, and nothing after it
        let expected = cuts.dropLast().map { jpeg.prefix($0 - 2) + Data([0xFF, 0xD9]) } + [jpeg]
        XCTAssertEqual(shown.value, Array(expected))
        callbacks.sync {
            XCTAssertEqual(target.history.first, Self.placeholderWidth)
            XCTAssertEqual(target.history.count, cuts.count + 1)
            XCTAssertEqual(target.wrong, 0)
            XCTAssertEqual(binder.state, .image(.network))
        }
        // And memory holds only the final image
        XCTAssertEqual(cache.statistics().memoryCount, 1)
        XCTAssertEqual(cache.peek(url)?.data, jpeg)
    }

    func testABaselineJPEGOrALoadWithoutPreviewsShowsNoneInAView() {
        // Given a baseline JPEG, and a progressive one whose request asks for no previews
        let cache = makeCache()
        let baseline = serve("/view-baseline.jpg", "photo.jpg")
        let progressive = serve("/view-plain-progressive.jpg", "progressive.jpg")
        var without = ImageCache.Request(url: progressive)
        without.options = [.withoutPreviews]
        for request in [ImageCache.Request(url: baseline), without] {
            // When a view is bound to it
            let (target, binder) = makeTarget()
            let done = expectation(description: "the image")
            target.onSet = { image in if image?.width != Self.placeholderWidth { done.fulfill() } }
            callbacks.sync { _ = binder.bind(request, placeholder: placeholder, cache: cache) }
            wait(for: [done], timeout: 10)
            // Then it shows the placeholder, then the image, nothing between
            callbacks.sync {
                XCTAssertEqual(target.history.count, 2, "\(request.url!)")
                XCTAssertEqual(binder.previewScans, 0)
            }
        }
    }
}
