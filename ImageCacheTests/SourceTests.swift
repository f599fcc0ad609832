import Foundation
import LoopbackServer
import XCTest
@_spi(Testing) @testable import ImageCache

/// An app's own source, as a photo library would be: images by `library:///<name>`, whose loads the
/// test counts, holds and fails, and which hears its loads' cancellation.
final class LibrarySource: ImageCache.ImageSource, @unchecked Sendable {
    private let lock = NSLock()
    private var images: [String: Data] = [:]
    private var failures: [String: Swift.Error] = [:]
    private(set) var loads = 0
    private(set) var cancelled = 0
    let gate = Gate()
    let started = DispatchSemaphore(value: 0)
    var writesToDisk: Bool { false }

    init(_ images: [String: Data], held: Bool = false) {
        self.images = images
        if !held { gate.open() }
    }

    func fail(_ name: String, with error: Swift.Error) { lock.withLock { failures[name] = error } }
    var counts: (loads: Int, cancelled: Int) { lock.withLock { (loads, cancelled) } }

    func loads(_ url: URL) -> Bool { url.scheme == "library" }

    func data(for url: URL, progress: @escaping @Sendable (Int, Int?) -> Void) async throws -> Data {
        let name = url.lastPathComponent
        lock.withLock { loads += 1 }
        started.signal()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { self.gate.wait(); done.resume() }
            }
        } onCancel: { self.lock.withLock { self.cancelled += 1 } }
        try Task.checkCancellation()
        if let error = lock.withLock({ failures[name] }) { throw error }
        guard let data = lock.withLock({ images[name] }) else { throw URLError(.fileDoesNotExist) }
        progress(data.count / 2, data.count)
        progress(data.count, data.count)
        return data
    }
}

final class SourceTests: CacheTestCase {
    private struct Refused: Swift.Error, CustomStringConvertible { var description: String { "the library refused" } }

    // MARK: data: URLs

