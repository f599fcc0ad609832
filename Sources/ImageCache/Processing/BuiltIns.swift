// The built-in processors: resize (fill with a crop, or fit), crop, rounded corners, circle and
// blur. What each draws (the canvas, where the image goes on it, the clip, the blur's radius, all
// in pixels at the image's display scale) is decided here for every platform, where the Linux
// tests reach it; Apple platforms draw it with CoreGraphics.

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
    /// What a built-in draws, in pixels: a canvas, the image's rectangle on it (CoreGraphics'
    /// coordinates: origin at the bottom left), the clip, and the radius of a box blur over the result.
    internal struct Drawing: Equatable {
        fileprivate(set) var canvas: (width: Int, height: Int)
        fileprivate(set) var image: CGRect
        fileprivate(set) var clip = Clip.none
        fileprivate(set) var blur = 0

        enum Clip: Equatable { case none, roundedRect(radius: Double), ellipse }

        static func == (a: Drawing, b: Drawing) -> Bool {
            a.canvas == b.canvas && a.image == b.image && a.clip == b.clip && a.blur == b.blur
        }

        /// The image drawn whole on a canvas its size.
        init(whole pixels: (width: Int, height: Int)) {
            canvas = pixels
            image = CGRect(x: 0, y: 0, width: pixels.width, height: pixels.height)
        }

        init(canvas: (width: Int, height: Int), image: CGRect) {
            (self.canvas, self.image) = (canvas, image)
        }
    }

    /// `points` at `scale`, in whole pixels (at least 1 on each side); nil for a size that is not
    /// positive and finite.
    internal static func pixels(_ points: CGSize, scale: Double) -> (width: Int, height: Int)? {
        let (width, height) = (Double(points.width) * scale, Double(points.height) * scale)
        guard width.isFinite, height.isFinite, width > 0, height > 0, max(width, height) <= 1e6 else { return nil }
        return (max(1, Int(width.rounded())), max(1, Int(height.rounded())))
    }

    /// An image of `pixels` scaled to fill `target` pixels, never up, cropped to it about its
    /// centre: the canvas is the target (or the image's side where it is smaller).
    internal static func fill(_ pixels: (width: Int, height: Int), _ target: (width: Int, height: Int)) -> Drawing {
        let factor = min(1, max(Double(target.width) / Double(pixels.width), Double(target.height) / Double(pixels.height)))
        let (width, height) = (Double(pixels.width) * factor, Double(pixels.height) * factor)
        let canvas = (min(target.width, max(1, Int(width.rounded()))), min(target.height, max(1, Int(height.rounded()))))
        let origin = ((Double(canvas.0) - width) / 2, (Double(canvas.1) - height) / 2)
        return Drawing(canvas: canvas, image: CGRect(x: origin.0, y: origin.1, width: width, height: height))
    }

    /// An image of `pixels` scaled to fit within `target` pixels, never up, whole.
    internal static func fit(_ pixels: (width: Int, height: Int), _ target: (width: Int, height: Int)) -> Drawing {
        let factor = min(1, min(Double(target.width) / Double(pixels.width), Double(target.height) / Double(pixels.height)))
        let canvas = (max(1, Int((Double(pixels.width) * factor).rounded())),
                      max(1, Int((Double(pixels.height) * factor).rounded())))
        return Drawing(canvas: canvas, image: CGRect(x: 0, y: 0, width: canvas.0, height: canvas.1))
    }

    /// The part of an image of `pixels` that `rect` (points, origin at the top left, at `scale`)
    /// covers, in whole pixels from the top left; nil if it covers none.
    internal static func crop(_ pixels: (width: Int, height: Int), to rect: CGRect, scale: Double) -> CGRect? {
        guard rect.origin.x.isFinite, rect.origin.y.isFinite, rect.width.isFinite, rect.height.isFinite else { return nil }
        let scaled = CGRect(x: rect.minX * scale, y: rect.minY * scale, width: rect.width * scale, height: rect.height * scale)
            .standardized.integral
        let covered = scaled.intersection(CGRect(x: 0, y: 0, width: pixels.width, height: pixels.height))
        return covered.isNull || covered.width < 1 || covered.height < 1 ? nil : covered
    }

    /// An image of `pixels` with its corners rounded by `radius` points at `scale`, at most half
    /// its shorter side.
    internal static func rounded(_ pixels: (width: Int, height: Int), radius: Double, scale: Double) -> Drawing {
        var drawing = Drawing(whole: pixels)
        let radius = min(max(0, radius.isFinite ? radius * scale : 0), Double(min(pixels.width, pixels.height)) / 2)
        drawing.clip = .roundedRect(radius: radius)
        return drawing
    }

    /// An image of `pixels` cropped to a square about its centre (its shorter side), in a circle.
    internal static func circle(_ pixels: (width: Int, height: Int)) -> Drawing {
        let side = min(pixels.width, pixels.height)
        let origin = (Double(side - pixels.width) / 2, Double(side - pixels.height) / 2)
        var drawing = Drawing(canvas: (side, side),
                              image: CGRect(x: origin.0, y: origin.1, width: Double(pixels.width),
                                            height: Double(pixels.height)))
        drawing.clip = Drawing.Clip.ellipse
        return drawing
    }

    /// An image of `pixels` blurred by `radius` points at `scale` (three box blurs of that radius
    /// in pixels, close to a Gaussian's), at most 100 pixels; nil for none.
    internal static func blurred(_ pixels: (width: Int, height: Int), radius: Double, scale: Double) -> Drawing? {
        let radius = radius.isFinite ? Int(min(100, max(0, radius * scale)).rounded()) : 0
        guard radius > 0 else { return nil }
        var drawing = Drawing(whole: pixels)
        drawing.blur = radius
        return drawing
    }

    /// Blurs a bitmap of four bytes a pixel in place: three passes of a box blur of `radius` pixels
    /// across and down (edges repeat their last pixel).
    internal static func boxBlur(_ bytes: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int,
                                 radius: Int) {
        guard radius > 0, width > 0, height > 0 else { return }
        let pixels = bytes.assumingMemoryBound(to: UInt8.self)
        var line = [UInt32](repeating: 0, count: max(width, height) * 4)
        func pass(count: Int, at index: (Int) -> Int) {
            for i in 0..<count { for c in 0..<4 { line[i * 4 + c] = UInt32(pixels[index(i) + c]) } }
            let span = UInt32(2 * radius + 1)
            var sums = [UInt32](repeating: 0, count: 4)
            for offset in -radius...radius {
                let i = min(max(offset, 0), count - 1)
                for c in 0..<4 { sums[c] += line[i * 4 + c] }
            }
            for i in 0..<count {
                for c in 0..<4 { pixels[index(i) + c] = UInt8((sums[c] + span / 2) / span) }
                let (leaving, coming) = (max(i - radius, 0), min(i + radius + 1, count - 1))
                for c in 0..<4 { sums[c] = sums[c] - line[leaving * 4 + c] + line[coming * 4 + c] }
            }
        }
        for _ in 0..<3 {
            for y in 0..<height { pass(count: width) { y * bytesPerRow + $0 * 4 } }
            for x in 0..<width { pass(count: height) { $0 * bytesPerRow + x * 4 } }
        }
    }
}

