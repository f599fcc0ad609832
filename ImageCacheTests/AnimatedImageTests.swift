import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Animated GIF and APNG: the frames the checks count (`Image.frameCount`), and the shared rules that
/// decide on Apple platforms whether an animation animates and how long each frame shows.
final class AnimatedImageTests: CacheTestCase {
    // MARK: Fixtures

    func testAThreeFrameGIFHasThreeFrames() {
        let image = ImageCache.Image(data: Self.gif(frames: 3))
        XCTAssertEqual(image?.format, .gif)
        XCTAssertEqual(image?.frameCount, 3)
        XCTAssertEqual(ImageCache.Image(data: fixture("animated.gif"))?.frameCount, 3, "the fixture's three frames")
    }

    func testATwoFrameAPNGHasTwoFrames() {
        let image = ImageCache.Image(data: Self.apng(claiming: 2))
        XCTAssertEqual(image?.format, .png)
        XCTAssertEqual(image?.frameCount, 2)
        XCTAssertEqual(image?.width, 2)
        XCTAssertEqual(image?.height, 2)
    }

    func testStillImagesHaveOneFrame() {
        for name in ["photo.png", "tiny.png", "photo.jpg", "progressive.jpg", "palette.gif", "lossy.webp",
                     "lossless.webp", "alpha.webp"] {
            XCTAssertEqual(ImageCache.Image(data: fixture(name))?.frameCount, 1, name)
        }
    }

    // MARK: FrameTiming

    func testAGIFsFramesKeepTheirOwnDelaysAndItsLoopCount() {
        // Given a GIF whose frames say 20 ms, 2 s and nothing usable (0), played once more after the first
        let gif = Self.gif(frames: 3, delays: [2, 200, 0], loopCount: 1)

        // When it is checked
        let image = ImageCache.Image(data: gif)

        // Then each frame keeps its delay (none: a tenth of a second), and it plays twice
        XCTAssertEqual(image?.frameDurations, [0.02, 2, 0.1])
        XCTAssertEqual(image?.playCount, 2)
        XCTAssertEqual(ImageCache.Image(data: fixture("animated.gif"))?.frameDurations, [0.1, 0.1, 0.1])
        XCTAssertEqual(ImageCache.Image(data: fixture("animated.gif"))?.playCount, 0, "the fixture loops forever")
    }

    func testAGIFWithoutALoopCountPlaysOnceAndOneWithZeroPlaysForever() {
        XCTAssertEqual(ImageCache.Image(data: Self.gif(frames: 2, loopCount: nil))?.playCount, 1)
        XCTAssertEqual(ImageCache.Image(data: Self.gif(frames: 2, loopCount: 0))?.playCount, 0)
        XCTAssertEqual(ImageCache.Image(data: Self.gif(frames: 2, loopCount: 4))?.playCount, 5)
        XCTAssertEqual(ImageCache.FrameTiming.plays(gifLoopCount: nil), 1)
        XCTAssertEqual(ImageCache.FrameTiming.plays(gifLoopCount: 0), 0)
        XCTAssertEqual(ImageCache.FrameTiming.plays(gifLoopCount: 65_535), 65_536)
    }

    func testAnAPNGsFramesKeepTheirDelaysAndItsPlays() {
        // Given an APNG of two frames, 1/50 s and 3/2 s (a zero denominator means hundredths), played 3 times
        let image = ImageCache.Image(data: Self.apng(claiming: 2, plays: 3, delays: [(1, 50), (150, 0)]))

        // Then
        XCTAssertEqual(image?.frameDurations, [0.02, 1.5])
        XCTAssertEqual(image?.playCount, 3)
        XCTAssertEqual(ImageCache.Image(data: Self.apng(claiming: 2, plays: 0))?.playCount, 0, "0 plays forever")
    }

