// FrameTimeline: which frame of an animation shows at which time, over its plays: each frame for its
// own duration, the whole played as many times as its file says, the last frame staying after.


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
    /// Which frame an animation shows at a time since it started, and the frames after it: frame
    /// `i` shows for `durations[i]` seconds (already by ``ImageCache/FrameTiming/duration(delay:)``, the
    /// browsers' rule for delays under 20 ms), and the whole plays `plays` times (0: forever), its
    /// last frame staying once it has played. A frame shown is a ``Slot``: the frame's index in the
    /// file, and its ordinal, the how-manieth frame shown since the start, counted across plays.
    ///
    /// The times are the clock's, never stretched: where a frame shows depends only on the time, not
    /// on which frames were shown before it (a frame decoded too late is skipped, not shown late).
    internal struct FrameTimeline: Sendable {
        /// A frame on the timeline: which of the file's frames, which showing of all (from 0), and
        /// when it starts and ends, in seconds from the start (`end` infinite for a last frame that stays).
        internal struct Slot: Equatable, Sendable {
            let ordinal: Int, index: Int, start: Double, end: Double
        }

        private let starts: [Double]  // frame i starts `starts[i]` into a play; one more: the play's length
        private let plays: Int

        /// The timeline of frames of `durations` seconds (an empty or one-frame list, or one whose
        /// total is not positive and finite: a still, frame 0 forever), played `plays` times (0: forever).
        internal init(durations: [Double], plays: Int) {
            let usable = durations.count > 1 && durations.allSatisfy { $0 > 0 && $0.isFinite }
                && durations.reduce(0, +).isFinite
            starts = usable ? durations.reduce(into: [0]) { $0.append($0[$0.count - 1] + $1) } : [0]
            self.plays = max(0, plays)
        }

        /// How many frames a play has.
        internal var frameCount: Int { max(1, starts.count - 1) }

        /// The frame shown `elapsed` seconds after the start (before it: the first).
        internal func slot(at elapsed: Double) -> Slot {
            guard starts.count > 2, let total = starts.last else { return Slot(ordinal: 0, index: 0, start: 0, end: .infinity) }
            let elapsed = elapsed.isFinite ? max(0, elapsed) : 0
            // Play `p` runs from `p * total` to `(p + 1) * total`, by these very expressions, so that a
            // step taken at the end a slot gave always lands in the next slot, however sums round.
            var play = (elapsed / total).rounded(.down)
            if elapsed < play * total { play -= 1 }
            if elapsed >= (play + 1) * total { play += 1 }
            if plays > 0, play >= Double(plays) { return lastSlot() }
            // The last frame that starts by `elapsed` (a binary search: a GIF may have 65,535 frames).
            var (low, high) = (0, frameCount - 1)
            while low < high {
                let middle = (low + high + 1) / 2
                if play * total + starts[middle] <= elapsed { low = middle } else { high = middle - 1 }
            }
            return slot(play: play, index: low)
        }

        /// The `count` frames from the one shown at `elapsed` on, in the order they show (fewer
        /// once the last play ends: its last frame stays).
        internal func slots(from elapsed: Double, count: Int) -> [Slot] {
            var result = [slot(at: elapsed)]
            while result.count < count, let last = result.last, last.end.isFinite {
                result.append(slot(at: last.end))
            }
            return result
        }

        private func slot(play: Double, index: Int) -> Slot {
            let total = starts[starts.count - 1]
            let last = index == frameCount - 1
            let end = last ? (play + 1) * total : play * total + starts[index + 1]
            let stays = last && plays > 0 && play + 1 >= Double(plays)
            return Slot(ordinal: ordinal(play, index), index: index, start: play * total + starts[index],
                        end: stays ? .infinity : end)
        }

        /// The ordinal of frame `index` in play `play`, held below `Int.max` / 2 (an `Int` is 32
        /// bits on watchOS: 65,535 plays of 65,535 frames do not fit), where it stops growing.
        private func ordinal(_ play: Double, _ index: Int) -> Int {
            let ordinal = play * Double(frameCount) + Double(index)
            return ordinal < Double(Int.max / 2) ? Int(ordinal) : Int.max / 2
        }

        private func lastSlot() -> Slot {
            let total = starts[starts.count - 1]
            let play = Double(plays - 1)
            return Slot(ordinal: ordinal(play, frameCount - 1), index: frameCount - 1,
                        start: play * total + starts[frameCount - 1], end: .infinity)
        }
    }
}
