import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Views take processors through the same description of a load (issue 39): a binder bound to a
/// request shows that request's variant, never the plain image or another variant, sized to the view.
final class ProcessedViewTests: BinderTestCase {
    /// A processor named `id` that makes photo.png `width` pixels wide, counting its runs.
    private func processor(_ id: String, width: Int, runs: Locked<Int>) -> ImageCache.Processor {
        let made = png(width: width)
        return ImageCache.Processor(id) { _ in
            runs.mutate { $0 += 1 }
            return ImageCache.Image(data: made)
        }
    }

    func testABinderShowsItsRequestsVariantAndNeverThePlainImage() {
        let cache = makeCache()
        let url = serveImage("/avatar.png", width: 1_100)
        let runs = Locked(0)
        let round = processor("round", width: 1_101, runs: runs)
        // The plain image is in memory already
        XCTAssertNotNil(fetchAndWait(cache, url))
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the variant")
        target.onSet = { if $0?.width == 1_101 { shown.fulfill() } }
        callbacks.sync {
            target.expected = 1_101
            binder.bind(ImageCache.Request(url: url, processors: [round]), placeholder: placeholder,
                        pixelSize: CGSize(width: 30, height: 30), cache: cache)
        }
        wait(for: [shown], timeout: 10)
        // Then the target showed the placeholder, then the variant: never the plain image
        callbacks.sync {
            XCTAssertEqual(target.history, [Self.placeholderWidth, 1_101])
            XCTAssertEqual(target.wrong, 0)
        }
        XCTAssertEqual(runs.value, 1)
        XCTAssertEqual(server.requestCount("/avatar.png"), 1)
        // Bound again (a cell reused for the same row): at once from memory, not processed again
        callbacks.sync {
            binder.bind(ImageCache.Request(url: url, processors: [round]), placeholder: placeholder,
                        pixelSize: CGSize(width: 30, height: 30), cache: cache)
            XCTAssertEqual(target.history.last, 1_101)
            XCTAssertEqual(binder.state, .image(.memory))
        }
        XCTAssertEqual(runs.value, 1)
    }

    func testTwoBindersOfTwoVariantsOfOneURLEachShowTheirOwnFromOneDownload() {
        let cache = makeCache()
        let gate = Gate()
        let url = server.url("/two.png")
        serveBehind(gate, prefix: "/two")
        let runs = Locked(0)
        let (first, firstBinder) = makeTarget()
        let (second, secondBinder) = makeTarget()
        let done = expectation(description: "both variants")
        done.expectedFulfillmentCount = 2
        first.onSet = { if $0?.width == 1_201 { done.fulfill() } }
        second.onSet = { if $0?.width == 1_202 { done.fulfill() } }
        callbacks.sync {
            (first.expected, second.expected) = (1_201, 1_202)
            firstBinder.bind(ImageCache.Request(url: url, processors: [processor("a", width: 1_201, runs: runs)]),
                             cache: cache)
            secondBinder.bind(ImageCache.Request(url: url, size: CGSize(width: 20, height: 20),
                                                 processors: [processor("b", width: 1_202, runs: runs)]), cache: cache)
        }
        XCTAssertTrue(eventually { self.server.requestCount("/two.png") == 1 })
        gate.open()
        wait(for: [done], timeout: 10)
        callbacks.sync { XCTAssertEqual(first.wrong + second.wrong, 0) }
        XCTAssertEqual(runs.value, 2)
        XCTAssertEqual(server.requestCount("/two.png"), 1)
    }
}
