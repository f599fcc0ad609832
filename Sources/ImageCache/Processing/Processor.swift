// Processors: what makes a variant of an image (a circle, a thumbnail, a blur), run on a decode
// worker after the image is decoded and before memory keeps it; and how a list of them names the
// variant it makes.

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
    /// One step that makes a variant of an image: a rounded avatar, a square crop, a blurred
    /// backdrop. Given in a ``Request``'s ``Request/processors``, in order; the variant they make is
    /// cached in memory under the request's key, its size and their identifiers, and made again from
    /// the original (in memory or on disk: one file per key, the downloaded bytes) when memory no
    /// longer has it, with no request to the network.
    ///
    /// The identifier names what the processor does, with every parameter that changes its output
    /// (`"watermark?text=Draft&alpha=0.5"`): two processors with one identifier must make the same
    /// image, since either one's output may be served for the other. Processors are equal when their
    /// identifiers are.
    ///
    /// A processor runs on a decode worker: never on the main thread, never while the cache's lock
    /// is held, once per variant however many requests wait for it. It throws, or returns nil, to
    /// fail its variant: those requests get ``Error/decodingFailed(_:)`` naming it and why; the
    /// original stays cached and other variants are not affected.
    ///
    /// The first processor gets the image upright and at the display scale of the view or screen
    /// it is for: an image the cache did not decode (a camera's photo put in with `store`, 1x and
    /// rotated) is redrawn upright, or given that scale, first. An image with no bitmap (a
    /// `UIImage` made from a `CIImage`) fails the variant with ``Error/decodingFailed(_:)``
    /// saying so: render it into a `CGImage` first.
    ///
    /// On Apple platforms the built-ins (`resize(toFill:)`, `resize(toFit:)`, `crop(to:)`,
    /// `roundedCorners(radius:)`, `circle`, `blur(radius:)`) draw with CoreGraphics, into a new
    /// bitmap in the image's own RGB colour space (else sRGB), with an alpha channel only where the
    /// result needs one (an opaque photo stays opaque); they are Apple-only. On every
    /// platform a custom one is a closure. On Linux, where an image is its bytes, a custom
    /// processor returns an image made from new bytes (`ImageCache.Image(data:)`).
    ///
    /// ```swift
    /// let grayscale = ImageCache.Processor("grayscale") { image in try makeGrayscale(image) }
    /// cache.fetch(ImageCache.Request(url: url, processors: [.circle, grayscale])) { url, image in ... }
    /// ```
    ///
    /// It grows in 1.x by new static members only (see the Contracts and limits article).
    public struct Processor: Sendable, Hashable, CustomStringConvertible {
        /// What the processor does, with the parameters that change its output: part of the key
        /// of every variant it makes.
        public let identifier: String
        /// Whether it only scales the image (and crops it to the shape asked, at most): the picture
        /// stays, so that while a view waits for a variant its processors all make this way, it may
        /// show the original from memory at once, scaled by the view. True for `resize(toFill:)` and
        /// `resize(toFit:)`; false by default (a circle is never stood in for by a square photo).
        public let resizesOnly: Bool
        private let process: @Sendable (Image) throws -> Image?

        /// A processor named `identifier` that makes a variant of an image with `process`, which
        /// runs on a decode worker; it throws, or returns nil, to fail the variant.
        public init(_ identifier: String, process: @escaping @Sendable (Image) throws -> Image?) {
            self.init(identifier, resizesOnly: false, process: process)
        }

        /// A processor named `identifier` that makes a variant of an image with `process`, as
        /// `init(_:process:)` makes one, and that only scales the image if `resizesOnly` says so
        /// (see ``resizesOnly``): a thumbnailer's, say.
        public init(_ identifier: String, resizesOnly: Bool, process: @escaping @Sendable (Image) throws -> Image?) {
            (self.identifier, self.resizesOnly) = (identifier, resizesOnly)
            self.process = process
        }

        /// Processors are equal when their identifiers are (see ``identifier``).
        public static func == (a: Processor, b: Processor) -> Bool { a.identifier == b.identifier }

        /// Hashes the identifier.
        public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

        /// The identifier.
        public var description: String { identifier }

        /// What names the variant that `processors` make, in order: each identifier after its
        /// length in UTF-8 bytes and a colon, so that no two lists name the same variant. Empty for
        /// no processors.
        internal static func variant(of processors: [Processor]) -> String {
            guard !processors.isEmpty else { return "" }
            return processors.map { "\($0.identifier.utf8.count):\($0.identifier)" }.joined()
        }

        /// Runs `processors` on `image` in order, prepared first for the display scale `scale` (a
        /// view's; nil: the main screen's) as ``ImageCache/prepared(_:displayScale:)`` says: the
        /// variant, or the failure of the first that threw or made nothing, named.
        internal static func run(_ processors: [Processor], on input: Image, scale: Double?) -> Result<Image, Error> {
            var image: Image
            switch ImageCache.prepared(input, displayScale: ImageCache.Sizing.displayScale(scale, screen: ImageCache.screenScale)) {
            case .success(let prepared): image = prepared
            case .failure(let error): return .failure(error)
            }
            for processor in processors {
                do {
                    guard let made = try processor.process(image) else {
                        return .failure(.decodingFailed("processor \"\(processor.identifier)\" made no image"))
                    }
                    image = made
                } catch {
                    return .failure(.decodingFailed("processor \"\(processor.identifier)\" failed: \(error)"))
                }
            }
            return .success(image)
        }
    }
}