    func testAnAPNGFrameControlTooShortForADelayStillHasADuration() {
        // Given an APNG whose second fcTL chunk is 4 bytes: no delay in it
        let image = ImageCache.Image(data: Self.apng(claiming: 2, delays: [(1, 2), (1, 2)], shortSecondControl: true))

        // Then each frame has a duration, the second the default
        XCTAssertEqual(image?.frameCount, 2)
        XCTAssertEqual(image?.frameDurations, [0.5, 0.1])
    }

    func testStillImagesHaveNoFrameDurationsAndPlayOnce() {
        for name in ["photo.png", "photo.jpg", "palette.gif", "lossy.webp"] {
            XCTAssertEqual(ImageCache.Image(data: fixture(name))?.frameDurations, [], name)
            XCTAssertEqual(ImageCache.Image(data: fixture(name))?.playCount, 1, name)
        }
        XCTAssertEqual(ImageCache.Image(data: Self.gif(frames: 1, loopCount: 0))?.playCount, 1, "one frame: a still")
        XCTAssertEqual(ImageCache.Image(data: Self.apng(claiming: 1))?.frameDurations, [], "one claimed: a still")
    }

    func testFramesShownEvenlyAreRepeatedToKeepTheirOwnDurations() {
        // A frame of 2 s between frames of 20 ms shows for 2 s, not for the average
        let schedule = ImageCache.FrameTiming.schedule([0.02, 2, 0.02])
        XCTAssertEqual(schedule.unit, 0.02, accuracy: 1e-9)
        XCTAssertEqual(schedule.repeats, [1, 100, 1])

        // Equal durations are shown once each
        let even = ImageCache.FrameTiming.schedule([0.1, 0.1, 0.1])
        XCTAssertEqual(even.unit, 0.1, accuracy: 1e-9)
        XCTAssertEqual(even.repeats, [1, 1, 1])
    }

    func testATimelineShowsEachFrameForItsOwnDelayThenStopsOnTheLastAfterItsPlays() {
        // Given an APNG of two frames, 20 ms and 1.5 s, played 3 times
        let image = ImageCache.Image(data: Self.apng(claiming: 2, plays: 3, delays: [(1, 50), (150, 0)]))!
        XCTAssertEqual(image.frameDurations, [0.02, 1.5])
        let frame = { (seconds: Double) in
            ImageCache.FrameTiming.frame(at: seconds, durations: image.frameDurations, plays: image.playCount).index
        }

        // Then the first frame shows for its 20 ms, the second for its 1.5 s, three times over
        XCTAssertEqual(frame(0), 0)
        XCTAssertEqual(frame(0.01), 0)
        XCTAssertEqual(frame(0.03), 1)
        XCTAssertEqual(frame(1.5), 1)
        XCTAssertEqual(frame(1.53), 0, "the second play begins")
        XCTAssertEqual(frame(1.52 * 2 + 0.01), 0, "the third")
        // And after three plays (4.56 s) the last frame stays, however long the view is shown
        XCTAssertEqual(frame(4.57), 1)
        XCTAssertEqual(frame(86_400 * 365), 1)
    }

    func testAViewStepsOnlyWhenTheFrameChangesAndStopsAfterTheLastPlay() {
        // Given the same APNG (20 ms and 1.5 s, 3 plays), stepped as a SwiftUI view steps it: each
        // step shows the frame for now and waits until the next one
        let image = ImageCache.Image(data: Self.apng(claiming: 2, plays: 3, delays: [(1, 50), (150, 0)]))!
        var steps: [(at: Double, frame: Int)] = []
        var at: Double? = 0
        while let now = at, steps.count < 100 {
            let shown = ImageCache.FrameTiming.frame(at: now, durations: image.frameDurations, plays: image.playCount)
            steps.append((now, shown.index))
            at = shown.until
        }

        // Then it steps six times, once per frame shown, each at the end of the one before, and stops
        XCTAssertEqual(steps.map(\.frame), [0, 1, 0, 1, 0, 1])
        let expected = [0, 0.02, 1.52, 1.54, 3.04, 3.06]
        for (step, time) in zip(steps, expected) { XCTAssertEqual(step.at, time, accuracy: 1e-9) }

        // And a step that comes late (a busy main thread) shows the frame for its time, not the next in turn
        let late = ImageCache.FrameTiming.frame(at: 1.6, durations: image.frameDurations, plays: image.playCount)
        XCTAssertEqual(late.index, 1)
        XCTAssertEqual(late.until ?? 0, 3.04, accuracy: 1e-9)
    }

