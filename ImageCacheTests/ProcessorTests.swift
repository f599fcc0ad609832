import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Processors (issue 39): a variant is made once, from one download, cached under what made it, and
/// made again from the original with no request; a failing processor fails only its variant. The
/// processors here are custom ones (Linux: an image is its bytes): each returns a PNG whose width
/// names it, counts its runs, and records whether it ran on the main thread or under the cache's lock.
final class ProcessorTests: CacheTestCase {
    /// What the processors of one test saw: runs by identifier, and the runs on the main thread or
    /// under the cache's lock.
    private final class Record: @unchecked Sendable {
        let runs = Locked<[String: Int]>([:])
        let wrongPlaces = Locked<[String]>([])
    }

    /// A processor named `id` that makes photo.png `width` pixels wide (or throws `failure`).
    private func processor(_ id: String, width: Int, _ record: Record, cache: ImageCache,
                           failure: String? = nil) -> ImageCache.Processor {
        let made = png(width: width)
        return ImageCache.Processor(id) { image in
            record.runs.mutate { $0[id, default: 0] += 1 }
            if Thread.isMainThread { record.wrongPlaces.mutate { $0.append("\(id) on the main thread") } }
            // The lock is not this thread's if it can be taken: another thread may hold it for a
            // moment, so try a while (a lock held by this thread would never be taken).
            var taken = false
            for _ in 0..<10_000 where !taken {
                taken = cache.lock.try()
                if !taken { usleep(100) }
            }
            if taken { cache.lock.unlock() } else { record.wrongPlaces.mutate { $0.append("\(id) under the lock") } }
            XCTAssertGreaterThan(image.width, 0)
            if let failure { throw Failure(why: failure) }
            return ImageCache.Image(data: made)
        }
    }

    private struct Failure: Swift.Error, CustomStringConvertible {
        let why: String
        var description: String { why }
    }

    /// Fetches `request` with the Result form; `done` gets the result.
    @discardableResult
    private func fetch(_ cache: ImageCache, _ request: ImageCache.Request, _ done: XCTestExpectation,
                       into results: Locked<[String: ImageResult]>, as name: String) -> ImageCache.FetchTask {
        cache.fetch(request) { result in
            results.mutate { $0[name] = result }
            done.fulfill()
        }
    }

    func testThreeVariantsOfOneURLRequestedAtOnceMakeOneRequestAndEachProcessorRunsOnce() {
        // Given three variants of one URL requested while its download is held at the server
        let cache = makeCache()
        let (record, gate) = (Record(), Gate())
        serveBehind(gate, prefix: "/three")
        let url = server.url("/three.png")
        let results = Locked<[String: ImageResult]>([:])
        let done = expectation(description: "three variants")
        done.expectedFulfillmentCount = 3
        for (name, width) in [("a", 1_001), ("b", 1_002), ("c", 1_003)] {
            let request = ImageCache.Request(url: url, processors: [processor(name, width: width, record, cache: cache)])
            fetch(cache, request, done, into: results, as: name)
        }
        // When the server answers
        XCTAssertTrue(eventually { self.server.requestCount("/three.png") == 1 })
        gate.open()
        wait(for: [done], timeout: 10)
        // Then one request was made, each processor ran once, and each fetch got its own variant
        XCTAssertEqual(server.requestCount("/three.png"), 1)
        XCTAssertEqual(record.runs.value, ["a": 1, "b": 1, "c": 1])
        for (name, width) in [("a", 1_001), ("b", 1_002), ("c", 1_003)] {
            XCTAssertEqual(try results.value[name]?.get().value.width, width, name)
            XCTAssertEqual(try results.value[name]?.get().source, .network, name)
        }
        XCTAssertEqual(record.wrongPlaces.value, [])
        // And the original is cached as downloaded, under the URL alone
        XCTAssertEqual(cache.peek(url)?.data, fixture("photo.png"))
        assertInvariants(cache)
    }

