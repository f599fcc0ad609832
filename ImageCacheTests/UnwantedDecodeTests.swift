import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 49, defects 3 and 4, confirmed on Linux through the package's own test support: a
/// download's decode made for a request that has gone stayed in memory beside the decode its
/// remaining waiters asked for; and `store(variant, for:)` wrote the variant's original.
final class UnwantedDecodeTests: BinderTestCase {
    func testABindingBeforeLayoutReboundAtItsSizeKeepsOnlyItsSizeInMemory() {
        // Given a binding before layout (the whole image), whose download the server holds
        let cache = makeCache()
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/before-layout")
        let url = server.url("/before-layout.png")
        let width = 64  // photo.png
        let (target, binder) = makeTarget()
        let shown = expectation(description: "the image at the laid-out size")
        target.onSet = { if $0?.width == width { shown.fulfill() } }
        let generation = callbacks.sync { () -> Int in
            target.expected = width
            _ = binder.bind(url, placeholder: placeholder, cache: cache)
            return binder.generation
        }
        XCTAssertTrue(server.waitForRequests("/before-layout.png", count: 1, timeout: 10))
        // When layout rebinds it at its size, and the body comes
        callbacks.sync { binder.resized(to: CGSize(width: 180, height: 180), scale: nil, binding: generation) }
        gate.open()
        wait(for: [shown], timeout: 10)
        // Then memory keeps the decode at that size only, not the whole one no one waits for
        XCTAssertEqual(cache.memoryCount, 1)  // before the fix: 2
        XCTAssertNotNil(cache.peek(key: url.absoluteString, filling: (180, 180)))
        XCTAssertNil(cache.peek(url))
        // And the file is kept: the whole image comes from disk
        cache.drainDisk()
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/before-layout.png"), 1)
        assertInvariants(cache)
    }

    func testAWholeFetchCancelledAfterASizeJoinedLeavesOnlyTheSizeInMemory() {
        // Given a fetch of the whole image and one of a size that joined its download
        let cache = makeCache()
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/joined-size")
        let url = server.url("/joined-size.png")
        let whole = cache.fetch(url) { _, _ in XCTFail("cancelled") }
        XCTAssertTrue(server.waitForRequests("/joined-size.png", count: 1, timeout: 10))
        let sized = expectation(description: "the size")
        cache.fetch(ImageCache.Request(url: url, size: CGSize(width: 30, height: 30))) { _ in sized.fulfill() }
        // When the whole image's fetch is cancelled before the body comes
        whole.cancel()
        gate.open()
        wait(for: [sized], timeout: 10)
        // Then only the size's decode is in memory
        XCTAssertEqual(cache.memoryCount, 1)  // before the fix: 2
        XCTAssertNil(cache.peek(url))
        assertInvariants(cache)
    }

    func testStoringAVariantUnderAnotherKeyKeepsTheVariantsOwnBytes() throws {
        // Given a 123-pixel variant of a 64-pixel original, on a platform whose images have no bytes
        // of their own (Apple's: the cache keeps those of the entry memory holds it in)
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        encodeHook.set { $0.data }
        let url = serve("/original.png")
        let made = png(width: 123)
        let shrink = ImageCache.Processor("to-123") { _ in ImageCache.Image(data: made) }
        let done = expectation(description: "the variant")
        let variant = Locked<ImageCache.Image?>(nil)
        cache.fetch(ImageCache.Request(url: url, processors: [shrink])) { result in
            variant.value = try? result.get().value
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        let image = try XCTUnwrap(variant.value)
        XCTAssertEqual(image.width, 123)
        // When it is stored under another key, and memory is purged
        try cache.store(image, for: "other")
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })  // before the fix: 0 (the original's file was copied)
        cache.purgeMemory()
        cache.drainDisk()
        // Then the disk gives the variant, not its original
        XCTAssertEqual(fetchAndWait(cache, server.url("/absent.png"), key: "other")?.width, 123)  // before the fix: 64
        XCTAssertEqual(server.requestCount("/absent.png"), 0)
    }
}
