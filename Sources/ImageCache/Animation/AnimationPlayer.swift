// AnimationPlayer: one view's animation, its frames decoded as they are shown: which frame shows at
// which time, which frame to decode next into its small ring, what it gives back when it stops.


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
    /// Plays one animation for one view: on each ``tick()`` (a display link's, a timer's) it shows
    /// the frame the clock says (``FrameTimeline``), if it is decoded, and has its ``FrameSource``
    /// decode the next one, one at a time, at the view's pixel size, into a small ring: the frame
    /// shown and at most ``framesAhead`` after it (``AnimationBudget``), so that what it holds is
    /// bounded by the ring and the view's pixels, never by the animation's frame count.
    ///
    /// A frame not decoded by its time is not waited for: the clock goes on, the view keeps the
    /// frame it shows, and the next decode skips the frames that would be past by the time it is
    /// done (judged by how long the last decodes took). A player that stops (``isVisible`` false:
    /// its view is off screen or gone; ``isAnimating`` false; its last play ended) gives its frames
    /// back, decodes nothing, and, when it plays again, resumes from the time it stopped at.
    ///
    /// Thread safety: none of its own. Every method and the `display` callback run on one queue,
    /// the one the view lives on (the main queue), as the source's completions do.
    internal final class AnimationPlayer {
        /// What a player has shown, for the tests and the benchmark: of the frames that fell due,
        /// how many were shown the first tick they were due, and how many were shown at all.
        internal struct Statistics: Equatable {
            var due = 0, onTime = 0, shown = 0
        }

        private enum Clock { case running(origin: Double), stopped(elapsed: Double) }

        private let source: FrameSource
        private let timeline: FrameTimeline
        private let pixels: (width: Int, height: Int)
        private let budget: AnimationBudget
        private let now: () -> Double
        private let display: (DecodedFrame) -> Void
        private var ring: [Int: DecodedFrame] = [:]  // by frame index: the shown one and those ahead
        private var clock = Clock.stopped(elapsed: 0)
        private var pending: (index: Int, requested: Double, generation: Int)?  // the decode under way
        private var generation = 0  // moves on when the ring is dropped: a decode asked before is not kept
        private var decodeTime: Double?  // how long decodes take, smoothed
        private var lastDue = -1  // the ordinal of the last frame counted as due
        /// The frame shown, and which showing it is (``FrameTimeline/Slot/ordinal``); nil before the first.
        private(set) var shown: (ordinal: Int, index: Int)?
        /// Whether the view is on screen: a player whose view is not plays nothing.
        private(set) var isVisible = false
        /// Whether the animation is asked to play (the view's `isAnimating`, reduce motion, a load's
        /// "first frame only" say no).
        private(set) var isAnimating = true
        /// What it has shown (see ``Statistics``).
        private(set) var statistics = Statistics()

        /// A player of `source`'s frames decoded at `pixels`, within `budget`, reading the time in
        /// seconds from `now` (a monotonic clock), showing each frame with `display`. It shows and
        /// decodes nothing until it is visible.
        init(source: FrameSource, pixels: (width: Int, height: Int), budget: AnimationBudget,
             now: @escaping () -> Double, display: @escaping (DecodedFrame) -> Void) {
            self.source = source
            self.timeline = FrameTimeline(durations: source.timing.durations, plays: source.timing.plays)
            self.pixels = (max(1, pixels.width), max(1, pixels.height))
            self.budget = budget
            self.now = now
            self.display = display
        }

        deinit {
            budget.stopped(self)
        }

        /// What one frame costs at the view's pixels: 4 bytes a pixel.
        var frameBytes: Int { Int(min(Double(Int.max / 2), Sizing.bitmapBytes(width: pixels.width, height: pixels.height, bytesPerRow: nil))) }

        /// How many frames it may hold after the one shown, by its share of the budget.
        var framesAhead: Int { budget.framesAhead(frameBytes: frameBytes, frameCount: timeline.frameCount) }

        /// The most bytes its ring holds: the frame shown and ``framesAhead`` after it.
        var ringBytes: Int { (1 + framesAhead) * frameBytes }

        /// The bytes its decoded frames hold now.
        var heldBytes: Int { ring.values.reduce(0) { $0 + $1.bytes } }

        /// The frames held after the shown one, in the order they will show.
        var framesHeldAhead: Int { ring.keys.filter { $0 != shown?.index }.count }

        /// Whether it plays now: visible, animating, with more than one frame, and its last play not over.
        var isPlaying: Bool {
            if case .running = clock { return true }
            return false
        }

        /// The view came on screen or went off it (or away). Off screen, it stops at the time it
        /// shows and gives its frames back; on screen again, it goes on from there.
        func setVisible(_ visible: Bool) {
            isVisible = visible
            update()
        }

        /// Plays or pauses (the view's `isAnimating`); paused, it gives its frames back but the
        /// one shown (which the view still shows) and goes on from there when it plays again.
        func setAnimating(_ animating: Bool) {
            isAnimating = animating
            update()
        }

        /// Shows the frame the clock says, if it is decoded, drops those it will not show, and has
        /// the next one decoded. Returns whether it still plays (a display link may stop when not).
        @discardableResult
        func tick() -> Bool {
            guard case .running(let origin) = clock else { return false }
            let time = now()
            let slot = timeline.slot(at: time - origin)
            if slot.ordinal > lastDue {
                statistics.due += slot.ordinal - max(lastDue, -1)
                lastDue = slot.ordinal
                if ring[slot.index] != nil { statistics.onTime += 1 }
            }
            if slot.ordinal != shown?.ordinal, let frame = ring[slot.index] {
                shown = (slot.ordinal, slot.index)
                statistics.shown += 1
                display(frame)
            }
            trim()
            decodeNext(at: time - origin)
            if slot.end == .infinity, shown?.ordinal == slot.ordinal {
                stop()  // the last play is over, its last frame shown: nothing more to do
                ring = ring.filter { $0.key == slot.index }
                return false
            }
            return true
        }

        /// Drops the frames beyond its share of the budget and those it will not show.
        func trim() {
            let kept = Set(keep())
            ring = ring.filter { kept.contains($0.key) }
        }

        /// Drops every frame (a memory warning), and forgets the decode under way; it decodes
        /// again on its next tick.
        func purge() {
            ring = [:]
            pending = nil
            generation += 1
        }

        /// Starts or stops the clock as visibility and `isAnimating` say.
        private func update() {
            let plays = isVisible && isAnimating && timeline.frameCount > 1 && !ended
            switch (clock, plays) {
            case (.stopped(let elapsed), true):
                clock = .running(origin: now() - elapsed)
                budget.started(self)
                tick()
            case (.running, false):
                stop()
                if !isVisible { purge() } else { ring = ring.filter { $0.key == shown?.index } }
            default:
                break
            }
        }

        private var ended: Bool {
            guard case .stopped(let elapsed) = clock else { return false }
            let slot = timeline.slot(at: elapsed)
            return slot.end == .infinity && shown?.ordinal == slot.ordinal
        }

        private func stop() {
            guard case .running(let origin) = clock else { return }
            clock = .stopped(elapsed: now() - origin)
            budget.stopped(self)
        }

        /// The frame indices it keeps, in the order they matter: the one shown, then those that
        /// show from `elapsed` on; as many as its ring holds.
        private func keep(at elapsed: Double? = nil) -> [Int] {
            let capacity = 1 + framesAhead
            let elapsed = elapsed ?? currentElapsed
            var indices = shown.map { [$0.index] } ?? []
            for slot in timeline.slots(from: elapsed, count: capacity + 1) where !indices.contains(slot.index) {
                indices.append(slot.index)
            }
            return Array(indices.prefix(capacity))
        }

        private var currentElapsed: Double {
            switch clock {
            case .running(let origin): return now() - origin
            case .stopped(let elapsed): return elapsed
            }
        }

        /// Asks for the next frame it keeps and has not, unless a decode is under way: the first
        /// that will still show when a decode as long as the last ones is done; past the ring's
        /// frames, if every one of them would be over by then (a decode slower than the frames).
        private func decodeNext(at elapsed: Double) {
            guard pending == nil, case .running = clock else { return }
            let ready = elapsed + (decodeTime ?? 0)
            let kept = keep(at: elapsed)
            let upcoming = timeline.slots(from: elapsed, count: kept.count + 1)
            let missing = { (slot: FrameTimeline.Slot) in slot.ordinal != self.shown?.ordinal && self.ring[slot.index] == nil }
            let wanted = upcoming.first { kept.contains($0.index) && missing($0) && $0.end > ready }
                ?? timeline.slot(at: ready)
            guard missing(wanted) else { return }
            let asked = (index: wanted.index, requested: now(), generation: generation)
            pending = asked
            source.decodeFrame(wanted.index, pixels: pixels) { [weak self] frame in
                self?.decoded(frame, asked)
            }
        }

        /// A decode is done: the frame goes into the ring if the ring still keeps it (not dropped
        /// since, not past), then the clock is looked at again at once.
        private func decoded(_ frame: DecodedFrame?, _ asked: (index: Int, requested: Double, generation: Int)) {
            guard asked.generation == generation, pending?.index == asked.index else { return }
            pending = nil
            let took = max(0, now() - asked.requested)
            decodeTime = decodeTime.map { ($0 + took) / 2 } ?? took
            guard case .running = clock else { return }
            if let frame, keep().contains(asked.index) { ring[asked.index] = frame }
            tick()
        }
    }
}
