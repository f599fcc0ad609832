// FrameTiming: an animation's timing as its file says it, and which frame shows when.

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
    /// An animation's timing as its file says it: how long each frame shows (by
    /// ``duration(delay:)``) and how many times it plays (0: forever); and which frame shows when.
    internal struct FrameTiming: Sendable, Hashable {
        private(set) var durations: [Double] = []
        private(set) var plays = 1

        /// How long a frame is shown, in seconds, given the delay its file says (a GIF's unclamped one):
        /// as browsers do, a delay under 20 ms, 0 or none at all is shown for 100 ms.
        internal static func duration(delay: Double?) -> Double {
            guard let delay, delay >= 0.02, delay.isFinite else { return 0.1 }
            return delay
        }

        /// How many times an animated GIF plays, from its NETSCAPE2.0 loop count (nil: the file has
        /// none): once without one, forever for 0, else the count plus one, as browsers read it (the
        /// count is of the repetitions after the first play). An APNG's `num_plays` is its plays.
        internal static func plays(gifLoopCount: Int?) -> Int {
            guard let count = gifLoopCount else { return 1 }
            return count == 0 ? 0 : count + 1
        }

        /// How to show frames of their own `durations` (seconds) where a platform shows every frame
        /// for the same time (`UIImage.animatedImage(with:duration:)`): each frame repeated `repeats`
        /// times, each time for `unit` seconds, so that every frame keeps its own duration (a frame of
        /// 2 s between frames of 20 ms shows for 2 s). `unit` is their greatest common divisor in whole
        /// milliseconds, coarsened so that the frames shown number at most `maxShown` (the references
        /// cost a pointer each; the frames are not copied); every frame shows at least once.
        internal static func schedule(_ durations: [Double], maxShown: Int = 1_000) -> (unit: Double, repeats: [Int]) {
            schedule(durations, maxShown: maxShown, in: Int.self)
        }

        /// ``schedule(_:maxShown:)`` in the integers of `Word`, the platform's `Int` (32 bits on
        /// watchOS): a frame's milliseconds fit in 32 bits (each is at most the longest delay a file can
        /// state, an APNG's 65,535 s), and their sum, which need not (40 such frames), is a `Double`,
        /// exact far beyond any number of frames.
        internal static func schedule<Word: FixedWidthInteger>(_ durations: [Double], maxShown: Int,
                                                                    in _: Word.Type) -> (unit: Double, repeats: [Int]) {
            let longest = 65_535_000.0
            let milliseconds = durations.map { duration -> Word in
                let milliseconds = (duration * 1_000).rounded()
                return milliseconds.isFinite ? Word(min(longest, max(1, milliseconds))) : 1
            }
            guard let first = milliseconds.first else { return (0.1, []) }
            func gcd(_ a: Word, _ b: Word) -> Word { b == 0 ? a : gcd(b, a % b) }
            let total = milliseconds.reduce(0.0) { $0 + Double($1) }
            var unit = milliseconds.reduce(first, gcd)
            if (total / Double(unit)).rounded(.down) > Double(max(1, maxShown)) {
                unit = Word(min(longest, (total / Double(max(1, maxShown))).rounded(.up)))
            }
            let repeats = milliseconds.map { max(1, Int((Double($0) / Double(unit)).rounded())) }
            return (Double(unit) / 1_000, repeats)
        }

        /// Which frame an animation shows `elapsed` seconds after it started, where frame `i` shows for
        /// `durations[i]` seconds and the whole plays `plays` times (0: forever), its last frame staying
        /// once it has played; and `until`, when (in seconds from the start) the next frame replaces it,
        /// nil once none will. What a SwiftUI view of an animated image shows, and when it shows the next.
        internal static func frame(at elapsed: Double, durations: [Double], plays: Int) -> (index: Int, until: Double?) {
            let total = durations.reduce(0, +)
            guard durations.count > 1, total > 0, total.isFinite, elapsed.isFinite else { return (0, nil) }
            let elapsed = max(0, elapsed)
            // Play `p` runs from `p * total` to `(p + 1) * total`, by these very expressions, and frame
            // `i` ends at `p * total` plus the durations up to it (the last at `(p + 1) * total`): each
            // end is decided and returned as the same number, so that a step taken at the `until` it
            // was given always shows the next frame, however the sums round.
            var play = (elapsed / total).rounded(.down)  // plays done so far, in Double: no overflow
            if elapsed < play * total { play -= 1 }
            if elapsed >= (play + 1) * total { play += 1 }
            if plays > 0, play >= Double(plays) { return (durations.count - 1, nil) }
            var offset = 0.0
            for (index, duration) in durations.enumerated() {
                offset += duration
                let last = index == durations.count - 1
                let end = last ? (play + 1) * total : play * total + offset
                guard elapsed < end else { continue }
                return (index, last && plays > 0 && play + 1 >= Double(plays) ? nil : end)
            }
            return (durations.count - 1, nil)  // not reached: `elapsed` < `(play + 1) * total`, the last end
        }
    }
}
