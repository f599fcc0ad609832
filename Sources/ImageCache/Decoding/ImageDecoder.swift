// The decoder an app plugs in (`ImageDecoder`), what it is told (`DecodingContext`), and the
// encoder (`ImageEncoder`) that makes the bytes `store` writes for an image without any.

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
    /// DecodeWorkers an image format, for the formats the platform lacks (WebP on old systems, AVIF, JPEG
    /// XL, an app's own). Given in ``Plugins/decoders``, decoders are asked in order, before the
    /// platform's, whether they decode an image's bytes; the first that says yes decodes it, on a
    /// decode worker (never on the main thread or under the cache's lock): for a download, a disk
    /// hit, a large body streamed to disk and `store(_:for:)`'s data alike. What it makes is cached
    /// in memory as any image is; the disk keeps the original bytes.
    ///
    /// ```swift
    /// struct PPMDecoder: ImageCache.ImageDecoder {
    ///     func decodes(_ data: Data, mimeType: String?) -> Bool { data.starts(with: Array("P6".utf8)) }
    ///     func decode(_ data: Data, context: ImageCache.DecodingContext) throws -> ImageCache.Image {
    ///         // ... make the platform image (on Linux, `Image(rgba:width:height:)`)
    ///     }
    /// }
    /// ```
    ///
    /// It grows in 1.x by requirements with default implementations only.
    public protocol ImageDecoder: Sendable {
        /// Whether it decodes `data`, an image's bytes, whose server named it `mimeType` (nil when
        /// not known: a disk hit, a stored image). Cheap: it reads the first bytes, as a
        /// signature check does. Called for every image the cache decodes.
        func decodes(_ data: Data, mimeType: String?) -> Bool
        /// The image `data` holds, for a view of `context`'s size, or an error that says why not
        /// (the load fails with ``ImageCache/Error/decodingFailed(_:)`` describing it; an
        /// ``ImageCache/Error`` is passed on as it is).
        func decode(_ data: Data, context: DecodingContext) throws -> Image
    }

    /// What a decoder is told of a decode.
    public struct DecodingContext: Sendable {
        /// The size in pixels the image is shown at (a view's or a `Request`'s `size`), to decode at
        /// or above; nil to decode it whole, within ``maxPixelSize``.
        public let pixelSize: CGSize?
        /// The display scale the image is for (its `scale` on Apple platforms): 1, 2 or 3.
        public let scale: Double
        /// The longest side in pixels an image decoded whole may have (see
        /// ``ImageCache/maxDecodedPixelSize``).
        public let maxPixelSize: Int

        /// A context (the cache makes them; tests of a decoder may too).
        public init(pixelSize: CGSize? = nil, scale: Double = 1, maxPixelSize: Int = .max) {
            (self.pixelSize, self.scale, self.maxPixelSize) = (pixelSize, scale, maxPixelSize)
        }
    }

    /// Encodes an image that `store(_:for:)` was given without bytes the cache can write (see
    /// ``Plugins/encoder``): called on a decode worker, or on the caller's thread when the image
    /// is too large for memory (the caller then hears if it fits in neither tier).
    ///
    /// It grows in 1.x by requirements with default implementations only.
    public protocol ImageEncoder: Sendable {
        /// The bytes to write for `image`, nil if it cannot be encoded (the image stays in memory
        /// alone, and a ``ImageCache/Event/diskProblem(_:)`` says so).
        func encode(_ image: Image) -> Data?
    }
}

nonisolated extension ImageCache.Decoder {
    /// The first of `decoders` that decodes `data`, if any.
    static func plugged(_ decoders: [any ImageCache.ImageDecoder], for data: Data,
                        mimeType: String?) -> (any ImageCache.ImageDecoder)? {
        decoders.first { $0.decodes(data, mimeType: mimeType) }
    }
}
