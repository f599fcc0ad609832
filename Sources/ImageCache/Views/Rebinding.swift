// Rebinding: when an image bound for one size is replaced by a decode for another.

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
    /// When a view's image, bound for one size, is replaced by a decode for another.
    internal enum Rebinding {
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
        /// of another scale does (its image's size is in points); one of a size ``ImageCache/Rebinding/redecodes(bound:laidOut:decodeBound:)``
        /// says is wrong does; one that asks for the whole image now does, unless it did already.
        internal static func rebinds(bound: (size: (width: Int, height: Int)?, scale: Double),
                                     now: (size: (width: Int, height: Int)?, scale: Double), decodeBound: Int) -> Bool {
            guard let laidOut = now.size else { return bound.size != nil }
            if bound.size != nil, bound.scale != now.scale { return true }
            return Rebinding.redecodes(bound: bound.size, laidOut: laidOut, decodeBound: decodeBound)
        }
    }
}
