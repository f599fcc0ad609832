// What an AppKit image costs in memory: the bytes of the bitmaps behind its representations (each
// `NSBitmapImageRep`'s CGImage: its rows as laid out, times its height), not 4 bytes a pixel of its
// size. The arithmetic is here for every platform, where the Linux tests reach it; `memoryCost(of:)`
// (MemoryTier.swift) asks it.

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

nonisolated extension ImageCache {
    /// One bitmap an image holds: its size in pixels and its rows' bytes (`CGImage.bytesPerRow`;
    /// nil where it has no bitmap to read them from: a PDF's or an EPS's representation).
    internal typealias Bitmap = (width: Int, height: Int, bytesPerRow: Int?)

    /// The bytes an image of `bitmaps` holds: each bitmap's rows as laid out times its height (8
    /// bytes a pixel for a 16-bit one, padded rows counted), never less than 4 bytes a pixel, and 4
    /// a pixel where the rows are not known (see ``ImageCache/Sizing/bitmapBytes(width:height:bytesPerRow:)``); every
    /// representation counts, since an `NSImage` keeps them all.
    internal static func bitmapCost(of bitmaps: [Bitmap]) -> Double {
        bitmaps.reduce(0) { $0 + Sizing.bitmapBytes(width: $1.width, height: $1.height, bytesPerRow: $1.bytesPerRow) }
    }

    #if canImport(AppKit) && !canImport(UIKit)
    /// The bitmaps behind `image`'s representations: a bitmap representation's CGImage (its own,
    /// not one drawn), else the representation's size in pixels.
    internal static func bitmaps(of image: NSImage) -> [Bitmap] {
        image.representations.map { representation in
            if let bitmap = (representation as? NSBitmapImageRep)?.cgImage {
                return (bitmap.width, bitmap.height, bitmap.bytesPerRow)
            }
            return (representation.pixelsWide, representation.pixelsHigh, nil)
        }
    }
    #endif
}
