import Foundation
import XCTest
@testable import ImageCache

/// The frame scheduler (`AnimationPlayer`, `FrameTimeline`, `AnimationBudget`), driven by a fake
/// clock and a fake frame source whose decodes finish when the simulation says, with jitter from
/// a seeded generator: no real time passes, and every run is the same.
final class AnimationSchedulerTests: XCTestCase {
    // MARK: Timeline

    func testTheTimelineAgreesWithTheViewsRuleAndStaysOnTheLastFrameAfterItsPlays() {
        // Given frames of 20 ms, 2 s and 100 ms, played twice
        let durations = [0.02, 2, 0.1]
        let timeline = ImageCache.FrameTimeline(durations: durations, plays: 2)
        var random = SeededRandom(seed: 7)

        // Then at any time it shows the frame the SwiftUI views' rule shows, until the same time
        for _ in 0..<2_000 {
            let time = random.next(in: 0...5)
            let slot = timeline.slot(at: time)
            let rule = ImageCache.FrameTiming.frame(at: time, durations: durations, plays: 2)
            XCTAssertEqual(slot.index, rule.index, "at \(time)")
            XCTAssertEqual(slot.end == .infinity ? nil : slot.end, rule.until, "at \(time)")
            XCTAssertTrue(slot.start <= time || time < 0.02, "at \(time)")
        }
        // And after its two plays it stays on its last frame, the sixth shown
        let last = timeline.slot(at: 100)
        XCTAssertEqual([last.ordinal, last.index], [5, 2])
        XCTAssertEqual(last.start, 2.12 + 2.02, accuracy: 1e-9, "the second play's last frame")
        XCTAssertEqual(last.end, .infinity)
        XCTAssertEqual(timeline.slots(from: 0, count: 10).map(\.ordinal), [0, 1, 2, 3, 4, 5])
    }

    // MARK: Drift and late frames

    func testOverASimulatedMinuteTheFrameShownIsAlwaysTheOneTheClockSays() {
        // Given one animation of ten frames of various delays, looping forever, decodes of 2 to 15 ms
        let simulation = Simulation(seed: 1, decodeTime: 0.002...0.015)
        let player = simulation.player(durations: [0.05, 0.1, 0.03, 0.2, 0.02, 0.07, 0.04, 0.5, 0.06, 0.1])

        // When it plays for a simulated minute, ticked at 60 Hz with up to 3 ms of jitter
        var mismatches = 0, checked = 0
        simulation.run(for: 60) {
            guard let shown = player.shown else { return }
            checked += 1
            if shown.ordinal != simulation.idealOrdinal(player) { mismatches += 1 }
        }

        // Then from the first frame on, the frame shown is the one the ideal timeline shows at that
        // moment: it drifts by less than one frame (by none), and the minute's frames all fell due
        XCTAssertEqual(mismatches, 0, "of \(checked) moments")
        XCTAssertGreaterThan(checked, 3_600)
        XCTAssertEqual(player.shown?.ordinal, simulation.idealOrdinal(player))
        XCTAssertEqual(player.statistics.due, simulation.idealOrdinal(player) + 1)
        XCTAssertEqual(player.statistics.onTime, player.statistics.due - 1, "all but the first, which no decode preceded")
    }

    func testADecodeSlowerThanTheDelaySkipsFramesWithoutStretchingTime() {
        // Given twenty frames of 50 ms, and decodes of 100 to 140 ms
        let simulation = Simulation(seed: 2, decodeTime: 0.1...0.14)
        let player = simulation.player(durations: Array(repeating: 0.05, count: 20))

        // When it plays for ten seconds
        var shownOutOfTime = 0, lastShown = -1
        simulation.run(for: 10) {
            guard let shown = player.shown, shown.ordinal != lastShown else { return }
            lastShown = shown.ordinal
            if shown.ordinal != simulation.idealOrdinal(player) { shownOutOfTime += 1 }
        }

        // Then every frame shown was shown within its own 50 ms, never later: frames were skipped,
        // and the clock kept its pace (the last frame shown is the ideal one or a decode behind it)
        XCTAssertEqual(shownOutOfTime, 0)
        let stats = player.statistics
        XCTAssertEqual(stats.due, 200, "ten seconds of 50 ms frames")
        XCTAssertLessThan(stats.shown, stats.due / 2, "skipped: \(stats)")
        XCTAssertGreaterThan(stats.shown, 40, "a frame every decode or so: \(stats)")
        XCTAssertGreaterThanOrEqual(player.shown?.ordinal ?? 0, simulation.idealOrdinal(player) - 3)
    }