    func testADataURLLoadsAndIsAMemoryHitTheSecondTime() throws {
        // Given a data: URL of a PNG, base64
        let cache = makeCache()
        let bytes = fixture("photo.png")
        let url = try XCTUnwrap(URL(string: "data:image/png;base64," + bytes.base64EncodedString()))
        // When it is fetched twice
        let first = result(cache, url)
        let second = result(cache, url)
        // Then the image is its bytes, the second from memory, and nothing went to disk
        XCTAssertEqual(try first?.get().value.data, bytes)
        XCTAssertEqual(try first?.get().source, .network)
        XCTAssertEqual(try second?.get().source, .memory)
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 0)
    }

    func testAPercentEncodedDataURLLoads() throws {
        let cache = makeCache()
        let bytes = fixture("palette.gif")
        let encoded = bytes.map { String(format: "%%%02X", $0) }.joined()
        let url = try XCTUnwrap(URL(string: "data:image/gif," + encoded))
        XCTAssertEqual(try result(cache, url)?.get().value.data, bytes)
    }

    func testADataURLWithBadBase64FailsAndSaysSo() throws {
        let cache = makeCache()
        let url = try XCTUnwrap(URL(string: "data:image/png;base64,not*valid!base64"))
        guard case .failure(let error)? = result(cache, url) else { return XCTFail("no failure") }
        XCTAssertEqual(error, .invalidRequest("a data: URL's base64 data is not valid base64"))
        XCTAssertTrue(error.isFatal)
    }

    func testADataURLOverTheImageLimitFailsAsTooLarge() throws {
        let cache = makeCache()
        cache.maxImageBytes = 100
        let url = try XCTUnwrap(URL(string: "data:image/png;base64," + fixture("photo.png").base64EncodedString()))
        guard case .failure(let error)? = result(cache, url) else { return XCTFail("no failure") }
        XCTAssertEqual(error, .tooLarge(limit: 100))
    }

    // MARK: file: URLs

    func testAFileURLIsUnsupportedUnlessAFileSourceLoadsIt() throws {
        // Given an image file, and a cache without a file source
        let folder = directory.appendingPathComponent("images", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("photo.png")
        try fixture("photo.png").write(to: file)
        let plain = makeCache("plain")
        // Then it is refused as a URL no source loads
        guard case .failure(let error)? = result(plain, file) else { return XCTFail("no failure") }
        XCTAssertEqual(error, .unsupportedURL(file.absoluteString))
        // And with a file source for its folder it loads, the second time from memory, without a copy on disk
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [ImageCache.FileSource(folder: folder)]))
        XCTAssertEqual(try result(cache, file)?.get().value.data, fixture("photo.png"))
        XCTAssertEqual(try result(cache, file)?.get().source, .memory)
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 0)
    }

    func testAFileSourceReadsNothingOutsideItsFolder() throws {
        // Given a file beside the source's folder, and a path that climbs out of it
        let folder = directory.appendingPathComponent("images", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let outside = directory.appendingPathComponent("secret.png")
        try fixture("photo.png").write(to: outside)
        let climbing = try XCTUnwrap(URL(string: folder.absoluteString + "../secret.png"))
        // And a symbolic link inside the folder to it
        let link = folder.appendingPathComponent("link.png")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: outside)
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [ImageCache.FileSource(folder: folder)]))
        // Then neither loads
        for url in [outside, climbing, link] {
            guard case .failure(let error)? = result(cache, url) else { return XCTFail("\(url) loaded") }
            XCTAssertEqual(error, .unsupportedURL(url.absoluteString), "\(url)")
        }
    }

    func testAMissingFileFailsAndSaysWhichFile() throws {
        let folder = directory.appendingPathComponent("images", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [ImageCache.FileSource(folder: folder)]))
        let missing = folder.appendingPathComponent("missing.png")
        guard case .failure(let error)? = result(cache, missing) else { return XCTFail("no failure") }
        guard case .network(let code, let text) = error else { return XCTFail("\(error)") }
        XCTAssertEqual(code, .fileDoesNotExist)
        XCTAssertTrue(text.contains("missing.png"), text)
        XCTAssertTrue(error.isFatal)
    }

    // MARK: An app's own source

    func testFiftyConcurrentFetchesOfOneKeyMakeOneLoadOfTheSource() throws {
        // Given a library whose load the test holds
        let library = LibrarySource(["a": fixture("photo.png")], held: true)
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [library]))
        let url = try XCTUnwrap(URL(string: "library:///a"))
        // When 50 fetches of its image start from many threads
        let done = expectation(description: "50 callbacks")
        done.expectedFulfillmentCount = 50
        let images = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 50) { _ in
            cache.fetch(url) { _, image in
                if image != nil { images.mutate { $0 += 1 } }
                done.fulfill()
            }
        }
        XCTAssertEqual(library.started.wait(timeout: .now() + 10), .success)
        library.gate.open()
        wait(for: [done], timeout: 10)
        // Then the source loaded it once, and every fetch got it
        XCTAssertEqual(library.counts.loads, 1)
        XCTAssertEqual(images.value, 50)
        XCTAssertEqual(cache.peek(url)?.data, fixture("photo.png"))
    }

    func testTheSourcesLoadIsCancelledWithItsLastFetch() throws {
        // Given a held load of the library, two fetches waiting for it
        let library = LibrarySource(["a": fixture("photo.png")], held: true)
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [library]))
        let url = try XCTUnwrap(URL(string: "library:///a"))
        let first = cache.fetch(url) { _, _ in XCTFail("a cancelled fetch's callback ran") }
        let second = cache.fetch(url) { _, _ in XCTFail("a cancelled fetch's callback ran") }
        XCTAssertEqual(library.started.wait(timeout: .now() + 10), .success)
        // When the first is cancelled, the load goes on; when the last is, it is cancelled
        first.cancel()
        XCTAssertEqual(library.counts.cancelled, 0)
        second.cancel()
        XCTAssertTrue(eventually { library.counts.cancelled == 1 })
        XCTAssertFalse(cache.fetching(url))
        library.gate.open()
        // And a fetch after it loads anew
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(library.counts.loads, 2)
    }

    func testASourcesProgressReachesTheFetch() throws {
        let library = LibrarySource(["a": fixture("photo.png")])
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [library]))
        let url = try XCTUnwrap(URL(string: "library:///a"))
        let heard = Locked<[Int]>([])
        let done = expectation(description: "completion")
        cache.fetch(ImageCache.Request(url: url), onProgress: { received, expected in
            XCTAssertEqual(expected, self.fixture("photo.png").count)
            heard.mutate { $0.append(received) }
        }) { _ in done.fulfill() }
        wait(for: [done], timeout: 10)
        let count = fixture("photo.png").count
        XCTAssertEqual(heard.value.last, count)
        XCTAssertTrue(heard.value.contains(count / 2), "\(heard.value)")
    }

    func testASourcesFailureFailsItsFetchesWithItsReason() throws {
        let library = LibrarySource([:])
        library.fail("a", with: Refused())
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [library]))
        cache.retryPolicy = .never
        let url = try XCTUnwrap(URL(string: "library:///a"))
        guard case .failure(let error)? = result(cache, url) else { return XCTFail("no failure") }
        XCTAssertEqual(error, .network(.resourceUnavailable, "LibrarySource failed: the library refused"))
        XCTAssertEqual(cache.error(for: url), error)
        // And a cache error it throws is passed on as it is
        library.fail("b", with: ImageCache.Error.httpStatus(404))
        let other = try XCTUnwrap(URL(string: "library:///b"))
        guard case .failure(let passed)? = result(cache, other) else { return XCTFail("no failure") }
        XCTAssertEqual(passed, .httpStatus(404))
    }

    func testASourcesImageFeedsProcessorsAndSizes() throws {
        // Given a library, and a processor that tells what it ran on
        let library = LibrarySource(["a": fixture("photo.png")])
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [library]))
        let url = try XCTUnwrap(URL(string: "library:///a"))
        let ranOn = Locked<[Int]>([])
        let marker = ImageCache.Processor("marker") { image in
            ranOn.mutate { $0.append(image.width) }
            return image
        }
        // When a variant of its image and the image are fetched
        let variant = ImageCache.Request(url: url, processors: [marker])
        let done = expectation(description: "variant")
        cache.fetch(variant) { _, image in
            XCTAssertNotNil(image)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        // Then the processor ran once on the source's image, one load made both, and both are in memory
        XCTAssertEqual(ranOn.value, [ImageCache.Image(data: fixture("photo.png"))?.width ?? -1])
        XCTAssertEqual(library.counts.loads, 1)
        XCTAssertNotNil(cache.peek(variant))
        XCTAssertNotNil(cache.peek(url))
    }

    func testASourceThatWritesToDiskIsReadFromThereByTheNextInstance() throws {
        // Given a source whose bytes go to disk, as an app's database cache might
        struct Remote: ImageCache.ImageSource {
            let bytes: Data
            let loads: Locked<Int>
            func loads(_ url: URL) -> Bool { url.scheme == "remote" }
            func data(for url: URL, progress: @escaping @Sendable (Int, Int?) -> Void) async throws -> Data {
                loads.mutate { $0 += 1 }
                return bytes
            }
        }
        let loads = Locked(0)
        let plugins = ImageCache.Plugins(sources: [Remote(bytes: fixture("photo.png"), loads: loads)])
        let url = try XCTUnwrap(URL(string: "remote:///a"))
        let first = makeCache("shared", plugins: plugins)
        XCTAssertNotNil(fetchAndWait(first, url))
        first.persistCacheToDisk()
        first.drainDisk()
        // When another instance on the folder fetches it
        let second = makeCache("shared", plugins: plugins)
        let fetched = try XCTUnwrap(result(second, url)?.get())
        // Then it comes from disk, with no second load
        XCTAssertEqual(fetched.source, .disk)
        XCTAssertEqual(loads.value, 1)
    }

    func testASourcesLoadsCountAsMissesAndTheStatisticsAddUp() throws {
        // Given a data: URL and a library image
        let library = LibrarySource(["a": fixture("photo.png")])
        let cache = makeCache(plugins: ImageCache.Plugins(sources: [library]))
        let data = try XCTUnwrap(URL(string: "data:image/png;base64," + fixture("photo.png").base64EncodedString()))
        let url = try XCTUnwrap(URL(string: "library:///a"))
        // When each is fetched twice
        for each in [data, url, data, url] { XCTAssertNotNil(fetchAndWait(cache, each)) }
        // Then each first fetch is a miss, each second a memory hit, and every request counts once
        let counts = cache.statistics()
        XCTAssertEqual(counts.misses, 2)
        XCTAssertEqual(counts.memoryHits, 2)
        XCTAssertEqual(counts.requests, counts.memoryHits + counts.diskHits + counts.misses + counts.deduplicated
                       + counts.failures)
    }
}