#if canImport(UIKit) || canImport(AppKit)
nonisolated extension ImageCache.Processor {
    /// Scales the image down, never up, to fill `size` (points at the image's scale), and crops
    /// what is left over about its centre: a thumbnail of exactly that shape.
    public static func resize(toFill size: CGSize) -> ImageCache.Processor {
        drawing("resize-fill?w=\(size.width)&h=\(size.height)", resizesOnly: true) { pixels, scale in
            ImageCache.Processor.pixels(size, scale: scale).map { fill(pixels, $0) }
        }
    }

    /// Scales the image down, never up, to fit within `size` (points at the image's scale), whole.
    public static func resize(toFit size: CGSize) -> ImageCache.Processor {
        drawing("resize-fit?w=\(size.width)&h=\(size.height)", resizesOnly: true) { pixels, scale in
            ImageCache.Processor.pixels(size, scale: scale).map { fit(pixels, $0) }
        }
    }

    /// Keeps the part of the image within `rect` (points at the image's scale, from its top left),
    /// copied into a bitmap of its own; fails the variant if `rect` covers none of it.
    public static func crop(to rect: CGRect) -> ImageCache.Processor {
        drawing("crop?x=\(rect.minX)&y=\(rect.minY)&w=\(rect.width)&h=\(rect.height)", required: true) { pixels, scale in
            ImageCache.Processor.crop(pixels, to: rect, scale: scale).map { cropping(pixels, to: $0) }
        }
    }

    /// Rounds the image's corners by `radius` points (at most half its shorter side).
    public static func roundedCorners(radius: CGFloat) -> ImageCache.Processor {
        drawing("rounded?r=\(radius)") { pixels, scale in rounded(pixels, radius: Double(radius), scale: scale) }
    }

    /// The largest circle the image holds about its centre: a square crop of its shorter side, in
    /// a circle (transparent outside).
    public static let circle = drawing("circle") { pixels, _ in ImageCache.Processor.circle(pixels) }

    /// Blurs the image by `radius` points (a box blur three times, close to a Gaussian blur; at most
    /// 100 pixels).
    public static func blur(radius: CGFloat) -> ImageCache.Processor {
        drawing("blur?r=\(radius)") { pixels, scale in blurred(pixels, radius: Double(radius), scale: scale) }
    }

    /// A built-in that draws what `plan` says for an image of its pixels and scale (nil: the image
    /// as it is, or no image if the plan is `required`). An animation's first frame stands for it.
    private static func drawing(_ id: String, required: Bool = false, resizesOnly: Bool = false,
                                _ plan: @escaping @Sendable ((width: Int, height: Int), Double) -> Drawing?)
        -> ImageCache.Processor {
        ImageCache.Processor(id, resizesOnly: resizesOnly) { image in
            guard let cgImage = ImageCache.cgImage(of: image) else { return nil }
            let scale = ImageCache.scale(of: image)
            guard let drawing = plan((cgImage.width, cgImage.height), scale) else { return required ? nil : image }
            return ImageCache.draw(cgImage, drawing).map { ImageCache.image($0, scale: scale) }
        }
    }
}