    func testAStepTakenAtTheTimeItWasGivenAlwaysShowsTheNextFrame() {
        // Given the fixture GIF (three frames of 0.1 s, forever) and the APNG of 20 ms and 1.5 s
        // played 3 times: durations whose sums do not round evenly in binary
        let gif = ImageCache.Image(data: fixture("animated.gif"))!
        let apng = ImageCache.Image(data: Self.apng(claiming: 2, plays: 3, delays: [(1, 50), (150, 0)]))!
        for (image, steps) in [(gif, 3_000), (apng, 10)] {
            // When each step is taken exactly at the `until` the one before gave
            var (at, shown): (Double?, [Int]) = (0, [])
            while let now = at, shown.count < steps {
                let frame = ImageCache.FrameTiming.frame(at: now, durations: image.frameDurations, plays: image.playCount)
                shown.append(frame.index)
                if let until = frame.until { XCTAssertGreaterThan(until, now) }
                at = frame.until
            }
            // Then every step shows the next frame in turn, never the same one again
            let frames = image.frameDurations.count
            XCTAssertEqual(shown, (0..<shown.count).map { $0 % frames }, "\(image.frameDurations)")
        }
    }

    func testAnAppKitAnimationCountsTheFrameItsImageHoldsBesideItsFrames() {
        // Given a budget whose quarter is exactly two frames of 512 x 512
        let limits = ImageCache.DecodeLimits(maxAnimatedFrames: 200, memoryMaxBytes: 8 * 1_024 * 1_024)
        // Then two frames animate alone, but not with one more kept beside them (AppKit's NSImage),
        // which would cost more than a quarter and never be kept in memory
        XCTAssertTrue(limits.animates(frames: 2, width: 512, height: 512))
        XCTAssertFalse(limits.animates(frames: 2, width: 512, height: 512, alsoKept: 1))
        // And the frame limit counts the file's frames only
        XCTAssertTrue(limits.animates(frames: 200, width: 1, height: 1, alsoKept: 1))
    }

    func testATimelineOfAnImageThatLoopsForeverNeverStops() {
        // Given the fixture GIF: three frames of 0.1 s that loop forever
        let image = ImageCache.Image(data: fixture("animated.gif"))!
        XCTAssertEqual(image.playCount, 0)
        let frame = { (seconds: Double) in
            ImageCache.FrameTiming.frame(at: seconds, durations: image.frameDurations, plays: image.playCount)
        }

        // Then it cycles through its frames, a year later too, always with a next step
        XCTAssertEqual([0.05, 0.15, 0.25, 0.35].map { frame($0).index }, [0, 1, 2, 0])
        XCTAssertEqual(frame(86_400 * 365 + 0.15).index, 1)
        XCTAssertNotNil(frame(86_400 * 365 + 0.25).until)
        XCTAssertEqual(frame(0.25).until ?? 0, 0.3, accuracy: 1e-9)
        // And nothing odd before the start, at infinity, or for a still
        XCTAssertEqual(frame(-1).index, 0)
        XCTAssertEqual(frame(-1).until ?? 0, 0.1, accuracy: 1e-9)
        XCTAssertEqual(frame(.infinity).index, 0)
        XCTAssertNil(frame(.infinity).until)
        XCTAssertEqual(ImageCache.FrameTiming.frame(at: 5, durations: [0.1], plays: 0).index, 0, "a still")
        XCTAssertNil(ImageCache.FrameTiming.frame(at: 5, durations: [0.1], plays: 0).until, "a still never steps")
    }