    // MARK: One budget

    func testFiftyAnimationsHoldTheSharedBudgetEachWithAFrameAheadAndNinetyPercentOnTime() {
        // Given a budget of 8 MiB, and fifty 100x100-pixel animations (40,000 bytes a frame) of
        // 24 frames of 40 to 100 ms, with decodes of 2 to 10 ms
        let simulation = Simulation(seed: 3, decodeTime: 0.002...0.01, budget: 8 << 20)
        var random = SeededRandom(seed: 4)
        let players = (0..<50).map { _ in
            simulation.player(durations: (0..<24).map { _ in random.next(in: 0.04...0.1) }, pixels: (100, 100))
        }

        // When they all play for ten seconds
        var (mostHeld, withoutAFrameAhead) = (0, 0)
        simulation.run(for: 10) {
            mostHeld = max(mostHeld, simulation.budget.heldBytes)
            if simulation.elapsed > 1 { withoutAFrameAhead += players.filter { $0.framesHeldAhead < 1 }.count }
        }

        // Then the frames held never passed the budget (nor 10% over it), each kept at least one
        // frame decoded ahead, and more than 90% of the frames due were shown on time
        XCTAssertLessThanOrEqual(mostHeld, (8 << 20) * 11 / 10)
        XCTAssertGreaterThan(mostHeld, (8 << 20) * 8 / 10, "the budget is used: \(mostHeld)")
        XCTAssertEqual(withoutAFrameAhead, 0)
        XCTAssertEqual(players[0].framesAhead, 3, "a fiftieth of 8 MiB is 4 frames: the shown one and 3 ahead")
        let due = players.reduce(0) { $0 + $1.statistics.due }, onTime = players.reduce(0) { $0 + $1.statistics.onTime }
        XCTAssertGreaterThanOrEqual(Double(onTime) / Double(due), 0.9, "\(onTime) of \(due)")

        // And when only five play, each buffers more ahead
        for player in players.dropFirst(5) { player.setVisible(false) }
        XCTAssertEqual(players[0].framesAhead, ImageCache.AnimationBudget.mostAhead)
        XCTAssertEqual(simulation.budget.playingCount, 5)
    }

    func testHiddenViewsDecodeNothingGiveTheirFramesBackAndResumeWhereTheyStopped() {
        // Given ten animations playing
        let simulation = Simulation(seed: 5, decodeTime: 0.002...0.01)
        let players = (0..<10).map { _ in simulation.player(durations: Array(repeating: 0.05, count: 12)) }
        simulation.run(for: 2)

        // When half of them go off screen, and the rest play on for five seconds
        let hidden = Array(players[..<5])
        let stoppedAt = hidden.map { $0.shown?.ordinal }
        for player in hidden { player.setVisible(false) }
        let asked = hidden.map { simulation.decodesAsked(by: $0) }
        var heldByHidden = 0
        simulation.run(for: 5) { heldByHidden = max(heldByHidden, hidden.reduce(0) { $0 + $1.heldBytes }) }

        // Then the hidden ones asked for no decode, held nothing, and left the budget's count
        XCTAssertEqual(hidden.map { simulation.decodesAsked(by: $0) }, asked)
        XCTAssertEqual(heldByHidden, 0)
        XCTAssertEqual(simulation.budget.playingCount, 5)
        XCTAssertTrue(players[5...].allSatisfy { $0.heldBytes > 0 })

        // And on screen again they go on from the frame they stopped at
        for player in hidden { player.setVisible(true) }
        simulation.run(for: 0.5)
        for (player, stopped) in zip(hidden, stoppedAt) {
            XCTAssertGreaterThan(player.shown?.ordinal ?? 0, stopped ?? .max)
            XCTAssertLessThanOrEqual(player.shown?.ordinal ?? .max, (stopped ?? 0) + 11, "half a second of 50 ms frames on")
        }
    }

