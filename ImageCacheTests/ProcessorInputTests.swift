import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache

/// Issue 49, defects 1, 2, 5 and 10: what the built-ins decide before CoreGraphics draws, where
/// Linux reaches it. Before the fix a processor took the stored bitmap as it was (rotated, at its
/// own scale), drew every result into premultiplied RGBA DeviceRGB, cropped by reference, and had
/// nothing to say of an image with no bitmap.
final class ProcessorInputTests: XCTestCase {
    typealias Processor = ImageCache.Processor

    /// Where the stored bitmap's top-left and top-right pixels must appear upright, from the top
    /// left, by EXIF's definitions (UIImage.Orientation's raw value -> EXIF: 0 up 1, 1 down 3,
    /// 2 left 8, 3 right 6, 4 upMirrored 2, 5 downMirrored 4, 6 leftMirrored 5, 7 rightMirrored 7).
    private let expected: [Int: (topLeft: String, topRight: String)] = [
        0: ("top-left", "top-right"), 1: ("bottom-right", "bottom-left"),
        2: ("bottom-left", "top-left"), 3: ("top-right", "bottom-right"),
        4: ("top-right", "top-left"), 5: ("bottom-left", "bottom-right"),
        6: ("top-left", "bottom-left"), 7: ("bottom-right", "top-right"),
    ]

    /// The upright corner a stored pixel (column, row from the top left) lands in.
    private func corner(of pixel: (Int, Int), stored: (width: Int, height: Int), orientation: Int) -> String {
        let plan = Processor.upright(stored, orientation: orientation)
        let canvas = plan?.canvas ?? stored
        // Its centre, in CoreGraphics' coordinates of the rectangle the bitmap is drawn in
        let (x, y) = (Double(pixel.0) + 0.5, Double(stored.height - pixel.1) - 0.5)
        let drawn: (x: Double, y: Double) = plan?.transform.apply(x, y) ?? (x, y)
        let fromTop = Double(canvas.height) - drawn.y
        XCTAssertTrue((0...Double(canvas.width)).contains(drawn.x) && (0...Double(canvas.height)).contains(fromTop),
                      "orientation \(orientation): off the canvas")
        let vertical = fromTop < Double(canvas.height) / 2 ? "top" : "bottom"
        return vertical + (drawn.x < Double(canvas.width) / 2 ? "-left" : "-right")
    }

    func testEveryOrientationIsDrawnUprightOnACanvasOfItsUprightSize() {
        let stored = (width: 40, height: 30)  // a camera's landscape bitmap
        for orientation in 0..<8 {
            XCTAssertEqual(corner(of: (0, 0), stored: stored, orientation: orientation), expected[orientation]?.topLeft,
                           "orientation \(orientation)")
            XCTAssertEqual(corner(of: (39, 0), stored: stored, orientation: orientation), expected[orientation]?.topRight,
                           "orientation \(orientation)")
            let canvas = Processor.upright(stored, orientation: orientation)?.canvas ?? stored
            XCTAssertEqual([canvas.width, canvas.height], [2, 3, 6, 7].contains(orientation) ? [30, 40] : [40, 30])
        }
        XCTAssertNil(Processor.upright(stored, orientation: 0))
    }

    func testAStoredPhotoIsRedrawnUprightAtTheDisplayScaleBeforeTheProcessorsRun() throws {
        // A camera's photo put in with store: orientation right, scale 1, on a 3x screen
        let photo = try Processor.preparation(orientation: 3, scale: 1, displayScale: 3, hasBitmap: true).get()
        XCTAssertEqual(photo?.redraw, true)
        XCTAssertEqual(photo?.scale, 3)
        // Upright but 1x: given the screen's scale, not redrawn
        let flat = try Processor.preparation(orientation: 0, scale: 1, displayScale: 3, hasBitmap: true).get()
        XCTAssertEqual(flat?.redraw, false)
        XCTAssertEqual(flat?.scale, 3)
        // What the cache decoded for that screen: as it is
        XCTAssertNil(try Processor.preparation(orientation: 0, scale: 3, displayScale: 3, hasBitmap: true).get())
    }

