import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Keys, any data, stored entries, and results that say where they came from (issue 11).
final class EntryTests: CacheTestCase {
    private struct Feed: Codable, Equatable { var title: String; var items: [Int] }

    /// Fetches with the result form and waits for it.
    private func fetchResult<Value>(_ cache: ImageCache, _ url: URL, key: String? = nil,
                                    decode: @escaping @Sendable (Data) throws -> Value,
                                    file: StaticString = #filePath, line: UInt = #line) -> Result<ImageCache.Fetched<Value>, ImageCache.Error>? {
        let done = expectation(description: "result for \(url)")
        let result = Locked<Result<ImageCache.Fetched<Value>, ImageCache.Error>?>(nil)
        cache.fetch(url, key: key, decode: decode) { received in
            result.value = received
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value
    }

    /// A PNG `side` pixels square, whose pixels `seed` varies.
    private func png(_ side: Int, _ seed: UInt8) -> Data {
        PNGEncoder.rgb(width: side, height: side, pixels: (0..<side * side * 3).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    // MARK: Keys

    func testTwoURLsUnderOneKeyShareOneEntry() {
        // Given a signed URL whose token changes on every request
        let cache = makeCache()
        let first = serve("/avatar.png?token=1"), second = serve("/avatar.png?token=2")
        XCTAssertNotNil(fetchAndWait(cache, first, key: "avatar"))
        // Then the second URL under the same key is the same entry: no request
        XCTAssertEqual(try result(cache, second, key: "avatar")?.get().source, .memory)
        XCTAssertEqual(server.totalRequests, 1)
        XCTAssertNotNil(cache.peek(key: "avatar"))
        XCTAssertNil(cache.peek(first), "the URL itself is not a key here")
        // And a new instance finds it on disk under the key
        cache.drainDisk()
        let next = makeCache()
        XCTAssertEqual(try result(next, second, key: "avatar")?.get().source, .disk)
        XCTAssertEqual(server.totalRequests, 1)
        // And remove(key:) forgets it in every tier
        next.remove(key: "avatar")
        next.drainDisk()
        XCTAssertNil(next.peek(key: "avatar"))
        XCTAssertEqual(next.diskCount, 0)
    }

    func testOneURLUnderTwoKeysIsTwoEntries() {
        let cache = makeCache()
        let url = serve("/shared.png")
        XCTAssertNotNil(fetchAndWait(cache, url, key: "a"))
        XCTAssertNotNil(fetchAndWait(cache, url, key: "b"))
        XCTAssertEqual(server.requestCount("/shared.png"), 2)
        XCTAssertEqual(cache.diskCount, 2)
        cache.remove(key: "a")
        XCTAssertNil(cache.peek(key: "a"))
        XCTAssertNotNil(cache.peek(key: "b"))
    }

    func testAKeyCannotLeaveTheFolder() throws {
        let cache = makeCache()
        let url = serve("/escape.png")
        XCTAssertNotNil(fetchAndWait(cache, url, key: "../../../escape.png"))
        cache.drainDisk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("escape.png").path))
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.folder.path)
        XCTAssertEqual(names.filter { !$0.hasPrefix(".") }.count, 1)
        XCTAssertEqual(names.first?.count, 16, "a hash of the key")
    }

    func testFailuresAreFoundByKey() {
        let cache = makeCache()
        server.set("/missing.png", .status(404))
        XCTAssertNil(fetchAndWait(cache, server.url("/missing.png"), key: "k"))
        XCTAssertTrue(cache.failedToFetch(key: "k"))
        XCTAssertEqual(cache.error(forKey: "k"), .httpStatus(404))
        XCTAssertFalse(cache.failedToFetch(server.url("/missing.png")))
    }

    // MARK: Any data

    func testCachesRawDataInEveryTier() throws {
        let cache = makeCache()
        let body = Data("not an image, and that is fine".utf8)
        server.set("/notes.txt", .ok(body, contentType: "text/plain"))
        let url = server.url("/notes.txt")
        let first = try XCTUnwrap(fetchResult(cache, url, decode: { $0 })).get()
        XCTAssertEqual(first.value, body)
        XCTAssertEqual(first.source, .network)
        XCTAssertEqual(try fetchResult(cache, url, decode: { $0 })?.get().source, .memory)
        cache.drainDisk()
        XCTAssertEqual(try fetchResult(makeCache(), url, decode: { $0 })?.get().source, .disk)
        XCTAssertEqual(server.requestCount("/notes.txt"), 1)
        XCTAssertNil(cache.peek(url), "peek returns images only")
    }