    func testAMemoryWarningFreesEveryBufferAndPlaybackResumes() {
        // Given twenty animations playing
        let simulation = Simulation(seed: 6, decodeTime: 0.002...0.01)
        let players = (0..<20).map { _ in simulation.player(durations: Array(repeating: 0.05, count: 8)) }
        simulation.run(for: 2)
        XCTAssertGreaterThan(simulation.budget.heldBytes, 0)

        // When memory runs low
        simulation.budget.purge()

        // Then every buffer is empty, and a decode finishing after it keeps nothing
        XCTAssertEqual(simulation.budget.heldBytes, 0)
        XCTAssertEqual(players.map(\.heldBytes), Array(repeating: 0, count: 20))
        let shownBefore = players.map(\.statistics.shown)

        // And playback resumes: frames are decoded and shown again
        simulation.run(for: 1)
        for (player, before) in zip(players, shownBefore) {
            XCTAssertGreaterThan(player.statistics.shown, before + 10)
            XCTAssertGreaterThan(player.heldBytes, 0)
        }
    }

    // MARK: Bounded by the ring, not the frame count

    func testAFiveHundredFrameGIFNeverHoldsMoreThanItsRing() {
        // Given a 500-frame animation at 300x300 pixels (360,000 bytes a frame; 180 MB for every frame)
        let simulation = Simulation(seed: 8, decodeTime: 0.001...0.02)
        let player = simulation.player(durations: Array(repeating: 0.02, count: 500), pixels: (300, 300))
        let ring = player.ringBytes

        // When it plays through twice
        var mostHeld = 0
        simulation.run(for: 20) { mostHeld = max(mostHeld, player.heldBytes) }

        // Then it never held more than its ring: the frame shown and 8 ahead, whatever the frame count
        XCTAssertEqual(ring, 9 * 360_000)
        XCTAssertLessThanOrEqual(mostHeld, ring)
        XCTAssertGreaterThan(player.statistics.shown, 900)
        XCTAssertEqual(simulation.decodesAsked(by: player), player.statistics.shown + player.framesHeldAhead
                       + (simulation.isDecoding(player) ? 1 : 0), "each frame decoded once, when it was needed")
    }

    func testAnAnimationThatPlaysOnceStopsOnItsLastFrameAndKeepsOnlyIt() {
        let simulation = Simulation(seed: 9, decodeTime: 0.001...0.005)
        let player = simulation.player(durations: [0.05, 0.05, 0.05], plays: 2)
        simulation.run(for: 1)
        XCTAssertEqual(player.shown?.ordinal, 5)
        XCTAssertEqual(player.shown?.index, 2)
        XCTAssertFalse(player.isPlaying)
        XCTAssertEqual(player.heldBytes, player.frameBytes)
        XCTAssertEqual(simulation.budget.playingCount, 0)
    }

    func testAPausedAnimationKeepsTheFrameItShowsAndResumes() {
        let simulation = Simulation(seed: 10, decodeTime: 0.001...0.005)
        let player = simulation.player(durations: Array(repeating: 0.05, count: 10))
        simulation.run(for: 1)
        player.setAnimating(false)
        let shown = player.shown
        let asked = simulation.decodesAsked(by: player)
        simulation.run(for: 1)
        XCTAssertEqual(player.shown?.ordinal, shown?.ordinal)
        XCTAssertEqual(player.heldBytes, player.frameBytes)
        XCTAssertEqual(simulation.decodesAsked(by: player), asked)
        player.setAnimating(true)
        simulation.run(for: 0.2)
        XCTAssertGreaterThan(player.shown?.ordinal ?? 0, shown?.ordinal ?? .max)
    }
}

// MARK: - The simulation

