// What a processor's input needs before it runs, and the bitmap a built-in draws into (issue 49):
// an image the cache did not decode (a camera's photo put in with `store`) may be stored rotated
// (its orientation), carry a scale other than the screen's, have no bitmap at all (a CIImage's), or
// hold colours wider than sRGB. Each decision is made here for every platform, where the Linux tests
// reach it; Apple platforms redraw with CoreGraphics (BuiltIns.swift).

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif
#if canImport(ImageIO)
import ImageIO
#endif
#if canImport(SwiftUI)
import SwiftUI
#endif

nonisolated extension ImageCache.Processor {
    /// An affine transform as CoreGraphics writes one (a point (x, y) goes to
    /// (a x + c y + tx, b x + d y + ty)), here where Linux has no `CGAffineTransform`.
    internal struct Transform: Equatable {
        var a, b, c, d, tx, ty: Double

        func apply(_ x: Double, _ y: Double) -> (x: Double, y: Double) {
            (a * x + c * y + tx, b * x + d * y + ty)
        }
    }

    /// How to draw a bitmap of `pixels` (as stored) upright, for an image whose orientation is
    /// `orientation` (`UIImage.Orientation`'s raw value: up 0, down 1, left 2, right 3, then the
    /// four mirrored, 4 to 7): the canvas (its sides swapped for a quarter turn) and the transform
    /// under which the bitmap, drawn in (0, 0, width, height), lands upright on it (CoreGraphics'
    /// coordinates, origin at the bottom left). Nil for up, or an unknown value: drawn as it is.
    internal static func upright(_ pixels: (width: Int, height: Int), orientation: Int)
        -> (canvas: (width: Int, height: Int), transform: Transform)? {
        let (w, h) = (Double(pixels.width), Double(pixels.height))
        let turned = (pixels.height, pixels.width)
        switch orientation {
        case 1: return (pixels, Transform(a: -1, b: 0, c: 0, d: -1, tx: w, ty: h))  // down
        case 2: return (turned, Transform(a: 0, b: 1, c: -1, d: 0, tx: h, ty: 0))  // left
        case 3: return (turned, Transform(a: 0, b: -1, c: 1, d: 0, tx: 0, ty: w))  // right
        case 4: return (pixels, Transform(a: -1, b: 0, c: 0, d: 1, tx: w, ty: 0))  // up, mirrored
        case 5: return (pixels, Transform(a: 1, b: 0, c: 0, d: -1, tx: 0, ty: h))  // down, mirrored
        case 6: return (turned, Transform(a: 0, b: -1, c: -1, d: 0, tx: h, ty: w))  // left, mirrored
        case 7: return (turned, Transform(a: 0, b: 1, c: 1, d: 0, tx: 0, ty: 0))  // right, mirrored
        default: return nil
        }
    }

    /// What a processor's input needs before the processors run: drawn upright first (`redraw`),
    /// and given `scale` (the display scale of the view or screen it is for) where its own is
    /// another, so that sizes in points mean the screen's points. A `store`d camera photo is 1x
    /// and rotated; an image the cache decoded is upright at that scale already (nil: nothing to
    /// do). An image with no bitmap (a `UIImage` made from a `CIImage`) is refused: nothing can be
    /// drawn from it without rendering it, which the app does knowing its `CIContext`.
    internal static func preparation(orientation: Int, scale: Double, displayScale: Double, hasBitmap: Bool)
        -> Result<(redraw: Bool, scale: Double)?, ImageCache.Error> {
        guard hasBitmap else { return .failure(noBitmap) }
        let redraw = upright((1, 1), orientation: orientation) != nil
        let target = (1...16).contains(displayScale) && abs(scale - displayScale) > 0.001 ? displayScale : scale
        return redraw || target != scale ? .success((redraw, target)) : .success(nil)
    }

    /// Why an image with no bitmap cannot be processed or stored.
    internal static let noBitmap = ImageCache.Error.decodingFailed(
        "the image has no bitmap (a UIImage made from a CIImage): render it into a CGImage first")

    /// The bitmap a built-in draws into: with an alpha channel only where the result needs one
    /// (the source has one, a clip leaves corners clear, or the image does not cover the canvas),
    /// so that an opaque photo stays opaque (no blending on screen; `store` keeps it as a JPEG);
    /// and in the source's own colour space when it is an RGB one (Display P3 keeps its colours),
    /// else sRGB (grey, indexed, CMYK sources). `alphaInfo` is `CGImageAlphaInfo`'s raw value,
    /// `model` `CGColorSpaceModel`'s (nil: no colour space); the image is drawn under `transform`.
    internal static func canvas(alphaInfo: UInt32, model: Int32?, for drawing: Drawing, transform: Transform? = nil)
        -> (alpha: Bool, sourceSpace: Bool) {
        let opaqueSource = [0, 5, 6].contains(alphaInfo)  // none, noneSkipLast, noneSkipFirst
        let canvas = CGRect(x: 0, y: 0, width: drawing.canvas.width, height: drawing.canvas.height)
        var image = drawing.image
        if let transform {  // a quarter turn or a mirror: the corners' bounds are the drawn rectangle
            let corners = [(image.minX, image.minY), (image.maxX, image.maxY)].map { transform.apply($0.0, $0.1) }
            image = CGRect(x: min(corners[0].x, corners[1].x), y: min(corners[0].y, corners[1].y),
                           width: abs(corners[0].x - corners[1].x), height: abs(corners[0].y - corners[1].y))
        }
        let covers = image.insetBy(dx: -0.001, dy: -0.001).contains(canvas)
        return (!opaqueSource || drawing.clip != .none || !covers, model == 1)  // 1: RGB
    }

    /// `crop(to:)`'s drawing: the part `covered` (pixels from the top left) of an image of `pixels`,
    /// copied onto a canvas its size, so that the variant holds no reference to its parent's
    /// bitmap (`CGImage.cropping` keeps the whole parent alive).
    internal static func cropping(_ pixels: (width: Int, height: Int), to covered: CGRect) -> Drawing {
        let canvas = (max(1, Int(covered.width)), max(1, Int(covered.height)))
        return Drawing(canvas: canvas, image: CGRect(x: -covered.minX, y: -(Double(pixels.height) - covered.maxY),
                                                     width: Double(pixels.width), height: Double(pixels.height)))
    }
}

