// AnimationEnvironment: what a binder's animations are made of (where frames come from, what ticks,
// the time, reduce motion), the platform's by default; and the bytes an animated image keeps for it.


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
#if os(watchOS)
import WatchKit
#endif

nonisolated extension ImageCache {
    /// What ticks an animation: ``start()`` has it call its tick on the binder's queue until
    /// ``stop()`` (a ``FrameClock`` on every platform; a test's own, which the test ticks).
    internal protocol FrameTicking: AnyObject {
        /// Starts ticking, if it is not already.
        func start()
        /// Stops ticking.
        func stop()
    }

    /// What a binder's animations are made of: where an image's frames come from, what ticks them,
    /// the time, and whether the system asks for less motion. ``platform`` by default (a binder's
    /// public init); the tests give their own at a binder's init: a fake frame source whose decodes
    /// they finish, a ticker they tick, a clock they move.
    internal struct AnimationEnvironment {
        /// The frames of `image` decoded one at a time at the screen's `scale`, or nil when it does
        /// not play frame by frame: a still, or where no frames are decoded (Linux, and an animated
        /// image made elsewhere than by this cache's decode, which keeps no bytes for it).
        var source: (_ image: Image, _ scale: Double) -> FrameSource?
        /// What calls `tick` on `queue` once started, until stopped or `tick` returns false.
        var ticker: (_ queue: DispatchQueue, _ tick: @escaping () -> Bool) -> FrameTicking
        /// Seconds on a monotonic clock.
        var now: () -> Double
        /// Whether the system asks for less motion: then an animation shows its first frame.
        var reducesMotion: () -> Bool
        /// Whether `source` decodes the frames of the images a view's load decodes as
        /// ``AnimationDecode/firstFrame`` (their first frame and bytes): then a view asks for that
        /// decode, else for every frame (as 1.0, which the view plays itself). True for a test's
        /// environment; the platform's says where ``ImageIOFrameSource`` plays (``platformPlays``).
        var playsFrameByFrame = true

        /// The platform's: ImageIO's frames of the bytes the decode kept with the image
        /// (``animationBytes(of:)``), a ``FrameClock`` at 60 Hz, the uptime, and the accessibility
        /// setting on Apple platforms; on Linux, no frames (an image is its bytes: it does not play).
        static var platform: AnimationEnvironment {
            AnimationEnvironment(source: { image, scale in platformSource(image, scale) },
                                 ticker: { queue, tick in FrameClock(queue: queue, tick: tick) },
                                 now: { ProcessInfo.processInfo.systemUptime },
                                 reducesMotion: { platformReducesMotion }, playsFrameByFrame: platformPlays)
        }

        /// Whether the platform's views play animations frame by frame (``ImageIOFrameSource``):
        /// on Apple platforms (watchOS's SwiftUI views included); not on Linux (no frames are decoded).
        static var platformPlays: Bool {
            #if canImport(ImageIO) && (canImport(UIKit) || canImport(AppKit))
            return true
            #else
            return false
            #endif
        }

        private static func platformSource(_ image: Image, _ scale: Double) -> FrameSource? {
            #if canImport(ImageIO) && (canImport(UIKit) || canImport(AppKit))
            guard let bytes = ImageCache.animationBytes(of: image) else { return nil }
            return ImageIOFrameSource(data: bytes.data, file: bytes.file, scale: scale)
            #else
            return nil
            #endif
        }

        private static var platformReducesMotion: Bool {
            #if canImport(UIKit) && !os(watchOS)
            return ImageCache.onTargetActor(()) { _ in UIAccessibility.isReduceMotionEnabled }
            #elseif canImport(AppKit)
            return ImageCache.onTargetActor(()) { _ in NSWorkspace.shared.accessibilityDisplayShouldReduceMotion }
            #elseif os(watchOS)
            return WKAccessibilityIsReduceMotionEnabled()
            #else
            return false
            #endif
        }
    }

    #if canImport(ImageIO) && (canImport(UIKit) || canImport(AppKit))
    /// The bytes (and the file, if the decode read one) an animated image was decoded from, kept
    /// with it by the decode (`bitmap`) so that a view plays it frame by frame (``ImageIOFrameSource``).
    internal final class AnimationBytes: @unchecked Sendable {
        /// The image's bytes (a large body's: mapped from its file).
        let data: Data
        /// The file that holds them, if the decode read one.
        let file: URL?
        init(data: Data, file: URL?) { (self.data, self.file) = (data, file) }
    }

    /// Keeps `data` (and `file`) with `image`, an animation this cache decoded.
    internal static func keepAnimationBytes(_ data: Data, file: URL?, with image: Image) {
        objc_setAssociatedObject(image, animationBytesKey, AnimationBytes(data: data, file: file),
                                 .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
    }

    /// The bytes an animated image was decoded from, if this cache's decode kept them.
    internal static func animationBytes(of image: Image) -> AnimationBytes? {
        objc_getAssociatedObject(image, animationBytesKey) as? AnimationBytes
    }

    /// `image` with the bytes kept with `original`, if any (a copy at another scale, see
    /// ``PlatformDecoder/rescaled(_:to:)``): so that a view still plays it frame by frame.
    internal static func keepingAnimationBytes(of original: Image, on image: Image) -> Image {
        if image !== original, let bytes = animationBytes(of: original) {
            keepAnimationBytes(bytes.data, file: bytes.file, with: image)
        }
        return image
    }

    // An address used only as the association's key, never read or written through: safe anywhere.
    nonisolated(unsafe) private static let animationBytesKey =
        UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
    #endif

    /// The memory the bytes kept with `image` for its player cost (``AnimationDecode/firstFrame``),
    /// counted in its entry's cost beside its bitmaps: the bytes' count when they are in memory, 0
    /// when they are mapped from the cache's file (clean pages the system reclaims) and on Linux
    /// (where an image's bytes are its cost already).
    internal static func keptSourceBytes(of image: Image) -> Int {
        #if canImport(ImageIO) && (canImport(UIKit) || canImport(AppKit))
        guard let bytes = animationBytes(of: image), bytes.file == nil else { return 0 }
        return bytes.data.count
        #else
        return 0
        #endif
    }

    /// What shows of `image` when only its first frame may: the image itself for a still; on Linux
    /// its bytes with a frame count of 1 (no durations, played once); on UIKit its first frame; on
    /// AppKit the first of the frames kept with it, else the image (an `NSImage` shows its first).
    internal static func firstFrame(of image: Image) -> Image {
        #if canImport(UIKit)
        guard let first = image.images?.first else { return image }
        return first.cgImage.map { UIImage(cgImage: $0, scale: image.scale, orientation: .up) } ?? first
        #elseif canImport(AppKit)
        return PlatformDecoder.frames(of: image)?.images.first ?? image
        #else
        guard image.frameCount > 1 else { return image }
        return Image(data: image.data, format: image.format, width: image.width, height: image.height, frameCount: 1)
        #endif
    }

    /// What a load of `options` hands over of `result`'s image: its first frame only with
    /// ``Request/Options/firstFrameOnly`` (see ``firstFrame(of:)``), else the image.
    internal static func image(_ result: Result<Delivery, Error>, _ options: Request.Options) -> Result<Fetched<Image>, Error> {
        let fetched = image(result)
        guard options.contains(.firstFrameOnly) else { return fetched }
        return fetched.map { fetched in
            Fetched(value: firstFrame(of: fetched.value), source: fetched.source, isStale: fetched.isStale,
                    misses: fetched.misses, metrics: fetched.metrics, usedAlternative: fetched.usedAlternative)
        }
    }
}

nonisolated extension ImageCache.FrameClock: ImageCache.FrameTicking {}