/// A fake clock, a fake frame source per player whose decodes finish at the times a seeded
/// generator draws, and ticks at 60 Hz with jitter: events run in time order.
private final class Simulation {
    let budget: ImageCache.AnimationBudget
    private(set) var time = 1_000.0  // not zero: the players must not assume a clock that starts at 0
    private var random: SeededRandom
    private let decodeTime: ClosedRange<Double>
    private var events: [(time: Double, order: Int, run: () -> Void)] = []
    private var order = 0
    private var sources: [ObjectIdentifier: Source] = [:]
    private var players: [ImageCache.AnimationPlayer] = []
    private var origins: [ObjectIdentifier: (origin: Double, timeline: ImageCache.FrameTimeline)] = [:]
    private var nextTick = 1_000.0
    /// Seconds since the simulation started.
    var elapsed: Double { time - 1_000 }

    init(seed: UInt64, decodeTime: ClosedRange<Double>, budget: Int = ImageCache.AnimationBudget.defaultMaxBytes) {
        random = SeededRandom(seed: seed)
        self.decodeTime = decodeTime
        self.budget = ImageCache.AnimationBudget(maxBytes: budget)
    }

    /// A player of frames of `durations`, on screen and playing from now.
    func player(durations: [Double], plays: Int = 0, pixels: (Int, Int) = (64, 64)) -> ImageCache.AnimationPlayer {
        let source = Source(simulation: self, timing: ImageCache.FrameTiming(durations: durations, plays: plays))
        let player = ImageCache.AnimationPlayer(source: source, pixels: pixels, budget: budget,
                                                now: { [unowned self] in time }, display: { _ in })
        sources[ObjectIdentifier(player)] = source
        players.append(player)
        origins[ObjectIdentifier(player)] = (time, ImageCache.FrameTimeline(durations: durations, plays: plays))
        player.setVisible(true)
        return player
    }

    /// The ordinal of the frame the ideal timeline shows now, for a player that never stopped.
    func idealOrdinal(_ player: ImageCache.AnimationPlayer) -> Int {
        let (origin, timeline) = origins[ObjectIdentifier(player)]!
        return timeline.slot(at: time - origin).ordinal
    }

    func decodesAsked(by player: ImageCache.AnimationPlayer) -> Int { sources[ObjectIdentifier(player)]!.asked }

    func isDecoding(_ player: ImageCache.AnimationPlayer) -> Bool { sources[ObjectIdentifier(player)]!.decoding }

    /// Runs `seconds` of ticks and decodes; `check` after each event.
    func run(for seconds: Double, check: () -> Void = {}) {
        let end = time + seconds
        while true {
            let next = events.min { ($0.time, $0.order) < ($1.time, $1.order) }
            if let next, next.time <= nextTick, next.time <= end {
                events.removeAll { $0.order == next.order }
                time = next.time
                next.run()
            } else if nextTick <= end {
                time = nextTick
                nextTick += 1.0 / 60 + random.next(in: -0.003...0.003)
                for player in players { player.tick() }
            } else {
                time = end
                return
            }
            check()
        }
    }

    fileprivate func schedule(after delay: Double? = nil, _ run: @escaping () -> Void) {
        order += 1
        events.append((time + (delay ?? random.next(in: decodeTime)), order, run))
    }

    fileprivate final class Source: ImageCache.FrameSource {
        let timing: ImageCache.FrameTiming
        private unowned let simulation: Simulation
        private(set) var asked = 0
        private(set) var decoding = false

        init(simulation: Simulation, timing: ImageCache.FrameTiming) {
            self.simulation = simulation
            self.timing = timing
        }

        func decodeFrame(_ index: Int, pixels: (width: Int, height: Int),
                         completion: @escaping (ImageCache.DecodedFrame?) -> Void) {
            asked += 1
            decoding = true
            simulation.schedule { [self] in
                decoding = false
                completion(ImageCache.DecodedFrame(image: nil, bytes: pixels.width * pixels.height * 4))
            }
        }
    }

}

/// SplitMix64: the same numbers on every run.
private struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(in range: ClosedRange<Double>) -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * Double(next() >> 11) / Double(1 << 53)
    }
}