nonisolated extension ImageCache {
    /// Draws `cgImage` as `drawing` says (under `transform`, if given) into a new bitmap of 8 bits a
    /// channel, in the format ``Processor/canvas(alphaInfo:model:for:)`` chooses.
    internal static func draw(_ cgImage: CGImage, _ drawing: Processor.Drawing,
                              transform: Processor.Transform? = nil) -> CGImage? {
        let (width, height) = drawing.canvas
        let format = Processor.canvas(alphaInfo: cgImage.alphaInfo.rawValue, model: cgImage.colorSpace?.model.rawValue,
                                      for: drawing, transform: transform)
        let info = (format.alpha ? CGImageAlphaInfo.premultipliedLast : .noneSkipLast).rawValue
        let sRGB = CGColorSpace(name: CGColorSpace.sRGB) ?? CGColorSpaceCreateDeviceRGB()
        let spaces = [format.sourceSpace ? cgImage.colorSpace : nil, sRGB].compactMap { $0 }
        // A source space a bitmap context does not take falls back to sRGB.
        guard let context = spaces.lazy.compactMap({
            CGContext(data: nil, width: width, height: height, bitsPerComponent: 8, bytesPerRow: 0, space: $0,
                      bitmapInfo: info)
        }).first else { return nil }
        context.interpolationQuality = .high
        let canvas = CGRect(x: 0, y: 0, width: width, height: height)
        switch drawing.clip {
        case .none: break
        case .roundedRect(let radius):
            context.addPath(CGPath(roundedRect: canvas, cornerWidth: radius, cornerHeight: radius, transform: nil))
            context.clip()
        case .ellipse:
            context.addPath(CGPath(ellipseIn: canvas, transform: nil))
            context.clip()
        }
        if let t = transform { context.concatenate(CGAffineTransform(a: t.a, b: t.b, c: t.c, d: t.d, tx: t.tx, ty: t.ty)) }
        context.draw(cgImage, in: drawing.image)
        if drawing.blur > 0, let data = context.data {
            Processor.boxBlur(data, width: width, height: height, bytesPerRow: context.bytesPerRow, radius: drawing.blur)
        }
        return context.makeImage()
    }

    /// An image's bitmap: an animation's first frame.
    internal static func cgImage(of image: Image) -> CGImage? {
        #if canImport(UIKit)
        return image.cgImage ?? image.images?.first?.cgImage
        #else
        return image.cgImage(forProposedRect: nil, context: nil, hints: nil)
        #endif
    }

    /// An image's display scale: its pixels over its points.
    internal static func scale(of image: Image) -> Double {
        #if canImport(UIKit)
        return Double(image.scale)
        #else
        let pixels = Sizing.pixelSize(of: image)
        return image.size.width > 0 ? Double(pixels.width) / Double(image.size.width) : 1
        #endif
    }

    /// The platform image of `cgImage` at `scale`.
    internal static func image(_ cgImage: CGImage, scale: Double) -> Image {
        #if canImport(UIKit)
        return UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up)
        #else
        return NSImage(cgImage: cgImage, size: Sizing.pointSize(width: cgImage.width, height: cgImage.height, scale: scale))
        #endif
    }
}
#endif
