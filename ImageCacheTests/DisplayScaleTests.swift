import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache

/// Points, not pixels: the rule that decides the scale an image decoded for the screen carries and
/// the size in points it then reports (`Sizing.displayScale(_:screen:)`, `Sizing.pointSize(width:height:scale:)`),
/// which UIKit's `UIImage(cgImage:scale:orientation:)` and AppKit's `NSImage(cgImage:size:)` get.
final class DisplayScaleTests: CacheTestCase {
    func testAViewsScaleWinsOverTheScreens() {
        // Given a 3x main screen, a view on a 2x screen (an external display) and one on the 3x
        XCTAssertEqual(ImageCache.Sizing.displayScale(2, screen: 3), 2)
        XCTAssertEqual(ImageCache.Sizing.displayScale(3, screen: 2), 3)
        XCTAssertEqual(ImageCache.Sizing.displayScale(1, screen: 3), 1, "a 1x display is one")
    }

    func testAViewInNoWindowOrNoViewTakesTheMainScreensScale() {
        // A view not in a window says 0; a fetch or your own target says nothing
        XCTAssertEqual(ImageCache.Sizing.displayScale(0, screen: 3), 3)
        XCTAssertEqual(ImageCache.Sizing.displayScale(nil, screen: 2), 2)
    }

    func testAScaleThatIsNoneFallsBackToTheScreensThenToOne() {
        for nonsense in [-2, 0.5, .nan, .infinity, -.infinity, 100] as [Double] {
            XCTAssertEqual(ImageCache.Sizing.displayScale(nonsense, screen: 3), 3, "\(nonsense)")
            XCTAssertEqual(ImageCache.Sizing.displayScale(nonsense, screen: nonsense), 1, "\(nonsense) twice")
        }
        XCTAssertEqual(ImageCache.Sizing.displayScale(nil, screen: 0), 1, "a screen that says no scale")
        XCTAssertEqual(ImageCache.Sizing.displayScale(nil, screen: nil), 1, "a screen not read yet")
    }

    func testTheMainScreensScaleIsOneWhereThereIsNoScreen() {
        // Linux has no screen; on Apple platforms a cache made on the main thread reads it
        _ = makeCache()
        XCTAssertEqual(ImageCache.screenScale, 1)
    }

    // MARK: The screen's scale before it is read

    func testADecodeBeforeTheScreenIsReadTakesOneInItsPlace() {
        // A view's scale, or the screen's once read: the scale itself
        XCTAssertTrue(ImageCache.Sizing.decodeScale(2, screen: nil) == (2, false))
        XCTAssertTrue(ImageCache.Sizing.decodeScale(nil, screen: 3) == (3, false))
        XCTAssertTrue(ImageCache.Sizing.decodeScale(0, screen: 3) == (3, false), "a view in no window")
        // Neither: 1, standing in for the screen's, not read yet (a cache made off the main thread)
        XCTAssertTrue(ImageCache.Sizing.decodeScale(nil, screen: nil) == (1, true))
        XCTAssertTrue(ImageCache.Sizing.decodeScale(0, screen: nil) == (1, true))
        // A screen read as no scale at all (a trait collection that does not know says 0) stands in no longer
        XCTAssertTrue(ImageCache.Sizing.decodeScale(nil, screen: 0) == (1, false))
        XCTAssertTrue(ImageCache.Sizing.decodeScale(nil, screen: 1) == (1, false), "a 1x screen is one")
    }

    func testAStandInScaleIsReplacedAtDeliveryOnceTheScreensIsKnown() {
        XCTAssertEqual(ImageCache.Sizing.deliveryScale(standIn: 1, screen: 3), 3)
        XCTAssertEqual(ImageCache.Sizing.deliveryScale(standIn: 1, screen: 2), 2)
        XCTAssertNil(ImageCache.Sizing.deliveryScale(standIn: 1, screen: nil), "still not read: left as it is")
        XCTAssertNil(ImageCache.Sizing.deliveryScale(standIn: 1, screen: 1), "the same scale: nothing to re-wrap")
        for nonsense in [0, -1, .nan, .infinity, 100] as [Double] {
            XCTAssertNil(ImageCache.Sizing.deliveryScale(standIn: 1, screen: nonsense), "\(nonsense)")
        }
    }

    /// What is kept of the main screen only grows: an external display's scene (1x, 1080p) after an
    /// iPhone's (3x, 2,556 px) lowers nothing; a larger display raises the whole decode's bound
    /// (issue 42: every activating scene overwrote it).
    func testTheScreenKeptOnlyGrowsWithTheScenesThatActivate() {
        let phone = ImageCache.screen((nil, nil), read: (3, CGSize(width: 1_179, height: 2_556)))
        XCTAssertEqual(phone.scale, 3)
        XCTAssertEqual(phone.pixels, 2_556)
        let external = ImageCache.screen(phone, read: (1, CGSize(width: 1_920, height: 1_080)))
        XCTAssertEqual(external.scale, 3)  // before the fix: 1
        XCTAssertEqual(external.pixels, 2_556)  // before the fix: 1,920
        let larger = ImageCache.screen(external, read: (2, CGSize(width: 3_840, height: 2_160)))
        XCTAssertEqual(larger.scale, 3)
        XCTAssertEqual(larger.pixels, 3_840)
        // A read that knows nothing: 1 in place of nothing, and what was kept stays
        let unknown = ImageCache.screen((nil, nil), read: (0, nil))
        XCTAssertEqual(unknown.scale, 1)
        XCTAssertNil(unknown.pixels)
        XCTAssertEqual(ImageCache.screen(phone, read: (0, nil)).scale, 3)
    }

