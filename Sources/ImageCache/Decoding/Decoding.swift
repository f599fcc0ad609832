// Decoding: an image checked and decoded for the platform, the decisions about sizes, scales and
// frames that every platform shares, and ImageIO's decoding on Apple platforms.

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

    /// Checks that `data` starts with a whole image of a known format and decodes it for the platform.
    ///
    /// Bytes after the image's end (see ``inspect(_:)``) are not part of it and are dropped: padding
    /// a server adds, or the video a motion photo appends to its JPEG. The result's `data` is the
    /// image's own bytes (`data` itself when nothing follows): what the cache keeps and delivers.
    ///
    /// Where the platform decodes (ImageIO), the bitmap is made at
    /// ``decodedSize(width:height:orientation:filling:maxPixels:)`` within `limits.maxPixels`, carrying
    /// `scale` (see ``displayScale(_:screen:)``: its `size` is in points), and a GIF or APNG animates
    /// if ``animates(frames:width:height:within:)`` says so.
    ///
    /// `file`, if given, holds the same bytes (a large body streamed to disk, `data` being its
    /// mapping): ImageIO reads the image from the file.
    internal static func decode(_ data: Data, file: URL? = nil, filling size: (width: Int, height: Int)? = nil,
                       limits: DecodeLimits = DecodeLimits(),
                       scale: Double = 1) -> Result<(image: Image, data: Data), Error> {
        let checked = inspect(data)
        #if canImport(ImageIO)
        // ImageIO decides what is an image (HEIC, AVIF, BMP...); the check finds a known format cut short.
        // Such an image shows its first frame: only GIF's and APNG's frames are counted and timed.
        if case .failure(.notAnImage) = checked,
           let image = bitmap(data, file: file, filling: size, limits: limits, frames: 1, format: nil, scale: scale) {
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
            guard let image = bitmap(trimmed, file: info.end >= data.count ? file : nil, filling: size,
                                     limits: limits, frames: info.frames, format: info.format,
                                     scale: scale) else {
                return .failure(.corruptImage(info.format, "the system decoder rejected it"))
            }
            #else
            let image = Image(data: trimmed, format: info.format, width: info.width, height: info.height,
                              frameCount: info.frames)
            #endif
            return .success((image, trimmed))
        }
    }

    /// What bounds a decode: the settings when its request was made.
    internal struct DecodeLimits: Sendable {
        /// The longest side of an image decoded with no size to fill (``ImageCache/maxDecodedPixelSize``).
        var maxPixels = Int.max
        /// The most frames an animation may have (``ImageCache/maxAnimatedFrames``).
        var maxAnimatedFrames = 200
        /// The memory budget (``ImageCache/imageMemoryMaxBytes``); an animation may cost a quarter of it.
        var memoryMaxBytes = Int.max
        /// The decoders the app plugged in (``ImageCache/Plugins/decoders``), asked before the platform's.
        var decoders: [any ImageDecoder] = []
    }

    /// Whether AppKit's `NSImageView` plays an animation of `format` itself from its `NSImage(data:)`:
    /// a GIF's only. Any other (an APNG) is decoded as a still, its first frame, with its frames kept
    /// for the SwiftUI views, which play them.
    internal static func appKitPlays(_ format: Format?) -> Bool {
        format == .gif
    }

    /// What a bitmap of `width` x `height` pixels costs in memory, in bytes: its rows as the platform
    /// laid them out (`bytesPerRow`: 8 bytes a pixel for a 16-bit or extended-range image, 4 for
    /// most), never less than 4 bytes a pixel, and 4 a pixel where the rows are not known.
    internal static func bitmapBytes(width: Int, height: Int, bytesPerRow: Int?) -> Double {
        max(Double(width) * 4, Double(bytesPerRow ?? 0)) * Double(height)
    }

    /// Whether an image of `frames` frames, each decoded at `width` x `height` pixels, is shown
    /// animated: it has more than one frame, at most `limits.maxAnimatedFrames`, and its frames cost
    /// (4 bytes a pixel) at most a quarter of `limits.memoryMaxBytes`, the most that one image kept in
    /// memory may cost, counting `alsoKept` frames of that size kept beside them (AppKit keeps its
    /// `NSImage`'s frame beside the frames for SwiftUI). Otherwise its first frame is shown.
    internal static func animates(frames: Int, width: Int, height: Int, within limits: DecodeLimits,
                                  alsoKept: Int = 0) -> Bool {
        frames > 1 && frames <= limits.maxAnimatedFrames
            && (Double(frames) + Double(alsoKept)) * Double(width) * Double(height) * 4
                <= Double(limits.memoryMaxBytes) / 4
    }

    /// How long a frame is shown, in seconds, given the delay its file says (a GIF's unclamped one):
    /// as browsers do, a delay under 20 ms, 0 or none at all is shown for 100 ms.
    internal static func frameDuration(delay: Double?) -> Double {
        guard let delay, delay >= 0.02, delay.isFinite else { return 0.1 }
        return delay
    }

    /// An animation's timing as its file says it: how long each frame shows (by
    /// ``frameDuration(delay:)``) and how many times it plays (0: forever).
    internal struct Timing: Sendable, Hashable {
        var durations: [Double] = []
        var plays = 1
    }

    /// How many times an animated GIF plays, from its NETSCAPE2.0 loop count (nil: the file has
    /// none): once without one, forever for 0, else the count plus one, as browsers read it (the
    /// count is of the repetitions after the first play). An APNG's `num_plays` is its plays.
    internal static func plays(gifLoopCount: Int?) -> Int {
        guard let count = gifLoopCount else { return 1 }
        return count == 0 ? 0 : count + 1
    }

    /// How to show frames of their own `durations` (seconds) where a platform shows every frame
    /// for the same time (`UIImage.animatedImage(with:duration:)`): each frame repeated `repeats`
    /// times, each time for `unit` seconds, so that every frame keeps its own duration (a frame of
    /// 2 s between frames of 20 ms shows for 2 s). `unit` is their greatest common divisor in whole
    /// milliseconds, coarsened so that the frames shown number at most `maxShown` (the references
    /// cost a pointer each; the frames are not copied); every frame shows at least once.
    internal static func frameSchedule(_ durations: [Double], maxShown: Int = 1_000) -> (unit: Double, repeats: [Int]) {
        frameSchedule(durations, maxShown: maxShown, in: Int.self)
    }

    /// ``frameSchedule(_:maxShown:)`` in the integers of `Word`, the platform's `Int` (32 bits on
    /// watchOS): a frame's milliseconds fit in 32 bits (each is at most the longest delay a file can
    /// state, an APNG's 65,535 s), and their sum, which need not (40 such frames), is a `Double`,
    /// exact far beyond any number of frames.
    internal static func frameSchedule<Word: FixedWidthInteger>(_ durations: [Double], maxShown: Int,
                                                                in _: Word.Type) -> (unit: Double, repeats: [Int]) {
        let longest = 65_535_000.0
        let milliseconds = durations.map { duration -> Word in
            let milliseconds = (duration * 1_000).rounded()
            return milliseconds.isFinite ? Word(min(longest, max(1, milliseconds))) : 1
        }
        guard let first = milliseconds.first else { return (0.1, []) }
        func gcd(_ a: Word, _ b: Word) -> Word { b == 0 ? a : gcd(b, a % b) }
        let total = milliseconds.reduce(0.0) { $0 + Double($1) }
        var unit = milliseconds.reduce(first, gcd)
        if (total / Double(unit)).rounded(.down) > Double(max(1, maxShown)) {
            unit = Word(min(longest, (total / Double(max(1, maxShown))).rounded(.up)))
        }
        let repeats = milliseconds.map { max(1, Int((Double($0) / Double(unit)).rounded())) }
        return (Double(unit) / 1_000, repeats)
    }

    /// Which frame an animation shows `elapsed` seconds after it started, where frame `i` shows for
    /// `durations[i]` seconds and the whole plays `plays` times (0: forever), its last frame staying
    /// once it has played; and `until`, when (in seconds from the start) the next frame replaces it,
    /// nil once none will. What a SwiftUI view of an animated image shows, and when it shows the next.
    internal static func frame(at elapsed: Double, durations: [Double], plays: Int) -> (index: Int, until: Double?) {
        let total = durations.reduce(0, +)
        guard durations.count > 1, total > 0, total.isFinite, elapsed.isFinite else { return (0, nil) }
        let elapsed = max(0, elapsed)
        // Play `p` runs from `p * total` to `(p + 1) * total`, by these very expressions, and frame
        // `i` ends at `p * total` plus the durations up to it (the last at `(p + 1) * total`): each
        // end is decided and returned as the same number, so that a step taken at the `until` it
        // was given always shows the next frame, however the sums round.
        var play = (elapsed / total).rounded(.down)  // plays done so far, in Double: no overflow
        if elapsed < play * total { play -= 1 }
        if elapsed >= (play + 1) * total { play += 1 }
        if plays > 0, play >= Double(plays) { return (durations.count - 1, nil) }
        var offset = 0.0
        for (index, duration) in durations.enumerated() {
            offset += duration
            let last = index == durations.count - 1
            let end = last ? (play + 1) * total : play * total + offset
            guard elapsed < end else { continue }
            return (index, last && plays > 0 && play + 1 >= Double(plays) ? nil : end)
        }
        return (durations.count - 1, nil)  // not reached: `elapsed` < `(play + 1) * total`, the last end
    }

    /// The size, in pixels, that an image of `width` x `height` pixels as stored is decoded at,
    /// upright: turned by its EXIF `orientation` (5 to 8 swap the sides, as a camera held upright
    /// writes them), then scaled down, never up, until one side fits `size` (a binder's target,
    /// in the same orientation), or, with no target, until its longest side is at most `maxPixels`.
    /// A target larger than `maxPixels` is what its caller asked for, and is kept.
    internal static func decodedSize(width: Int, height: Int, orientation: Int = 1,
                                     filling size: (width: Int, height: Int)?,
                            maxPixels: Int = .max) -> (width: Int, height: Int) {
        let (width, height) = (5...8).contains(orientation) ? (height, width) : (width, height)
        guard width > 0, height > 0 else { return (width, height) }
        let scale = size.map { min(1, max(Double($0.width) / Double(width), Double($0.height) / Double(height))) }
            ?? min(1, Double(max(1, maxPixels)) / Double(max(width, height)))
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// The longest side ImageIO is asked for (`kCGImageSourceThumbnailMaxPixelSize`) to make a
    /// bitmap of `fit` (``decodedSize(width:height:orientation:filling:maxPixels:)``): its longer side.
    /// So a large image's thumbnail, decoded from its file, is bounded by the target or by
    /// `maxDecodedPixelSize`, whatever the size of the file.
    internal static func thumbnailPixels(_ fit: (width: Int, height: Int)) -> Int {
        max(fit.width, fit.height)
    }

    /// Whether a whole image of `whole` pixels, found in memory for a binding to fill `target`
    /// pixels, is shown only meanwhile and replaced by the target's own decode (from the file, or the
    /// download under way: no second download). It is when it is at least twice the target on both
    /// sides (four times the memory and more, which a view would keep after the cache let it go:
    /// a prefetched photo in a small cell), or when a bounded decode made it smaller than its
    /// original (its longest side reached `decodeBound`, the longest side of a whole decode; nil
    /// where images are not decoded, so a whole one is its original) and it does not fill the
    /// target (blurry). Else it is as sharp as the target's decode would be, at most four times its
    /// memory, and stays.
    internal static func replacesWhole(_ whole: (width: Int, height: Int), for target: (width: Int, height: Int),
                                       decodeBound: Int?) -> Bool {
        if whole.width / 2 >= target.width && whole.height / 2 >= target.height { return true }
        guard let decodeBound, max(whole.width, whole.height) >= decodeBound else { return false }
        return whole.width < target.width || whole.height < target.height
    }

    /// Whether a binding made for `bound` pixels (nil: none, a view not laid out: a whole decode,
    /// whose longest side is at most `decodeBound`) is wrong for the `laidOut` size it has now, so
    /// that it binds again: it is smaller on a side (blurry), or at least twice as large on both
    /// (four times the memory and more).
    internal static func redecodes(bound: (width: Int, height: Int)?, laidOut: (width: Int, height: Int),
                                   decodeBound: Int) -> Bool {
        let bound = bound ?? (decodeBound, decodeBound)
        let blurry = bound.width < laidOut.width || bound.height < laidOut.height
        let oversized = bound.width / 2 >= laidOut.width && bound.height / 2 >= laidOut.height
        return blurry || oversized
    }

    /// Whether a binding made for `bound` (its size in pixels, nil for the whole image, and its
    /// display scale) binds again for a view `now` of another size or scale: a sized one on a screen
    /// of another scale does (its image's size is in points); one of a size ``redecodes(bound:laidOut:decodeBound:)``
    /// says is wrong does; one that asks for the whole image now does, unless it did already.
    internal static func rebinds(bound: (size: (width: Int, height: Int)?, scale: Double),
                                 now: (size: (width: Int, height: Int)?, scale: Double), decodeBound: Int) -> Bool {
        guard let laidOut = now.size else { return bound.size != nil }
        if bound.size != nil, bound.scale != now.scale { return true }
        return redecodes(bound: bound.size, laidOut: laidOut, decodeBound: decodeBound)
    }

    /// The scale an image decoded for the screen carries, so that its `size` is in points and
    /// `size` x `scale` is its bitmap in pixels: `scale` (a view's `displayScale`) if it is one, else
    /// `screen` (the main screen's, ``screenScale``), else 1. A view not in a window says 0.
    internal static func displayScale(_ scale: Double?, screen: Double?) -> Double {
        decodeScale(scale, screen: screen).scale
    }

    /// ``displayScale(_:screen:)``, and whether its 1 only stands in for the main screen's scale,
    /// not read yet (`screen` nil: a cache made off the main thread, before the main queue's next
    /// turn). An image decoded so is not kept in memory, and is given the screen's scale when it is
    /// delivered (``deliveryScale(standIn:screen:)``); the next request decodes it at that scale.
    internal static func decodeScale(_ scale: Double?, screen: Double?) -> (scale: Double, standsIn: Bool) {
        if let scale, (1...16).contains(scale) { return (scale, false) }
        if let screen, (1...16).contains(screen) { return (screen, false) }
        return (1, screen == nil)
    }

    /// The scale to give, when it is delivered, an image decoded at a stand-in scale (see
    /// ``decodeScale(_:screen:)``): the screen's, if it is known by then and is another; nil to leave
    /// the image as it is.
    internal static func deliveryScale(standIn: Double, screen: Double?) -> Double? {
        guard let screen, (1...16).contains(screen), screen != standIn else { return nil }
        return screen
    }

    /// The size in points of a bitmap of `width` x `height` pixels at `scale`: the pixels over the
    /// scale, not rounded (301 pixels at 2x are 150.5 points, as `UIImage` says), so that the size
    /// times the scale is the pixels again.
    internal static func pointSize(width: Int, height: Int, scale: Double) -> CGSize {
        CGSize(width: Double(width) / scale, height: Double(height) / scale)
    }
}

