// AnimationPlayback: an animation playing in a view on Apple platforms: its player, its frames from
// ImageIO, its clock, reduce motion and a memory warning.


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

extension ImageCache {
#if canImport(ImageIO) && ((canImport(UIKit) && !os(watchOS)) || canImport(AppKit))
    /// One animation playing in one view: an ``AnimationPlayer`` of the frames ImageIO decodes from
    /// the bytes (or the cache's file) at the view's pixel size, within the cache's budget
    /// (``ImageCache/animationMemoryMaxBytes``), ticked by a ``FrameClock`` on the main queue, each
    /// frame handed to `show`. It plays while the view is visible (``setVisible(_:)``), ``isAnimating``
    /// is true, reduce motion is off and the load did not ask for the first frame only; otherwise it
    /// shows the frame it has. A memory purge of the cache (``ImageCache/purgeMemory()``, which a
    /// memory warning runs) drops every animation's frames; playback resumes on the next tick.
    @MainActor internal final class AnimationPlayback {
        private let player: AnimationPlayer
        private let clock: FrameClock
        private let firstFrameOnly: Bool
        // The memory-purge observer, removed in `deinit` (not isolated: hence a Sendable box).
        private let purges: Unchecked<NSObjectProtocol>
        /// Whether it is asked to play (an `isAnimating`-style control); true at first.
        private(set) var isAnimating = true

        /// A playback of `data`'s frames (or `file`'s) at `pixels`, at `scale`, through `cache`'s
        /// budget, showing each frame with `show`; nil unless ImageIO finds more than one frame.
        init?(data: Data, file: URL? = nil, pixels: (width: Int, height: Int), scale: Double, cache: ImageCache,
              firstFrameOnly: Bool = false, show: @escaping @MainActor (Image) -> Void) {
            guard let source = ImageIOFrameSource(data: data, file: file, scale: scale) else { return nil }
            let player = AnimationPlayer(source: source, pixels: pixels, budget: cache.animationBudget,
                                         now: { ProcessInfo.processInfo.systemUptime },
                                         display: { frame in
                                             guard let image = frame.image else { return }
                                             MainActor.assumeIsolated { show(image) }
                                         })
            self.player = player
            self.firstFrameOnly = firstFrameOnly
            clock = FrameClock { [weak player] in player?.tick() ?? false }
            // Each playback drops its own player's frames (the budget's `purge()` drops all of them).
            let purged = Unchecked(player)
            purges = Unchecked(NotificationCenter.default.addObserver(forName: ImageCache.memoryPurged, object: cache,
                                                                      queue: .main) { _ in
                MainActor.assumeIsolated { purged.value.purge() }
            })
            update()
        }

        deinit {
            NotificationCenter.default.removeObserver(purges.value)
        }

        /// Plays or pauses it; paused, it keeps the frame it shows.
        func setAnimating(_ animating: Bool) {
            isAnimating = animating
            update()
        }

        /// Its view came on screen (or in a window), or went off (or away): off screen, it decodes
        /// nothing and gives its frames back.
        func setVisible(_ visible: Bool) {
            player.setVisible(visible)
            update()
        }

        /// Whether the system asks for less motion: then an animation shows one frame.
        static var reducesMotion: Bool {
            #if canImport(UIKit)
            return UIAccessibility.isReduceMotionEnabled
            #else
            return NSWorkspace.shared.accessibilityDisplayShouldReduceMotion
            #endif
        }

        private func update() {
            player.setAnimating(isAnimating && !firstFrameOnly && !Self.reducesMotion)
            if player.isPlaying { clock.start() } else { clock.stop() }
        }
    }
#endif
}
