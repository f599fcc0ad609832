// UIKit's and AppKit's image views as targets: `ViewTarget` (a view's binder and how it shows an
// image: a fade, an animation the view plays as its own), and `setImage(with:)` on the views.

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

#if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
#if canImport(UIKit)
extension ImageCache { internal typealias ImageView = UIImageView }
#else
extension ImageCache { internal typealias ImageView = NSImageView }
#endif

extension ImageCache {
    /// An image view as its binder's target: the view's own members stay the app's (a subclass
    /// may have an `isDisplayed` or a `show` of its own). It holds the view weakly; the view holds
    /// it (and so its binder).
    @MainActor internal final class ViewTarget: ImageTarget {
        weak var view: ImageView?
        private(set) lazy var binder: Binder = {
            let binder = Binder(self)
            // An animation stops decoding while its view is in no window or hidden (ViewAnimation.swift).
            binder.animation.watch { [weak self] in ImageCache.onTargetActor(self) { $0?.isOnScreen ?? false } }
            return binder
        }()
        #if canImport(UIKit)
        private var playing: (image: Image, last: Image)?  // an animation the view plays as its own, and the frame it ends on
        #endif

        init(_ view: ImageView) { self.view = view }

        /// The view's image; while the view plays an animation of its own (see `show`), the animated
        /// image, which the view does not hold.
        var image: Image? {
            get {
                #if canImport(UIKit)
                if let playing, view?.image === playing.last { return playing.image }
                #endif
                return view?.image
            }
            set { view?.image = newValue }
        }

        /// Always true: nothing tells a view's binder when it returns to a window (a view controller
        /// under another, a tab not selected, a prefetched cell), so a view keeps its image on a
        /// memory warning rather than show its placeholder until it is bound again.
        var isDisplayed: Bool { true }

        /// Whether its view is in a window and not hidden: its animation plays only then.
        var isOnScreen: Bool { view.map { $0.window != nil && !$0.isHidden } ?? false }

        /// Sets the view's image; with a fade, as a cross-dissolve. A fade still running from the
        /// last image stops first, so it cannot play over this one.
        func show(_ image: Image?, transition: Transition) {
            guard let view else { return }
            #if canImport(UIKit)
            for key in ImageCache.animationsRemovedByBinder { view.layer.removeAnimation(forKey: key) }
            view.stopAnimating()
            view.animationImages = nil
            playing = nil
            // An animation that plays a number of times (a UIImage plays forever) runs as the view's
            // own, and its last frame stays.
            if let image, let plays = ImageCache.PlatformDecoder.plays(of: image), plays > 0, let frames = image.images {
                (view.animationImages, view.animationDuration) = (frames, image.duration)
                view.animationRepeatCount = plays
                view.startAnimating()
                if let last = frames.last { playing = (image, last) }
                return fade(to: frames.last, transition)
            }
            #else
            for key in ImageCache.animationsRemovedByBinder { view.layer?.removeAnimation(forKey: key) }
            #endif
            fade(to: image, transition)
        }

        private func fade(to image: Image?, _ transition: Transition) {
            guard let view else { return }
            if let seconds = ImageCache.fadeSeconds(transition) {
                // A fade of the layer's contents, under a key of its own (the one `show` removes).
                let fade = CATransition()
                (fade.type, fade.duration) = (.fade, seconds)
                #if canImport(UIKit)
                view.layer.add(fade, forKey: ImageCache.fadeAnimationKey)
                #else
                view.wantsLayer = true  // NSImageView does not animate `image`
                view.layer?.add(fade, forKey: ImageCache.fadeAnimationKey)
                #endif
            }
            view.image = image
        }
    }
}

/// An image view that shows remote images through ImageCache: `setImage(with:)` and its binder.
extension ImageCache.ImageView {
    /// Shows the image at `url` here through ``imageBinder`` (see ``ImageCache/Binder``): at once
    /// if it is in memory, else `placeholder` until it comes, decoded off the main thread to fill
    /// `targetSize` (points; the view's bounds by default) at the view's display scale (its `size`
    /// is in points), or `failureImage` (else `placeholder`) if it cannot be had; an image that was
    /// not in memory comes with `transition` (a fade: `.fade(0.25)`). Returns the request, if one was made.
    @discardableResult
    public func setImage(with url: URL?, key: String? = nil, placeholder: ImageCache.Image? = nil,
                         failureImage: ImageCache.Image? = nil, targetSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: ImageCache.Transition = .none) -> ImageCache.FetchTask? {
        bound(imageBinder.bind(url.map { ImageCache.Load($0, key: key) }, placeholder, failureImage,
                               pixels(targetSize), cache, transition, scale: displayScale), sized: targetSize != nil)
    }