#if canImport(UIKit) || canImport(AppKit)
nonisolated extension ImageCache {
    /// `image` as the processors get it (see ``Processor/preparation(orientation:scale:displayScale:hasBitmap:)``):
    /// as it is, given `displayScale`, or redrawn upright at it; an animation as it is (the
    /// built-ins draw its first frame).
    internal static func prepared(_ image: Image, displayScale: Double) -> Result<Image, Error> {
        let bitmap = cgImage(of: image)
        #if canImport(UIKit)
        if image.images != nil { return .success(image) }
        let orientation = image.imageOrientation.rawValue
        #else
        let orientation = 0  // an NSImage draws upright
        #endif
        let plan = Processor.preparation(orientation: orientation, scale: scale(of: image), displayScale: displayScale,
                                         hasBitmap: bitmap != nil)
        guard case .success(let steps?) = plan, let bitmap else { return plan.map { _ in image } }
        guard steps.redraw, let turn = Processor.upright((bitmap.width, bitmap.height), orientation: orientation) else {
            return .success(self.image(bitmap, scale: steps.scale))
        }
        let drawing = Processor.Drawing(canvas: turn.canvas,
                                        image: CGRect(x: 0, y: 0, width: bitmap.width, height: bitmap.height))
        guard let upright = draw(bitmap, drawing, transform: turn.transform) else {
            return .failure(.decodingFailed("the image could not be drawn upright"))
        }
        return .success(self.image(upright, scale: steps.scale))
    }

    /// Why `image` cannot be stored or processed, if it cannot: it has no bitmap.
    internal static func bitmapRefusal(of image: Image) -> Error? {
        cgImage(of: image) == nil ? Processor.noBitmap : nil
    }
}
#else
nonisolated extension ImageCache {
    /// Linux: an image is its bytes, upright at 1x: the processors get it as it is.
    internal static func prepared(_ image: Image, displayScale: Double) -> Result<Image, Error> { .success(image) }

    /// Linux: an image always has its bytes.
    internal static func bitmapRefusal(of image: Image) -> Error? { nil }
}
#endif
