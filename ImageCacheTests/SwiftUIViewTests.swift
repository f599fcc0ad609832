import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The decisions of the SwiftUI views (`AsyncImage`, `RemoteImage`), which cannot run here: the phase
/// a binder's state gives, the pixels a size in points gives, and which arrivals animate; the last two
/// also through a real binder, whose target records what a view's target would show.
final class SwiftUIViewTests: BinderTestCase {
    // MARK: The phase

    func testAFailureIsTheFailurePhaseWhateverTheTargetShows() {
        let phase = ImageCache.ViewPhase<Int>(.failed(.httpStatus(404)), showing: nil)
        guard case .failure(.httpStatus(404)) = phase else { return XCTFail("\(phase)") }
        let shown = ImageCache.ViewPhase<Int>(.failed(.emptyBody), showing: 7)
        guard case .failure(.emptyBody) = shown else { return XCTFail("\(shown)") }
    }

    func testAnImageShownIsSuccessInEveryOtherState() {
        // An image, a reload that keeps the last image while it loads, a load cancelled on disappear
        let states: [ImageCache.Binder.State] = [.image(.memory), .image(.disk), .image(.network), .loading, .idle]
        for state in states {
            guard case .success(7) = ImageCache.ViewPhase<Int>(state, showing: 7) else { return XCTFail("\(state)") }
        }
    }

    func testNoImageShownIsEmpty() {
        // No URL or a memory warning (the placeholder, nil for AsyncImage), loading, nothing bound
        for state in [.placeholder, .loading, .idle] as [ImageCache.Binder.State] {
            guard case .empty = ImageCache.ViewPhase<Int>(state, showing: nil) else { return XCTFail("\(state)") }
        }
    }

    // MARK: Points and pixels

    func testASizeInPointsIsDecodedAtTheDisplayScale() {
        // A 100x60-point view on a 3x screen, half a point at 2x, and a 1x screen
        XCTAssertEqual(ImageCache.pixelSize(points: CGSize(width: 100, height: 60), scale: 3),
                       CGSize(width: 300, height: 180))
        XCTAssertEqual(ImageCache.pixelSize(points: CGSize(width: 50.5, height: 20), scale: 2),
                       CGSize(width: 101, height: 40))
        XCTAssertEqual(ImageCache.pixelSize(points: CGSize(width: 64, height: 64), scale: 1),
                       CGSize(width: 64, height: 64))
    }

    func testNoSizeIsTheWholeImage() {
        XCTAssertNil(ImageCache.pixelSize(points: nil, scale: 3))
    }

    // MARK: Which arrivals animate

    func testOnlyAnImageNotFromMemoryAnimates() {
        XCTAssertTrue(ImageCache.animatesArrival(.image(.network)))
        XCTAssertTrue(ImageCache.animatesArrival(.image(.disk)))
        let still: [ImageCache.Binder.State] = [.image(.memory), .placeholder, .loading, .idle,
                                                .failed(.httpStatus(500))]
        for state in still { XCTAssertFalse(ImageCache.animatesArrival(state), "\(state)") }
    }

    func testThroughABinderTheNetworkImageAnimatesAndTheMemoryOneShowsAtOnce() {
        // Given an image on the server and a target that records, as a SwiftUI view's does, the
        // phase and whether it animates each time the binder shows something (no placeholder image)
        let cache = makeCache()
        let url = serveImage("/swiftui.png", width: 3_100)
        let target = PhaseTarget()
        let binder = ImageCache.Binder(target, queue: callbacks)
        target.binder = binder
        let arrived = expectation(description: "from the network")
        target.onShow = { if $0.hasPrefix("success") { arrived.fulfill() } }

        // When it is bound with a size in points at 2x, then bound again (now in memory), and bound
        // in another target
        let pixels = ImageCache.pixelSize(points: CGSize(width: 20, height: 10), scale: 2)
        callbacks.sync { _ = binder.bind(url, pixelSize: pixels, cache: cache) }
        wait(for: [arrived], timeout: 10)
        let other = PhaseTarget()
        let otherBinder = ImageCache.Binder(other, queue: callbacks)
        other.binder = otherBinder
        callbacks.sync {
            _ = binder.bind(url, pixelSize: pixels, cache: cache)
            _ = otherBinder.bind(url, pixelSize: pixels, cache: cache)  // a new view of it
        }

        // Then it was empty (at once), then the image animated in; from memory it came at once to
        // the new view, and the view that showed it was shown nothing again
        let shown = callbacks.sync { target.shown }
        XCTAssertEqual(shown, ["empty at once", "success animated"])
        XCTAssertEqual(callbacks.sync { other.shown }, ["success at once"])
        XCTAssertEqual(server.requestCount("/swiftui.png"), 1)
    }

    func testThroughABinderAFailureIsTheFailurePhaseAtOnce() {
        // Given a URL that answers 404
        let cache = makeCache()
        server.set("/swiftui-gone.png", .status(404))
        let target = PhaseTarget()
        let binder = ImageCache.Binder(target, queue: callbacks)
        target.binder = binder
        let failed = expectation(description: "failed")
        target.onShow = { if $0.hasPrefix("failure") { failed.fulfill() } }

        // When it is bound
        callbacks.sync { _ = binder.bind(server.url("/swiftui-gone.png"), cache: cache) }
        wait(for: [failed], timeout: 10)

        // Then the phase says why, and nothing animated
        XCTAssertEqual(callbacks.sync { target.shown }, ["empty at once", "failure(HTTP status 404) at once"])
    }
    // MARK: A new size or scale keeps the image (issue 42)