    func testAScheduleShowsAtMostItsBoundAndEveryFrameAtLeastOnce() {
        // Given 200 frames whose durations share no divisor above a millisecond (17 ms and 1.001 s)
        let durations = (0..<200).map { $0.isMultiple(of: 2) ? 0.017 : 1.001 }

        // When they are scheduled within 1,000 frames shown
        let schedule = ImageCache.FrameTiming.schedule(durations, maxShown: 1_000)

        // Then at most about 1,000 are shown (each rounded), every frame at least once, and each
        // frame's time is its own within half a unit (or the one unit a short frame gets)
        XCTAssertLessThanOrEqual(schedule.repeats.reduce(0, +), 1_000 + durations.count)
        XCTAssertTrue(schedule.repeats.allSatisfy { $0 >= 1 })
        for (duration, repeats) in zip(durations, schedule.repeats) {
            XCTAssertEqual(Double(repeats) * schedule.unit, duration, accuracy: max(schedule.unit / 2, schedule.unit - duration) + 1e-9)
        }
        XCTAssertEqual(ImageCache.FrameTiming.schedule([]).repeats, [])
    }

    /// NSImageView plays a GIF itself, not an APNG (issue 42): an APNG on AppKit is a still, its
    /// first frame decoded off the main thread, with its frames for the SwiftUI views.
    func testAppKitPlaysOnlyAGIFItselfAndAnAPNGIsDecodedAsAStillWithItsFrames() {
        XCTAssertTrue(ImageCache.PlatformDecoder.appKitPlays(.gif))
        XCTAssertFalse(ImageCache.PlatformDecoder.appKitPlays(.png))
        XCTAssertFalse(ImageCache.PlatformDecoder.appKitPlays(.webp))
        XCTAssertFalse(ImageCache.PlatformDecoder.appKitPlays(nil))  // a format only ImageIO knows
    }

    /// A bitmap costs its rows: a 16-bit or extended-range one twice what 4 bytes a pixel say (issue 42).
    func testABitmapCostsItsRowsAndAtLeastFourBytesAPixel() {
        XCTAssertEqual(ImageCache.Sizing.bitmapBytes(width: 100, height: 50, bytesPerRow: nil), 20_000)
        XCTAssertEqual(ImageCache.Sizing.bitmapBytes(width: 100, height: 50, bytesPerRow: 800), 40_000)  // 16-bit RGBA
        XCTAssertEqual(ImageCache.Sizing.bitmapBytes(width: 100, height: 50, bytesPerRow: 416), 20_800)  // rows padded
        XCTAssertEqual(ImageCache.Sizing.bitmapBytes(width: 100, height: 50, bytesPerRow: 100), 20_000)  // never less
    }

    // MARK: Hostile input

    /// watchOS's `Int` has 32 bits: 40 frames of 65,535 s (the longest an APNG's `fcTL` can say) add
    /// up to 2,621,400,000 ms, more than `Int32.max`. Decoded, then scheduled in 32-bit integers as
    /// watchOS schedules it, it does not trap (issue 42).
    func testFortyFramesOfSixtyFiveThousandSecondsAreScheduledWithoutATrapIn32Bits() {
        // Given a planted 40-frame APNG whose every frame shows for 65,535 s
        let image = ImageCache.Image(data: Self.apng(frames: 40, delay: (65_535, 1)))

        // When it is decoded and its frames are scheduled, in 32-bit and 64-bit integers
        let durations = image?.frameDurations ?? []
        let watchOS = ImageCache.FrameTiming.schedule(durations, maxShown: 1_000, in: Int32.self)
        let others = ImageCache.FrameTiming.schedule(durations, maxShown: 1_000, in: Int64.self)

        // Then each frame shows once for its 65,535 s, on both
        XCTAssertEqual(image?.frameCount, 40)
        XCTAssertEqual(durations, Array(repeating: 65_535, count: 40))
        XCTAssertEqual(watchOS.unit, 65_535)
        XCTAssertEqual(watchOS.repeats, Array(repeating: 1, count: 40))
        XCTAssertEqual(others.unit, watchOS.unit)
        XCTAssertEqual(others.repeats, watchOS.repeats)
        // And one coarsened to its bound stays within 32 bits too: 40 frames of 65,535 s and one of
        // 1 ms, shown at most 10 times, take a unit no longer than the longest frame, each shown once
        let coarse = ImageCache.FrameTiming.schedule(durations + [0.001], maxShown: 10, in: Int32.self)
        XCTAssertEqual(coarse.unit, 65_535)
        XCTAssertEqual(coarse.repeats, Array(repeating: 1, count: 41))
    }

