import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Variants at the edges (issue 39): statistics, events, lanes, hooks, the disk, lifetime, locks.
/// A review of the first processors commit wrote them; each failed on it.
final class VariantEdgeTests: CacheTestCase {
    /// A processor that makes photo.png `width` pixels wide (Linux: an image is its bytes).
    private func widen(_ id: String, to width: Int) -> ImageCache.Processor {
        let made = png(width: width)
        return ImageCache.Processor(id) { _ in ImageCache.Image(data: made) }
    }

    private func waitFor(_ cache: ImageCache, _ request: ImageCache.Request,
                         onProgress: ImageCache.ProgressCallback? = nil,
                         onRetry: ImageCache.RetryCallback? = nil) -> ImageResult? {
        let done = expectation(description: "\(request)")
        let result = Locked<ImageResult?>(nil)
        cache.fetch(request, onProgress: onProgress, onRetry: onRetry) { received in
            result.value = received
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value
    }

    // MARK: Statistics

    /// `requests` counts calls of fetch, and "each request counts once: in memoryHits, diskHits,
    /// misses or deduplicated". A variant's fetch counts two requests (the job's internal request
    /// for its original is counted too).
    func testAVariantFetchCountsAsOneRequest() {
        let cache = makeCache()
        let url = serve("/stats.png")
        XCTAssertNotNil(try waitFor(cache, ImageCache.Request(url: url, processors: [widen("w", to: 1_100)]))?.get())
        let stats = cache.statistics()
        XCTAssertEqual(stats.requests, 1, "one fetch")
        XCTAssertEqual(stats.requests, stats.memoryHits + stats.diskHits + stats.misses + stats.deduplicated)
    }

    /// "failures: downloads and lookups that ended in a failure (each counted once, however many
    /// requests waited for it)". One failed download waited for by one variant counts twice.
    func testAVariantWhoseDownloadFailsCountsOneFailure() {
        let cache = makeCache()
        cache.retryPolicy = .never
        server.set("/missing.png", .status(404))
        let result = waitFor(cache, ImageCache.Request(url: server.url("/missing.png"), processors: [widen("w", to: 1_101)]))
        XCTAssertEqual(result.flatMap { try? $0.get() } == nil, true)
        XCTAssertEqual(cache.statistics().failures, 1)
    }

    // MARK: Events

    /// `onEvent` "runs on callbackQueue". The event of a variant's fetch runs on the job's private
    /// concurrent queue "ImageCache.variants" instead (the queue of the job's request for its original).
    func testTheEventOfAVariantsFetchRunsOnTheCallbackQueue() {
        let cache = makeCache()
        let url = serve("/event.png")
        let labels = Locked<[String]>([])
        let heard = expectation(description: "event")
        cache.onEvent = { _ in
            labels.mutate { $0.append(currentQueueLabel() ?? "?") }
            heard.fulfill()
        }
        XCTAssertNotNil(try waitFor(cache, ImageCache.Request(url: url, processors: [widen("w", to: 1_102)]))?.get())
        wait(for: [heard], timeout: 5)
        XCTAssertEqual(labels.value, ["ImageCacheTests.callbacks"])
    }

    // MARK: Lanes

    /// A fast fetch that joins a download waiting on the slow lane moves it to the fast lane (as it
    /// does for a URL: the control half). A fast fetch of a prefetched variant joins the job and
    /// moves only the job (phase new -> new, against the lifecycle); its original's download stays
    /// on the slow lane, behind the fast work.
    func testAFastFetchOfAPrefetchedVariantStartsItsDownload() {
        let cache = makeCache()
        cache.stallTime = 60  // the held transfer keeps its slot
        let busy = Gate()
        serveBehind(busy, prefix: "/busy")
        defer { busy.open() }
        let held = expectation(description: "busy")
        cache.fetch(server.url("/busy.png")) { _, _ in held.fulfill() }  // fast work: the slow lane waits
        XCTAssertTrue(eventually { self.server.requestCount("/busy.png") == 1 })
        // Control: a prefetched URL fetched on screen starts at once
        let plain = serve("/plain.png")
        cache.prefetch([plain])
        cache.fetch(plain) { _, _ in }
        XCTAssertTrue(eventually(2) { self.server.requestCount("/plain.png") == 1 }, "control")
        // The same with a variant
        let url = serve("/variant.png")
        let request = ImageCache.Request(url: url, processors: [widen("w", to: 1_103)])
        cache.prefetch([request])
        XCTAssertEqual(server.requestCount("/variant.png"), 0, "the slow lane waits for the fast work")
        let got = expectation(description: "variant")
        cache.fetch(request) { _ in got.fulfill() }
        XCTAssertTrue(eventually(2) { self.server.requestCount("/variant.png") == 1 },
                      "the on-screen fetch of a prefetched variant waits for the slow lane")
        assertInvariants(cache)
        busy.open()
        wait(for: [held, got], timeout: 10)
    }

    // MARK: Callbacks of the fetch

    /// "onRetry runs before each retry" (the Request form has "the contract of
    /// fetch(_:key:slow:onProgress:onRetry:completion:)"). `Load.original` drops the hook: a
    /// variant's fetch never hears its retries.
    func testAVariantsFetchHearsItsRetries() {
        let cache = makeCache()
        server.set("/flaky.png", sequence: [.status(503), .ok(fixture("photo.png"))])
        let retried = Locked(0)
        let result = waitFor(cache, ImageCache.Request(url: server.url("/flaky.png"), processors: [widen("w", to: 1_104)]),
                             onRetry: { _, _ in retried.mutate { $0 += 1 } })
        XCTAssertEqual(try result?.get().value.width, 1_104)
        XCTAssertEqual(retried.value, 1)
    }

    /// "A request that joins a download under way is told from where it is", and gets "a last call
    /// with the whole size before completion". A variant's fetch with `onProgress` that joins a job
    /// started by a fetch without one hears nothing: `makeVariant` looked only at the waiters it had
    /// (reading `job.waiters` without the lock, too).
    func testAVariantsFetchThatJoinsHearsProgress() {
        let cache = makeCache()
        let gate = Gate()
        serveBehind(gate, prefix: "/joined")
        let url = server.url("/joined.png")
        let request = ImageCache.Request(url: url, processors: [widen("w", to: 1_105)])
        let first = expectation(description: "first")
        cache.fetch(request) { _ in first.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/joined.png") == 1 })
        let heard = Locked<[Int]>([])
        let second = expectation(description: "second")
        cache.fetch(request, onProgress: { received, _ in heard.mutate { $0.append(received) } }) { _ in second.fulfill() }
        gate.open()
        wait(for: [first, second], timeout: 10)
        XCTAssertEqual(heard.value.last, fixture("photo.png").count)
    }

    // MARK: The disk keeps the original only

    /// Linux: a variant made for a fetch waiting when its key is stored (`deliver(entryOf:)` ->
    /// `keepVariant`) is kept in memory with size 0 (its payload has no bytes), and its slot's
    /// disk item carries the image's bytes, the processed ones. `persistCacheToDisk` (and a purge,
    /// an eviction) sees a file of another size and writes the variant over the key's file: the
    /// next launch serves the processed image as the original.
    func testAStoredKeysFileIsNotReplacedByAVariant() throws {
        let cache = makeCache()
        let (gate, url) = (Gate(), server.url("/stored.png"))
        serveBehind(gate, prefix: "/stored")
        defer { gate.open() }
        let done = expectation(description: "the variant")
        let grow = ImageCache.Processor("grow") { image in ImageCache.Image(data: self.png(width: image.width + 1)) }
        cache.fetch(ImageCache.Request(url: url, processors: [grow])) { _ in done.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/stored.png") == 1 })
        try cache.store(png(width: 2_000), for: url.absoluteString)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(cache.peek(url)?.width, 2_000)
        cache.persistCacheToDisk()
        // A new launch on the folder: the file is what was stored
        let next = makeCache("cache")
        XCTAssertEqual(fetchAndWait(next, url)?.width, 2_000)
    }

    /// Linux: the same through the job's own path when the original's file has gone (the disk
    /// trimmed while memory keeps the image): the variant, evicted, is written as the key's file.
    func testAnEvictedVariantIsNotWrittenAsTheKeysFile() {
        let cache = makeCache()
        let url = serve("/evicted.png")
        XCTAssertEqual(try waitFor(cache, ImageCache.Request(url: url, processors: [widen("w", to: 1_106)]))?.get().value.width,
                       1_106)
        cache.reduceDiskCache(maxImageCount: 0)  // the files go; memory keeps both entries
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertNotNil(cache.peek(url))  // the original is used: the variant is evicted first
        cache.imageMemoryMaxCount = 1
        XCTAssertEqual(cache.diskCount, 0, "the variant, evicted, is not written")
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 1, "the original is")
        let next = makeCache("cache")
        XCTAssertEqual(fetchAndWait(next, url)?.width, 64, "photo.png as downloaded")
    }

    // MARK: Lifetime

    /// A job's request for its original holds the job (its completion captures it) and the job holds
    /// the request (`Download.original`, never cleared): a cycle per variant, which also holds the
    /// cache (`self` in the completion), so that a cache that made a variant is never freed (its
    /// session never invalidated). The control: a cache that fetched a URL is freed.
    func testACacheThatMadeAVariantIsFreed() {
        let url = serve("/lifetime.png")
        for processors in [[], [widen("w", to: 1_107)]] {
            weak var released: ImageCache?
            do {
                let cache = ImageCache(uniqueName: "lifetime", directory: directory)
                cache.callbackQueue = callbacks
                released = cache
                XCTAssertNotNil(try waitFor(cache, ImageCache.Request(url: url, processors: processors))?.get())
                cache.persistCacheToDisk()
            }
            XCTAssertTrue(eventually(3) { released == nil }, "processors: \(processors)")
        }
    }

    // MARK: Failures

    /// The callback form says "the image, or nil (see error(for:))". A variant whose processor threw
    /// is remembered under the variant's key alone, which no public call reads: `error(for: url)`
    /// and `failedToFetch` say nothing, and there is no `error(for: Request)`.
    func testWhyAVariantFailedCanBeAsked() {
        let cache = makeCache()
        let url = serve("/why.png")
        let broken = ImageCache.Processor("broken") { _ in nil }
        let done = expectation(description: "nil")
        cache.fetch(ImageCache.Request(url: url, processors: [broken])) { _, image in
            XCTAssertNil(image)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        let request = ImageCache.Request(url: url, processors: [broken])
        XCTAssertEqual(cache.error(for: request), .decodingFailed("processor \"broken\" made no image"))
        XCTAssertNil(cache.error(for: url), "the original was had")
    }

    // MARK: Lock discipline (run under --sanitize=thread)

    /// `makeVariant` reads `job.waiters` (guarded by the cache's lock) without the lock, while other
    /// fetches of the variant join the job under it.
    func testJoiningAJobWhileItStarts() {
        let cache = makeCache()
        let url = serve("/race.png")
        XCTAssertNotNil(fetchAndWait(cache, url))  // the original in memory: each job starts at once
        let group = DispatchGroup()
        for index in 0..<200 {
            let request = ImageCache.Request(url: url, processors: [widen("r\(index)", to: 1_200)])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                group.enter()
                cache.fetch(request, onProgress: { _, _ in }) { _ in group.leave() }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
    }
}
