import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// What a review of issue 12 (binder, sized keys) found: each test states the promised behaviour and
/// failed before its fix.
final class BinderReviewTests: BinderTestCase {
    /// `store(_:for:)` promises: "callers waiting for a download under `key` get it at once". A binder
    /// with a pixel size (what `setImage` always uses once the view is laid out) gets `.cancelled`
    /// instead, and shows its failure image, although the image is right there.
    func testStoringAKeyWhileASizedBindingLoadsShowsTheStoredImage() throws {
        let cache = makeCache()
        let url = serveImage("/store-sized.png", width: 7_000, delay: 30)
        let (target, binder) = makeTarget()
        callbacks.sync { _ = binder.bind(url, placeholder: placeholder, failureImage: failureImage,
                                         pixelSize: CGSize(width: 100, height: 100), cache: cache) }
        XCTAssertTrue(server.waitForRequests("/store-sized.png", count: 1, timeout: 5))

        try cache.store(png(width: 7_001), for: url.absoluteString)
        XCTAssertTrue(eventually { self.callbacks.sync { binder.state != .loading } })

        let (history, state) = callbacks.sync { (target.history, binder.state) }
        XCTAssertEqual(history.last, 7_001, "history \(history), state \(state)")  // fails: 9002 (the failure image)
        XCTAssertEqual(state, .image(.memory))  // fails: .failed(.cancelled)
    }

    /// `Binder.State` says `idle` is "the load cancelled", and the failure image is for an image that
    /// "cannot be had". `removeAll()` (a "clear cache" button) while rows load turns every loading
    /// target into the failure image with `.failed(.cancelled)`, and it stays.
    func testRemoveAllWhileLoadingDoesNotShowTheFailureImage() {
        let cache = makeCache()
        let url = serveImage("/clear.png", width: 7_100, delay: 30)
        let (target, binder) = makeTarget()
        callbacks.sync { _ = binder.bind(url, placeholder: placeholder, failureImage: failureImage, cache: cache) }
        XCTAssertTrue(server.waitForRequests("/clear.png", count: 1, timeout: 5))

        cache.removeAll()
        XCTAssertTrue(eventually { self.callbacks.sync { binder.state != .loading } })

        let (history, state) = callbacks.sync { (target.history, binder.state) }
        XCTAssertEqual(history.last, Self.placeholderWidth, "history \(history)")  // fails: 9002
        XCTAssertEqual(state, .idle)  // fails: .failed(.cancelled)
    }

    /// No flicker for an image in memory: in `cellForRow` a fresh cell's image view has zero bounds
    /// (unsized key), a reused one has its laid-out bounds (sized key). Scrolling back to a row first
    /// shown in a fresh cell misses memory although the whole image is there: placeholder, disk read,
    /// decode, and a second copy in memory.
    func testAWholeImageInMemoryIsSetAtOnceForASizedBinding() {
        let cache = makeCache()
        let url = serveImage("/fresh-then-reused.png", width: 7_200)
        let (fresh, freshBinder) = makeTarget(), (reused, reusedBinder) = makeTarget()
        let shown = expectation(description: "shown in the fresh cell")
        fresh.onSet = { if $0?.width == 7_200 { shown.fulfill() } }
        callbacks.sync { _ = freshBinder.bind(url, placeholder: placeholder, pixelSize: .zero, cache: cache) }  // bounds zero
        wait(for: [shown], timeout: 10)

        let (task, history) = callbacks.sync { () -> (ImageCache.FetchTask?, [Int?]) in
            reused.expected = 7_200
            let task = reusedBinder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 300, height: 300), cache: cache)
            return (task, reused.history)
        }
        XCTAssertNil(task, "a request for an image memory holds")  // fails
        XCTAssertEqual(history, [7_200])  // fails: [9001] (the placeholder)
    }

    /// Rebinding a target that already shows the right image (RemoteImage's `onAppear` after a
    /// navigation pop; `reloadData`/`reloadRows` in UIKit) replaces it with the placeholder when the
    /// cache's memory no longer holds it (LRU eviction, or a purge, which displayed targets survive).
    func testRebindingToTheURLAlreadyShownKeepsTheImage() {
        let cache = makeCache()
        let url = serveImage("/shown-again.png", width: 7_300)
        let (target, binder) = makeTarget()
        let shown = expectation(description: "shown")
        target.onSet = { if $0?.width == 7_300 { shown.fulfill() } }
        callbacks.sync { target.expected = 7_300; _ = binder.bind(url, placeholder: placeholder, cache: cache) }
        wait(for: [shown], timeout: 10)
        callbacks.sync { target.onSet = nil }

        cache.purgeMemory()  // the target is displayed: it keeps its image
        callbacks.sync {}
        let history = callbacks.sync { () -> [Int?] in
            _ = binder.bind(url, placeholder: placeholder, cache: cache)  // onAppear / reloadData
            return target.history
        }
        XCTAssertEqual(history, [Self.placeholderWidth, 7_300], "the placeholder flashed over the image shown")  // fails: [.., 7300, 9001]
    }

    /// `error(for:)`, `failedToFetch(_:)` and `fetching(_:)` do not see loads made by a binder with a
    /// size: they are recorded under the sized memory key, which no public API can name.
    func testABindingMadeWhileThePlaceholderIsSetWins() {
        let cache = makeCache()
        let older = serveImage("/outer.png", width: 7_500, delay: 0.3), newer = serveImage("/inner.png", width: 7_501)
        let (target, binder) = makeTarget()
        var rebound = false
        let olderCame = expectation(description: "the older URL's callback")
        target.onSet = { image in
            if image?.width == Self.placeholderWidth, !rebound {
                rebound = true
                target.expected = 7_501
                binder.bind(newer, placeholder: self.placeholder, cache: cache)  // re-entrant
            }
            if image?.width == 7_500 { olderCame.fulfill() }
        }
        callbacks.sync { target.expected = 7_500; _ = binder.bind(older, placeholder: placeholder, cache: cache) }
        _ = XCTWaiter.wait(for: [olderCame], timeout: 2)
        XCTAssertEqual(callbacks.sync { target.history.last }, 7_501, "history \(callbacks.sync { target.history })")  // fails: 7500
    }
}
