// What a binder shows images in: `ImageTarget` (any class of the app's), how an image arrives
// (`Transition`), and the target's default `show`.

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

nonisolated extension ImageCache {
    /// Something that shows one image: any class of the app's (`UIImageView` and `NSImageView` have
    /// `setImage(with:)` and need none of this). On Apple platforms it is main-actor isolated, as
    /// views are, and its ``Binder`` uses it on the main queue; on Linux, on the binder's queue.
    #if canImport(UIKit) || canImport(AppKit)
    @MainActor
    #endif
    public protocol ImageTarget: AnyObject {
        /// The image shown; nil shows none.
        var image: Image? { get set }
        /// Whether it is on screen now: on a memory warning, a target that is not lets its image go.
        var isDisplayed: Bool { get }
        /// Shows `image` with `transition`, which is `.none` but for an image that did not come
        /// from memory when the binding asked for a fade. By default, sets ``image``.
        func show(_ image: Image?, transition: Transition)
    }

    /// How a binder shows an image that arrives: at once, or fading in. An image found in memory
    /// always appears at once, as do the placeholder and the failure image.
    public enum Transition: Sendable, Hashable {
        /// At once.
        case none
        /// A cross-dissolve from what the target shows, over this many seconds.
        case fade(TimeInterval)
    }
}

#if canImport(UIKit) || canImport(AppKit)
@MainActor extension ImageCache.ImageTarget {
    /// Sets ``ImageCache/ImageTarget/image``: no transition.
    public func show(_ image: ImageCache.Image?, transition: ImageCache.Transition) {
        self.image = image
    }
}
#else
nonisolated extension ImageCache.ImageTarget {
    /// Sets ``ImageCache/ImageTarget/image``: no transition.
    public func show(_ image: ImageCache.Image?, transition: ImageCache.Transition) {
        self.image = image
    }
}
#endif