    func testAGIFOfSixtyFiveThousandFramesIsCountedAndShownAsItsFirstFrame() {
        // Given a GIF whose 65,535 one-pixel frames all say "no delay" (about 1 MB)
        let gif = Self.gif(frames: 65_535, delay: 0)

        // When it is checked
        let image = ImageCache.Image(data: gif)

        // Then one walk counts every frame, and the rule shows its first frame only
        XCTAssertEqual(image?.frameCount, 65_535)
        XCTAssertFalse(ImageCache.DecodeLimits().animates(frames: 65_535, width: 1, height: 1))
    }

    func testZeroAndTinyDelaysShowForATenthOfASecond() {
        XCTAssertEqual(ImageCache.Image(data: Self.gif(frames: 3, delay: 0))?.frameCount, 3, "zero delays count")
        for delay in [nil, 0, 0.01, 0.019, -1, .nan, .infinity] as [Double?] {
            XCTAssertEqual(ImageCache.FrameTiming.duration(delay: delay), 0.1, "\(String(describing: delay))")
        }
        XCTAssertEqual(ImageCache.FrameTiming.duration(delay: 0.02), 0.02, "20 ms and more are kept")
        XCTAssertEqual(ImageCache.FrameTiming.duration(delay: 0.5), 0.5)
    }

    func testAFrameLargerThanTheCanvasKeepsTheCanvasSize() {
        // Given a 2x2 canvas whose two frames say they are 1000 x 1000
        let gif = Self.gif(width: 2, height: 2, frames: 2, frameSize: (1_000, 1_000))

        // Then the image is the canvas, of two frames
        let image = ImageCache.Image(data: gif)
        XCTAssertEqual(image?.frameCount, 2)
        XCTAssertEqual(image?.width, 2)
        XCTAssertEqual(image?.height, 2)
    }

    func testATruncatedLastFrameIsACorruptGIF() {
        // Given a three-frame GIF without its trailer, cut inside the last frame's data
        let whole = Self.gif(frames: 3, trailer: false)
        let cut = whole.dropLast(2)

        // Then it is corrupt, and says why
        guard case .corruptImage(.gif, let reason)? = ImageCache.PlatformDecoder.decode(cut).failure else {
            return XCTFail("\(ImageCache.PlatformDecoder.decode(cut))")
        }
        XCTAssertTrue(reason.contains("truncated"), reason)
        // while the same GIF whole, without the trailer, has its three frames
        XCTAssertEqual(ImageCache.Image(data: whole)?.frameCount, 3)
    }

    func testAnAPNGThatClaimsMoreFramesThanItHoldsHasTheFramesItHolds() {
        for claimed: UInt32 in [65_535, 1 << 31, .max] {
            XCTAssertEqual(ImageCache.Image(data: Self.apng(claiming: claimed))?.frameCount, 2, "acTL: \(claimed)")
        }
        XCTAssertEqual(ImageCache.Image(data: Self.apng(claiming: 1))?.frameCount, 1, "one claimed: the first")
        XCTAssertEqual(ImageCache.Image(data: Self.apng(claiming: 0))?.frameCount, 1, "none claimed: a still")
    }

