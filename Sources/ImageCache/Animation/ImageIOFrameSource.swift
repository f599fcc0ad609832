// ImageIOFrameSource: an animation's frames decoded one at a time by ImageIO at the view's pixel size,
// and its timing read from each format's properties dictionary (GIF, APNG, WebP, HEICS).


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
#if canImport(ImageIO)
    /// A ``FrameSource`` over an image source (`CGImageSource`) that keeps the downloaded bytes, or
    /// reads the file in the cache's folder, and never its frames: each is decoded when its player
    /// asks, as a thumbnail (`CGImageSourceCreateThumbnailAtIndex`) whose longest side is the view's,
    /// on a serial queue of its own, and handed to the player on the main queue.
    ///
    /// Thread safety: made and asked on the main queue; the decodes run on its queue.
    internal final class ImageIOFrameSource: FrameSource, @unchecked Sendable {
        let timing: FrameTiming
        private let source: CGImageSource
        private let scale: Double
        private let queue = DispatchQueue(label: "ImageCache.ImageIOFrameSource", qos: .userInitiated)

        /// The frames of `data` (or of `file`, which holds the same bytes), shown at `scale`; nil
        /// unless ImageIO reads more than one frame.
        init?(data: Data, file: URL? = nil, scale: Double) {
            let source = file.map { CGImageSourceCreateWithURL($0 as CFURL, nil) } ?? CGImageSourceCreateWithData(data as CFData, nil)
            guard let source, CGImageSourceGetCount(source) > 1 else { return nil }
            self.source = source
            self.scale = scale
            timing = Self.timing(of: source)
        }

        func decodeFrame(_ index: Int, pixels: (width: Int, height: Int),
                         completion: @escaping (DecodedFrame?) -> Void) {
            let options: [CFString: Any] = [kCGImageSourceCreateThumbnailFromImageAlways: true,
                                            kCGImageSourceShouldCacheImmediately: true,
                                            kCGImageSourceCreateThumbnailWithTransform: true,
                                            kCGImageSourceThumbnailMaxPixelSize: max(pixels.width, pixels.height)]
            let (source, scale, done) = (Unchecked(source), scale, Unchecked(completion))
            let dictionary = Unchecked(options as CFDictionary)
            queue.async {
                let frame = CGImageSourceCreateThumbnailAtIndex(source.value, index, dictionary.value).map { cgImage in
                    DecodedFrame(image: Self.image(cgImage, scale: scale),
                                 bytes: Int(Sizing.bitmapBytes(width: cgImage.width, height: cgImage.height,
                                                        bytesPerRow: cgImage.bytesPerRow)))
                }
                let decoded = Unchecked(frame)
                DispatchQueue.main.async { done.value(decoded.value) }
            }
        }

        private static func image(_ cgImage: CGImage, scale: Double) -> Image {
            #if canImport(UIKit)
            return UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up)
            #else
            return NSImage(cgImage: cgImage, size: Sizing.pointSize(width: cgImage.width, height: cgImage.height, scale: scale))
            #endif
        }

        /// How long each frame of `source` shows (by ``ImageCache/FrameTiming/duration(delay:)``) and how many
        /// times the whole plays (0: forever), from its format's dictionary: GIF's (its loop count
        /// read as browsers do, ``ImageCache/FrameTiming/plays(gifLoopCount:)``), PNG's (APNG), WebP's, HEICS's.
        static func timing(of source: CGImageSource) -> FrameTiming {
            let count = CGImageSourceGetCount(source)
            let durations = (0..<count).map { index -> Double in
                let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any] ?? [:]
                return FrameTiming.duration(delay: delay(in: properties))
            }
            let properties = CGImageSourceCopyProperties(source, nil) as? [CFString: Any] ?? [:]
            return FrameTiming(durations: durations, plays: plays(in: properties))
        }

        /// A frame's delay in seconds from its properties: each format's unclamped delay, else its delay.
        internal static func delay(in properties: [CFString: Any]) -> Double? {
            for (dictionary, unclamped, clamped) in delayKeys {
                if let format = properties[dictionary] as? [CFString: Any],
                   let delay = (format[unclamped] ?? format[clamped]) as? Double {
                    return delay
                }
            }
            return nil
        }

        /// How many times an animation plays (0: forever) from its container's properties: a GIF's
        /// loop count read as browsers do, the others' as the number of plays, else once.
        internal static func plays(in properties: [CFString: Any]) -> Int {
            if let gif = properties[kCGImagePropertyGIFDictionary] as? [CFString: Any] {
                return ImageCache.FrameTiming.plays(gifLoopCount: gif[kCGImagePropertyGIFLoopCount] as? Int)
            }
            for (dictionary, loopCount) in loopKeys {
                if let format = properties[dictionary] as? [CFString: Any], let plays = format[loopCount] as? Int {
                    return max(0, plays)  // APNG's num_plays, WebP's and HEICS's loop count: the plays
                }
            }
            return 1  // none said: once, as a GIF without a loop count
        }

        /// Each format's dictionary, its unclamped delay and its delay: WebP's since iOS 14, macOS 11.
        private static var delayKeys: [(CFString, CFString, CFString)] {
            var keys = [(kCGImagePropertyGIFDictionary, kCGImagePropertyGIFUnclampedDelayTime, kCGImagePropertyGIFDelayTime),
                        (kCGImagePropertyPNGDictionary, kCGImagePropertyAPNGUnclampedDelayTime, kCGImagePropertyAPNGDelayTime),
                        (kCGImagePropertyHEICSDictionary, kCGImagePropertyHEICSUnclampedDelayTime,
                         kCGImagePropertyHEICSDelayTime)]
            if #available(iOS 14, macOS 11, tvOS 14, watchOS 7, *) {
                keys.append((kCGImagePropertyWebPDictionary, kCGImagePropertyWebPUnclampedDelayTime,
                             kCGImagePropertyWebPDelayTime))
            }
            return keys
        }

        /// Each format's dictionary and its loop count, GIF's aside (read as browsers read it).
        private static var loopKeys: [(CFString, CFString)] {
            var keys = [(kCGImagePropertyPNGDictionary, kCGImagePropertyAPNGLoopCount),
                        (kCGImagePropertyHEICSDictionary, kCGImagePropertyHEICSLoopCount)]
            if #available(iOS 14, macOS 11, tvOS 14, watchOS 7, *) {
                keys.append((kCGImagePropertyWebPDictionary, kCGImagePropertyWebPLoopCount))
            }
            return keys
        }
    }
#endif
}