    func testAnImageWithNoBitmapIsRefusedSayingWhy() {
        let refused = Processor.preparation(orientation: 0, scale: 2, displayScale: 2, hasBitmap: false)
        guard case .failure(.decodingFailed(let why)) = refused else { return XCTFail("\(refused)") }
        XCTAssertTrue(why.contains("CIImage"), why)
    }

    func testAnOpaquePhotoStaysOpaqueAndKeepsItsColourSpace() {
        let photo = (width: 400, height: 300)
        let opaque = UInt32(5), alpha = UInt32(1)  // CGImageAlphaInfo.noneSkipLast, .premultipliedLast
        let rgb = Int32(1), gray = Int32(0)  // CGColorSpaceModel.rgb, .monochrome
        // Resized to fill, or to fit: the image covers the canvas
        XCTAssertEqual(Processor.canvas(alphaInfo: opaque, model: rgb, for: Processor.fill(photo, (100, 100))).alpha, false)
        XCTAssertEqual(Processor.canvas(alphaInfo: opaque, model: rgb, for: Processor.fit(photo, (100, 100))).alpha, false)
        XCTAssertEqual(Processor.canvas(alphaInfo: opaque, model: rgb, for: Processor.blurred(photo, radius: 4, scale: 2)!).alpha,
                       false)
        // Clipped corners, or an image with alpha: alpha
        XCTAssertEqual(Processor.canvas(alphaInfo: opaque, model: rgb, for: Processor.circle(photo)).alpha, true)
        XCTAssertEqual(Processor.canvas(alphaInfo: opaque, model: rgb,
                                        for: Processor.rounded(photo, radius: 8, scale: 2)).alpha, true)
        XCTAssertEqual(Processor.canvas(alphaInfo: alpha, model: rgb, for: Processor.fit(photo, (100, 100))).alpha, true)
        // Drawn upright under a quarter turn: still covered, still opaque
        let turn = Processor.upright(photo, orientation: 3)!
        let upright = Processor.Drawing(canvas: turn.canvas, image: CGRect(x: 0, y: 0, width: photo.width, height: photo.height))
        XCTAssertEqual(Processor.canvas(alphaInfo: opaque, model: rgb, for: upright, transform: turn.transform).alpha, false)
        // An RGB source (Display P3, sRGB) keeps its space; grey and the rest are drawn in sRGB
        XCTAssertTrue(Processor.canvas(alphaInfo: opaque, model: rgb, for: Processor.fit(photo, (100, 100))).sourceSpace)
        XCTAssertFalse(Processor.canvas(alphaInfo: opaque, model: gray, for: Processor.fit(photo, (100, 100))).sourceSpace)
        XCTAssertFalse(Processor.canvas(alphaInfo: opaque, model: nil, for: Processor.fit(photo, (100, 100))).sourceSpace)
    }

    func testACropIsCopiedOntoACanvasOfItsOwnSize() throws {
        // The part 10..<30 across and 5..<25 down of a 40 x 30 image
        let pixels = (width: 40, height: 30)
        let covered = try XCTUnwrap(Processor.crop(pixels, to: CGRect(x: 5, y: 2.5, width: 10, height: 10), scale: 2))
        XCTAssertEqual(covered, CGRect(x: 10, y: 5, width: 20, height: 20))
        let drawing = Processor.cropping(pixels, to: covered)
        XCTAssertEqual([drawing.canvas.width, drawing.canvas.height], [20, 20])
        // The covered part's corners land on the canvas's (CoreGraphics' coordinates, from the bottom)
        XCTAssertEqual(drawing.image.minX + covered.minX, 0)
        XCTAssertEqual(drawing.image.minY + (Double(pixels.height) - covered.maxY), 0)
        XCTAssertEqual(drawing.image.size, CGSize(width: 40, height: 30))
        XCTAssertEqual(Processor.canvas(alphaInfo: 5, model: 1, for: drawing).alpha, false)
    }
}