    func testFiftyFetchesOfOneVariantRunItsProcessorOnceWhileDownloadingAndOnceFromMemory() {
        let cache = makeCache()
        let (record, gate) = (Record(), Gate())
        serveBehind(gate, prefix: "/fifty")
        let url = server.url("/fifty.png")
        let circle = processor("circle", width: 1_010, record, cache: cache)
        let request = ImageCache.Request(url: url, processors: [circle])
        // Fifty fetches while the download is held
        let results = Locked<[String: ImageResult]>([:])
        let first = expectation(description: "fifty fetches")
        first.expectedFulfillmentCount = 50
        for index in 0..<50 { fetch(cache, request, first, into: results, as: "\(index)") }
        XCTAssertTrue(eventually { self.server.requestCount("/fifty.png") == 1 })
        gate.open()
        wait(for: [first], timeout: 10)
        XCTAssertEqual(record.runs.value["circle"], 1)
        XCTAssertEqual(results.value.count, 50)
        XCTAssertTrue(results.value.values.allSatisfy { (try? $0.get().value.width) == 1_010 })
        // Then fifty more of another variant, with the original in memory: made once, with no request
        let square = processor("square", width: 1_011, record, cache: cache)
        let second = expectation(description: "fifty more")
        second.expectedFulfillmentCount = 50
        let more = Locked<[String: ImageResult]>([:])
        DispatchQueue.concurrentPerform(iterations: 50) { index in
            fetch(cache, ImageCache.Request(url: url, processors: [square]), second, into: more, as: "\(index)")
        }
        wait(for: [second], timeout: 10)
        XCTAssertEqual(record.runs.value["square"], 1)
        XCTAssertTrue(more.value.values.allSatisfy { (try? $0.get().value.width) == 1_011 })
        XCTAssertEqual(server.requestCount("/fifty.png"), 1)
        XCTAssertEqual(record.wrongPlaces.value, [])
        assertInvariants(cache)
    }

    func testAVariantComesBackWithNoRequestAfterPurgeMemoryAndInANewInstance() {
        let record = Record()
        let url = serve("/again.png")
        let first = makeCache()
        let request = ImageCache.Request(url: url, processors: [processor("tint", width: 1_020, record, cache: first)])
        let results = Locked<[String: ImageResult]>([:])
        var done = expectation(description: "first")
        fetch(first, request, done, into: results, as: "first")
        wait(for: [done], timeout: 10)
        XCTAssertEqual(first.peek(request)?.width, 1_020)
        // After a purge of memory: made again from the file
        first.purgeMemory()
        XCTAssertNil(first.peek(request))
        done = expectation(description: "after the purge")
        fetch(first, request, done, into: results, as: "purged")
        wait(for: [done], timeout: 10)
        XCTAssertEqual(try results.value["purged"]?.get().value.width, 1_020)
        XCTAssertEqual(try results.value["purged"]?.get().source, .disk)
        first.persistCacheToDisk()
        // In a new instance on the folder: made again from the file
        let second = makeCache()
        let again = ImageCache.Request(url: url, processors: [processor("tint", width: 1_020, record, cache: second)])
        done = expectation(description: "new instance")
        fetch(second, again, done, into: results, as: "second")
        wait(for: [done], timeout: 10)
        XCTAssertEqual(try results.value["second"]?.get().value.width, 1_020)
        XCTAssertEqual(try results.value["second"]?.get().source, .disk)
        XCTAssertEqual(server.requestCount("/again.png"), 1)
        XCTAssertEqual(record.runs.value["tint"], 3)
        XCTAssertEqual(record.wrongPlaces.value, [])
    }

    func testAThrowingProcessorFailsOnlyItsVariantAndSaysWhichAndWhy() {
        let cache = makeCache()
        let record = Record()
        let (gate, url) = (Gate(), server.url("/fails.png"))
        serveBehind(gate, prefix: "/fails")
        let broken = processor("broken", width: 1, record, cache: cache, failure: "no faces found")
        let fine = processor("fine", width: 1_030, record, cache: cache)
        let results = Locked<[String: ImageResult]>([:])
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 3
        fetch(cache, ImageCache.Request(url: url, processors: [fine, broken]), done, into: results, as: "broken")
        fetch(cache, ImageCache.Request(url: url, processors: [fine]), done, into: results, as: "fine")
        fetch(cache, ImageCache.Request(url: url), done, into: results, as: "original")
        XCTAssertTrue(eventually { self.server.requestCount("/fails.png") == 1 })
        gate.open()
        wait(for: [done], timeout: 10)
        guard case .failure(let error)? = results.value["broken"] else { return XCTFail("the variant did not fail") }
        XCTAssertEqual(error, .decodingFailed("processor \"broken\" failed: no faces found"))
        XCTAssertTrue(error.isFatal)
        XCTAssertEqual(try results.value["fine"]?.get().value.width, 1_030)
        XCTAssertEqual(try results.value["original"]?.get().value.data, fixture("photo.png"))
        // The original stays cached; the other variant too
        XCTAssertEqual(cache.peek(url)?.data, fixture("photo.png"))
        XCTAssertEqual(cache.peek(ImageCache.Request(url: url, processors: [fine]))?.width, 1_030)
        XCTAssertNil(cache.peek(ImageCache.Request(url: url, processors: [fine, broken])))
        XCTAssertEqual(server.requestCount("/fails.png"), 1)
    }

