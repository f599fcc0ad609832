// ViewAnimation: the animation a binder plays in its target, through an `AnimationPlayer` within the
// cache's budget: when it starts and stops (a new binding, the placeholder, the view off screen or
// gone, `isAnimating`, reduce motion, a load that asked for its first frame only), and a memory warning.


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
    /// The one animation a ``Binder`` plays in its target, if any: an animated image it shows is
    /// played frame by frame by an ``AnimationPlayer`` (its frames decoded as they are shown, at the
    /// target's pixels, within the cache's ``AnimationBudget``), the target showing each frame as a
    /// still; the first frame is shown at once. What the target shows when it does not play: the
    /// image's first frame (reduce motion, a load with ``Request/Options/firstFrameOnly``); the
    /// image itself where its frames cannot be decoded one by one (Linux, an image made elsewhere,
    /// `fetch`'s image decoded with every frame, which keeps no bytes). Its binder's own loads ask
    /// for the first frame and the bytes (``decode(_:)``, ``AnimationDecode``).
    ///
    /// It stops, and its player gives every frame back, when the binder shows anything else (a new
    /// binding, the placeholder, a failure); off screen (``setVisible(_:)``, or the binder's
    /// `onScreen` check at each tick) it decodes nothing and holds no frame, and goes on from the
    /// same time when it is back; ``isAnimating`` false pauses it on the frame it shows. A memory
    /// warning (``purge()``) drops its frames; it decodes again on its next tick.
    ///
    /// Thread safety: none of its own: its binder's, on the binder's queue.
    internal final class ViewAnimation {
        private let environment: AnimationEnvironment
        private let queue: DispatchQueue
        private var playing: (player: AnimationPlayer, ticker: FrameTicking, key: Key?)?
        /// Whether its animations are asked to play (`Binder.isAnimating`); true at first.
        private(set) var isAnimating = true
        /// Whether the target is on screen, as its view last said (appeared, disappeared).
        private(set) var isVisible = true
        /// Asked at each tick while it plays, and each tick while it waits off screen: whether the
        /// target is on screen now (a UIKit or AppKit view: in a window, not hidden). Nil: only
        /// ``setVisible(_:)`` says.
        private(set) var onScreen: (() -> Bool)?

        /// Asks `onScreen` from now on whether the target is on screen (see `onScreen`).
        func watch(onScreen: @escaping () -> Bool) { self.onScreen = onScreen }

        /// An animation of `environment`'s frames, ticks and time, played on `queue`.
        init(_ environment: AnimationEnvironment, queue: DispatchQueue) {
            (self.environment, self.queue) = (environment, queue)
        }

        /// How a view's `load` decodes an animation (see ``AnimationDecode/forView(playsFrameByFrame:firstFrameOnly:)``):
        /// its first frame and bytes where this plays them frame by frame or shows only the first.
        func decode(_ load: Load?) -> AnimationDecode {
            AnimationDecode.forView(playsFrameByFrame: environment.playsFrameByFrame,
                                    firstFrameOnly: load?.options.contains(.firstFrameOnly) ?? false)
        }

        /// The player of the animation shown, if one plays (or is paused, or off screen).
        var player: AnimationPlayer? { playing?.player }

        /// Whether it plays the image of the memory entry `key` now (shown, paused or off screen).
        func plays(_ key: Key?) -> Bool { key != nil && playing != nil && playing?.key == key }

        /// What the target is to show of `image`, the entry `key`, shown at `pixels` (nil: the
        /// image's own) and `scale`: for an animation that plays frame by frame, its first frame,
        /// the player then showing each next one with `show`; with `firstFrameOnly` or reduce
        /// motion, its first frame; else `image`. Stops the animation it played before.
        func shows(_ image: Image, key: Key?, pixels: (width: Int, height: Int)?, scale: Double,
                   budget: AnimationBudget, firstFrameOnly: Bool, show: @escaping (Image) -> Void) -> Image {
            stop()
            if firstFrameOnly || environment.reducesMotion() { return firstFrame(of: image) }
            guard let source = environment.source(image, scale), source.timing.durations.count > 1 else { return image }
            let player = AnimationPlayer(source: source, pixels: pixels ?? Sizing.pixelSize(of: image), budget: budget,
                                         now: environment.now, display: { frame in frame.image.map(show) })
            let ticker = environment.ticker(queue) { [weak self] in self?.tick() ?? false }
            playing = (player, ticker, key)
            update()
            return firstFrame(of: image)
        }

        /// Stops the animation, if one plays: its player gives its frames back and leaves the budget.
        func stop() {
            guard let (player, ticker, _) = playing else { return }
            ticker.stop()
            player.setVisible(false)  // gives its frames back and leaves the budget, whoever else holds it
            playing = nil
        }

        /// Plays or pauses (`Binder.isAnimating`); paused, it keeps the frame it shows.
        func setAnimating(_ animating: Bool) {
            isAnimating = animating
            update()
        }

        /// The target came on screen, or went off it (a SwiftUI view's appear and disappear).
        func setVisible(_ visible: Bool) {
            isVisible = visible
            update()
        }

        /// Drops the player's frames (a memory warning): it decodes again on its next tick.
        func purge() {
            playing?.player.purge()
        }

        private var visibleNow: Bool { isVisible && (onScreen?() ?? true) }

        /// Tells the player what it may do now, and starts or stops the ticks: they run while it
        /// plays, and while it waits off screen for `onScreen` to say it is back.
        private func update() {
            guard let (player, ticker, _) = playing else { return }
            player.setVisible(visibleNow)
            player.setAnimating(isAnimating)
            if player.isPlaying || (isAnimating && isVisible && onScreen != nil && !player.isVisible) {
                ticker.start()
            } else {
                ticker.stop()
            }
        }

        /// A tick: the player's, after looking whether the target is still on screen. Returns
        /// whether the ticks go on.
        private func tick() -> Bool {
            guard let (player, _, _) = playing else { return false }
            if onScreen != nil, player.isVisible != visibleNow { player.setVisible(visibleNow) }
            guard player.isVisible else { return isAnimating && isVisible }  // off screen: waits, decoding nothing
            return player.tick()
        }
    }
}

nonisolated extension ImageCache.Binder {
    /// Whether the animated image it shows plays: true by default. False pauses it on the frame
    /// it shows (its other frames given back); true again goes on from there. Applies to this
    /// binding and the next ones, until set again. Call it on the binder's queue (the main queue
    /// for views), as every other member. On Linux, where images are their bytes, nothing plays.
    public var isAnimating: Bool {
        get { animation.isAnimating }
        set {
            dispatchPrecondition(condition: .onQueue(queue))
            animation.setAnimating(newValue)
        }
    }

    /// What the target is to show of `image`, shown in `state` as the entry `key`: of an animated
    /// image, what ``ImageCache/ViewAnimation`` says (its first frame, the player showing the
    /// others); the placeholder and the failure image as they are. Stops the animation played before.
    internal func animated(_ image: ImageCache.Image?, _ state: State, key: ImageCache.Key?) -> ImageCache.Image? {
        guard let image, case .image = state, let binding else {
            animation.stop()
            return image
        }
        let firstFrameOnly = binding.load?.options.contains(.firstFrameOnly) ?? false
        return animation.shows(image, key: key, pixels: binding.size, scale: binding.scale,
                               budget: binding.cache.animationBudget, firstFrameOnly: firstFrameOnly) { [weak self] frame in
            self?.showFrame(frame)
        }
    }
}
