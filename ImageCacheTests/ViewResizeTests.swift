import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 49, defects 7, 8 and 9, through the binder's shared code: a UIKit view looked at its size
/// once, so a cell laid out after that look kept the whole image; a re-decode at a new size left a
/// SwiftUI view saying it was not loading, and came with the binding's fade (or the app's
/// transaction); the binder removed every animation of its view's layer.
final class ViewResizeTests: BinderTestCase {
    func testABindingToTheBoundsLooksAtThemAgainWhenItsImageComes() {
        // Given a binding to a view's bounds, not laid out yet, whose download the server holds
        let cache = makeCache()
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/late-layout")
        let url = server.url("/late-layout.png")
        let (target, binder) = makeTarget()
        let laidOut = Locked<CGSize?>(nil)
        let twice = expectation(description: "whole, then at its laid-out size")
        twice.expectedFulfillmentCount = 2
        target.onSet = { if $0?.width == 64 { twice.fulfill() } }
        callbacks.sync {
            target.expected = 64
            binder.lookAtSize({ laidOut.value.map { (pixels: $0, scale: 1) } })
            _ = binder.bind(url, placeholder: placeholder, cache: cache, transition: .fade(0.25))
        }
        XCTAssertTrue(server.waitForRequests("/late-layout.png", count: 1, timeout: 10))
        // When it is laid out after its one look (a prefetched cell), and then its image comes
        laidOut.value = CGSize(width: 180, height: 180)
        gate.open()
        wait(for: [twice], timeout: 10)
        // Then it is decoded again at that size, from the file (before the fix: never), shown
        // without a second fade
        XCTAssertNotNil(cache.peek(key: url.absoluteString, filling: (180, 180)))
        let shown = callbacks.sync { target.transitions.map { "\($0.width ?? 0) \($0.transition)" } }
        XCTAssertEqual(shown, ["\(Self.placeholderWidth) none", "64 fade(0.25)", "64 none"])
        XCTAssertEqual(server.requestCount("/late-layout.png"), 1)
    }

    func testAReDecodeAtANewSizeSaysItLoadsAndComesWithoutTransition() {
        // Given a binding at a nib's size, shown with a fade
        let cache = makeCache()
        let url = serve("/resized.png")
        let (target, binder) = makeTarget()
        let loading = Locked(0)
        let first = expectation(description: "shown")
        target.onSet = { if $0?.width == 64 { first.fulfill() } }
        callbacks.sync {
            target.expected = 64
            binder.hear(ImageCache.ViewHooks(loading: { loading.mutate { $0 += 1 } }))
            _ = binder.bind(url, placeholder: placeholder, pixelSize: CGSize(width: 10, height: 10), cache: cache,
                            transition: .fade(0.25))
        }
        wait(for: [first], timeout: 10)
        XCTAssertEqual(loading.value, 0)
        // When it is laid out at 500 x 500 pixels
        let second = expectation(description: "shown again")
        target.onSet = { if $0?.width == 64 { second.fulfill() } }
        let state = callbacks.sync { () -> ImageCache.Binder.State in
            binder.resized(to: CGSize(width: 500, height: 500), scale: nil, binding: binder.generation)
            return binder.state
        }
        // Then the binder said it loads (a SwiftUI view's isLoading), the view keeping its image
        XCTAssertEqual(state, .loading)
        XCTAssertEqual(loading.value, 1)  // before the fix: nothing told the view
        wait(for: [second], timeout: 10)
        // And the new decode came with no transition, and a SwiftUI view does not animate it
        let last = callbacks.sync { target.transitions.last.map { "\($0.width ?? 0) \($0.transition)" } }
        XCTAssertEqual(last, "64 none")  // before the fix: fade(0.25)
        XCTAssertTrue(callbacks.sync { binder.replaces })
        XCTAssertFalse(ImageCache.animatesArrival(.image(.disk), replaces: true))
        XCTAssertTrue(ImageCache.animatesArrival(.image(.disk), replaces: false))
    }

    func testTheBinderRemovesOnlyItsOwnFade() {
        // The one animation it adds, under its key, is the only one it removes (before the fix:
        // `removeAllAnimations`, which also stopped the app's own)
        XCTAssertEqual(ImageCache.animationsRemovedByBinder, [ImageCache.fadeAnimationKey])
        XCTAssertEqual(ImageCache.fadeSeconds(.fade(0.25)), 0.25)
        XCTAssertNil(ImageCache.fadeSeconds(.none))
        XCTAssertNil(ImageCache.fadeSeconds(.fade(0)))
    }
}