    func testAProcessorThatMakesNothingFailsItsVariantWithItsName() {
        let cache = makeCache()
        let url = serve("/nothing.png")
        let nothing = ImageCache.Processor("nothing") { _ in nil }
        guard case .failure(let error)? = waitForResult(cache, ImageCache.Request(url: url, processors: [nothing])) else {
            return XCTFail("the variant did not fail")
        }
        XCTAssertEqual(error, .decodingFailed("processor \"nothing\" made no image"))
        XCTAssertNotNil(cache.peek(url))
    }

    func testCancellingOneVariantLeavesTheOtherAndTheDownloadAndCancellingTheLastStopsIt() {
        let cache = makeCache()
        let record = Record()
        let (gate, url) = (Gate(), server.url("/cancel.png"))
        serveBehind(gate, prefix: "/cancel")
        let results = Locked<[String: ImageResult]>([:])
        let kept = expectation(description: "the kept variant")
        let cancelled = expectation(description: "the cancelled variant's callback")
        cancelled.isInverted = true
        let a = fetch(cache, ImageCache.Request(url: url, processors: [processor("a", width: 1_041, record, cache: cache)]),
                      cancelled, into: results, as: "a")
        fetch(cache, ImageCache.Request(url: url, processors: [processor("b", width: 1_042, record, cache: cache)]),
              kept, into: results, as: "b")
        XCTAssertTrue(eventually { self.server.requestCount("/cancel.png") == 1 })
        a.cancel()
        XCTAssertTrue(a.isCancelled)
        XCTAssertTrue(cache.fetching(url))
        gate.open()
        wait(for: [kept, cancelled], timeout: 2)
        XCTAssertEqual(try results.value["b"]?.get().value.width, 1_042)
        XCTAssertEqual(record.runs.value, ["b": 1])
        XCTAssertEqual(server.requestCount("/cancel.png"), 1)

        // A variant alone, cancelled: its original's download stops, and nothing is cached
        let (held, other) = (Gate(), server.url("/alone.png"))
        serveBehind(held, prefix: "/alone")
        let never = expectation(description: "no callback")
        never.isInverted = true
        let alone = fetch(cache, ImageCache.Request(url: other, processors: [processor("c", width: 1_043, record, cache: cache)]),
                          never, into: results, as: "c")
        XCTAssertTrue(eventually { self.server.requestCount("/alone.png") == 1 })
        XCTAssertTrue(cache.fetching(other))
        alone.cancel()
        XCTAssertFalse(cache.fetching(other))
        held.open()
        wait(for: [never], timeout: 1)
        XCTAssertNil(cache.peek(other))
        XCTAssertNil(record.runs.value["c"])
        assertInvariants(cache)
    }

    func testTwoOrdersOfTheSameProcessorsAreTwoVariants() {
        let cache = makeCache()
        let record = Record()
        let url = serve("/order.png")
        let (a, b) = (processor("a", width: 1_051, record, cache: cache), processor("b", width: 1_052, record, cache: cache))
        let ab = waitForResult(cache, ImageCache.Request(url: url, processors: [a, b]))
        let ba = waitForResult(cache, ImageCache.Request(url: url, processors: [b, a]))
        // The last processor's image is each variant's
        XCTAssertEqual(try ab?.get().value.width, 1_052)
        XCTAssertEqual(try ba?.get().value.width, 1_051)
        XCTAssertEqual(record.runs.value, ["a": 2, "b": 2])
        XCTAssertEqual(cache.peek(ImageCache.Request(url: url, processors: [a, b]))?.width, 1_052)
        XCTAssertEqual(cache.peek(ImageCache.Request(url: url, processors: [b, a]))?.width, 1_051)
        XCTAssertEqual(server.requestCount("/order.png"), 1)
        // Identifiers that would run together name two variants too: "ab" is not "a" then "b"
        XCTAssertNotEqual(ImageCache.Processor.variant(of: [a, b]),
                          ImageCache.Processor.variant(of: [ImageCache.Processor("ab") { $0 }]))
    }

