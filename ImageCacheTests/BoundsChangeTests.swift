import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 49, defect 7 (the rest): a UIKit or AppKit view bound to its bounds decodes again when they
/// change enough after it was laid out (a rotation, Split View, a window resized), not only on its
/// one look after binding; and issue 49, defect 10 (the rest): AppKit counts its bitmaps' real bytes.
final class BoundsChangeTests: BinderTestCase {
    // MARK: How much change is enough

    func testAResizeRedecodesWhenASideGrowsByMoreThanATenthOrBothHalve() {
        let bound = (size: Optional((width: 300, height: 200)), scale: 2.0)
        func after(_ width: Int, _ height: Int, scale: Double = 2) -> Bool {
            ImageCache.rebindsAfterResize(bound: bound, now: (size: (width: width, height: height), scale: scale),
                                          decodeBound: 4_096)
        }
        // A few pixels larger: a first layout would decode again, a resize does not (live resizing)
        XCTAssertTrue(ImageCache.Rebinding.rebinds(bound: bound, now: (size: (width: 320, height: 210), scale: 2),
                                              decodeBound: 4_096))
        XCTAssertFalse(after(320, 210))
        XCTAssertFalse(after(330, 220))  // a tenth exactly
        // Rotated to landscape, or a window widened: decodes again
        XCTAssertTrue(after(331, 200))
        XCTAssertTrue(after(600, 400))
        // Smaller, but not by half on both sides: keeps its image; half on both: decodes again
        XCTAssertFalse(after(160, 90))
        XCTAssertTrue(after(150, 100))
        // Another screen's scale, or a first layout (a whole decode so far), as `rebinds` says
        XCTAssertTrue(after(300, 200, scale: 3))
        XCTAssertTrue(ImageCache.rebindsAfterResize(bound: (size: nil, scale: 2),
                                                    now: (size: (width: 300, height: 200), scale: 2), decodeBound: 4_096))
        XCTAssertFalse(after(300, 200))
    }

    // MARK: Through the binder

    func testABindingToTheBoundsDecodesAgainWhenTheyChangeEnough() {
        // Given a view bound to its bounds, 300 x 200 pixels, showing its image
        let cache = makeCache()
        let url = serveImage("/rotated.png", width: 64)
        let (target, binder) = makeTarget()
        let bounds = Locked(CGSize(width: 300, height: 200))
        let shown = expectation(description: "shown")
        target.onSet = { if $0?.width == 64 { shown.fulfill() } }
        callbacks.sync {
            target.expected = 64
            binder.lookAtSize({ (pixels: bounds.value, scale: 1) })
            _ = binder.bind(url, placeholder: placeholder, pixelSize: bounds.value, cache: cache)
        }
        wait(for: [shown], timeout: 10)

        // When its bounds grow by a few pixels (a live resize's step)
        bounds.value = CGSize(width: 320, height: 210)
        let (state, generation) = callbacks.sync { () -> (ImageCache.Binder.State, Int) in
            let generation = binder.generation
            binder.boundsChanged()
            return (binder.state, binder.generation - generation)
        }
        // Then nothing is decoded again
        XCTAssertEqual(state, .image(.network))
        XCTAssertEqual(generation, 0)

        // When it is rotated: 600 x 400
        let again = expectation(description: "shown again")
        target.onSet = { if $0?.width == 64 { again.fulfill() } }
        bounds.value = CGSize(width: 600, height: 400)
        let loading = callbacks.sync { () -> ImageCache.Binder.State in
            binder.boundsChanged()
            return binder.state
        }
        // Then it decodes again at that size (before the fix: nothing looked after the first
        // layout), from the file, keeping its image meanwhile
        XCTAssertEqual(loading, .loading)
        wait(for: [again], timeout: 10)
        XCTAssertNotNil(cache.peek(key: url.absoluteString, filling: (600, 400)))
        XCTAssertEqual(server.requestCount("/rotated.png"), 1)
        XCTAssertEqual(callbacks.sync { target.history.filter { $0 == Self.placeholderWidth }.count }, 1)
    }

    func testABindingGivenASizeIgnoresTheBounds() {
        // Given a view bound at a size given (`targetSize`, a request's size): no `sizeNow`
        let cache = makeCache()
        let url = serveImage("/given.png", width: 64)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "shown")
        target.onSet = { if $0?.width == 64 { shown.fulfill() } }
        callbacks.sync {
            target.expected = 64
            _ = binder.bind(url, pixelSize: CGSize(width: 100, height: 100), cache: cache)
        }
        wait(for: [shown], timeout: 10)

        // When its bounds change, however much
        let changed = callbacks.sync { () -> Int in
            let generation = binder.generation
            binder.boundsChanged()
            return binder.generation - generation
        }

        // Then it keeps its binding
        XCTAssertEqual(changed, 0)
        XCTAssertEqual(callbacks.sync { binder.state }, .image(.network))
    }

    // MARK: AppKit's bitmaps

    func testABitmapCostsItsRowsTimesItsHeight() {
        // A 16-bit bitmap costs 8 bytes a pixel (before the fix AppKit counted 4), padded rows
        // count, rows narrower than 4 bytes a pixel (grey) count 4, unknown rows (a PDF's
        // representation) 4, and every representation an image keeps counts
        XCTAssertEqual(ImageCache.bitmapCost(of: [(100, 50, 800)]), 40_000)
        XCTAssertEqual(ImageCache.bitmapCost(of: [(100, 50, 416)]), 20_800)
        XCTAssertEqual(ImageCache.bitmapCost(of: [(100, 50, 100)]), 20_000)
        XCTAssertEqual(ImageCache.bitmapCost(of: [(100, 50, nil)]), 20_000)
        XCTAssertEqual(ImageCache.bitmapCost(of: [(100, 50, 800), (50, 25, 200)]), 45_000)
        XCTAssertEqual(ImageCache.bitmapCost(of: []), 0)
    }
}
