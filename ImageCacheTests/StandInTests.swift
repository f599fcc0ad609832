import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The best image already cached, shown at once (issue 52, item 2): a binding whose own image memory
/// does not hold shows another size of its variant, or its original when its processors only resize,
/// then its own; never another variant, never a blurrier image after a sharper one.
final class StandInTests: BinderTestCase {
    /// A processor named `id` that makes, on its nth run, an image of `sizes[n]` (the last one after).
    private func processor(_ id: String, resizesOnly: Bool, sizes: [(Int, Int)], runs: Locked<Int>) -> ImageCache.Processor {
        let made = sizes.map { png(width: $0.0, height: $0.1) }
        return ImageCache.Processor(id, resizesOnly: resizesOnly) { _ in
            let run = runs.mutate { (count: inout Int) -> Int in count += 1; return count }
            return ImageCache.Image(data: made[min(run, made.count) - 1])
        }
    }

    /// Binds `request` at once and returns what the target showed inside `bind`; `expected` is the
    /// width of that image, `then` the width of the one that follows.
    private func bindNow(_ binder: ImageCache.Binder, _ target: TestTarget, _ request: ImageCache.Request,
                         _ cache: ImageCache, expected: Int, then: Int) -> [Int?] {
        callbacks.sync {
            target.expected = expected
            binder.bind(request, placeholder: placeholder, cache: cache)
            target.expected = then
            return target.history
        }
    }

    func testAHundredPointResizeShowsItsOriginalFromMemoryAtOnceThenItsOwn() {
        // Given the original in memory
        let cache = makeCache()
        let url = serveImage("/resize.png", width: 1_100)
        XCTAssertNotNil(fetchAndWait(cache, url))
        let thumbnail = processor("thumbnail?w=100", resizesOnly: true, sizes: [(1_101, 100)], runs: Locked(0))
        let request = ImageCache.Request(url: url, size: CGSize(width: 100, height: 100), processors: [thumbnail])
        XCTAssertEqual(cache.peekStandIn(for: request)?.width, 1_100, "apps see the same stand-in")
        // When a view is bound to a 100-point resize of it
        let (target, binder) = makeTarget()
        let own = expectation(description: "its own")
        target.onSet = { if $0?.width == 1_101 { own.fulfill() } }
        let atOnce = bindNow(binder, target, request, cache, expected: 1_100, then: 1_101)
        // Then the original shows inside `bind` (no placeholder), and its own follows
        XCTAssertEqual(atOnce, [1_100])
        wait(for: [own], timeout: 10)
        callbacks.sync {
            XCTAssertEqual(target.history, [1_100, 1_101])
            XCTAssertEqual(target.wrong, 0)
        }
        XCTAssertEqual(server.requestCount("/resize.png"), 1)
        XCTAssertEqual(cache.peekStandIn(for: request)?.width, 1_101, "its own, once memory has it")
    }

    func testACircleWhoseOriginalAloneIsCachedShowsThePlaceholderNeverTheSquareOriginal() {
        // Given the original in memory, and a variant that is not a resize
        let cache = makeCache()
        let url = serveImage("/circle.png", width: 1_100)
        XCTAssertNotNil(fetchAndWait(cache, url))
        let circle = processor("circle", resizesOnly: false, sizes: [(1_102, 1_102)], runs: Locked(0))
        let request = ImageCache.Request(url: url, size: CGSize(width: 100, height: 100), processors: [circle])
        XCTAssertNil(cache.peekStandIn(for: request))
        // When a view is bound to the circle
        let (target, binder) = makeTarget()
        let own = expectation(description: "the circle")
        target.onSet = { if $0?.width == 1_102 { own.fulfill() } }
        let atOnce = bindNow(binder, target, request, cache, expected: 1_102, then: 1_102)
        // Then the placeholder, then the circle: never the square original
        XCTAssertEqual(atOnce, [Self.placeholderWidth])
        wait(for: [own], timeout: 10)
        callbacks.sync {
            XCTAssertEqual(target.history, [Self.placeholderWidth, 1_102])
            XCTAssertEqual(target.wrong, 0)
        }
        // And a plain binding at a size never shows the circle, which memory now holds
        let (plain, plainBinder) = makeTarget()
        let square = ImageCache.Request(url: url, size: CGSize(width: 50, height: 50))
        XCTAssertEqual(cache.peekStandIn(for: square)?.width, 1_100, "its original, not the circle")
        _ = bindNow(plainBinder, plain, square, cache, expected: 1_100, then: 1_100)
        callbacks.sync { XCTAssertFalse(plain.history.contains(1_102)) }
    }

