// DecodeLimits: what bounds a decode, and whether an animation is within them.

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

        /// Whether an image of `frames` frames, each decoded at `width` x `height` pixels, is shown
        /// animated: it has more than one frame, at most `maxAnimatedFrames`, and its frames cost
        /// (4 bytes a pixel) at most a quarter of `memoryMaxBytes`, the most that one image kept in
        /// memory may cost, counting `alsoKept` frames of that size kept beside them (AppKit keeps its
        /// `NSImage`'s frame beside the frames for SwiftUI). Otherwise its first frame is shown.
        func animates(frames: Int, width: Int, height: Int, alsoKept: Int = 0) -> Bool {
            frames > 1 && frames <= maxAnimatedFrames
                && (Double(frames) + Double(alsoKept)) * Double(width) * Double(height) * 4
                    <= Double(memoryMaxBytes) / 4
        }
    }
}
