// DecodedFrame: one frame of an animation, decoded at the pixel size of the view that plays it, and
// what it costs in memory.


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
    /// One frame of an animation decoded for a view: its image (nil where there is no platform
    /// image to make, as for the scheduler's tests) and the bytes its bitmap holds, which the
    /// shared budget counts (``ImageCache/Sizing/bitmapBytes(width:height:bytesPerRow:)``).
    internal struct DecodedFrame: @unchecked Sendable {
        /// The frame as the view shows it. Immutable once made (a `UIImage`, an `NSImage`).
        let image: Image?
        /// What its bitmap holds in memory, in bytes.
        let bytes: Int
    }
}
