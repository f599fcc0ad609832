// PlatformDecoder: an image checked and decoded for the platform (ImageIO on Apple platforms,
// the structural check on Linux), its frames and plays, and its scale changed.

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

nonisolated extension ImageCache {
    /// The platform's image decoder: ImageIO on Apple platforms, the structural check of
    /// ``ImageCache/inspect(_:)`` on Linux (where an image is its bytes); and what the platform's
    /// images keep beside their pixels (frames, plays, bytes).
    internal enum PlatformDecoder {
        /// How many frames the platform's decode may take from bytes that the format check does not
        /// know (ImageIO's formats): all that ImageIO finds in an image sequence (HEICS, AVIS: see
        /// ``HEIFBrands/isSequence``), so that it animates as a GIF does, and a view's player plays it;
        /// else one, the first (a HEIC still's other images are not frames).
        internal static func framesForImageIO(_ data: Data) -> Int {
            HEIFBrands(data)?.isSequence == true ? .max : 1
        }

        /// Checks that `data` starts with a whole image of a known format and decodes it for the platform.
        ///
        /// Bytes after the image's end (see ``inspect(_:)``) are not part of it and are dropped: padding
        /// a server adds, or the video a motion photo appends to its JPEG. The result's `data` is the
        /// image's own bytes (`data` itself when nothing follows): what the cache keeps and delivers.
        ///
        /// Where the platform decodes (ImageIO), the bitmap is made at
        /// ``ImageCache/Sizing/decodedSize(width:height:orientation:filling:maxPixels:)`` within `limits.maxPixels`, carrying
        /// `scale` (see ``ImageCache/Sizing/displayScale(_:screen:)``: its `size` is in points), and a GIF or APNG animates
        /// if ``DecodeLimits/animates(frames:width:height:alsoKept:)`` says so.
        ///
        /// `file`, if given, holds the same bytes (a large body streamed to disk, `data` being its
        /// mapping): ImageIO reads the image from the file.
        ///
        /// `animation` says how an animation is decoded (see ``ImageCache/AnimationDecode``): every frame, or
        /// (a view's) the first frame with the bytes kept for its player. On Linux it changes nothing.
        internal static func decode(_ data: Data, file: URL? = nil, filling size: (width: Int, height: Int)? = nil,
                           limits: DecodeLimits = DecodeLimits(), scale: Double = 1,
                           animation: AnimationDecode = .everyFrame) -> Result<(image: Image, data: Data), Error> {
            let checked = inspect(data)
            #if canImport(ImageIO)
            // ImageIO decides what is an image (HEIC, AVIF, BMP...); the check finds a known format cut short.
            // Such an image shows its first frame, unless it is an image sequence (HEICS, AVIS), whose
            // frames ImageIO counts and times (``framesForImageIO(_:)``).
            if case .failure(.notAnImage) = checked,
               let image = PlatformDecoder.bitmap(data, file: file, filling: size, limits: limits,
                                                  frames: framesForImageIO(data), format: nil,
                                                  scale: scale, animation: animation) {
                return .success((image, data))
            }
            #endif
            return checked.flatMap { info in
                // A copy, not a slice: a slice would keep the padding's memory alive. But a large body's
                // slice: it is mapped from its file (a copy would bring it into memory whole), or, held in
                // memory (a store), within `maxImageBytes` anyway.
                let trimmed = info.end >= data.count ? data
                    : data.count > streamedAbove ? data.prefix(info.end) : Data(data.prefix(info.end))
                #if canImport(ImageIO)
                // From the file only when it is the image (nothing follows it): else from the bytes.
                guard let image = PlatformDecoder.bitmap(trimmed, file: info.end >= data.count ? file : nil, filling: size,
                                         limits: limits, frames: info.frames, format: info.format,
                                         scale: scale, animation: animation) else {
                    return .failure(.corruptImage(info.format, "the system decoder rejected it"))
                }
                #else
                let image = Image(data: trimmed, format: info.format, width: info.width, height: info.height,
                                  frameCount: info.frames)
                #endif
                return .success((image, trimmed))
            }
        }

        /// Whether AppKit's `NSImageView` plays an animation of `format` itself from its `NSImage(data:)`:
        /// a GIF's only. Any other (an APNG) is decoded as a still, its first frame, with its frames kept
        /// for the SwiftUI views, which play them.
        internal static func appKitPlays(_ format: Format?) -> Bool {
            format == .gif
        }

        #if canImport(ImageIO)
        /// Decodes `data` with ImageIO into an upright bitmap now, on the caller's queue (the disk
        /// queue or the decode queue, never the main one), at `decodedSize` (the header's size and EXIF
        /// orientation, read without decoding a pixel), carrying `scale`: its `size` is in points. An
        /// image of `frames` frames (as `inspect` counts them, and no more than ImageIO finds) animates
        /// if ``DecodeLimits/animates(frames:width:height:alsoKept:)`` says so: on UIKit every frame is scaled like a
        /// still (if one cannot be made, the first frame is shown); on AppKit the `NSImage` stays whole,
        /// as `NSImageView` animates it, and its frames scaled like stills are kept with it for the
        /// SwiftUI views (``ImageCache/PlatformDecoder/frames(of:)``), so the rule counts full frames and one more (the frame the
        /// `NSImage`'s bitmap holds).
        ///
        /// With `file` (which holds `data`: a large body streamed to disk, `data` mapped from it), the
        /// source reads the file (`CGImageSourceCreateWithURL`), so that the body is never in memory
        /// whole; the thumbnail is made at the same bounded size.
        ///
        /// With `animation` ``ImageCache/AnimationDecode/firstFrame`` (a view's load), an image of more than one frame
        /// is decoded as its first frame, like a still, and keeps `data` and `file` for the view's
        /// player (``ImageCache/keepAnimationBytes(_:file:with:)``), whatever its frame count.
        internal static func bitmap(_ data: Data, file: URL? = nil, filling size: (width: Int, height: Int)?,
                                   limits: DecodeLimits, frames: Int, format: Format?, scale: Double,
                                   animation: AnimationDecode = .everyFrame) -> Image? {
            let source = file.map { CGImageSourceCreateWithURL($0 as CFURL, nil) } ?? CGImageSourceCreateWithData(data as CFData, nil)
            guard let source,
                  let header = CGImageSourceCopyPropertiesAtIndex(source, 0, nil) as? [CFString: Any],
                  let width = header[kCGImagePropertyPixelWidth] as? Int,
                  let height = header[kCGImagePropertyPixelHeight] as? Int
            else { return nil }
            let orientation = header[kCGImagePropertyOrientation] as? Int ?? 1
            let fit = Sizing.decodedSize(width: width, height: height, orientation: orientation, filling: size,
                                  maxPixels: limits.maxPixels)
            let options: [CFString: Any] = [kCGImageSourceCreateThumbnailFromImageAlways: true,
                                            kCGImageSourceShouldCacheImmediately: true,
                                            kCGImageSourceCreateThumbnailWithTransform: true,
                                            kCGImageSourceThumbnailMaxPixelSize: Sizing.thumbnailPixels(fit)]
            let frames = min(frames, CGImageSourceGetCount(source))
            let image = { (cgImage: CGImage) in platformImage(cgImage, scale: scale) }
            if animation == .firstFrame, frames > 1 {  // a view's: its player decodes the others as they show
                let first = CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image)
                if let first { keepAnimationBytes(data, file: file, with: first) }
                return first
            }
            #if canImport(UIKit)
            let animated = animated(source, frames: frames, fit: fit, limits: limits, options: options, image)
            #else
            let animated = animated(data, source, frames: frames, whole: (width, height), fit: fit, format: format,
                                    limits: limits, options: options, scale: scale, image)
            #endif
            return animated ?? CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image)
        }

        /// The image of ImageIO's upright `cgImage` at `scale`: its `size` in points.
        private static func platformImage(_ cgImage: CGImage, scale: Double) -> Image {
            #if canImport(UIKit)
            UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up)
            #else
            NSImage(cgImage: cgImage, size: Sizing.pointSize(width: cgImage.width, height: cgImage.height, scale: scale))
            #endif
        }

        #if canImport(UIKit)
        /// `bitmap`'s animation on UIKit: every frame scaled like a still (`fit`, `options`), each
        /// repeated so that it keeps its own duration, as UIKit shows frames evenly; nil (the first
        /// frame shown still) unless ``DecodeLimits/animates(frames:width:height:alsoKept:)`` allows
        /// it and every frame decodes.
        private static func animated(_ source: CGImageSource, frames: Int, fit: (width: Int, height: Int),
                                     limits: DecodeLimits, options: [CFString: Any],
                                     _ image: (CGImage) -> Image) -> Image? {
            guard limits.animates(frames: frames, width: fit.width, height: fit.height),
                  let decoded = decodedFrames(source, frames, options, image) else { return nil }
            let schedule = FrameTiming.schedule(decoded.durations)
            let shown = zip(decoded.images, schedule.repeats).flatMap { Array(repeating: $0, count: $1) }
            guard let animated = UIImage.animatedImage(with: shown, duration: schedule.unit * Double(shown.count)) else {
                return nil
            }
            objc_setAssociatedObject(animated, playsKey, decoded.plays as NSNumber, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            return animated
        }
        #else
        /// `bitmap`'s animation on AppKit; nil: the first frame shown still. `NSImageView` plays a
        /// GIF's own delays and loop count: the `NSImage` stays whole (`whole`: its pixel size), so
        /// only within the longest side a decode may have, sized in points like a still. SwiftUI
        /// shows an image, not an `NSImageView`: its views play the frames scaled like a still (`fit`,
        /// `options`), kept with the image (and counted in its memory cost). Another animation
        /// (APNG), which `NSImageView` shows still, is its first frame decoded like a still, with
        /// those frames.
        private static func animated(_ data: Data, _ source: CGImageSource, frames: Int, whole: (width: Int, height: Int),
                                     fit: (width: Int, height: Int), format: Format?, limits: DecodeLimits,
                                     options: [CFString: Any], scale: Double, _ image: (CGImage) -> Image) -> Image? {
            if PlatformDecoder.appKitPlays(format),
               limits.animates(frames: frames, width: whole.width, height: whole.height, alsoKept: 1),
               max(whole.width, whole.height) <= limits.maxPixels, let animated = NSImage(data: data) {
                animated.size = Sizing.pointSize(width: whole.width, height: whole.height, scale: scale)
                if let decoded = decodedFrames(source, frames, options, image) {
                    objc_setAssociatedObject(animated, framesKey, decoded, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
                }
                return animated
            }
            guard limits.animates(frames: frames, width: fit.width, height: fit.height, alsoKept: 1),
                  let still = CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image),
                  let decoded = decodedFrames(source, frames, options, image) else { return nil }
            objc_setAssociatedObject(still, framesKey, decoded, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            return still
        }
        #endif

        /// The first `frames` frames of `source`, each decoded with `options` and made an image by
        /// `image`, with their durations (``ImageCache/FrameTiming/duration(delay:)``) and plays; nil unless every frame
        /// could be decoded.
        private static func decodedFrames(_ source: CGImageSource, _ frames: Int, _ options: [CFString: Any],
                                          _ image: (CGImage) -> Image) -> Frames? {
            let images = (0..<frames).compactMap {
                CGImageSourceCreateThumbnailAtIndex(source, $0, options as CFDictionary).map(image)
            }
            guard images.count == frames else { return nil }
            return Frames(images: images, durations: (0..<frames).map { FrameTiming.duration(delay: delay(source, at: $0)) },
                          plays: plays(source))
        }

        /// An animation as the SwiftUI views play it: its distinct frames, how long each shows, and how
        /// many times the whole plays (0: forever). Immutable.
        internal final class Frames: @unchecked Sendable {
            let images: [Image], durations: [Double], plays: Int

            init(images: [Image], durations: [Double], plays: Int) {
                (self.images, self.durations, self.plays) = (images, durations, plays)
            }
        }

        #if canImport(UIKit)
        /// How many times an animated image decoded here plays (0: forever), which a `UIImage` cannot
        /// say itself: kept with it (see `bitmap`), read by an image view's binder. Nil for a still.
        internal static func plays(of image: Image) -> Int? {
            guard image.images != nil else { return nil }
            return (objc_getAssociatedObject(image, playsKey) as? NSNumber)?.intValue
        }

        /// The frames of an animated `image` (nil for a still): each distinct frame once, for as long as
        /// it is repeated (see `bitmap`), as many plays as its file says (forever for one made elsewhere).
        internal static func frames(of image: Image) -> Frames? {
            guard let shown = image.images, shown.count > 1, image.duration > 0 else { return nil }
            let runs = ImageCache.runs(shown), unit = image.duration / Double(shown.count)
            return Frames(images: runs.map(\.frame), durations: runs.map { Double($0.repeats) * unit },
                          plays: PlatformDecoder.plays(of: image) ?? 0)
        }

        // An address used only as the association's key, never read or written through: safe anywhere.
        nonisolated(unsafe) private static let playsKey =
            UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
        #else
        /// The frames of an animated `image` decoded here (nil for a still, and for one made elsewhere,
        /// which `NSImageView` plays but the SwiftUI views show still), kept with it by `bitmap`.
        internal static func frames(of image: Image) -> Frames? {
            objc_getAssociatedObject(image, framesKey) as? Frames
        }

        // An address used only as the association's key, never read or written through: safe anywhere.
        nonisolated(unsafe) private static let framesKey =
            UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
        #endif

        /// How many times the animation in `source` plays (0: forever): GIF's by ``ImageCache/FrameTiming/plays(gifLoopCount:)``,
        /// APNG's, WebP's and HEICS's as their files say (``ImageIOFrameSource``).
        private static func plays(_ source: CGImageSource) -> Int {
            ImageIOFrameSource.plays(in: CGImageSourceCopyProperties(source, nil) as? [CFString: Any] ?? [:])
        }

        /// The delay, in seconds, that ImageIO reads for frame `index` of a GIF, APNG, WebP or HEICS
        /// (unclamped where the format says it).
        private static func delay(_ source: CGImageSource, at index: Int) -> Double? {
            ImageIOFrameSource.delay(in: CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any] ?? [:])
        }
        #endif

        /// `image` with another `scale` (its `size` in points changes, its bitmap stays, not copied): on
        /// UIKit each distinct frame re-wrapped (`UIImage(cgImage:scale:orientation:)`), an animation
        /// made again of them with its duration and play count; on AppKit a copy with its size in points
        /// at that scale, and so are the frames kept with it.
        internal static func rescaled(_ image: Image, to scale: Double) -> Image {
            #if canImport(UIKit)
            func rewrapped(_ frame: Image) -> Image {
                guard let cgImage = frame.cgImage else { return frame }
                return UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: frame.imageOrientation)
            }
            guard let frames = image.images else { return keepingAnimationBytes(of: image, on: rewrapped(image)) }
            let shown = ImageCache.runs(frames).flatMap { Array(repeating: rewrapped($0.frame), count: $0.repeats) }
            guard let animated = UIImage.animatedImage(with: shown, duration: image.duration) else { return image }
            if let plays = PlatformDecoder.plays(of: image) {
                objc_setAssociatedObject(animated, playsKey, plays as NSNumber, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            }
            return animated
            #elseif canImport(AppKit)
            guard let copy = image.copy() as? NSImage else { return image }
            let pixels = Sizing.pixelSize(of: image)
            copy.size = Sizing.pointSize(width: pixels.width, height: pixels.height, scale: scale)
            if let frames = PlatformDecoder.frames(of: image) {  // a copy has none of the original's associations
                let stills = Frames(images: frames.images.map { PlatformDecoder.rescaled($0, to: scale) }, durations: frames.durations,
                                    plays: frames.plays)
                objc_setAssociatedObject(copy, framesKey, stills, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            }
            return keepingAnimationBytes(of: image, on: copy)
            #else
            return image  // an image is its bytes here: no scale
            #endif
        }

        /// The downloaded bytes an image holds itself: all of them on Linux, none where it is decoded.
        internal static func downloadedBytes(of image: Image) -> Data? {
            #if canImport(UIKit) || canImport(AppKit)
            return nil
            #else
            return image.data
            #endif
        }
    }
}