    /// Shows the image that `request` loads here, as `setImage(with url:...)` shows a URL's; the
    /// request is sent as ``ImageCache/Binder`` sends it, and its headers are not part of the key.
    /// (Not optional, so that `setImage(with: nil)` stays the URL form's: the placeholder.)
    @discardableResult
    public func setImage(with request: URLRequest, key: String? = nil, placeholder: ImageCache.Image? = nil,
                         failureImage: ImageCache.Image? = nil, targetSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: ImageCache.Transition = .none) -> ImageCache.FetchTask? {
        bound(imageBinder.bind(ImageCache.Load(request, key: key), placeholder, failureImage, pixels(targetSize),
                               cache, transition, scale: displayScale), sized: targetSize != nil)
    }

    /// Shows what `request` describes here (see ``ImageCache/Request``), as `setImage(with url:...)`
    /// shows a URL's: its variant, made by its processors, decoded to fill its size (points) or, when
    /// it has none, the view's bounds, at the view's display scale.
    @discardableResult
    public func setImage(with request: ImageCache.Request, placeholder: ImageCache.Image? = nil,
                         failureImage: ImageCache.Image? = nil, cache: ImageCache = .shared,
                         transition: ImageCache.Transition = .none) -> ImageCache.FetchTask? {
        bound(imageBinder.bind(ImageCache.Load(request), placeholder, failureImage, pixels(request.size), cache,
                               transition, scale: displayScale), sized: request.size != nil)
    }

    /// After a binding to the view's bounds, which are often not laid out yet (zero in a new cell,
    /// a nib's size), looks at them again on the main queue's next turn, after the layout pass:
    /// the binder binds again if the image is decoded for the wrong size (see `Binder.resized`).
    private func bound(_ task: ImageCache.FetchTask?, sized: Bool) -> ImageCache.FetchTask? {
        // A binding to the bounds looks at them again when its image comes (see `ViewHooks.sizeNow`).
        imageBinder.lookAtSize(sized ? nil : { [weak self] in
            ImageCache.onTargetActor(self) { view in view.map { ($0.pixels(nil), $0.displayScale) } }
        })
        if !sized {
            watchBounds()  // ViewBounds.swift: a rotation, Split View, a window resized
            let generation = imageBinder.generation  // a later binding (given a size, say) is left alone
            DispatchQueue.main.async { [weak self] in
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.imageBinder.resized(to: self.pixels(nil), scale: self.displayScale, binding: generation)
                }
            }
        }
        return task
    }

    /// `size` (the view's bounds by default) in the screen's pixels.
    private func pixels(_ size: CGSize?) -> CGSize {
        let size = size ?? bounds.size
        return CGSize(width: size.width * displayScale, height: size.height * displayScale)
    }

    /// The scale of the view's screen, which its images carry; the main screen's when it is in no window.
    private var displayScale: Double {
        #if canImport(UIKit)
        // Not `contentScaleFactor`: a system view's may be 1 on a 3x screen. (0 when not yet in a
        // window, where the bounds are rarely laid out either.)
        let scale = traitCollection.displayScale
        #else
        let scale = window?.backingScaleFactor ?? 0
        #endif
        return ImageCache.Sizing.displayScale(Double(scale), screen: ImageCache.screenScale)
    }

    /// The view's binder, made on first use: its `state` says what the view shows, or why not, and
    /// its `cancel()` stops the load under way (what the view shows stays).
    public var imageBinder: ImageCache.Binder {
        if let target = objc_getAssociatedObject(self, Self.binderKey) as? ImageCache.ViewTarget {
            return target.binder
        }
        let target = ImageCache.ViewTarget(self)
        objc_setAssociatedObject(self, Self.binderKey, target, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
        return target.binder
    }

    private static let binderKey = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
}
#endif
