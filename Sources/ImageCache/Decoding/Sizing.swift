// Sizing: the size and scale an image is decoded at and shown at, and what its bitmap costs.

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
    /// The size and scale an image is decoded at and shown at, shared by every platform, and what
    /// a bitmap costs.
    internal enum Sizing {
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
        /// bitmap of `fit` (``ImageCache/Sizing/decodedSize(width:height:orientation:filling:maxPixels:)``): its longer side.
        /// So a large image's thumbnail, decoded from its file, is bounded by the target or by
        /// `maxDecodedPixelSize`, whatever the size of the file.
        internal static func thumbnailPixels(_ fit: (width: Int, height: Int)) -> Int {
            max(fit.width, fit.height)
        }

        /// The scale an image decoded for the screen carries, so that its `size` is in points and
        /// `size` x `scale` is its bitmap in pixels: `scale` (a view's `displayScale`) if it is one, else
        /// `screen` (the main screen's, ``screenScale``), else 1. A view not in a window says 0.
        internal static func displayScale(_ scale: Double?, screen: Double?) -> Double {
            Sizing.decodeScale(scale, screen: screen).scale
        }

        /// ``ImageCache/Sizing/displayScale(_:screen:)``, and whether its 1 only stands in for the main screen's scale,
        /// not read yet (`screen` nil: a cache made off the main thread, before the main queue's next
        /// turn). An image decoded so is not kept in memory, and is given the screen's scale when it is
        /// delivered (``ImageCache/Sizing/deliveryScale(standIn:screen:)``); the next request decodes it at that scale.
        internal static func decodeScale(_ scale: Double?, screen: Double?) -> (scale: Double, standsIn: Bool) {
            if let scale, (1...16).contains(scale) { return (scale, false) }
            if let screen, (1...16).contains(screen) { return (screen, false) }
            return (1, screen == nil)
        }

        /// The scale to give, when it is delivered, an image decoded at a stand-in scale (see
        /// ``ImageCache/Sizing/decodeScale(_:screen:)``): the screen's, if it is known by then and is another; nil to leave
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

        /// What a bitmap of `width` x `height` pixels costs in memory, in bytes: its rows as the platform
        /// laid them out (`bytesPerRow`: 8 bytes a pixel for a 16-bit or extended-range image, 4 for
        /// most), never less than 4 bytes a pixel, and 4 a pixel where the rows are not known.
        internal static func bitmapBytes(width: Int, height: Int, bytesPerRow: Int?) -> Double {
            max(Double(width) * 4, Double(bytesPerRow ?? 0)) * Double(height)
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
    }
}