    func testAnotherSizeOfTheSameVariantShowsAtOnceThenItsOwn() {
        // Given a circle at 300 points in memory (its first run), and no original a circle may use
        let cache = makeCache()
        let url = serveImage("/sizes.png", width: 1_100)
        let circle = processor("circle", resizesOnly: false, sizes: [(1_102, 1_102), (1_103, 1_103)], runs: Locked(0))
        let large = ImageCache.Request(url: url, size: CGSize(width: 300, height: 300), processors: [circle])
        let (first, firstBinder) = makeTarget()
        let firstShown = expectation(description: "the circle at 300")
        first.onSet = { if $0?.width == 1_102 { firstShown.fulfill() } }
        _ = bindNow(firstBinder, first, large, cache, expected: 1_102, then: 1_102)
        wait(for: [firstShown], timeout: 10)
        // When another view binds the circle at 100 points
        let (second, secondBinder) = makeTarget()
        let own = expectation(description: "the circle at 100")
        second.onSet = { if $0?.width == 1_103 { own.fulfill() } }
        let small = ImageCache.Request(url: url, size: CGSize(width: 100, height: 100), processors: [circle])
        let atOnce = bindNow(secondBinder, second, small, cache, expected: 1_102, then: 1_103)
        // Then the 300-point circle shows at once, then its own
        XCTAssertEqual(atOnce, [1_102])
        wait(for: [own], timeout: 10)
        callbacks.sync {
            XCTAssertEqual(second.history, [1_102, 1_103])
            XCTAssertEqual(second.wrong, 0)
        }
        XCTAssertEqual(server.requestCount("/sizes.png"), 1)
    }

    func testABlurrierImageNeverFollowsASharperOne() {
        // Given a view showing a sharp 400 x 400 variant at 100 points, after a blurry 40 x 40 one
        // made at 300 points stood in for it (a variant that is no resize: the original never does)
        let cache = makeCache()
        let url = serveImage("/sharp.png", width: 1_100)
        let runs = Locked(0)
        let thumb = processor("thumb", resizesOnly: false, sizes: [(40, 40), (400, 400), (40, 40), (400, 400)], runs: runs)
        func request(_ points: Double) -> ImageCache.Request {
            ImageCache.Request(url: url, size: CGSize(width: points, height: points), processors: [thumb])
        }
        let (blurry, blurryBinder) = makeTarget()
        let (sharp, sharpBinder) = makeTarget()
        let made = expectation(description: "the 40 at 300")
        blurry.onSet = { if $0?.width == 40 { made.fulfill() } }
        _ = bindNow(blurryBinder, blurry, request(300), cache, expected: 40, then: 40)
        wait(for: [made], timeout: 10)
        let own = expectation(description: "the 400 at 100")
        sharp.onSet = { if $0?.width == 400 { own.fulfill() } }
        XCTAssertEqual(bindNow(sharpBinder, sharp, request(100), cache, expected: 40, then: 400), [40])
        wait(for: [own], timeout: 10)
        // and memory holding only the blurry one (a purge; displayed targets keep theirs)
        cache.purgeMemory()
        let (other, otherBinder) = makeTarget()
        let again = expectation(description: "the 40 at 300 again")
        other.onSet = { if $0?.width == 40 { again.fulfill() } }
        _ = bindNow(otherBinder, other, request(300), cache, expected: 40, then: 40)
        wait(for: [again], timeout: 10)
        XCTAssertEqual(runs.value, 3)
        // When the sharp view is laid out at 200 points
        let resized = expectation(description: "its own at 200")
        sharp.onSet = { if $0?.width == 400 { resized.fulfill() } }
        callbacks.sync {
            sharpBinder.resized(to: CGSize(width: 200, height: 200), scale: nil, binding: sharpBinder.generation)
            XCTAssertEqual(sharp.history, [40, 400], "nothing blurrier over the sharp one meanwhile")
        }
        wait(for: [resized], timeout: 10)
        // Then it goes from sharp to its own, never back to the blurry one
        callbacks.sync { XCTAssertEqual(sharp.history, [40, 400, 400]) }
    }

    func testTheBestStandInFillsTheSizeWithTheFewestPixelsAndIsNeverWorseThanWhatShows() {
        typealias S = ImageCache.StandIn
        let target = (width: 100, height: 100)
        // Fills the target with the fewest pixels
        XCTAssertEqual(S.best(of: [(50, 50), (300, 300), (150, 100)], for: target, shown: nil), 2)
        // None fills it: the least scaled up
        XCTAssertEqual(S.best(of: [(50, 50), (80, 200), (60, 60)], for: target, shown: nil), 1)
        // Never worse than, or as good as, the picture shown
        XCTAssertNil(S.best(of: [(300, 300)], for: target, shown: (100, 100)))
        XCTAssertNil(S.best(of: [(50, 50)], for: target, shown: (80, 80)))
        XCTAssertEqual(S.best(of: [(50, 50), (90, 90)], for: target, shown: (80, 80)), 1)
        // No target (a whole image): the most pixels; empty images never
        XCTAssertEqual(S.best(of: [(50, 50), (0, 900), (60, 60)], for: nil, shown: nil), 2)
        XCTAssertNil(S.best(of: [(0, 0)], for: target, shown: nil))
        XCTAssertNil(S.best(of: [], for: target, shown: nil))
        // Which variants may stand in: the own; the original only for resizes
        let circle = ImageCache.memoryKey("u", filling: (100, 100), processors: "6:circle")
        XCTAssertEqual(S.variants(for: circle, resizesOnly: false), [ImageCache.Key(string: "u", processors: "6:circle")])
        XCTAssertEqual(S.variants(for: circle, resizesOnly: true),
                       [ImageCache.Key(string: "u", processors: "6:circle"), ImageCache.Key(string: "u")])
        XCTAssertEqual(S.variants(for: ImageCache.memoryKey("u", filling: (9, 9)), resizesOnly: true),
                       [ImageCache.Key(string: "u")])
        XCTAssertTrue(S.target(of: circle)! == (100, 100))
        XCTAssertNil(S.target(of: ImageCache.Key(string: "u")))
    }
}
