import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// A download shared by another key of its image (issue 42: a fetch of a URL joins a view's download
/// of it at a size, and the other way round) keeps the promises each key's own download made: the
/// URL-level calls see a fetch that joined, and a size's own decode never brings back an image that
/// a `store` replaced while it was decoding. (A review found both broken; these failed then.)
final class SharedDownloadTests: CacheTestCase {
    /// A request of `url` at `side` x `side` pixels, as a binder makes one, decoded by `decoder`.
    @discardableResult
    private func requestSized(_ cache: ImageCache, _ url: URL, _ side: UInt64,
                              decoder: ImageCache.Decoder = .image,
                              _ done: @escaping @Sendable (Result<ImageCache.Delivery, ImageCache.Error>) -> Void)
        -> ImageCache.FetchTask {
        let base = ImageCache.Load(url, key: nil, decoder)
        let load = base.sized(ImageCache.Key(string: url.absoluteString, size: side << 24 | side), base.decoder, scale: nil)
        return cache.request(load, queue: callbacks, completion: done)
    }

    func testAFetchThatJoinedAViewsDownloadIsSeenAsFetchingAndItsFailureIsRemembered() {
        // Given a view's download of a URL at a size under way, held at the server (which will
        // answer 404)
        let cache = makeCache()
        let gate = Gate()
        server.handler = { path in
            guard path == "/missing.png" else { return nil }
            gate.wait()
            return LoopbackServer.Response(status: 404)
        }
        let url = server.url("/missing.png")
        let viewDone = expectation(description: "the view's load")
        requestSized(cache, url, 100) { _ in viewDone.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/missing.png") == 1 })
        // When the app fetches the URL itself, which joins that download
        let fetched = expectation(description: "the fetch")
        cache.fetch(url) { _, _ in fetched.fulfill() }
        // Then the URL is being fetched, and once the download fails, its failure is the URL's
        XCTAssertTrue(cache.fetching(url))
        gate.open()
        wait(for: [viewDone, fetched], timeout: 10)
        XCTAssertTrue(cache.failedToFetch(url))
        XCTAssertEqual(cache.error(for: url), .httpStatus(404))
        XCTAssertEqual(server.requestCount("/missing.png"), 1)
    }

    func testASizesOwnDecodeFinishingAfterAStoreDoesNotBringBackTheImageItReplaced() throws {
        // Given a download of the whole image, joined by a request at a size whose own decode (on a
        // decode worker) is held once it has started
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [HookedDecoder()]))  // every decode off-thread
        let gate = Gate()
        serveBehind(gate, prefix: "/replaced")
        let url = server.url("/replaced.png")
        let whole = expectation(description: "the whole image")
        _ = cache.request(ImageCache.Load(url, key: nil), queue: callbacks) { _ in whole.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/replaced.png") == 1 })
        let (decoding, held) = (expectation(description: "the size's decode started"), Gate())
        let holding = ImageCache.Decoder(type: nil, decode: { data, limits in
            decoding.fulfill()
            held.wait()
            return ImageCache.Decoder.image.decode(data, limits)
        })
        let sized = expectation(description: "the size")
        requestSized(cache, url, 100, decoder: holding) { _ in sized.fulfill() }
        gate.open()
        wait(for: [whole, decoding], timeout: 10)
        // When the app stores another image under the URL before that decode ends
        let replacement = png(width: 7_001)
        try cache.store(replacement, for: url.absoluteString)
        held.open()
        wait(for: [sized], timeout: 10)
        // (The store's own decode is on a worker too: until it is done `peek` finds nothing, as
        // `store` says; a fetch of the URL waits for it.)
        let stored = expectation(description: "the stored image decoded")
        _ = cache.request(ImageCache.Load(url, key: nil), queue: callbacks) { _ in stored.fulfill() }
        wait(for: [stored], timeout: 10)
        // Then memory has the stored image for the URL, and nothing of the old one at the size
        XCTAssertEqual(cache.peek(url)?.data, replacement)
        XCTAssertNil(cache.peek(key: url.absoluteString, filling: (width: 100, height: 100)))
    }

    func testAViewWaitingAtASizeWhenTheImageIsStoredGetsItsOwnDecodeOfTheStoredImage() throws {
        // Given a view's download of a URL at a size under way, held at the server
        let cache = makeCache()
        let gate = Gate()
        serveBehind(gate, prefix: "/stored")
        let url = server.url("/stored.png")
        let done = expectation(description: "the view's load")
        requestSized(cache, url, 100) { _ in done.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/stored.png") == 1 })
        // When the app stores an image under the URL, which stops that download
        let stored = png(width: 7_002)
        try cache.store(stored, for: url.absoluteString)
        wait(for: [done], timeout: 10)
        gate.open()
        // Then the view got its own decode of the stored image, kept at its size beside the whole one
        XCTAssertEqual(cache.peek(key: url.absoluteString, filling: (width: 100, height: 100))?.data, stored)
        XCTAssertEqual(cache.peek(url)?.data, stored)
    }
}