// The platform's decoding (ImageIO on Apple platforms), and what an image is in pixels and bytes.
nonisolated extension ImageCache {
    #if canImport(ImageIO)
    /// DecodeWorkers `data` with ImageIO into an upright bitmap now, on the caller's queue (the disk
    /// queue or the decode queue, never the main one), at `decodedSize` (the header's size and EXIF
    /// orientation, read without decoding a pixel), carrying `scale`: its `size` is in points. An
    /// image of `frames` frames (as `inspect` counts them, and no more than ImageIO finds) animates
    /// if ``animates(frames:width:height:within:)`` says so: on UIKit every frame is scaled like a
    /// still (if one cannot be made, the first frame is shown); on AppKit the `NSImage` stays whole,
    /// as `NSImageView` animates it, and its frames scaled like stills are kept with it for the
    /// SwiftUI views (``frames(of:)``), so the rule counts full frames and one more (the frame the
    /// `NSImage`'s bitmap holds).
    ///
    /// With `file` (which holds `data`: a large body streamed to disk, `data` mapped from it), the
    /// source reads the file (`CGImageSourceCreateWithURL`), so that the body is never in memory
    /// whole; the thumbnail is made at the same bounded size.
    internal static func bitmap(_ data: Data, file: URL? = nil, filling size: (width: Int, height: Int)?,
                               limits: DecodeLimits, frames: Int, format: Format?, scale: Double) -> Image? {
        let source = file.map { CGImageSourceCreateWithURL($0 as CFURL, nil) } ?? CGImageSourceCreateWithData(data as CFData, nil)
        guard let source,
              let header = CGImageSourceCopyPropertiesAtIndex(source, 0, nil) as? [CFString: Any],
              let width = header[kCGImagePropertyPixelWidth] as? Int,
              let height = header[kCGImagePropertyPixelHeight] as? Int
        else { return nil }
        let orientation = header[kCGImagePropertyOrientation] as? Int ?? 1
        let fit = decodedSize(width: width, height: height, orientation: orientation, filling: size,
                              maxPixels: limits.maxPixels)
        let options: [CFString: Any] = [kCGImageSourceCreateThumbnailFromImageAlways: true,
                                        kCGImageSourceShouldCacheImmediately: true,
                                        kCGImageSourceCreateThumbnailWithTransform: true,
                                        kCGImageSourceThumbnailMaxPixelSize: thumbnailPixels(fit)]
        let frames = min(frames, CGImageSourceGetCount(source))
        #if canImport(UIKit)
        let image = { (cgImage: CGImage) in UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up) }
        if animates(frames: frames, width: fit.width, height: fit.height, within: limits),
           let decoded = decodedFrames(source, frames, options, image) {
            // UIKit shows the frames evenly: each is repeated so that it keeps its own duration.
            let schedule = frameSchedule(decoded.durations)
            let shown = zip(decoded.images, schedule.repeats).flatMap { Array(repeating: $0, count: $1) }
            if let animated = UIImage.animatedImage(with: shown, duration: schedule.unit * Double(shown.count)) {
                objc_setAssociatedObject(animated, playsKey, decoded.plays as NSNumber,
                                         .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
                keepAnimationBytes(data, file: file, with: animated)  // a view plays it frame by frame
                return animated
            }
        }
        #else
        let image = { (cgImage: CGImage) in
            NSImage(cgImage: cgImage, size: pointSize(width: cgImage.width, height: cgImage.height, scale: scale))
        }
        // NSImageView plays a GIF's own delays and loop count. Whole frames, so only within the
        // longest side a decode may have, sized in points like a still.
        if appKitPlays(format), animates(frames: frames, width: width, height: height, within: limits, alsoKept: 1),
           max(width, height) <= limits.maxPixels,
           let animated = NSImage(data: data) {
            animated.size = pointSize(width: width, height: height, scale: scale)
            // SwiftUI shows an image, not an NSImageView: its views play these frames, each scaled
            // like a still, kept with the image (and counted in its memory cost).
            if let decoded = decodedFrames(source, frames, options, image) {
                objc_setAssociatedObject(animated, framesKey, decoded, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            }
            keepAnimationBytes(data, file: file, with: animated)  // a view plays it frame by frame
            return animated
        }
        // Another animation (APNG), which NSImageView shows still: its first frame, decoded now like
        // a still, with its frames for the SwiftUI views.
        if animates(frames: frames, width: fit.width, height: fit.height, within: limits, alsoKept: 1),
           let still = CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image),
           let decoded = decodedFrames(source, frames, options, image) {
            objc_setAssociatedObject(still, framesKey, decoded, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            keepAnimationBytes(data, file: file, with: still)
            return still
        }
        #endif
        return CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image)
    }

    /// The first `frames` frames of `source`, each decoded with `options` and made an image by
    /// `image`, with their durations (``frameDuration(delay:)``) and plays; nil unless every frame
    /// could be decoded.
    private static func decodedFrames(_ source: CGImageSource, _ frames: Int, _ options: [CFString: Any],
                                      _ image: (CGImage) -> Image) -> Frames? {
        let images = (0..<frames).compactMap {
            CGImageSourceCreateThumbnailAtIndex(source, $0, options as CFDictionary).map(image)
        }
        guard images.count == frames else { return nil }
        return Frames(images: images, durations: (0..<frames).map { frameDuration(delay: delay(source, at: $0)) },
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
        let runs = runs(shown), unit = image.duration / Double(shown.count)
        return Frames(images: runs.map(\.frame), durations: runs.map { Double($0.repeats) * unit },
                      plays: plays(of: image) ?? 0)
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

    /// How many times the animation in `source` plays (0: forever): GIF's by ``plays(gifLoopCount:)``,
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
        guard let frames = image.images else { return rewrapped(image) }
        let shown = runs(frames).flatMap { Array(repeating: rewrapped($0.frame), count: $0.repeats) }
        guard let animated = UIImage.animatedImage(with: shown, duration: image.duration) else { return image }
        if let plays = plays(of: image) {
            objc_setAssociatedObject(animated, playsKey, plays as NSNumber, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
        }
        return animated
        #elseif canImport(AppKit)
        guard let copy = image.copy() as? NSImage else { return image }
        let pixels = pixelSize(of: image)
        copy.size = pointSize(width: pixels.width, height: pixels.height, scale: scale)
        if let frames = frames(of: image) {  // a copy has none of the original's associations
            let stills = Frames(images: frames.images.map { rescaled($0, to: scale) }, durations: frames.durations,
                                plays: frames.plays)
            objc_setAssociatedObject(copy, framesKey, stills, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
        }
        return copy
        #else
        return image  // an image is its bytes here: no scale
        #endif
    }

    /// An image's size in pixels: its bitmap's where the platform decodes (AppKit: its largest
    /// representation's), its header's on Linux.
    internal static func pixelSize(of image: Image) -> (width: Int, height: Int) {
        #if canImport(UIKit)
        return (Int((image.size.width * image.scale).rounded()), Int((image.size.height * image.scale).rounded()))
        #elseif canImport(AppKit)
        let largest = image.representations.max { $0.pixelsWide * $0.pixelsHigh < $1.pixelsWide * $1.pixelsHigh }
        return (largest?.pixelsWide ?? 0, largest?.pixelsHigh ?? 0)
        #else
        return (image.width, image.height)
        #endif
    }

    /// The longest side of a whole decode (see ``replacesWhole(_:for:decodeBound:)``): the setting or
    /// the screen's where the platform decodes; nil on Linux, where an image is its bytes.
    internal var wholeDecodeBound: Int? {
        #if canImport(ImageIO)
        return locked { $0.decodeLimits.maxPixels }
        #else
        return nil
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
