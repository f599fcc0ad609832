// Platform support: the Apple decoders, the screen, and POSIX calls.

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
    internal func observeMemoryWarnings() {
        #if canImport(UIKit) && !os(watchOS)
        memoryWarnings = NotificationCenter.default.addObserver(
            forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
        ) { [weak self] _ in
            self?.purgeMemory()
        }
        #endif
    }

    /// The main screen's scale: what an image decoded for no view in particular (a `fetch`, a
    /// prefetch, your own binder's target) carries. `UIScreen` and `NSScreen` are main-actor
    /// isolated: a cache made on the main thread reads it there, one made elsewhere has the main
    /// queue read it soon after; until then, and on Linux, 1.
    internal static var screenScale: Double { screen.lock.withLock { screen.scale } }

    /// The longest side of the main screen in pixels, read as ``screenScale`` is: the default of
    /// ``maxDecodedPixelSize``; 4,096 until then, and where there is no screen to read.
    internal static var screenPixels: Int { screen.lock.withLock { screen.pixels } }

    private static let screen = Screen()
    private final class Screen: @unchecked Sendable {
        let lock = NSLock()
        var scale = 1.0  // guarded by `lock`
        var pixels = 4_096  // guarded by `lock`
    }

    /// Reads the main screen's scale and size into ``screenScale`` and ``screenPixels``, on the
    /// main thread.
    internal static func readScreenScale() {
        #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        guard Thread.isMainThread else { return DispatchQueue.main.async { readScreenScale() } }
        let (scale, pixels) = MainActor.assumeIsolated { () -> (CGFloat, CGSize?) in
            #if os(visionOS)
            return (UITraitCollection.current.displayScale, nil)  // visionOS has no UIScreen
            #elseif canImport(UIKit)
            return (UIScreen.main.scale, UIScreen.main.nativeBounds.size)
            #else
            let screen = NSScreen.main, scale = screen?.backingScaleFactor ?? 1
            let size = screen?.frame.size  // in points
            return (scale, size.map { CGSize(width: $0.width * scale, height: $0.height * scale) })
            #endif
        }
        screen.lock.withLock {
            screen.scale = Double(scale)
            if let pixels, pixels.width >= 1, pixels.height >= 1 {
                screen.pixels = Int(max(pixels.width, pixels.height))
            }
        }
        #endif
    }

    #if canImport(ImageIO)
    /// Decodes `data` with ImageIO into an upright bitmap now, on the caller's queue (the disk
    /// queue or the decode queue, never the main one), at `decodedSize` (the header's size and EXIF
    /// orientation, read without decoding a pixel), carrying `scale`: its `size` is in points. An
    /// image of `frames` frames (as `inspect` counts them, and no more than ImageIO finds) animates
    /// if ``animates(frames:width:height:within:)`` says so: on UIKit every frame is scaled like a
    /// still (if one cannot be made, the first frame is shown); on AppKit the `NSImage` stays whole,
    /// as `NSImageView` animates it, so the rule counts full frames.
    internal static func bitmap(_ data: Data, filling size: (width: Int, height: Int)?, limits: DecodeLimits,
                               frames: Int, scale: Double) -> Image? {
        guard let source = CGImageSourceCreateWithData(data as CFData, nil),
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
                                        kCGImageSourceThumbnailMaxPixelSize: max(fit.width, fit.height)]
        let frames = min(frames, CGImageSourceGetCount(source))
        #if canImport(UIKit)
        let image = { (cgImage: CGImage) in UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up) }
        if animates(frames: frames, width: fit.width, height: fit.height, within: limits) {
            let images = (0..<frames).compactMap {
                CGImageSourceCreateThumbnailAtIndex(source, $0, options as CFDictionary).map(image)
            }
            // UIKit shows the frames evenly: each is repeated so that it keeps its own duration.
            let schedule = frameSchedule((0..<frames).map { frameDuration(delay: delay(source, at: $0)) })
            let shown = zip(images, schedule.repeats).flatMap { Array(repeating: $0, count: $1) }
            if images.count == frames,
               let animated = UIImage.animatedImage(with: shown, duration: schedule.unit * Double(shown.count)) {
                objc_setAssociatedObject(animated, playsKey, plays(source) as NSNumber, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
                return animated
            }
        }
        return CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary).map(image)
        #else
        // NSImageView plays a GIF's own delays and loop count. Whole frames, so only within the
        // longest side a decode may have, sized in points like a still.
        if animates(frames: frames, width: width, height: height, within: limits), max(width, height) <= limits.maxPixels,
           let animated = NSImage(data: data) {
            animated.size = pointSize(width: width, height: height, scale: scale)
            return animated
        }
        guard let cgImage = CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary) else { return nil }
        return NSImage(cgImage: cgImage, size: pointSize(width: cgImage.width, height: cgImage.height, scale: scale))
        #endif
    }

    #if canImport(UIKit)
    /// How many times an animated image decoded here plays (0: forever), which a `UIImage` cannot
    /// say itself: kept with it (see `bitmap`), read by an image view's binder. Nil for a still.
    internal static func plays(of image: Image) -> Int? {
        guard image.images != nil else { return nil }
        return (objc_getAssociatedObject(image, playsKey) as? NSNumber)?.intValue
    }

    // An address used only as the association's key, never read or written through: safe anywhere.
    nonisolated(unsafe) private static let playsKey =
        UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
    #endif

    /// How many times the animation in `source` plays (0: forever), by ``plays(gifLoopCount:)``.
    private static func plays(_ source: CGImageSource) -> Int {
        let properties = CGImageSourceCopyProperties(source, nil) as? [CFString: Any]
        if let png = properties?[kCGImagePropertyPNGDictionary] as? [CFString: Any],
           let plays = png[kCGImagePropertyAPNGLoopCount] as? Int {
            return plays
        }
        let gif = properties?[kCGImagePropertyGIFDictionary] as? [CFString: Any]
        return plays(gifLoopCount: gif?[kCGImagePropertyGIFLoopCount] as? Int)
    }

    /// The delay, in seconds, that ImageIO reads for frame `index` of a GIF (unclamped) or an APNG.
    private static func delay(_ source: CGImageSource, at index: Int) -> Double? {
        let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any]
        let gif = properties?[kCGImagePropertyGIFDictionary] as? [CFString: Any]
        let png = properties?[kCGImagePropertyPNGDictionary] as? [CFString: Any]
        return (gif?[kCGImagePropertyGIFUnclampedDelayTime] ?? gif?[kCGImagePropertyGIFDelayTime]
            ?? png?[kCGImagePropertyAPNGUnclampedDelayTime] ?? png?[kCGImagePropertyAPNGDelayTime]) as? Double
    }
    #endif

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

    /// The longest side of a whole decode (see ``upgrades(whole:to:decodeBound:)``): the setting or
    /// the screen's where the platform decodes; nil on Linux, where an image is its bytes.
    internal var wholeDecodeBound: Int? {
        #if canImport(ImageIO)
        return lock.withLock { _decodeLimits.maxPixels }
        #else
        return nil
        #endif
    }

    /// What an image costs in memory, in bytes: its decoded size where the platform decodes (on UIKit
    /// every frame of an animation), its bytes on Linux.
    internal static func memoryCost(of image: Image) -> Int {
        #if canImport(UIKit)
        let size = pixelSize(of: image)
        let pixels = Double(size.width) * Double(size.height) * Double(image.images?.count ?? 1)
        #elseif canImport(AppKit)
        // An animated GIF's NSImage counts one frame: its bitmap representation holds the frame it shows.
        let size = pixelSize(of: image)
        let pixels = Double(size.width) * Double(size.height)
        #else
        let pixels = Double(image.data.count) / 4
        #endif
        return Int(min(pixels * 4, Double(Int.max / 2)))
    }

    /// The downloaded bytes an image holds itself: all of them on Linux, none where it is decoded.
    internal static func downloadedBytes(of image: Image) -> Data? {
        #if canImport(UIKit) || canImport(AppKit)
        return nil
        #else
        return image.data
        #endif
    }

    /// An image's bytes for the disk: its own on Linux, a PNG encoding on Apple platforms.
    internal static func encodedBytes(of image: Image) -> Data? {
        #if canImport(UIKit)
        return image.pngData()
        #elseif canImport(AppKit)
        return image.tiffRepresentation.flatMap {
            NSBitmapImageRep(data: $0)?.representation(using: .png, properties: [:])
        }
        #else
        return image.data
        #endif
    }

    /// The disk tier's helpers around system calls, which are called by qualified names so that a
    /// copied file never picks up a host app's own `read` or `close`.
    internal enum POSIX {
        /// The error `errno` names.
        static func lastError() -> POSIXError {
            POSIXError(POSIXErrorCode(rawValue: Foundation.errno) ?? .EIO)
        }

        /// Throws the error `errno` names if `result`, a system call's, is not 0.
        static func check(_ result: Int32) throws {
            if result != 0 { throw lastError() }
        }

        static func describe(_ error: Swift.Error) -> String {
            if let posix = error as? POSIXError { return String(cString: Foundation.strerror(posix.code.rawValue)) }
            return String(describing: error)
        }

        private static func seconds(_ time: Foundation.timespec) -> TimeInterval {
            TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1e9
        }

        /// The modification, access and status change dates that `stat` read.
        static func dates(of info: Foundation.stat) -> (modified: TimeInterval, accessed: TimeInterval,
                                                        changed: TimeInterval) {
            #if canImport(Darwin)
            return (seconds(info.st_mtimespec), seconds(info.st_atimespec), seconds(info.st_ctimespec))
            #else
            return (seconds(info.st_mtim), seconds(info.st_atim), seconds(info.st_ctim))
            #endif
        }

        /// Leaves a date as it is in `futimens` (UTIME_OMIT, a macro Swift does not import on Linux).
        #if canImport(Darwin)
        static let omit = Foundation.timespec(tv_sec: 0, tv_nsec: -2)
        #else
        static let omit = Foundation.timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)
        #endif

        static func time(_ seconds: TimeInterval) -> Foundation.timespec {
            // Clamped: `Int(_:)` traps past `Int.max` (2038 where `Int` is 32 bits), and on NaN.
            let seconds = seconds.isNaN ? 0 : min(max(seconds, 0), TimeInterval(Int.max).nextDown)
            let whole = seconds.rounded(.down)
            return Foundation.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        }

        /// Reads `count` bytes into fresh memory without zero-filling it first.
        static func readAll(_ fd: Int32, count: Int) -> Data? {
            guard count >= 0, let buffer = Foundation.malloc(max(1, count)) else { return nil }
            guard transfer(count, { Foundation.read(fd, buffer + $0, count - $0) }) else {
                Foundation.free(buffer)
                return nil
            }
            return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
        }

        /// Calls `io` (a `read` or `write` of the bytes from the offset it is given) until `count` bytes
        /// are done, again after a signal; false at an error (in `errno`) or the end of the file.
        static func transfer(_ count: Int, _ io: (Int) -> Int) -> Bool {
            var done = 0
            while done < count {
                let n = io(done)
                if n > 0 { done += n } else if n == 0 || Foundation.errno != EINTR { return false }
            }
            return true
        }
    }

    /// A folder name that cannot leave the parent folder and that keeps distinct names apart.
    internal static func folderName(for name: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        let safe = String(name.map { allowed.contains($0) ? $0 : "_" })
        if safe == name, name != ".", name != "..", !name.isEmpty { return name }
        return String(safe.prefix(64)) + "-" + DiskStore.fileName(for: name)
    }
}