    func testTheScreensLongestSideInPixels() {
        // A 6.7-inch iPhone's screen, portrait or landscape, and a 13-inch iPad's
        XCTAssertEqual(ImageCache.longestSide(CGSize(width: 1_290, height: 2_796)), 2_796)
        XCTAssertEqual(ImageCache.longestSide(CGSize(width: 2_796, height: 1_290)), 2_796)
        XCTAssertEqual(ImageCache.longestSide(CGSize(width: 2_064, height: 2_752)), 2_752)
        // Nothing to read: the default bound (4,096) stays
        XCTAssertNil(ImageCache.longestSide(nil))
        XCTAssertNil(ImageCache.longestSide(CGSize(width: 0, height: 2_796)))
        XCTAssertNil(ImageCache.longestSide(CGSize(width: CGFloat.infinity, height: 10)))
        XCTAssertNil(ImageCache.longestSide(CGSize(width: CGFloat.nan, height: 10)))
    }

    func testAnImageDecodedBeforeTheScreenIsReadIsNotKeptInMemory() throws {
        // Given a screen whose scale is not read yet (a cache made off the main thread, before the
        // main queue's next turn)
        ImageCache.setScreenScale(nil)
        defer { ImageCache.setScreenScale(1) }
        let cache = makeCache()
        let url = serve("/photo.png")
        // When an image is fetched, and fetched again
        XCTAssertEqual(try result(cache, url)?.get().source, .network)
        // Then memory did not keep it (its scale stood in for the screen's): the second fetch
        // decodes its file again, and is not kept either
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(try result(cache, url)?.get().source, .disk)
        XCTAssertNil(cache.peek(url))
        // When the screen's scale is read, the next decode carries it and is kept
        ImageCache.setScreenScale(3)
        XCTAssertEqual(try result(cache, url)?.get().source, .disk)
        XCTAssertNotNil(cache.peek(url))
        XCTAssertEqual(try result(cache, url)?.get().source, .memory)
        XCTAssertEqual(server.requestCount("/photo.png"), 1)
        assertInvariants(cache)
    }

    func testStoredBytesDecodedBeforeTheScreenIsReadAreNotKeptInMemoryEither() throws {
        ImageCache.setScreenScale(nil)
        defer { ImageCache.setScreenScale(1) }
        let cache = makeCache()
        try cache.store(fixture("photo.png"), for: "picked")
        XCTAssertNil(cache.peek(key: "picked"))
        cache.drainDisk()
        XCTAssertEqual(try result(cache, server.url("/never-served"), key: "picked")?.get().source, .disk)
        XCTAssertEqual(server.totalRequests, 0)
    }

    func testThePointSizeIsThePixelsOverTheScale() {
        // The case: a 300x300-pixel thumbnail for a 100-point view on a 3x screen is 100x100 points
        XCTAssertEqual(ImageCache.Sizing.pointSize(width: 300, height: 300, scale: 3), CGSize(width: 100, height: 100))
        XCTAssertEqual(ImageCache.Sizing.pointSize(width: 640, height: 480, scale: 1), CGSize(width: 640, height: 480))
        // Not rounded: an odd side at 2x is half a point, as UIImage reports it
        XCTAssertEqual(ImageCache.Sizing.pointSize(width: 301, height: 201, scale: 2), CGSize(width: 150.5, height: 100.5))
    }

    func testThePointSizeTimesTheScaleIsTheDecodedPixels() {
        for scale in [1, 2, 3] as [Double] {
            for (width, height) in [(1, 1), (301, 199), (2_796, 1_290), (4_032, 3_024), (100, 7)] {
                let points = ImageCache.Sizing.pointSize(width: width, height: height, scale: scale)
                XCTAssertEqual((points.width * scale).rounded(), Double(width), "\(width) at \(scale)x")
                XCTAssertEqual((points.height * scale).rounded(), Double(height), "\(height) at \(scale)x")
                XCTAssertEqual(abs(points.width * scale - Double(width)), 0, accuracy: 1e-9)
                XCTAssertEqual(abs(points.height * scale - Double(height)), 0, accuracy: 1e-9)
            }
        }
    }

    func testAPhotoForAViewFillsItInPoints() {
        // Given a 100x100-point view on a 3x screen: setImage asks for 300x300 pixels
        let scale = ImageCache.Sizing.displayScale(3, screen: 2)
        let target = (width: Int(100 * scale), height: Int(100 * scale))
        // When a 4,032x3,024 photo is decoded to fill it
        let pixels = ImageCache.Sizing.decodedSize(width: 4_032, height: 3_024, filling: target)
        let points = ImageCache.Sizing.pointSize(width: pixels.width, height: pixels.height, scale: scale)
        // Then its short side is the view's 100 points, and its bitmap 400x300 pixels
        XCTAssertTrue(pixels == (400, 300))
        XCTAssertEqual(points.height, 100)
        XCTAssertEqual(points.width, 400.0 / 3, accuracy: 1e-9)
    }

    func testLinuxKeepsThePixelsWhateverTheScale() {
        // The Linux image is its bytes: width and height stay in pixels
        let png = fixture("photo.png")
        guard case .success(let plain) = ImageCache.PlatformDecoder.decode(png), case .success(let scaled) = ImageCache.PlatformDecoder.decode(png, scale: 3) else {
            return XCTFail("not decoded")
        }
        #if !canImport(UIKit) && !canImport(AppKit)
        XCTAssertTrue((scaled.image.width, scaled.image.height) == (plain.image.width, plain.image.height))
        XCTAssertEqual(scaled.image, plain.image)
        #endif
    }
}