    // MARK: The animated-cost rule

    func testAnAnimationAnimatesWithinItsFrameAndMemoryLimits() {
        let limits = ImageCache.DecodeLimits(maxAnimatedFrames: 200, memoryMaxBytes: 400 * 1_024 * 1_024)
        XCTAssertFalse(limits.animates(frames: 1, width: 100, height: 100), "a still")
        XCTAssertTrue(limits.animates(frames: 2, width: 100, height: 100))
        XCTAssertTrue(limits.animates(frames: 200, width: 100, height: 100), "at the frame limit")
        XCTAssertFalse(limits.animates(frames: 201, width: 100, height: 100), "past it")
        // 100 frames of 512 x 512 cost exactly 100 MiB, a quarter of the budget; one more row is too much.
        XCTAssertTrue(limits.animates(frames: 100, width: 512, height: 512))
        XCTAssertFalse(limits.animates(frames: 100, width: 512, height: 513))
        XCTAssertFalse(limits.animates(frames: .max, width: .max, height: .max), "no overflow")

        let oneFrame = ImageCache.DecodeLimits(maxAnimatedFrames: 1)
        XCTAssertFalse(oneFrame.animates(frames: 2, width: 1, height: 1))
    }

    func testMaxAnimatedFramesIs200AndAtLeast1() {
        let cache = makeCache()
        XCTAssertEqual(cache.maxAnimatedFrames, 200)
        XCTAssertEqual(ImageCache.DecodeLimits().maxAnimatedFrames, 200)
        cache.maxAnimatedFrames = 0
        XCTAssertEqual(cache.maxAnimatedFrames, 1)
        cache.maxAnimatedFrames = 50
        XCTAssertEqual(cache.maxAnimatedFrames, 50)
    }

    func testADecodeWorksWithinTheSettingsWhenItsRequestIsMade() {
        // Given a cache with its own frame limit, memory budget and decode bound
        let cache = makeCache()
        cache.maxAnimatedFrames = 12
        cache.imageMemoryMaxBytes = 4_000_000
        cache.maxDecodedPixelSize = 300

        // Then a request made now decodes within them: 12 frames, a 1,000,000-byte animation
        let limits = cache.decodeLimits
        XCTAssertTrue(limits == (300, 12, 4_000_000), "\(limits)")
        let decodeLimits = ImageCache.DecodeLimits(maxPixels: 300, maxAnimatedFrames: 12, memoryMaxBytes: 4_000_000)
        XCTAssertTrue(decodeLimits.animates(frames: 10, width: 250, height: 100))
        XCTAssertFalse(decodeLimits.animates(frames: 10, width: 250, height: 101))
    }

    // MARK: Generators

    /// A GIF89a of `frames` frames on a `width` x `height` canvas, each frame one pixel of colour 0
    /// (LZW `02 02 44 01 00`) with a descriptor that says `frameSize`, `delay` hundredths of a second apart.
    /// `delays` (hundredths, one a frame) replaces `delay`; `loopCount` is the NETSCAPE2.0 count
    /// (0: forever; nil: no such block).
    static func gif(width: Int = 1, height: Int = 1, frames: Int, delay: Int = 10, frameSize: (Int, Int)? = nil,
                    trailer: Bool = true, delays: [Int]? = nil, loopCount: Int? = 0) -> Data {
        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        let (frameWidth, frameHeight) = frameSize ?? (width, height)
        var gif = Data("GIF89a".utf8)
        gif += le16(width) + le16(height) + [0x80, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF]  // and a 2-colour table
        if let loopCount {
            gif += [0x21, 0xFF, 0x0B] + Array("NETSCAPE2.0".utf8) + [0x03, 0x01] + le16(loopCount) + [0x00]
        }
        func frame(_ delay: Int) -> [UInt8] {
            [0x21, 0xF9, 0x04, 0x00] + le16(delay) + [0x00, 0x00]
                + [0x2C, 0, 0, 0, 0] + le16(frameWidth) + le16(frameHeight) + [0x00] + [0x02, 0x02, 0x44, 0x01, 0x00]
        }
        gif.reserveCapacity(gif.count + frame(delay).count * frames + 1)
        for index in 0..<frames { gif += frame(delays?[index] ?? delay) }
        if trailer { gif.append(0x3B) }
        return gif
    }

