// AnimationBudget: the one bound in bytes shared by the frame rings of every animation a cache plays,
// and how many frames each may decode ahead within it.


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
    /// The bound, in bytes, on the decoded frames of every animation playing through one cache
    /// (``ImageCache/animationMemoryMaxBytes``), split evenly among those that play: a player may
    /// hold its shown frame and ``framesAhead(frameBytes:frameCount:)`` frames after it. When more
    /// play, each buffers fewer ahead, never fewer than one, rather than the total growing; a player
    /// that stops (hidden, paused, ended) leaves the count and holds nothing.
    /// ``purge()`` (a memory warning) drops every buffer; the players decode again on their next tick.
    ///
    /// Thread safety: the limit (``maxBytes``) may be read and set from any thread (a lock guards
    /// it); the rest is called on the queue the players run on (the main queue, where views play),
    /// as the players' own methods are.
    internal final class AnimationBudget: @unchecked Sendable {
        /// The bound by default: 48 MiB, 34 frames of a 200-point square view at 3x (1.44 MB each).
        static let defaultMaxBytes = 48 << 20

        /// The most frames a player decodes ahead, whatever its share: more smooths nothing more.
        static let mostAhead = 8

        private let lock = NSLock()
        private var limit: Int  // guarded by `lock`
        // The players that play now, weakly: a player that goes away leaves by itself.
        private var playing: [ObjectIdentifier: WeakPlayer] = [:]

        private struct WeakPlayer { weak var player: AnimationPlayer? }

        /// A budget of `maxBytes` bytes.
        init(maxBytes: Int) {
            limit = max(0, maxBytes)
        }

        /// The bound in bytes on every playing animation's frames together.
        var maxBytes: Int {
            get { lock.withLock { limit } }
            set { lock.withLock { limit = max(0, newValue) } }
        }

        /// How many players play now.
        var playingCount: Int { players.count }

        /// The bytes the playing players' frames hold now.
        var heldBytes: Int { players.reduce(0) { $0 + $1.heldBytes } }

        /// How many frames a player whose frames cost `frameBytes` each, in an animation of
        /// `frameCount` frames, may decode ahead of the one it shows: its even share of
        /// ``maxBytes`` in frames, less the one shown, between 1 and ``mostAhead`` (and fewer than
        /// the animation has frames).
        func framesAhead(frameBytes: Int, frameCount: Int) -> Int {
            let share = Double(maxBytes) / Double(max(1, playing.count))
            let frames = (share / Double(max(1, frameBytes))).rounded(.down) - 1
            return max(1, min(Int(min(frames, Double(Self.mostAhead))), Self.mostAhead, frameCount - 1))
        }

        /// `player` plays from now on: every other player gets a smaller share, and drops the
        /// frames beyond it at once, so that the total stays within the bound.
        func started(_ player: AnimationPlayer) {
            playing[ObjectIdentifier(player)] = WeakPlayer(player: player)
            for other in players where other !== player { other.trim() }
        }

        /// `player` stopped playing (its frames already given back).
        func stopped(_ player: AnimationPlayer) {
            playing[ObjectIdentifier(player)] = nil
        }

        /// Drops every player's frames (a memory warning); each decodes again on its next tick.
        func purge() {
            for player in players { player.purge() }
        }

        private var players: [AnimationPlayer] {
            playing = playing.filter { $0.value.player != nil }
            return playing.values.compactMap(\.player)
        }
    }
}
