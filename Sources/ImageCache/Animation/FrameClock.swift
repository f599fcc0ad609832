// FrameClock: the clock that ticks a playing animation: a timer on a queue (the main one for views),
// which stops when the animation says it has nothing more to show.


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
    /// Calls `tick` on `queue` every `interval` seconds (1/60 by default) from ``start()`` until
    /// ``stop()``, or until `tick` returns false. A `DispatchSourceTimer`: the same on every
    /// platform, macOS before 14 (no `NSView.displayLink`) and watchOS (no `CADisplayLink`)
    /// included, and type-checked on Linux, where `#selector` (which a display link needs) is not.
    /// A late tick shows a late frame, never a stretched clock (see ``AnimationPlayer``).
    ///
    /// Thread safety: ``start()`` and ``stop()`` are called on `queue`.
    internal final class FrameClock: @unchecked Sendable {
        private let queue: DispatchQueue
        private let interval: Double
        private let tick: () -> Bool
        private var timer: DispatchSourceTimer?  // used only on `queue`

        /// A clock that calls `tick` on `queue` every `interval` seconds once started.
        init(queue: DispatchQueue = .main, interval: Double = 1.0 / 60, tick: @escaping () -> Bool) {
            (self.queue, self.interval, self.tick) = (queue, max(0.001, interval), tick)
        }

        deinit {
            timer?.cancel()
        }

        /// Whether it ticks.
        var isRunning: Bool { timer != nil }

        /// Starts ticking, if it is not already.
        func start() {
            guard timer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            // A leeway of a tenth of a frame lets the system batch wake-ups without a visible delay.
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .microseconds(Int(interval * 100_000)))
            timer.setEventHandler { [weak self] in
                guard let self, self.timer != nil else { return }
                if !self.tick() { self.stop() }
            }
            self.timer = timer
            timer.resume()
        }

        /// Stops ticking.
        func stop() {
            timer?.cancel()
            timer = nil
        }
    }
}
