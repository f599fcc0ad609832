import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `store(_:for:)` off the caller's thread: bytes decoded on a decode worker while fetches of their key
/// wait for them; an image in memory at once, its original bytes (or an encoding made on a decode
/// worker) on disk after, in order with the disk's other work. On Linux an image is its bytes and
/// their check is cheap, so the tests make the cache decode and encode as on Apple platforms
/// (a `HookedDecoder` and a `HookedEncoder` plugged in).
final class StoreTests: CacheTestCase {
    private typealias DataResult = Result<ImageCache.Fetched<Data>, ImageCache.Error>

    /// Runs `body` on a thread of its own; true if it returned (within 10 s).
    private func returns(_ body: @escaping @Sendable () throws -> Void) -> Bool {
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? body()
            returned.signal()
        }
        return returned.wait(timeout: .now() + 10) == .success
    }

    /// Starts an image fetch of `key`; its result lands in the returned box when `done` is fulfilled.
    private func startFetch(_ cache: ImageCache, _ url: URL,
                            key: String? = nil) -> (XCTestExpectation, Locked<ImageResult?>) {
        let done = expectation(description: "image of \(key ?? url.absoluteString)")
        let got = Locked<ImageResult?>(nil)
        cache.fetch(url, key: key) { got.value = $0; done.fulfill() }
        return (done, got)
    }

    /// Starts a fetch of `key`'s bytes (`decode: { $0 }`).
    private func startBytesFetch(_ cache: ImageCache, _ url: URL,
                                 key: String? = nil) -> (XCTestExpectation, Locked<DataResult?>) {
        let done = expectation(description: "bytes of \(key ?? url.absoluteString)")
        let got = Locked<DataResult?>(nil)
        cache.fetch(url, key: key, decode: { $0 }) { got.value = $0; done.fulfill() }
        return (done, got)
    }

    private func file(_ cache: ImageCache, _ key: String) -> URL {
        cache.folder.appendingPathComponent(ImageCache.diskFileName(for: URL(string: key)!))
    }

    // MARK: Bytes

    func testStoredBytesAreDecodedOffTheCallersThreadWhileFetchesOfTheKeyWaitForThem() throws {
        // Given a decoder that tells where it runs and waits for the test
        let decodeHook = Hook<@Sendable () -> Void>()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [HookedDecoder(hook: decodeHook)]))
        let (gate, started) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let decodedOn = Locked<String?>(nil)
        decodeHook.set {
            decodedOn.value = currentQueueLabel()
            started.signal()
            gate.wait()
        }
        let url = server.url("/never-served"), bytes = fixture("photo.png")
        // When bytes are stored under a URL's key
        XCTAssertTrue(returns { try cache.store(bytes, for: url.absoluteString) }, "store waited for its decode")
        // Then their decode runs on a decode worker, and nothing is in memory until it is done
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(decodedOn.value, "ImageCache.decode.cache")
        XCTAssertNil(cache.peek(url))
        XCTAssertTrue(cache.fetching(url))
        // And a fetch made meanwhile waits for it, and gets the stored image without the network
        let (done, got) = startFetch(cache, url)
        gate.signal()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(try got.value?.get().value.data, bytes)
        XCTAssertEqual(try got.value?.get().source, .memory)
        XCTAssertEqual(server.totalRequests, 0)
        XCTAssertNotNil(cache.peek(url))
        cache.drainDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(cache, for: url)), bytes)
        assertInvariants(cache)
    }

    func testCallersOfADownloadUnderWayGetTheStoredBytesOnceDecoded() throws {
        // Given a fetch whose server never answers
        let decodeHook = Hook<@Sendable () -> Void>()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [HookedDecoder(hook: decodeHook)]))
        let gate = DispatchSemaphore(value: 0)
        decodeHook.set { gate.wait() }
        var slow = LoopbackServer.Response.ok(fixture("photo.jpg"))
        slow.behavior = .neverAnswer
        server.set("/slow.png", slow)
        let url = server.url("/slow.png"), bytes = fixture("photo.png")
        let (done, got) = startFetch(cache, url)
        XCTAssertTrue(server.waitForRequests("/slow.png", count: 1, timeout: 10))
        // When bytes are stored under its key, and decoded after a while
        XCTAssertTrue(returns { try cache.store(bytes, for: url.absoluteString) })
        gate.signal()
        // Then the fetch gets them, and the download was not asked again
        wait(for: [done], timeout: 10)
        XCTAssertEqual(try got.value?.get().value.data, bytes)
        XCTAssertEqual(server.requestCount("/slow.png"), 1)
        XCTAssertFalse(cache.fetching(url))
        assertInvariants(cache)
    }

    func testARemovalWhileStoredBytesAreDecodedWins() throws {
        let decodeHook = Hook<@Sendable () -> Void>()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [HookedDecoder(hook: decodeHook)]))
        let gate = DispatchSemaphore(value: 0)
        decodeHook.set { gate.wait() }
        server.set("/gone.png", .status(404))
        let url = server.url("/gone.png")
        XCTAssertTrue(returns { try cache.store(self.fixture("photo.png"), for: url.absoluteString) })
        // When the key is removed before the decode ends
        cache.remove(url)
        gate.signal()
        XCTAssertTrue(eventually { cache.decodesIdle })
        // Then neither memory nor disk keeps the bytes, and a fetch goes to the network
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/gone.png"), 1)
        assertInvariants(cache)
    }

    func testStoredBytesThatAreNotAnImageAreKeptAsBytes() throws {
        let decodeHook = Hook<@Sendable () -> Void>()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [HookedDecoder(hook: decodeHook)]))
        let gate = DispatchSemaphore(value: 0)
        decodeHook.set { gate.wait() }
        let url = server.url("/never-served")
        XCTAssertTrue(returns { try cache.store(Data("{}".utf8), for: "draft") })
        // When an image fetch and a fetch of the bytes wait for the decode
        let (imageDone, image) = startFetch(cache, url, key: "draft")
        let (bytesDone, bytes) = startBytesFetch(cache, url, key: "draft")
        gate.signal()
        wait(for: [imageDone, bytesDone], timeout: 10)
        // Then the image fetch fails with the decoder's reason, and the bytes are read
        XCTAssertThrowsError(try image.value?.get()) { error in
            XCTAssertTrue((error as? ImageCache.Error)?.isFatal ?? false, "\(error)")
        }
        XCTAssertEqual(try bytes.value?.get().value, Data("{}".utf8))
        XCTAssertEqual(server.totalRequests, 0)
        assertInvariants(cache)
    }

    func testBytesOverTheLimitAreRefusedAtOnceAndNeverDecoded() throws {
        let decodeHook = Hook<@Sendable () -> Void>()
        let cache = makeCache(plugins: ImageCache.Plugins(decoders: [HookedDecoder(hook: decodeHook)]))
        let decodes = Locked(0)
        decodeHook.set { decodes.mutate { $0 += 1 } }
        cache.maxImageBytes = 1_000
        XCTAssertThrowsError(try cache.store(Data(repeating: 1, count: 2_000), for: "doc")) { error in
            XCTAssertEqual(error as? ImageCache.Error, .tooLarge(limit: 1_000))
        }
        XCTAssertTrue(eventually { cache.decodesIdle })
        XCTAssertEqual(decodes.value, 0)
        XCTAssertFalse(cache.fetching(URL(string: "doc")!))
        XCTAssertEqual(cache.diskCount, 0)
    }

    // MARK: Images

    func testStoringAnImageTheCacheDeliveredWritesItsOriginalBytes() throws {
        // Given an image fetched, whose bytes are on disk (memory then lets them go)
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        let encodes = Locked(0)
        encodeHook.set { _ in
            encodes.mutate { $0 += 1 }
            return Data("encoded".utf8)
        }
        let url = serve("/photo.jpg", "photo.jpg")
        let image = try XCTUnwrap(fetchAndWait(cache, url))
        cache.drainDisk()
        // When it is stored under another key
        try cache.store(image, for: "copy")
        cache.drainDisk()
        // Then that key's file holds the downloaded bytes, copied from the entry's file, not an encoding
        XCTAssertEqual(try Data(contentsOf: file(cache, "copy")), fixture("photo.jpg"))
        XCTAssertEqual(encodes.value, 0)
        XCTAssertEqual(cache.peek(key: "copy"), image)
    }

    func testStoringAnImageWhoseBytesMemoryStillHoldsWritesThem() throws {
        // Given an image downloaded while the disk queue is held (after its look-up there): memory
        // still has its bytes, not yet written
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        encodeHook.set { _ in Data("encoded".utf8) }
        let gate = Gate()
        defer { gate.open() }
        serveBehind(gate, prefix: "/held/")
        let url = server.url("/held/photo.png")
        let (done, got) = startFetch(cache, url)
        XCTAssertTrue(server.waitForRequests("/held/photo.png", count: 1, timeout: 10))
        let hold = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: hold)
        gate.open()
        wait(for: [done], timeout: 10)
        let image = try XCTUnwrap(got.value?.get().value)
        // When it is stored under another key
        try cache.store(image, for: "copy")
        hold.signal()
        cache.drainDisk()
        // Then those bytes are written under it
        XCTAssertEqual(try Data(contentsOf: file(cache, "copy")), fixture("photo.png"))
    }

    func testAnImageWhoseEntryFileChangedSinceIsEncoded() throws {
        // Given an image fetched, whose file another instance then replaced with other bytes
        let clock = TestClock()
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(clock: clock, plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        encodeHook.set { _ in Data("encoded".utf8) }
        let url = serve("/photo.jpg", "photo.jpg")
        let image = try XCTUnwrap(fetchAndWait(cache, url))
        cache.drainDisk()
        clock.advance(10)
        let other = makeCache(clock: clock)
        try other.store(fixture("tiny.png"), for: url.absoluteString)
        other.drainDisk()
        // When the image is stored under another key
        try cache.store(image, for: "copy")
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })
        cache.drainDisk()
        // Then it was encoded: the file it came from is not its own any more
        XCTAssertEqual(try Data(contentsOf: file(cache, "copy")), Data("encoded".utf8))
    }

    func testAnImageWithNoBytesIsInMemoryAtOnceAndEncodedOffTheCallersThread() throws {
        // Given an older file under the key, and an encoder that tells where it runs and waits
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        let url = server.url("/never-served")
        try cache.store(fixture("photo.jpg"), for: url.absoluteString)
        cache.drainDisk()
        let (gate, started) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let encodedOn = Locked<String?>(nil)
        encodeHook.set { image in
            encodedOn.value = currentQueueLabel()
            started.signal()
            gate.wait()
            return Data("encoded:".utf8) + image.data
        }
        let image = try XCTUnwrap(ImageCache.Image(data: fixture("photo.png")))
        // When an image with no bytes of its own is stored under the key
        XCTAssertTrue(returns { try cache.store(image, for: url.absoluteString) }, "store waited for its encoding")
        // Then it is encoded off the caller's thread, on a queue of its own, not on a decode worker
        // that downloads wait for (issue 42; it was "ImageCache.decode.cache"), and is in memory at once
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(encodedOn.value, "ImageCache.encode")
        XCTAssertEqual(cache.peek(url), image)
        XCTAssertEqual(try result(cache, url)?.get().source, .memory)
        // And a look-up on disk (memory emptied) waits for its file rather than read the older one
        cache.purgeMemory()
        let (done, got) = startBytesFetch(cache, url)
        gate.signal()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(try got.value?.get().value, Data("encoded:".utf8) + fixture("photo.png"))
        XCTAssertEqual(try got.value?.get().source, .disk)
        XCTAssertEqual(server.totalRequests, 0)
        assertInvariants(cache)
    }

    // MARK: An image too large for memory (issue 42)

    /// An image that memory does not keep (over a quarter of its budget: a 48 MP photo, most photos
    /// in an app extension) and that has no bytes is encoded off the caller's thread (issue 49: it
    /// was encoded before `store` returned, a hitch on the main thread); an encoding that fails, or
    /// is too large, leaves no file and says why in a `.diskProblem`, as any stored image's does.
    func testAnImageTooLargeForMemoryThatCannotBeEncodedLeavesNoFileAndSaysWhy() throws {
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        cache.imageMemoryMaxBytes = 400  // a quarter: 100 bytes, less than the image's 1,086
        encodeHook.set { _ in nil }
        let problems = Locked<[String]>([])
        cache.onEvent = { if case .diskProblem(let why) = $0 { problems.mutate { $0.append(why) } } }
        let image = try XCTUnwrap(ImageCache.Image(data: fixture("photo.png")))

        try cache.store(image, for: "huge")
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })
        cache.drainDisk()
        XCTAssertNil(cache.peek(key: "huge"))
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertTrue(eventually { problems.value.contains { $0.contains("cannot be encoded") } }, "\(problems.value)")
    }

    func testAnImageTooLargeForMemoryWhoseEncodingIsTooLargeForTheDiskLeavesNoFile() throws {
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        cache.imageMemoryMaxBytes = 400
        cache.maxImageBytes = 100
        encodeHook.set { _ in Data(repeating: 1, count: 101) }
        let image = try XCTUnwrap(ImageCache.Image(data: fixture("photo.png")))

        try cache.store(image, for: "huge")
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 0)
    }

    func testAnImageTooLargeForMemoryIsEncodedOffTheCallersThreadAndKeptOnDisk() throws {
        // Given an image memory does not keep, and an encoder that notes its thread
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        cache.imageMemoryMaxBytes = 400
        let caller = ObjectIdentifier(Thread.current)
        let onCaller = Locked<Bool?>(nil)
        encodeHook.set { _ in
            onCaller.value = ObjectIdentifier(Thread.current) == caller
            return Data("encoded".utf8)
        }
        let image = try XCTUnwrap(ImageCache.Image(data: fixture("photo.png")))
        // When it is stored
        try cache.store(image, for: "huge")
        // Then it was encoded on the store's queue (before the fix: by store itself, on this thread),
        // its encoding is on disk, and memory does not hold it
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })
        XCTAssertEqual(onCaller.value, false)
        cache.drainDisk()
        XCTAssertEqual(try Data(contentsOf: file(cache, "huge")), Data("encoded".utf8))
        XCTAssertNil(cache.peek(key: "huge"))
    }

    /// What a stored image with no bytes is encoded as: a JPEG for an opaque still (a photo), a PNG
    /// for transparency or frames, within the whole decode's longest side.
    func testAStoredImageIsAJPEGWhenOpaqueAndStillAndNoLargerThanADecodeShowsIt() {
        XCTAssertEqual(ImageCache.storedEncoding(frames: 1, opaque: true), .jpeg)
        XCTAssertEqual(ImageCache.storedEncoding(frames: 1, opaque: false), .png)
        XCTAssertEqual(ImageCache.storedEncoding(frames: 12, opaque: true), .png)
        // CGImageAlphaInfo: none, noneSkipLast and noneSkipFirst are opaque; premultiplied ones are not
        XCTAssertEqual([0, 1, 2, 3, 4, 5, 6, 7].map { ImageCache.isOpaque(alphaInfo: $0) },
                       [true, false, false, false, false, true, true, false])
        // A 48 MP photo (8,064 x 6,048) within a 2,556 px screen's bound; a smaller one as it is
        XCTAssertEqual(ImageCache.storedMaxPixels(width: 8_064, height: 6_048, bound: 2_556), 2_556)
        XCTAssertNil(ImageCache.storedMaxPixels(width: 2_000, height: 1_500, bound: 2_556))
    }

    func testARemovalWhileAnImageIsEncodedLeavesNoFile() throws {
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        let gate = DispatchSemaphore(value: 0)
        encodeHook.set { _ in
            gate.wait()
            return Data("encoded".utf8)
        }
        try cache.store(try XCTUnwrap(ImageCache.Image(data: fixture("photo.png"))), for: "k")
        // When the key is removed before the encoding comes back
        cache.remove(key: "k")
        gate.signal()
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })
        // Then no file is written for it
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertNil(cache.peek(key: "k"))
        assertInvariants(cache)
    }

    func testTheLaterOfTwoStoresWhileEncodingIsKept() throws {
        // Given a first image whose encoding waits, and a second one encoded at once
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        let gate = DispatchSemaphore(value: 0)
        let first = try XCTUnwrap(ImageCache.Image(data: fixture("photo.png")))
        let second = try XCTUnwrap(ImageCache.Image(data: fixture("tiny.png")))
        encodeHook.set { image in
            if image == first { gate.wait() }
            return Data((image == first ? "first" : "second").utf8)
        }
        // When both are stored under one key, and the first encoding comes back last
        try cache.store(first, for: "k")
        try cache.store(second, for: "k")
        XCTAssertTrue(eventually { cache.encodesEnded == 1 })
        gate.signal()
        XCTAssertTrue(eventually { cache.encodesEnded == 2 })
        cache.drainDisk()
        // Then the second is the key's, in memory and on disk
        XCTAssertEqual(try Data(contentsOf: file(cache, "k")), Data("second".utf8))
        XCTAssertEqual(cache.peek(key: "k"), second)
    }

    func testAnEncodingThatFailsOrIsTooLargeLeavesNoFileAndSaysWhy() throws {
        // Given older files under two keys
        let encodeHook = Hook<@Sendable (ImageCache.Image) -> Data?>()
        let cache = makeCache(plugins: ImageCache.Plugins(encoder: HookedEncoder(hook: encodeHook)))
        cache.maxImageBytes = 100
        try cache.store(Data("old".utf8), for: "big")
        try cache.store(Data("old".utf8), for: "broken")
        cache.drainDisk()
        let problems = Locked<[String]>([])
        let told = expectation(description: "two problems")
        told.expectedFulfillmentCount = 2
        cache.onEvent = { event in
            if case .diskProblem(let message) = event {
                problems.mutate { $0.append(message) }
                told.fulfill()
            }
        }
        let big = try XCTUnwrap(ImageCache.Image(data: fixture("tiny.png")))
        encodeHook.set { image in image == big ? Data(repeating: 0, count: 101) : nil }
        // When an image whose encoding is too large, and one that cannot be encoded, are stored
        try cache.store(big, for: "big")
        try cache.store(try XCTUnwrap(ImageCache.Image(data: fixture("photo.png"))), for: "broken")
        wait(for: [told], timeout: 10)
        cache.drainDisk()
        // Then memory keeps them, the disk has no file for either (the older ones went), and the
        // event handler heard why
        XCTAssertNotNil(cache.peek(key: "big"))
        XCTAssertNotNil(cache.peek(key: "broken"))
        XCTAssertEqual(cache.diskCount, 0)
        XCTAssertEqual(problems.value.filter { $0.contains("larger than maxImageBytes") }.count, 1, "\(problems.value)")
        XCTAssertEqual(problems.value.filter { $0.contains("cannot be encoded") }.count, 1, "\(problems.value)")
    }

    func testAnImageWithBytesOverTheLimitIsRefusedAtOnce() throws {
        let cache = makeCache()
        cache.maxImageBytes = 10
        let image = try XCTUnwrap(ImageCache.Image(data: fixture("tiny.png")))
        XCTAssertThrowsError(try cache.store(image, for: "k")) { error in
            XCTAssertEqual(error as? ImageCache.Error, .tooLarge(limit: 10))
        }
        XCTAssertNil(cache.peek(key: "k"))
        XCTAssertEqual(cache.diskCount, 0)
    }

    // MARK: The encoder's decisions (Apple platforms)

    func testUIKitOrientationsBecomeTheirEXIFOrientations() {
        // UIImage.Orientation's raw values: up, down, left, right, upMirrored, downMirrored,
        // leftMirrored, rightMirrored; CGImagePropertyOrientation's: up 1, upMirrored 2, down 3,
        // downMirrored 4, leftMirrored 5, right 6, rightMirrored 7, left 8.
        XCTAssertEqual((0...7).map { ImageCache.exifOrientation(uiKit: $0) }, [1, 3, 8, 6, 2, 4, 5, 7])
        XCTAssertEqual(ImageCache.exifOrientation(uiKit: 8), 1)
        XCTAssertEqual(ImageCache.exifOrientation(uiKit: -1), 1)
    }

    func testRepeatedFramesAreEncodedOnceWithTheirRepeats() {
        final class Frame {}
        let (a, b, c) = (Frame(), Frame(), Frame())
        // 20 ms, 2 s and 20 ms as UIKit's evenly timed frames show them (see frameSchedule)
        let frames = [a] + Array(repeating: b, count: 100) + [c, a]
        let runs = ImageCache.runs(frames)
        XCTAssertTrue(runs.map(\.frame).elementsEqual([a, b, c, a], by: ===))
        XCTAssertEqual(runs.map(\.repeats), [1, 100, 1, 1])
        XCTAssertTrue(ImageCache.runs([Frame]()).isEmpty)
    }
}