    /// A view whose size changes (a rotation) keeps its target: it binds it again, and the image it
    /// shows stays (the phase stays `success`) until the new size's comes.
    func testASizeChangeKeepsTheImageShownUntilTheNewOneComes() {
        // Given a view of 20 x 10 points at 2x showing its image
        let cache = makeCache()
        let url = serveImage("/swiftui-resized.png", width: 3_200)
        let target = PhaseTarget()
        let binder = ImageCache.Binder(target, queue: callbacks)
        target.binder = binder
        let first = expectation(description: "the first size")
        target.onShow = { if $0.hasPrefix("success") { first.fulfill() } }
        let load = ImageCache.Load(url, key: nil)
        let small = ImageCache.pixelSize(points: CGSize(width: 20, height: 10), scale: 2)
        callbacks.sync { binder.bindView(load, nil, nil, small, cache, scale: 2) }
        wait(for: [first], timeout: 10)

        // When it is laid out at 100 x 100 points
        let second = expectation(description: "the new size")
        target.onShow = { if $0.hasPrefix("success") { second.fulfill() } }
        let large = ImageCache.pixelSize(points: CGSize(width: 100, height: 100), scale: 2)
        let meanwhile = callbacks.sync { () -> (String, ImageCache.Binder.State) in
            let shown = target.image
            binder.bindView(load, nil, nil, large, cache, scale: 2)
            guard case .success = ImageCache.ViewPhase(binder.state, showing: target.image), target.image == shown else {
                return ("not the image shown", binder.state)
            }
            return ("success", binder.state)
        }

        // Then until the new size's image comes, the view shows the one it had (no empty phase)
        XCTAssertEqual(meanwhile.0, "success")
        XCTAssertEqual(meanwhile.1, .loading)
        wait(for: [second], timeout: 10)
        XCTAssertEqual(callbacks.sync { target.shown }, ["empty at once", "success animated", "success animated"])
        XCTAssertNotNil(cache.peek(ImageCache.memoryKey(url.absoluteString, filling: (200, 200), scale: 2)))
        XCTAssertEqual(server.requestCount("/swiftui-resized.png"), 1)

        // And appearing again at that size, or at a size the image shown fills within twice, binds
        // nothing; at another scale it binds again
        let requests = cache.statistics().requests
        callbacks.sync {
            binder.bindView(load, nil, nil, ImageCache.pixelSize(points: CGSize(width: 90, height: 90), scale: 2), cache, scale: 2)
        }
        XCTAssertEqual(cache.statistics().requests, requests)
        callbacks.sync {
            binder.bindView(load, nil, nil, ImageCache.pixelSize(points: CGSize(width: 100, height: 100), scale: 3), cache, scale: 3)
        }
        XCTAssertEqual(cache.statistics().requests, requests + 1)
    }

    func testABindingBindsAgainForAnotherScaleOrASizeItDoesNotFit() {
        let bound = (size: (width: 200, height: 200) as (width: Int, height: Int)?, scale: 2.0)
        XCTAssertFalse(ImageCache.Rebinding.rebinds(bound: bound, now: ((200, 200), 2), decodeBound: 4_096))
        XCTAssertFalse(ImageCache.Rebinding.rebinds(bound: bound, now: ((120, 180), 2), decodeBound: 4_096))  // within twice
        XCTAssertTrue(ImageCache.Rebinding.rebinds(bound: bound, now: ((201, 200), 2), decodeBound: 4_096))  // blurry
        XCTAssertTrue(ImageCache.Rebinding.rebinds(bound: bound, now: ((100, 100), 2), decodeBound: 4_096))  // twice as large
        XCTAssertTrue(ImageCache.Rebinding.rebinds(bound: bound, now: ((200, 200), 3), decodeBound: 4_096))  // another scale
        XCTAssertTrue(ImageCache.Rebinding.rebinds(bound: bound, now: (nil, 2), decodeBound: 4_096))  // the whole image now
        // A whole image's entry has no scale: a new scale alone changes nothing
        XCTAssertFalse(ImageCache.Rebinding.rebinds(bound: (nil, 2), now: (nil, 3), decodeBound: 4_096))
        XCTAssertFalse(ImageCache.Rebinding.rebinds(bound: (nil, 2), now: ((3_000, 3_000), 3), decodeBound: 4_096))
    }
}

/// What a SwiftUI view's target does when its binder shows something, said as text: the phase and
/// whether it animates. Used on the binder's queue only.
private final class PhaseTarget: ImageCache.ImageTarget {
    var image: ImageCache.Image?
    var isDisplayed = true
    weak var binder: ImageCache.Binder?
    private(set) var shown: [String] = []
    var onShow: ((String) -> Void)?

    func show(_ image: ImageCache.Image?, transition: ImageCache.Transition) {
        guard let state = binder?.state else { return XCTFail("shown before the binder was known") }
        self.image = image
        let phase: String
        switch ImageCache.ViewPhase(state, showing: image) {
        case .empty: phase = "empty"
        case .success: phase = "success"
        case .failure(let error): phase = "failure(\(error))"
        }
        shown.append(phase + (ImageCache.animatesArrival(state) ? " animated" : " at once"))
        onShow?(shown[shown.count - 1])
    }
}