    func testDecodesJSONAndADecodeErrorIsAFatalFailureThatNamesIt() throws {
        let cache = makeCache()
        let feed = Feed(title: "news", items: [1, 2, 3])
        server.set("/feed.json", .ok(try JSONEncoder().encode(feed), contentType: "application/json"))
        server.set("/broken.json", .ok(Data("{\"title\": 1}".utf8), contentType: "application/json"))
        let decode: @Sendable (Data) throws -> Feed = { try JSONDecoder().decode(Feed.self, from: $0) }
        XCTAssertEqual(try fetchResult(cache, server.url("/feed.json"), decode: decode)?.get().value, feed)
        XCTAssertEqual(try fetchResult(cache, server.url("/feed.json"), decode: decode)?.get().source, .memory)

        guard case .failure(let error)? = fetchResult(cache, server.url("/broken.json"), decode: decode),
              case .decodingFailed(let text) = error else { return XCTFail("expected a decoding failure") }
        XCTAssertTrue(error.isFatal)
        XCTAssertTrue(text.contains("title"), text)
        XCTAssertEqual(cache.error(for: server.url("/broken.json")), error)
        XCTAssertEqual(server.requestCount("/broken.json"), 1, "a fatal failure is not retried")
    }

    func testAnImageAndItsBytesRequestedTogetherShareOneDownload() throws {
        let cache = makeCache()
        let url = serve("/both.png", delay: 0.2)
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        let bytes = Locked<Data?>(nil), image = Locked<ImageCache.Image?>(nil)
        cache.fetch(url) { _, received in image.value = received; done.fulfill() }
        cache.fetch(url, decode: { $0 }) { result in bytes.value = try? result.get().value; done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertNotNil(image.value)
        XCTAssertEqual(bytes.value, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/both.png"), 1)
    }

    func testADownloadSharedByTwoTypesDeliversEachItsOwn() throws {
        let cache = makeCache()
        var response = LoopbackServer.Response.ok(Data("{\"title\":\"x\"}".utf8), contentType: "application/json")
        response.delay = 0.3
        server.set("/feed.json", response)
        let url = server.url("/feed.json")
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        let image = Locked<ImageCache.Image?>(nil)
        let data = Locked<Result<ImageCache.Fetched<Data>, ImageCache.Error>?>(nil)
        cache.fetch(url) { _, received in image.value = received; done.fulfill() }  // first: the image decoder
        cache.fetch(url, decode: { $0 }) { data.value = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.requestCount("/feed.json"), 1)
        XCTAssertNil(image.value)
        XCTAssertEqual(try data.value?.get().value, Data("{\"title\":\"x\"}".utf8))
        guard case .notAnImage? = cache.error(for: url) else { return XCTFail("the image request's failure is kept") }
    }

    func testDownloadedBytesAreDecodedOnTheDecodeQueueNeitherTheTransfersNorTheCallbacks() throws {
        // Given a decoder that notes the queue it runs on
        let cache = makeCache("decoding")
        let url = serve("/decoded.png")
        let queues = Locked<[String?]>([])
        let done = expectation(description: "decoded")
        // When a download is decoded
        cache.fetch(url, decode: { data -> Int in
            dispatchPrecondition(condition: .notOnQueue(self.callbacks))
            queues.mutate { $0.append(currentQueueLabel()) }
            return data.count
        }) { result in
            XCTAssertEqual(try? result.get().value, self.fixture("photo.png").count)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        // Then it ran on the cache's decode queue (URLSession's delegate queue is another one)
        XCTAssertEqual(queues.value, ["ImageCache.decode.decoding"])
    }

    func testADiskHitIsDecodedOnTheDecodeQueueNotTheDiskQueue() throws {
        // Given a value on disk and not in memory
        let cache = makeCache("diskdecode")
        let url = serve("/disk-decoded.png")
        let decode: @Sendable (Data) throws -> Int = { $0.count }
        XCTAssertEqual(try fetchValue(cache, url, decode: decode).source, .network)
        cache.purgeMemory()

        // When it is fetched again, with a decoder that notes the queue it runs on
        let queues = Locked<[String?]>([])
        let fetched = try fetchValue(cache, url, decode: { data -> Int in
            queues.mutate { $0.append(currentQueueLabel()) }
            return data.count
        })

        // Then it came from disk, decoded on the decode queue: the disk queue does no decoding
        XCTAssertEqual(fetched.source, .disk)
        XCTAssertEqual(fetched.value, fixture("photo.png").count)
        XCTAssertEqual(queues.value, ["ImageCache.decode.diskdecode"])
        XCTAssertEqual(server.requestCount("/disk-decoded.png"), 1)
    }

    private func fetchValue(_ cache: ImageCache, _ url: URL,
                            decode: @escaping @Sendable (Data) throws -> Int) throws -> ImageCache.Fetched<Int> {
        let result = Locked<Result<ImageCache.Fetched<Int>, ImageCache.Error>?>(nil)
        let done = expectation(description: "fetched")
        cache.fetch(url, decode: decode) { fetched in
            result.value = fetched
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return try XCTUnwrap(result.value).get()
    }

    func testADownloadThatIsDecodingHoldsNoDownloadSlot() throws {
        // Given one download slot, and a decoder that holds the first image until told
        let cache = makeCache("slots")
        cache.maxConcurrentDownloads = 1
        let first = serve("/first.png"), second = serve("/second.png")
        let release = DispatchSemaphore(value: 0)
        let decoding = expectation(description: "the first is decoding")
        let firstDone = expectation(description: "first"), secondDone = expectation(description: "second")
        cache.fetch(first, decode: { data -> Int in
            decoding.fulfill()
            release.wait()
            return data.count
        }) { _ in firstDone.fulfill() }
        wait(for: [decoding], timeout: 10)
        // When a second image is fetched while the first is still decoding
        cache.fetch(second) { _, image in
            XCTAssertNotNil(image)
            secondDone.fulfill()
        }
        // Then it downloads and arrives meanwhile: the first's slot was freed when its bytes were in
        wait(for: [secondDone], timeout: 10)
        XCTAssertTrue(cache.fetching(first), "the first is still decoding")
        release.signal()
        wait(for: [firstDone], timeout: 10)
        XCTAssertEqual(server.requestCount("/second.png"), 1)
        XCTAssertEqual(cache.checkInvariants(), [])
    }

    func testBodiesWaitingForADecodeStayWithinTheSlotsAndTheDecodeWorkers() {
        // Given one download slot, and a decoder that holds every image until told
        let cache = makeCache("backlog")
        cache.maxConcurrentDownloads = 1
        let release = DispatchSemaphore(value: 0)
        let urls = (0..<12).map { serve("/\($0).png") }
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = urls.count
        // When twelve images are fetched
        for url in urls {
            cache.fetch(url, decode: { data -> Int in
                release.wait()
                return data.count
            }) { _ in done.fulfill() }
        }
        // Then three bodies come in (two decoding, one waiting for a worker, which holds the slot)
        XCTAssertTrue(eventually { cache.downloadCounts.decoding == 3 })
        // and, as nothing decodes, nothing else is downloading: the lanes hold the rest back
        XCTAssertEqual(cache.downloadCounts.running, 0)
        XCTAssertEqual(server.totalRequests, 3)
        for _ in urls { release.signal() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.totalRequests, 12)
        XCTAssertEqual(cache.checkInvariants(), [])
    }

    func testADownloadForgottenWhileItWaitsForADecodeWorkerIsNotDecoded() {
        // Given both decode workers held by two images, and a third whose bytes wait for a worker
        let cache = makeCache("forgotten")
        let release = DispatchSemaphore(value: 0)
        let held = expectation(description: "both workers held")
        held.expectedFulfillmentCount = 2
        let holding: @Sendable (Data) throws -> Int = { data in
            held.fulfill()
            release.wait()
            return data.count
        }
        cache.fetch(serve("/a.png"), decode: holding) { _ in }
        cache.fetch(serve("/b.png"), decode: holding) { _ in }
        wait(for: [held], timeout: 10)
        let decoded = Locked<[String]>([])
        let recording: (String) -> @Sendable (Data) throws -> Int = { name in
            { data in
                decoded.mutate { $0.append(name) }
                return data.count
            }
        }
        let task = cache.fetch(serve("/c.png"), decode: recording("c")) { _ in }
        XCTAssertTrue(eventually { cache.downloadCounts.decoding == 3 })
        // When it is cancelled, and a fourth image queues its decode behind it
        task.cancel()
        let fourth = expectation(description: "the fourth")
        cache.fetch(serve("/d.png"), decode: recording("d")) { _ in fourth.fulfill() }
        XCTAssertTrue(eventually { cache.downloadCounts.decoding == 3 })
        // and one worker is let go (it takes the decodes in order: the third's, then the fourth's)
        release.signal()
        wait(for: [fourth], timeout: 10)
        // Then the fourth was decoded and the forgotten third was not
        XCTAssertEqual(decoded.value, ["d"])
        release.signal()
    }

    func testAKeyIsItsBytesInMemoryAsOnDisk() throws {
        // Given an image stored under "café" written with a precomposed é, and many keys of every
        // length around it (the key hash reads eight bytes at a time)
        let cache = makeCache()
        cache.imageMemoryMaxCount = 1_000
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        XCTAssertEqual(composed, decomposed, "Swift calls the two strings equal")
        try cache.store(fixture("photo.png"), for: composed)
        let keys = (0..<40).map { String(repeating: "k", count: $0) } + (0..<40).map { "\($0)é" }
        for key in keys { try cache.store(fixture("photo.png"), for: key) }
        // Then the other spelling is another key, as it is another file on disk
        XCTAssertNotNil(cache.peek(key: composed))
        XCTAssertNil(cache.peek(key: decomposed))
        // And every key is found, under its own bytes only
        for key in keys { XCTAssertNotNil(cache.peek(key: key), key) }
        XCTAssertNil(cache.peek(key: String(repeating: "k", count: 40)))
        XCTAssertEqual(cache.memoryCount, 1 + keys.count)
        assertInvariants(cache)
    }

    func testTheSecondChanceKnowsAKeyByItsBytesToo() throws {
        // Given an image under "café" (precomposed) that eviction put in the second chance: a cap
        // of 20 evicts 2, "first" and "café", and leaves room for the more recent of them
        let cache = makeCache()
        cache.imageMemoryMaxCount = 20
        try cache.store(fixture("photo.png"), for: "first")
        try cache.store(fixture("photo.png"), for: "caf\u{E9}")
        for i in 0..<19 { try cache.store(fixture("photo.png"), for: "other\(i)") }
        XCTAssertFalse(cache.memoryURLs.contains("caf\u{E9}"))
        // Then the decomposed spelling does not find it, and its own does
        XCTAssertNil(cache.peek(key: "cafe\u{301}"))
        XCTAssertNotNil(cache.peek(key: "caf\u{E9}"))
    }

    func testAnImageFetchOfADataKeyLeavesItsFile() throws {
        let cache = makeCache()
        server.set("/x", .status(503))
        cache.retryPolicy = .never
        try cache.store(Data("{}".utf8), for: "draft")
        cache.drainDisk()
        let other = makeCache()  // another launch: memory empty
        XCTAssertNil(fetchAndWait(other, server.url("/x"), key: "draft"))  // an image fetch of the data key
        let back = fetchResult(other, server.url("/x"), key: "draft", decode: { $0 })
        XCTAssertEqual(try back?.get().value, Data("{}".utf8))
    }

    // MARK: Store

    func testStoredDataIsReadBackWithoutTheNetwork() throws {
        let cache = makeCache()
        try cache.store(fixture("photo.png"), for: "picked")
        try cache.store(Data("{}".utf8), for: "draft")
        let nowhere = server.url("/never-served")
        XCTAssertNotNil(cache.peek(key: "picked"), "an image is kept as an image")
        XCTAssertEqual(try result(cache, nowhere, key: "picked")?.get().source, .memory)
        XCTAssertEqual(try fetchResult(cache, nowhere, key: "draft", decode: { $0 })?.get().value, Data("{}".utf8))
        cache.drainDisk()
        let next = makeCache()
        XCTAssertEqual(try result(next, nowhere, key: "picked")?.get().source, .disk)
        XCTAssertEqual(try fetchResult(next, nowhere, key: "draft", decode: { $0 })?.get().source, .disk)
        XCTAssertEqual(server.totalRequests, 0)
    }

    func testStoringAnImageServesItAndItsBytes() throws {
        let cache = makeCache()
        let image = try XCTUnwrap(ImageCache.Image(data: fixture("photo.jpg")))
        try cache.store(image, for: "upload")
        XCTAssertEqual(cache.peek(key: "upload"), image)
        cache.drainDisk()
        XCTAssertEqual(try fetchResult(makeCache(), server.url("/none"), key: "upload", decode: { $0 })?.get().value, fixture("photo.jpg"))
        XCTAssertEqual(server.totalRequests, 0)
    }

    func testStoringAnswersFetchesThatWaitForTheKey() throws {
        let cache = makeCache()
        var slow = LoopbackServer.Response.ok(fixture("photo.jpg"))
        slow.behavior = .neverAnswer
        server.set("/slow.png", slow)
        let done = expectation(description: "answered by store")
        let result = Locked<Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>?>(nil)
        cache.fetch(server.url("/slow.png"), key: "k") { result.value = $0; done.fulfill() }
        XCTAssertTrue(server.waitForRequests("/slow.png", count: 1, timeout: 10))
        try cache.store(fixture("photo.png"), for: "k")
        wait(for: [done], timeout: 10)
        XCTAssertEqual(try result.value?.get().value.data, fixture("photo.png"))
        XCTAssertFalse(cache.fetching(server.url("/slow.png")))
        assertInvariants(cache)
    }

    func testStoringForgetsTheKeysOlderImageInTheSecondChance() throws {
        let cache = makeCache()
        let small = fixture("photo.png")
        cache.imageMemoryMaxBytes = 100 * small.count  // a quarter: 27,150 bytes
        try cache.store(small, for: "k")
        for i in 1...5 { try cache.store(Data(repeating: UInt8(i), count: 20 * small.count), for: "filler\(i)") }
        XCTAssertFalse(cache.memoryURLs.contains("k"))  // evicted, into the second chance
        let big = png(100, 7)  // more than a quarter of the budget: not kept in memory
        XCTAssertGreaterThan(big.count, 25 * small.count)
        try cache.store(big, for: "k")
        XCTAssertNotEqual(cache.peek(key: "k")?.data, small, "the replaced image came back")
        cache.persistCacheToDisk()
        let file = cache.folder.appendingPathComponent(ImageCache.diskFileName(for: URL(string: "k")!))
        XCTAssertEqual(try Data(contentsOf: file), big, "the stored file was overwritten by the old image")
    }

    func testStoringMoreThanALookupWouldReadIsRefused() throws {
        let cache = makeCache()
        cache.maxImageBytes = 1_000
        XCTAssertThrowsError(try cache.store(Data(repeating: 1, count: 2_000), for: "doc")) { error in
            XCTAssertEqual(error as? ImageCache.Error, .tooLarge(limit: 1_000))
        }
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertNil(cache.error(forKey: "doc"))
    }

    // MARK: Results

    func testResultsSayWhereAndRetriesAreAnnouncedPerRequest() throws {
        let cache = makeCache()
        server.set("/flaky.png", sequence: [.status(503), .status(500), .ok(fixture("photo.png"))])
        let url = server.url("/flaky.png")
        let retries = Locked<[Int]>([])
        let done = expectation(description: "result")
        let retried = Locked<ImageResult?>(nil)
        cache.fetch(url, onRetry: { error, attempt in
            XCTAssertFalse(error.isFatal)
            retries.mutate { $0.append(attempt) }
        }) { retried.value = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(retries.value, [1, 2])
        XCTAssertEqual(try retried.value?.get().source, .network)
        XCTAssertEqual(try result(cache, url)?.get().source, .memory)

        server.set("/gone.png", .status(404))
        guard case .failure(let error)? = result(cache, server.url("/gone.png")) else { return XCTFail("expected a failure") }
        XCTAssertEqual(error, .httpStatus(404))
        XCTAssertTrue(error.isFatal)
    }

    func testOnRetryDoesNotRunAfterCancelReturned() throws {
        let cache = makeCache()
        cache.retryPolicy = ImageCache.RetryPolicy(maxRetries: 1, baseDelay: 0.2)
        server.set("/flaky.png", sequence: [.status(503), .ok(fixture("photo.png"))])
        let retried = Locked(0)
        let gate = DispatchSemaphore(value: 0)
        callbacks.async { gate.wait() }  // holds the callback queue: the retry notice waits behind it
        let task = cache.fetch(server.url("/flaky.png"), onRetry: { _, _ in retried.mutate { $0 += 1 } }) { _ in }
        // The second request proves the retry was decided, and its notice queued behind the gate.
        XCTAssertTrue(server.waitForRequests("/flaky.png", count: 2, timeout: 10))
        task.cancel()
        gate.signal()
        let drained = expectation(description: "callback queue drained")
        callbacks.async { drained.fulfill() }
        wait(for: [drained], timeout: 10)
        XCTAssertEqual(retried.value, 0)
        XCTAssertTrue(task.isCancelled)
    }
}
