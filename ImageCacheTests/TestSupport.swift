import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Shared set-up: a real loopback server, a fresh cache folder, and a private callback queue.
/// What the Result form of an image fetch hands over.
typealias ImageResult = Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>

class CacheTestCase: XCTestCase {
    var server: LoopbackServer!
    var directory: URL!
    let callbacks = DispatchQueue(label: "ImageCacheTests.callbacks")
    private var caches: [ImageCache] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try LoopbackServer()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ImageCacheTests-\(UUID().uuidString)", isDirectory: true)
    }

    override func tearDown() {
        for cache in caches { cache.persistCacheToDisk() }
        caches = []
        server.stop()
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    /// A cache in this test's folder whose callbacks run on `callbacks`.
    func makeCache(_ name: String = "cache", clock: TestClock? = nil,
                   plugins: ImageCache.Plugins = ImageCache.Plugins(), session: URLSession? = nil) -> ImageCache {
        let cache = ImageCache(uniqueName: name, directory: directory, session: session, plugins: plugins)
        cache.callbackQueue = callbacks
        // Retries as by default, but with short waits so that the tests stay quick.
        cache.retryPolicy = ImageCache.RetryPolicy(maxRetries: 2, baseDelay: 0.01)
        if let clock { cache.clock = { clock.now } }
        caches.append(cache)
        return cache
    }

    func fixture(_ name: String) -> Data {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
              let data = try? Data(contentsOf: url) else {
            XCTFail("missing fixture \(name)")
            return Data()
        }
        return data
    }

    /// Serves `fixture` at `path` and returns its URL.
    @discardableResult
    func serve(_ path: String, _ fixtureName: String = "photo.png", delay: TimeInterval = 0) -> URL {
        var response = LoopbackServer.Response.ok(fixture(fixtureName))
        response.delay = delay
        server.set(path, response)
        return server.url(path)
    }

    /// Fetches and waits for the callback; fails the test if it does not come.
    func fetchAndWait(_ cache: ImageCache, _ url: URL, key: String? = nil, slow: Bool = false, timeout: TimeInterval = 10,
                      file: StaticString = #filePath, line: UInt = #line) -> ImageCache.Image? {
        let done = expectation(description: "callback for \(url)")
        let result = Locked<ImageCache.Image?>(nil)
        let callback: @Sendable (URL, ImageCache.Image?) -> Void = { received, image in
            XCTAssertEqual(received, url, file: file, line: line)
            result.value = image
            done.fulfill()
        }
        if slow { cache.slowFetch(url, key: key, callback: callback) } else { cache.fetch(url, key: key, callback: callback) }
        wait(for: [done], timeout: timeout)
        return result.value
    }

    /// Fetches `url` with the Result form and waits for its result (nil if it does not come).
    func result(_ cache: ImageCache, _ url: URL, key: String? = nil) -> ImageResult? {
        waitForResult("result for \(url)") { cache.fetch(url, key: key, completion: $0) }
    }

    /// Fetches with `request`, and `onProgress`, and waits for the result (nil if it does not come).
    func result(_ cache: ImageCache, _ request: URLRequest, key: String? = nil,
                onProgress: (@Sendable (Int, Int?) -> Void)? = nil) -> ImageResult? {
        waitForResult("result for \(request)") { cache.fetch(request, key: key, onProgress: onProgress, completion: $0) }
    }

    private func waitForResult(_ what: String, _ start: (@escaping @Sendable (ImageResult) -> Void) -> Void) -> ImageResult? {
        let done = expectation(description: what)
        let result = Locked<ImageResult?>(nil)
        start { received in
            result.value = received
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value
    }

    /// Fetches every URL at once; each callback leaves `group`, and `images` counts those with an image.
    func fetchAll(_ cache: ImageCache, _ urls: [URL]) -> (group: DispatchGroup, images: Locked<Int>) {
        let group = DispatchGroup()
        let images = Locked(0)
        for url in urls {
            group.enter()
            cache.fetch(url) { _, image in
                if image != nil { images.mutate { $0 += 1 } }
                group.leave()
            }
        }
        return (group, images)
    }

    /// Fetches `urls` through a first instance named `name` and persists it, as a previous launch would.
    func populate(_ urls: [URL], name: String = "cache", file: StaticString = #filePath, line: UInt = #line) {
        let first = makeCache(name)
        for url in urls { XCTAssertNotNil(fetchAndWait(first, url, file: file, line: line), file: file, line: line) }
        first.persistCacheToDisk()
    }

    /// The statistics with the disk figures counted (`statistics(completion:)`), waited for.
    func exactStatistics(_ cache: ImageCache, file: StaticString = #filePath, line: UInt = #line) -> ImageCache.Statistics {
        let done = expectation(description: "statistics")
        let result = Locked(ImageCache.Statistics())
        cache.statistics { result.value = $0; done.fulfill() }
        wait(for: [done], timeout: 30)
        return result.value
    }

    func fileURL(_ cache: ImageCache, for url: URL) -> URL {
        cache.folder.appendingPathComponent(ImageCache.diskFileName(for: url))
    }

    func assertInvariants(_ cache: ImageCache, file: StaticString = #filePath, line: UInt = #line) {
        let problems = cache.checkInvariants()
        XCTAssertEqual(problems, [], file: file, line: line)
    }

    /// Polls `condition` until it holds or `timeout` passes.
    func eventually(_ timeout: TimeInterval = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return condition()
    }
}

/// A value behind a lock, for results written by callbacks.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: Value
    init(_ value: Value) { _value = value }
    var value: Value {
        get { lock.withLock { _value } }
        set { lock.withLock { _value = newValue } }
    }
    func mutate<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&_value) } }
}