    /// A 2 x 2 APNG of two frames (its default image, then one `fdAT`) whose `acTL` claims `claimed`.
    /// `plays` is acTL's `num_plays` (0: forever); `delays` the two frames' delay_num / delay_den.
    static func apng(claiming claimed: UInt32, plays: UInt32 = 0,
                     delays: [(UInt8, UInt8)] = [(10, 100), (10, 100)], shortSecondControl: Bool = false) -> Data {
        let png = PNGEncoder.rgb(width: 2, height: 2, pixels: [UInt8](repeating: 200, count: 12))
        // PNGEncoder writes the signature, IHDR (33 bytes in all), one IDAT, then IEND (12 bytes).
        let idat = png.subdata(in: 33..<(png.count - 12))
        let zlib = idat.subdata(in: 8..<(idat.count - 4))
        func be32(_ value: UInt32) -> Data { Data([24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) }) }
        func frameControl(_ sequence: UInt32, frame: Int) -> Data {
            let (numerator, denominator) = delays[frame]
            return be32(sequence) + be32(2) + be32(2) + be32(0) + be32(0) + Data([0, numerator, 0, denominator, 0, 0])
        }
        var apng = png.prefix(33)
        apng += chunk("acTL", be32(claimed) + be32(plays))
        apng += chunk("fcTL", frameControl(0, frame: 0)) + idat
        apng += chunk("fcTL", shortSecondControl ? be32(1) : frameControl(1, frame: 1)) + chunk("fdAT", be32(2) + zlib)
        return apng + png.suffix(12)
    }

    /// A 2 x 2 APNG of `frames` frames (its default image, then one `fdAT` each), each shown for
    /// `delay` (delay_num / delay_den seconds), playing forever.
    static func apng(frames: Int, delay: (UInt16, UInt16)) -> Data {
        let png = PNGEncoder.rgb(width: 2, height: 2, pixels: [UInt8](repeating: 200, count: 12))
        let idat = png.subdata(in: 33..<(png.count - 12))
        let zlib = idat.subdata(in: 8..<(idat.count - 4))
        func be32(_ value: UInt32) -> Data { Data([24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) }) }
        func be16(_ value: UInt16) -> Data { Data([UInt8(value >> 8), UInt8(value & 0xFF)]) }
        var sequence: UInt32 = 0
        func frameControl() -> Data {
            defer { sequence += 1 }
            return be32(sequence) + be32(2) + be32(2) + be32(0) + be32(0) + be16(delay.0) + be16(delay.1) + Data([0, 0])
        }
        var apng = png.prefix(33)
        apng += chunk("acTL", be32(UInt32(frames)) + be32(0))
        apng += chunk("fcTL", frameControl()) + idat
        for _ in 1..<frames {
            let control = chunk("fcTL", frameControl())
            apng += control + chunk("fdAT", be32(sequence) + zlib)
            sequence += 1
        }
        return apng + png.suffix(12)
    }

    /// A PNG chunk: length, type, body and CRC-32.
    private static func chunk(_ type: String, _ body: Data) -> Data {
        let typed = Data(type.utf8) + body
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in typed {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        func be32(_ value: UInt32) -> Data { Data([24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) }) }
        return be32(UInt32(body.count)) + typed + be32(crc ^ 0xFFFF_FFFF)
    }
}
