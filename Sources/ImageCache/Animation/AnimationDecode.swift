// AnimationDecode: how a load decodes an animated image: every frame up front (`fetch`, as in 1.0),
// or its first frame with its bytes kept (a view's, whose player decodes the others as they show).

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
    /// How a load decodes an animated image (GIF, APNG, animated WebP), and so which memory entry
    /// holds it: part of the entry's ``Key``, so that the two decodes of one file never stand for
    /// each other.
    ///
    /// - ``everyFrame``: every frame up front, within ``DecodeLimits`` (past them, the first frame):
    ///   what `fetch`, `image(for:)`, `peek` and `prefetch` get, as 1.0 promised (on UIKit an
    ///   animated `UIImage`; on AppKit an `NSImage` and its frames). Memory counts every frame.
    /// - ``firstFrame``: the first frame, decoded like a still, with the image's bytes kept beside
    ///   it (or only the file's name, for a body streamed to disk): what a view's load gets where
    ///   views play through an ``AnimationPlayer``, which decodes the other frames as they are
    ///   shown into its ring, within the cache's one ``AnimationBudget``. Memory counts the first
    ///   frame and the bytes kept (``keptSourceBytes(of:)``). A still is decoded alike either way.
    ///
    /// On Linux an image is its bytes and frame count either way (nothing is decoded): only the key
    /// differs.
    internal enum AnimationDecode: UInt8, Sendable, Hashable {
        case everyFrame = 0, firstFrame = 1

        /// What a view's load asks for: ``firstFrame`` where its binder plays animations frame by
        /// frame (``AnimationEnvironment/playsFrameByFrame``), or where only the first frame is
        /// shown anyway (`firstFrameOnly`); else ``everyFrame``, which the view plays itself as in
        /// 1.0 (Linux's platform, where nothing plays).
        static func forView(playsFrameByFrame: Bool, firstFrameOnly: Bool) -> AnimationDecode {
            playsFrameByFrame || firstFrameOnly ? .firstFrame : .everyFrame
        }
    }
}

nonisolated extension ImageCache.Key {
    /// The same key with its image decoded as `animation` says (see ``ImageCache/AnimationDecode``):
    /// a request's key as a view's load has it, say.
    func decoded(as animation: ImageCache.AnimationDecode) -> ImageCache.Key {
        animation == self.animation ? self
            : ImageCache.Key(string: string, size: size, processors: processors, animation: animation)
    }
}