/// A clock the test moves by hand, in seconds since 1970.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var time: TimeInterval
    init(_ start: TimeInterval = Date().timeIntervalSince1970) { time = start }
    var now: TimeInterval { lock.withLock { time } }
    func advance(_ seconds: TimeInterval) { lock.withLock { time += seconds } }
}

/// The label of the dispatch queue running the caller: libdispatch's `dispatch_queue_get_label(NULL)`,
/// which the Dispatch module on Linux does not export to Swift (found at run time instead).
func currentQueueLabel() -> String? {
    typealias GetLabel = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    guard let symbol = dlsym(nil, "dispatch_queue_get_label") else { return nil }
    return unsafeBitCast(symbol, to: GetLabel.self)(nil).map { String(cString: $0) }
}

/// A gate that requests wait at, in the server's connection threads, until the test opens it.
final class Gate: @unchecked Sendable {
    private let group = DispatchGroup()
    private let opened = Locked(false)
    init() { group.enter() }
    func wait() { group.wait() }
    func open() {
        let first = opened.mutate { (isOpen: inout Bool) -> Bool in
            defer { isOpen = true }
            return !isOpen
        }
        if first { group.leave() }
    }
}

/// What the cache and its callbacks said, in the order they said it.
enum Said: Equatable {
    case stalled(URL), resumed(URL), delivered(URL, Bool)
}

extension CacheTestCase {
    /// photo.png with another width (and height) in its header, and the header's CRC to match: a
    /// different image to tell URLs apart by (the structural check reads the size; it does not
    /// decode the pixels).
    func png(width: Int, height: Int = 48) -> Data {
        var data = fixture("photo.png")
        data.replaceSubrange(16..<20, with: withUnsafeBytes(of: UInt32(width).bigEndian) { Data($0) })
        data.replaceSubrange(20..<24, with: withUnsafeBytes(of: UInt32(height).bigEndian) { Data($0) })
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data[12..<29] {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        data.replaceSubrange(29..<33, with: withUnsafeBytes(of: (crc ^ 0xFFFF_FFFF).bigEndian) { Data($0) })
        return data
    }

    /// `path` on the loopback server under the name `localhost`: to the cache, a host other than
    /// `127.0.0.1`, the one `server.url` names.
    func localhost(_ path: String) -> URL {
        URL(string: "http://localhost:\(server.port)\(path)")!
    }

    /// Answers every path under `prefix` with the photo once `gate` opens (nothing before).
    func serveBehind(_ gate: Gate, prefix: String) {
        let photo = fixture("photo.png")
        let previous = server.handler
        server.handler = { path in
            guard path.hasPrefix(prefix) else { return previous?(path) }
            gate.wait()
            return .ok(photo)
        }
    }

    /// Fetches every URL (on the slow lane if `slow`); each callback says into `log` whether it got
    /// an image and fulfills the returned expectation.
    func fetch(_ cache: ImageCache, _ urls: [URL], _ log: Locked<[Said]>, slow: Bool = false) -> XCTestExpectation {
        let done = expectation(description: "\(urls.count) callbacks")
        done.expectedFulfillmentCount = urls.count
        for url in urls {
            let callback: @Sendable (URL, ImageCache.Image?) -> Void = { url, image in
                log.mutate { $0.append(.delivered(url, image != nil)) }
                done.fulfill()
            }
            if slow { cache.slowFetch(url, callback: callback) } else { cache.fetch(url, callback: callback) }
        }
        return done
    }
}

/// A function a test sets after it made the cache it plugged it into.
final class Hook<Function>: @unchecked Sendable {
    private let lock = NSLock()
    private var function: Function?
    func set(_ function: Function) { lock.withLock { self.function = function } }
    var value: Function? { lock.withLock { function } }
}

/// A decoder plugged in for every image (so that every decode runs on a decode worker, as where
/// ImageIO decodes), which runs its hook first and then checks the image as the cache does.
struct HookedDecoder: ImageCache.ImageDecoder {
    var hook = Hook<@Sendable () -> Void>()
    func decodes(_ data: Data, mimeType: String?) -> Bool { true }
    func decode(_ data: Data, context: ImageCache.DecodingContext) throws -> ImageCache.Image {
        hook.value?()
        return try ImageCache.PlatformDecoder.decode(data).get().image
    }
}

/// An encoder whose hook makes the bytes: `store(_ image:for:)` then treats images as Apple
/// platforms do, where an image has no bytes of its own.
struct HookedEncoder: ImageCache.ImageEncoder {
    let hook: Hook<@Sendable (ImageCache.Image) -> Data?>
    func encode(_ image: ImageCache.Image) -> Data? { hook.value?(image) ?? nil }
}