    func testPeekWithProcessorsAnswersOnlyWithThatVariant() {
        let cache = makeCache()
        let record = Record()
        let url = serve("/peek.png")
        let round = processor("round", width: 1_060, record, cache: cache)
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertNotNil(cache.peek(url))
        XCTAssertNil(cache.peek(ImageCache.Request(url: url, processors: [round])))
        XCTAssertEqual(try waitForResult(cache, ImageCache.Request(url: url, processors: [round]))?.get().value.width, 1_060)
        XCTAssertEqual(cache.peek(ImageCache.Request(url: url, processors: [round]))?.width, 1_060)
        XCTAssertEqual(cache.peek(url)?.data, fixture("photo.png"))
        // Removing the URL removes its variants
        cache.remove(url)
        XCTAssertNil(cache.peek(ImageCache.Request(url: url, processors: [round])))
    }

    func testAVariantsFetchHearsItsOriginalsProgress() {
        let cache = makeCache()
        let url = serve("/progress.png")
        let heard = Locked<[Int]>([])
        let done = expectation(description: "done")
        let request = ImageCache.Request(url: url, processors: [ImageCache.Processor("same") { $0 }])
        cache.fetch(request, onProgress: { received, _ in heard.mutate { $0.append(received) } }) { _ in done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(heard.value.last, fixture("photo.png").count)
    }

    func testAVariantWaitingWhenItsImageIsStoredIsMadeFromTheStoredImage() throws {
        let cache = makeCache()
        let (gate, url) = (Gate(), server.url("/stored.png"))
        serveBehind(gate, prefix: "/stored")
        let results = Locked<[String: ImageResult]>([:])
        let done = expectation(description: "the variant")
        let grow = ImageCache.Processor("grow") { image in ImageCache.Image(data: self.png(width: image.width + 1)) }
        fetch(cache, ImageCache.Request(url: url, processors: [grow]), done, into: results, as: "grown")
        XCTAssertTrue(eventually { self.server.requestCount("/stored.png") == 1 })
        try cache.store(png(width: 2_000), for: url.absoluteString)
        wait(for: [done], timeout: 10)
        gate.open()
        XCTAssertEqual(try results.value["grown"]?.get().value.width, 2_001)
    }

    func testRequestsDescribeOneLoad() {
        let url = URL(string: "https://example.com/a.png")!
        let circle = ImageCache.Processor("circle") { $0 }
        XCTAssertEqual(ImageCache.Request(url: url, processors: [circle]),
                       ImageCache.Request(url: url, processors: [ImageCache.Processor("circle") { _ in nil }]))
        XCTAssertNotEqual(ImageCache.Request(url: url), ImageCache.Request(url: url, slow: true))
        XCTAssertEqual(ImageCache.Request(urlRequest: URLRequest(url: url)).url, url)
        XCTAssertNil(ImageCache.Request(url: url).urlRequest)
        // The URL conveniences and a request with the defaults name the same entry
        XCTAssertEqual(ImageCache.Load(ImageCache.Request(url: url)).key, ImageCache.Load(url, key: nil).key)
        XCTAssertEqual(ImageCache.Load(ImageCache.Request(url: url, key: "k")).key, ImageCache.Key(string: "k"))
        // A size and processors are each part of the key; the original of a variant is the key at its size
        let sized = ImageCache.Load(ImageCache.Request(url: url, size: CGSize(width: 10, height: 20), processors: [circle]))
        XCTAssertNotEqual(sized.key.size, 0)
        XCTAssertEqual(sized.key.original, ImageCache.Key(string: url.absoluteString, size: sized.key.size))
        XCTAssertEqual(sized.original.key, sized.key.original)
        XCTAssertTrue(sized.original.processors.isEmpty)
    }

    // MARK: What the built-ins draw (decided here, drawn with CoreGraphics on Apple platforms)

    func testResizeToFillCropsAboutTheCentreAndNeverScalesUp() {
        // 400 x 200 pixels to fill 50 x 50 points at 2x: scaled to 200 x 100, cropped to 100 x 100
        let target = ImageCache.Processor.pixels(CGSize(width: 50, height: 50), scale: 2)
        XCTAssertEqual(target?.width, 100)
        let drawing = ImageCache.Processor.fill((400, 200), target!)
        XCTAssertEqual(drawing.canvas.width, 100)
        XCTAssertEqual(drawing.canvas.height, 100)
        XCTAssertEqual(drawing.image, CGRect(x: -50, y: 0, width: 200, height: 100))
        // Smaller than the target: not scaled up, the canvas no larger than the image
        let small = ImageCache.Processor.fill((40, 20), (100, 100))
        XCTAssertEqual([small.canvas.width, small.canvas.height], [40, 20])
        XCTAssertEqual(small.image, CGRect(x: 0, y: 0, width: 40, height: 20))
        XCTAssertNil(ImageCache.Processor.pixels(CGSize(width: 0, height: 10), scale: 2))
        XCTAssertNil(ImageCache.Processor.pixels(CGSize(width: CGFloat.infinity, height: 10), scale: 2))
    }

    func testResizeToFitKeepsTheWholeImageWithinTheSize() {
        let drawing = ImageCache.Processor.fit((400, 200), (100, 100))
        XCTAssertEqual([drawing.canvas.width, drawing.canvas.height], [100, 50])
        XCTAssertEqual(drawing.image, CGRect(x: 0, y: 0, width: 100, height: 50))
        let small = ImageCache.Processor.fit((40, 20), (100, 100))
        XCTAssertEqual([small.canvas.width, small.canvas.height], [40, 20])
    }

    func testCropTakesPointsAtTheScaleAndKeepsWithinTheImage() {
        XCTAssertEqual(ImageCache.Processor.crop((300, 300), to: CGRect(x: 10, y: 20, width: 50, height: 40), scale: 3),
                       CGRect(x: 30, y: 60, width: 150, height: 120))
        // Partly outside: what is inside; wholly outside or empty: nothing
        XCTAssertEqual(ImageCache.Processor.crop((100, 100), to: CGRect(x: 80, y: -10, width: 50, height: 50), scale: 1),
                       CGRect(x: 80, y: 0, width: 20, height: 40))
        XCTAssertNil(ImageCache.Processor.crop((100, 100), to: CGRect(x: 200, y: 0, width: 10, height: 10), scale: 1))
        XCTAssertNil(ImageCache.Processor.crop((100, 100), to: CGRect(x: 0, y: 0, width: 0, height: 10), scale: 1))
    }

    func testRoundedCornersAndCircleInPixels() {
        let rounded = ImageCache.Processor.rounded((300, 200), radius: 8, scale: 3)
        XCTAssertEqual(rounded.clip, .roundedRect(radius: 24))
        XCTAssertEqual([rounded.canvas.width, rounded.canvas.height], [300, 200])
        // At most half the shorter side
        XCTAssertEqual(ImageCache.Processor.rounded((300, 200), radius: 500, scale: 1).clip, .roundedRect(radius: 100))
        let circle = ImageCache.Processor.circle((300, 200))
        XCTAssertEqual([circle.canvas.width, circle.canvas.height], [200, 200])
        XCTAssertEqual(circle.image, CGRect(x: -50, y: 0, width: 300, height: 200))
        XCTAssertEqual(circle.clip, .ellipse)
    }

    func testBlurRadiusInPixelsAndTheBoxBlurSpreadsAPointEvenly() {
        XCTAssertEqual(ImageCache.Processor.blurred((10, 10), radius: 2, scale: 2)?.blur, 4)
        XCTAssertNil(ImageCache.Processor.blurred((10, 10), radius: 0, scale: 2))
        XCTAssertEqual(ImageCache.Processor.blurred((10, 10), radius: 1_000, scale: 1)?.blur, 100)
        // One white pixel in the middle of a black 9 x 9 bitmap: blurred, it spreads symmetrically,
        // and the total light stays about the same
        var bytes = [UInt8](repeating: 0, count: 9 * 9 * 4)
        for c in 0..<4 { bytes[(4 * 9 + 4) * 4 + c] = 255 }
        bytes.withUnsafeMutableBytes { ImageCache.Processor.boxBlur($0.baseAddress!, width: 9, height: 9, bytesPerRow: 36, radius: 1) }
        func value(_ x: Int, _ y: Int) -> UInt8 { bytes[(y * 9 + x) * 4] }
        XCTAssertLessThan(value(4, 4), 255)
        XCTAssertGreaterThan(value(4, 4), 0)
        XCTAssertEqual(value(3, 4), value(5, 4))
        XCTAssertEqual(value(4, 3), value(4, 5))
        XCTAssertEqual(value(3, 3), value(5, 5))
        let total = stride(from: 0, to: bytes.count, by: 4).reduce(0) { $0 + Int(bytes[$1]) }
        XCTAssertEqual(Double(total), 255, accuracy: 40)
    }

    /// Fetches `request` with the Result form and waits for its result.
    private func waitForResult(_ cache: ImageCache, _ request: ImageCache.Request) -> ImageResult? {
        let results = Locked<[String: ImageResult]>([:])
        let done = expectation(description: "\(request)")
        fetch(cache, request, done, into: results, as: "one")
        wait(for: [done], timeout: 10)
        return results.value["one"]
    }
}
