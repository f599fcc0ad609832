import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Views play animated images through the players (issue 51): a binder on Linux, given a fake frame
/// source (whose decodes the test finishes), a ticker the test ticks and a clock the test moves,
/// plays what it shows within the cache's one budget, stops on a new binding, gives its frames back
/// off screen and on a memory warning, and obeys `isAnimating` and `firstFrameOnly`. No real time.
final class ViewAnimationTests: BinderTestCase {
    /// Frames are images told apart by their width: frame `i` is `frameWidth + i` pixels wide.
    static let frameWidth = 500

    // MARK: Playing through the player

    func testABoundViewPlaysAnAnimationThroughAPlayerWithinTheBudgetAndARebindStopsIt() {
        // Given an animated GIF of five frames of 100 ms, served, and a still
        let cache = makeCache()
        let fake = FakeAnimation(images: (0..<5).map { image(width: Self.frameWidth + $0) })
        let (target, binder) = makeTarget(fake)
        let gif = serve("/anim.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 5, delay: 10))
        let still = serveImage("/still.png", width: 77)

        // When a target is bound to it at 40 x 40 pixels and its image comes
        bindAndWait(binder, target, gif, size: CGSize(width: 40, height: 40), cache: cache)

        // Then the target shows the image's first frame, a player plays it (one frame asked at
        // the view's pixels), and the budget counts it
        let (player, source) = callbacks.sync { (binder.animation.player, fake.sources.last) }
        XCTAssertNotNil(player)
        XCTAssertEqual(callbacks.sync { target.image?.frameCount }, 1, "a still: the first frame")
        XCTAssertEqual(callbacks.sync { cache.animationBudget.playingCount }, 1)
        XCTAssertEqual(source?.asked.map(\.index), [0])
        XCTAssertEqual(source?.asked.first?.pixels.width, 40)

        // And as the clock moves and decodes finish, the target shows each frame in turn
        callbacks.sync {
            fake.finishDecodes(); fake.tick()
            for _ in 0..<4 { fake.advance(0.1); fake.finishDecodes(); fake.tick(); fake.finishDecodes(); fake.tick() }
        }
        let frames = callbacks.sync { target.history.compactMap { $0 }.filter { $0 >= Self.frameWidth } }
        XCTAssertEqual(frames, (0..<5).map { Self.frameWidth + $0 }, "each frame once, in order")
        XCTAssertLessThanOrEqual(callbacks.sync { player?.heldBytes ?? .max },
                                 callbacks.sync { player?.ringBytes ?? 0 })

        // When the target is bound to a still
        bindAndWait(binder, target, still, size: nil, cache: cache)

        // Then the player is gone, the budget counts none, the ticks stopped, the still is shown
        XCTAssertNil(callbacks.sync { binder.animation.player })
        XCTAssertEqual(callbacks.sync { cache.animationBudget.playingCount }, 0)
        XCTAssertEqual(callbacks.sync { cache.animationBudget.heldBytes }, 0)
        XCTAssertFalse(callbacks.sync { fake.tickers.last?.isRunning ?? true })
        XCTAssertEqual(callbacks.sync { target.image?.width }, 77)
        let shownAfter = callbacks.sync { target.history.count }
        callbacks.sync { fake.advance(1); fake.finishDecodes(); fake.tick() }
        XCTAssertEqual(callbacks.sync { target.history.count }, shownAfter, "no frame of the old binding")
    }

    func testTwentyViewsPlayingShareTheCachesOneBudgetEachWithAFrameAhead() {
        // Given a budget of 2 MB and twenty views of 100 x 100 pixels (40 KB a frame), each bound
        // to an animation of 30 frames of 100 ms (a ring of them all would be 1.2 MB: 24 MB in all)
        let cache = makeCache()
        cache.animationMemoryMaxBytes = 2_000_000
        let fake = FakeAnimation(images: (0..<30).map { image(width: Self.frameWidth + $0) })
        let gif = serve("/many.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 30, delay: 10))
        let views = (0..<20).map { _ in makeTarget(fake) }
        for (target, binder) in views { bindAndWait(binder, target, gif, size: CGSize(width: 100, height: 100), cache: cache) }

        // When they play for ten simulated seconds, every decode done by the next tick
        var most = 0
        callbacks.sync {
            for _ in 0..<600 {
                fake.advance(1.0 / 60)
                fake.tick(); fake.finishDecodes()
                most = max(most, cache.animationBudget.heldBytes)
            }
        }

        // Then the twenty hold the one budget together (within 10%), each keeps a frame ahead
        // (two frames of 40 KB fit in its 100 KB share), and each has shown its frames on time
        XCTAssertEqual(callbacks.sync { cache.animationBudget.playingCount }, 20)
        print("twenty views: at most \(most) bytes held")
        XCTAssertLessThanOrEqual(Double(most), 2_000_000 * 1.1, "at most \(most) bytes held")
        for (_, binder) in views {
            let player = callbacks.sync { binder.animation.player! }
            XCTAssertEqual(callbacks.sync { player.framesAhead }, 1)
            XCTAssertGreaterThanOrEqual(callbacks.sync { player.framesHeldAhead }, 1)
            let stats = callbacks.sync { player.statistics }
            XCTAssertGreaterThanOrEqual(Double(stats.onTime), 0.9 * Double(stats.due), "\(stats)")
        }
    }

    func testAViewOffScreenDecodesNothingHoldsNoFrameAndResumesWhereItStopped() {
        // Given a binder playing an animation of ten 100 ms frames
        let cache = makeCache()
        let fake = FakeAnimation(images: (0..<10).map { image(width: Self.frameWidth + $0) })
        let (target, binder) = makeTarget(fake)
        let onScreen = Locked(true)
        callbacks.sync { binder.animation.watch { onScreen.value } }
        let gif = serve("/off.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 10, delay: 10))
        bindAndWait(binder, target, gif, size: CGSize(width: 16, height: 16), cache: cache)
        callbacks.sync { for _ in 0..<3 { fake.advance(0.1); fake.finishDecodes(); fake.tick() } }
        let player = callbacks.sync { binder.animation.player! }
        let at = callbacks.sync { player.shown?.ordinal }
        XCTAssertNotNil(at)

        // When its view leaves the window (the check at each tick says so) and time passes
        onScreen.value = false
        callbacks.sync { fake.tick() }  // the check at the tick sees it at once
        let asked = callbacks.sync { fake.sources.last!.asked.count }
        callbacks.sync { for _ in 0..<20 { fake.advance(0.1); fake.finishDecodes(); fake.tick() } }

        // Then it decodes nothing more, holds no frame, the budget counts it out, and the ticks go
        // on only to see it come back
        XCTAssertEqual(callbacks.sync { fake.sources.last!.asked.count }, asked)
        XCTAssertEqual(callbacks.sync { player.heldBytes }, 0)
        XCTAssertFalse(callbacks.sync { player.isPlaying })
        XCTAssertEqual(callbacks.sync { cache.animationBudget.playingCount }, 0)
        XCTAssertTrue(callbacks.sync { fake.tickers.last!.isRunning })

        // When it is back on screen
        onScreen.value = true
        callbacks.sync { fake.tick(); fake.finishDecodes(); fake.tick() }

        // Then it goes on from the frame it stopped at, not from where the clock went meanwhile
        XCTAssertTrue(callbacks.sync { player.isPlaying })
        XCTAssertEqual(callbacks.sync { player.shown?.ordinal }, at)
        XCTAssertGreaterThan(callbacks.sync { fake.sources.last!.asked.count }, asked)

        // And a SwiftUI view's disappearance stops it the same way, its appearance resumes it
        callbacks.sync { binder.disappeared(.lowerPriority) }
        XCTAssertFalse(callbacks.sync { player.isPlaying })
        XCTAssertEqual(callbacks.sync { player.heldBytes }, 0)
        XCTAssertFalse(callbacks.sync { fake.tickers.last!.isRunning }, "a view that said it disappeared is not polled")
    }

    func testAMemoryWarningDropsTheFramesAndPlaybackResumes() {
        // Given a binder playing an animation with frames decoded ahead
        let cache = makeCache()
        let fake = FakeAnimation(images: (0..<6).map { image(width: Self.frameWidth + $0) })
        let (target, binder) = makeTarget(fake)
        let gif = serve("/warn.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 6, delay: 10))
        bindAndWait(binder, target, gif, size: CGSize(width: 16, height: 16), cache: cache)
        callbacks.sync { for _ in 0..<4 { fake.finishDecodes(); fake.tick() } }
        let player = callbacks.sync { binder.animation.player! }
        XCTAssertGreaterThan(callbacks.sync { player.heldBytes }, 0)

        // When the app gets a memory warning (`purgeMemory()`, which binders hear on their queue)
        cache.purgeMemory()
        callbacks.sync {}

        // Then every frame is given back, and the ticks go on
        XCTAssertEqual(callbacks.sync { player.heldBytes }, 0)
        XCTAssertEqual(callbacks.sync { cache.animationBudget.heldBytes }, 0)
        XCTAssertTrue(callbacks.sync { player.isPlaying })

        // And on the next ticks it decodes again and shows the next frames
        let shown = callbacks.sync { target.history.count }
        callbacks.sync { for _ in 0..<3 { fake.advance(0.1); fake.tick(); fake.finishDecodes(); fake.tick() } }
        XCTAssertGreaterThan(callbacks.sync { player.heldBytes }, 0)
        XCTAssertGreaterThan(callbacks.sync { target.history.count }, shown)
    }

    // MARK: isAnimating, reduce motion, first frame only

    func testIsAnimatingPausesOnTheFrameShownAndResumes() {
        // Given a binder playing an animation
        let cache = makeCache()
        let fake = FakeAnimation(images: (0..<4).map { image(width: Self.frameWidth + $0) })
        let (target, binder) = makeTarget(fake)
        let gif = serve("/pause.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 4, delay: 10))
        bindAndWait(binder, target, gif, size: CGSize(width: 16, height: 16), cache: cache)
        callbacks.sync { for _ in 0..<2 { fake.finishDecodes(); fake.tick(); fake.advance(0.1) } }
        let player = callbacks.sync { binder.animation.player! }

        // When it is told not to animate, and time passes
        callbacks.sync { binder.isAnimating = false }
        let (shown, history) = callbacks.sync { (player.shown, target.history) }
        callbacks.sync { for _ in 0..<10 { fake.advance(0.1); fake.finishDecodes(); fake.tick() } }

        // Then it shows the same frame, holds only it, its ticks stopped
        XCTAssertEqual(callbacks.sync { target.history }, history)
        XCTAssertEqual(callbacks.sync { player.shown?.ordinal }, shown?.ordinal)
        XCTAssertEqual(callbacks.sync { player.framesHeldAhead }, 0)
        XCTAssertFalse(callbacks.sync { fake.tickers.last!.isRunning })
        XCTAssertFalse(callbacks.sync { binder.isAnimating })

        // When it is told to animate again, it goes on from the time it paused at (100 ms after
        // the frame it shows: the next frame), however long the pause
        callbacks.sync { binder.isAnimating = true; fake.finishDecodes(); fake.tick() }
        XCTAssertTrue(callbacks.sync { player.isPlaying })
        XCTAssertEqual(callbacks.sync { player.shown?.ordinal }, (shown?.ordinal ?? 0) + 1)

        // And a new binding made while paused shows its first frame and does not play
        callbacks.sync { binder.isAnimating = false }
        let other = serve("/pause2.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 3, delay: 10))
        bindAndWait(binder, target, other, size: CGSize(width: 16, height: 16), cache: cache)
        XCTAssertFalse(callbacks.sync { binder.animation.player?.isPlaying ?? true })
        XCTAssertEqual(callbacks.sync { cache.animationBudget.playingCount }, 0)
    }

    func testReduceMotionShowsTheFirstFrameAndPlaysNothing() {
        // Given a system that asks for less motion
        let cache = makeCache()
        let fake = FakeAnimation(images: (0..<4).map { image(width: Self.frameWidth + $0) })
        fake.reducesMotion = true
        let (target, binder) = makeTarget(fake)
        let gif = serve("/calm.gif", AnimatedImageTests.gif(width: 8, height: 8, frames: 4, delay: 10))

        // When an animation is bound
        bindAndWait(binder, target, gif, size: nil, cache: cache)

        // Then the target shows its first frame and no player is made
        XCTAssertEqual(callbacks.sync { target.image?.frameCount }, 1)
        XCTAssertEqual(callbacks.sync { target.image?.width }, 8)
        XCTAssertNil(callbacks.sync { binder.animation.player })
        XCTAssertTrue(fake.sources.isEmpty)
    }

    func testFirstFrameOnlyYieldsAOneFrameImageOfEveryAnimatedFormatAndNoPlayer() throws {
        // Given an animated GIF, APNG and WebP, served
        let cache = makeCache()
        let files: [(String, Data)] = [("a.gif", AnimatedImageTests.gif(width: 4, height: 4, frames: 3, delay: 10)),
                                       ("a.png", AnimatedImageTests.apng(frames: 3, delay: (1, 10))),
                                       ("a.webp", fixture("animated.webp"))]
        for (name, data) in files {
            let url = serve("/" + name, data)
            XCTAssertGreaterThan(ImageCache.Image(data: data)?.frameCount ?? 0, 1, name)

            // When it is fetched with `firstFrameOnly`
            var request = ImageCache.Request(url: url)
            request.options = [.firstFrameOnly]
            let fetched = expectation(description: name)
            let loaded = Locked<ImageCache.Image?>(nil)
            cache.fetch(request) { result in loaded.value = try? result.get().value; fetched.fulfill() }
            wait(for: [fetched], timeout: 10)

            // Then the image has one frame, no durations, one play; its bytes are the file's
            XCTAssertEqual(loaded.value?.frameCount, 1, name)
            XCTAssertEqual(loaded.value?.frameDurations, [], name)
            XCTAssertEqual(loaded.value?.playCount, 1, name)
            XCTAssertEqual(loaded.value?.data, data, name)

            // And a fetch without it still gets every frame (memory keeps the animation)
            XCTAssertGreaterThan(fetchAndWait(cache, url)?.frameCount ?? 0, 1, name)

            // And a view bound with it shows one frame and makes no player
            let fake = FakeAnimation(images: [image(width: 1), image(width: 2)])
            let (target, binder) = makeTarget(fake)
            let shown = expectation(description: "shown \(name)")
            target.onSet = { if $0 != nil { shown.fulfill() } }
            callbacks.sync { _ = binder.bind(request, cache: cache) }
            wait(for: [shown], timeout: 10)
            XCTAssertEqual(callbacks.sync { target.image?.frameCount }, 1, name)
            XCTAssertNil(callbacks.sync { binder.animation.player }, name)
            XCTAssertTrue(fake.sources.isEmpty, name)
        }
    }

    // MARK: What a view's load decodes, and what memory counts

    func testAViewsLoadOfAnAnimationIsAMemoryEntryOfItsOwnBesideTheEveryFrameImageOfFetch() {
        // Given an animated GIF of five frames, fetched (every frame, as 1.0 promises: memory keeps it)
        let cache = makeCache()
        let data = AnimatedImageTests.gif(width: 8, height: 8, frames: 5, delay: 10)
        let gif = serve("/own.gif", data)
        XCTAssertEqual(fetchAndWait(cache, gif)?.frameCount, 5)
        XCTAssertEqual(cache.statistics().memoryCount, 1)

        // When a view that plays frame by frame is bound to it (no size: the whole image), and its
        // own decode comes (fetch's image stands in meanwhile)
        let fake = FakeAnimation(images: (0..<5).map { image(width: Self.frameWidth + $0) })
        let (target, binder) = makeTarget(fake)
        let decoded = expectation(description: "the view's own decode")
        decoded.assertForOverFulfill = false
        callbacks.sync {
            target.onSet = { _ in if binder.state == .image(.disk) { decoded.fulfill() } }
            binder.bind(gif, pixelSize: nil, cache: cache)
        }
        wait(for: [decoded], timeout: 10)
        callbacks.sync { target.onSet = nil }

        // Then its load asked for the first frame and the bytes (a key of its own), decoded from the
        // disk's file (no second download), kept beside fetch's: memory holds and counts both
        let viewKey = ImageCache.memoryKey(gif.absoluteString, filling: nil, animation: .firstFrame)
        XCTAssertEqual(callbacks.sync { binder.binding?.memoryKey }, viewKey)
        XCTAssertNotEqual(viewKey, ImageCache.Key(gif))
        XCTAssertFalse(viewKey.isWhole, "forgotten with its key's variants")
        XCTAssertEqual(callbacks.sync { binder.state }, .image(.disk))
        XCTAssertEqual(server.requestCount("/own.gif"), 1)
        XCTAssertNotNil(cache.peek(viewKey))
        XCTAssertEqual(cache.peek(gif)?.frameCount, 5, "fetch's image is still every frame")
        let stats = cache.statistics()
        XCTAssertEqual(stats.memoryCount, 2)
        XCTAssertEqual(stats.memoryBytes, 2 * data.count, "on Linux an image costs its bytes")
        XCTAssertNotNil(callbacks.sync { binder.animation.player }, "and the view plays it")

        // And a view that does not play frame by frame (Linux's own, as watchOS's) shares fetch's
        // entry, at once from memory, as in 1.0
        let (plainTarget, plainBinder) = makeTarget()
        bindAndWait(plainBinder, plainTarget, gif, size: nil, cache: cache)
        XCTAssertEqual(callbacks.sync { plainBinder.binding?.memoryKey }, ImageCache.Key(gif))
        XCTAssertEqual(callbacks.sync { plainBinder.state }, .image(.memory))
        XCTAssertEqual(cache.statistics().memoryCount, 2)

        // And removing the URL forgets the view's entry too
        cache.remove(gif)
        XCTAssertNil(cache.peek(viewKey))
    }

    func testAFirstFrameKeyNamesItsOwnEntryAtEverySizeAndKeepsItsDecodeThroughItsOriginal() {
        let sized = ImageCache.memoryKey("u", filling: (40, 40), scale: 2, processors: "circle")
        let viewSized = ImageCache.memoryKey("u", filling: (40, 40), scale: 2, processors: "circle", animation: .firstFrame)
        XCTAssertNotEqual(sized, viewSized)
        XCTAssertEqual(viewSized, sized.decoded(as: .firstFrame))
        XCTAssertEqual(viewSized.decoded(as: .everyFrame), sized)
        XCTAssertEqual(viewSized.original.animation, .firstFrame, "a processed view's original is decoded as the view's")
        XCTAssertEqual(sized.original.animation, .everyFrame)
        XCTAssertEqual(viewSized.withoutSize, ImageCache.Key(string: "u", processors: "circle"),
                       "fetch's image and the view's stand in for each other")
        XCTAssertTrue(viewSized.description.hasSuffix("first frame"))
        XCTAssertEqual(ImageCache.AnimationDecode.forView(playsFrameByFrame: false, firstFrameOnly: false), .everyFrame)
        XCTAssertEqual(ImageCache.AnimationDecode.forView(playsFrameByFrame: true, firstFrameOnly: false), .firstFrame)
        XCTAssertEqual(ImageCache.AnimationDecode.forView(playsFrameByFrame: false, firstFrameOnly: true), .firstFrame)
        #if canImport(ImageIO) && (canImport(UIKit) || canImport(AppKit))
        XCTAssertTrue(ImageCache.AnimationEnvironment.platformPlays)
        #else
        XCTAssertFalse(ImageCache.AnimationEnvironment.platformPlays)
        #endif
    }

    // MARK: A 500-frame GIF, bounded by the ring

    func testAFiveHundredFrameGIFPlaysInAViewHoldingNoMoreThanItsRing() {
        // Given a GIF of 500 frames of 20 ms on a 2000 x 2000 canvas, made here (every frame decoded
        // at the canvas would be 500 x 16 MB = 8 GB; at the view's 100 x 100 pixels, 20 MB)
        let cache = makeCache()
        let data = AnimatedImageTests.gif(width: 2_000, height: 2_000, frames: 500, delay: 2, frameSize: (1, 1))
        let gif = serve("/long.gif", data)
        let fake = FakeAnimation(images: (0..<7).map { image(width: Self.frameWidth + $0) })
        let (target, binder) = makeTarget(fake)

        // When a view of 100 x 100 pixels shows it, and it plays through twice (1,200 ticks of a
        // 60 Hz clock, 20 s), each decode done by the next tick
        bindAndWait(binder, target, gif, size: CGSize(width: 100, height: 100), cache: cache)
        let player = callbacks.sync { binder.animation.player }
        XCTAssertEqual(callbacks.sync { fake.sources.last?.timing.durations.count }, 500)
        var mostHeld = 0, mostBudget = 0
        callbacks.sync {
            for _ in 0..<1_200 {
                fake.advance(1.0 / 60)
                fake.tick(); fake.finishDecodes()
                mostHeld = max(mostHeld, player?.heldBytes ?? .max)
                mostBudget = max(mostBudget, cache.animationBudget.heldBytes)
            }
        }

        // Then it never held more than its ring: the frame shown and 8 ahead at the view's pixels
        // (9 x 40,000 bytes), whatever the frame count; and the memory entry is its bytes
        XCTAssertEqual(callbacks.sync { player?.ringBytes }, 9 * 100 * 100 * 4)
        XCTAssertGreaterThan(mostHeld, 0)
        XCTAssertLessThanOrEqual(mostHeld, 9 * 100 * 100 * 4)
        XCTAssertLessThanOrEqual(mostBudget, 9 * 100 * 100 * 4)
        XCTAssertGreaterThanOrEqual(callbacks.sync { player?.statistics.shown ?? 0 }, 500, "it played through")
        XCTAssertTrue(fake.sources.last?.asked.allSatisfy { $0.pixels.width == 100 && $0.pixels.height == 100 } ?? false)
        XCTAssertEqual(cache.statistics().memoryBytes, data.count)
        print("500-frame GIF: at most \(mostHeld) bytes held; every frame at the view's pixels: \(500 * 40_000)")
    }

    // MARK: Helpers

    func makeTarget(_ fake: FakeAnimation) -> (TestTarget, ImageCache.Binder) {
        let target = TestTarget(queue: callbacks)
        fake.queue = callbacks
        return (target, ImageCache.Binder(target, queue: callbacks, animation: fake.environment))
    }

    func serve(_ path: String, _ body: Data) -> URL {
        server.set(path, LoopbackServer.Response(body: body))
        return server.url(path)
    }

    /// Binds `binder` to `url` at `size` and waits until the target shows the image.
    func bindAndWait(_ binder: ImageCache.Binder, _ target: TestTarget, _ url: URL, size: CGSize?, cache: ImageCache) {
        let shown = expectation(description: "shown \(url)")
        shown.assertForOverFulfill = false
        callbacks.sync {
            target.onSet = { _ in if case .image = binder.state { shown.fulfill() } }
            binder.bind(url, pixelSize: size, cache: cache)
        }
        wait(for: [shown], timeout: 10)
        callbacks.sync { target.onSet = nil }
    }
}

/// The fake parts of a binder's animations: a frame source per animated image whose decodes finish
/// when the test says, tickers the test ticks, a clock it moves. Used on the binder's queue only.
final class FakeAnimation: @unchecked Sendable {
    let images: [ImageCache.Image]
    var queue: DispatchQueue?
    var reducesMotion = false
    private(set) var now = 1_000.0
    private(set) var sources: [Source] = []
    private(set) var tickers: [Ticker] = []
    private(set) var finished = 0

    init(images: [ImageCache.Image]) { self.images = images }

    var environment: ImageCache.AnimationEnvironment {
        ImageCache.AnimationEnvironment(
            source: { [unowned self] image, _ in
                guard image.frameCount > 1 else { return nil }
                let source = Source(self, timing: ImageCache.FrameTiming(durations: image.frameDurations, plays: image.playCount))
                self.sources.append(source)
                return source
            },
            ticker: { [unowned self] queue, tick in
                dispatchPrecondition(condition: .onQueue(queue))
                let ticker = Ticker(tick)
                self.tickers.append(ticker)
                return ticker
            },
            now: { [unowned self] in self.now },
            reducesMotion: { [unowned self] in self.reducesMotion })
    }

    func advance(_ seconds: Double) { now += seconds }

    /// Ticks every running ticker once.
    func tick() { for ticker in tickers where ticker.isRunning { ticker.fire() } }

    /// Finishes every decode asked and not finished, in order.
    func finishDecodes() {
        for source in sources {
            while let (index, pixels, completion) = source.takePending() {
                finished += 1
                let image = images[index % images.count]
                completion(ImageCache.DecodedFrame(image: image, bytes: pixels.width * pixels.height * 4))
            }
        }
    }

    final class Source: ImageCache.FrameSource {
        let timing: ImageCache.FrameTiming
        private unowned let owner: FakeAnimation
        private(set) var asked: [(index: Int, pixels: (width: Int, height: Int))] = []
        private var pending: [(Int, (width: Int, height: Int), (ImageCache.DecodedFrame?) -> Void)] = []

        init(_ owner: FakeAnimation, timing: ImageCache.FrameTiming) { (self.owner, self.timing) = (owner, timing) }

        func decodeFrame(_ index: Int, pixels: (width: Int, height: Int),
                         completion: @escaping (ImageCache.DecodedFrame?) -> Void) {
            if let queue = owner.queue { dispatchPrecondition(condition: .onQueue(queue)) }
            asked.append((index, pixels))
            pending.append((index, pixels, completion))
        }

        func takePending() -> (Int, (width: Int, height: Int), (ImageCache.DecodedFrame?) -> Void)? {
            pending.isEmpty ? nil : pending.removeFirst()
        }
    }

    final class Ticker: ImageCache.FrameTicking {
        private let tick: () -> Bool
        private(set) var isRunning = false
        init(_ tick: @escaping () -> Bool) { self.tick = tick }
        func start() { isRunning = true }
        func stop() { isRunning = false }
        func fire() { if !tick() { isRunning = false } }
    }
}
