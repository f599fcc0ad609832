import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Issue 24: times and keys that cannot be trusted, and files that do not decode.
final class UntrustedTests: CacheTestCase {
    private func serve(_ path: String, headers: [String: String]) -> URL {
        var response = LoopbackServer.Response.ok(fixture("photo.png"))
        response.headers.merge(headers) { $1 }
        server.set(path, response)
        return server.url(path)
    }

    private func setDates(_ cache: ImageCache, _ url: URL, modified: Date? = nil, accessed: Date? = nil) throws {
        let path = fileURL(cache, for: url).path
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        let keep = { (time: timespec) in time }
        var dates = [accessed.map { timespec(tv_sec: Int($0.timeIntervalSince1970), tv_nsec: 0) } ?? keep(info.st_atim),
                     modified.map { timespec(tv_sec: Int($0.timeIntervalSince1970), tv_nsec: 0) } ?? keep(info.st_mtim)]
        XCTAssertEqual(utimensat(AT_FDCWD, path, &dates, 0), 0)
    }

    private let year2100 = Date(timeIntervalSince1970: 4_102_444_800)

    // MARK: Times

    func testAFileDownloadedIn2100IsExpiredAndFetchedAgain() throws {
        // Given an image on disk without validators whose download date is 2100
        let url = serve("/future.png", headers: [:])
        populate([url])
        try setDates(makeCache(), url, modified: year2100)
        server.resetCounters()

        // When a new instance fetches it
        let cache = makeCache()
        let fetched = try XCTUnwrap(result(cache, url)).get()

        // Then it is downloaded again, and the file is dated now
        XCTAssertEqual(fetched.source, .network)
        XCTAssertEqual(server.requestCount("/future.png"), 1)
        cache.drainDisk()
        let modified = try FileManager.default.attributesOfItem(atPath: fileURL(cache, for: url).path)[.modificationDate] as? Date
        XCTAssertLessThan(try XCTUnwrap(modified), Date().addingTimeInterval(60))
    }

    func testAFileDownloadedIn2100WithAnETagIsRevalidated() throws {
        // Given an image on disk tagged with an ETag whose download date is 2100
        let url = serve("/future-tagged.png", headers: ["ETag": "\"v1\""])
        populate([url])
        try FileManager.default.setAttributes([.modificationDate: year2100], ofItemAtPath: fileURL(makeCache(), for: url).path)

        // When a new instance fetches it
        let cache = makeCache()
        XCTAssertNotNil(try result(cache, url)?.get())

        // Then the request is conditional, and the server's 304 renews it
        XCTAssertEqual(server.conditionalCount("/future-tagged.png").notModified, 1)
        XCTAssertEqual(cache.statistics().revalidated, 1)
    }

    func testMovingTheClockBackAnHourExpiresWhatMemoryAndDiskHold() throws {
        // Given an image in memory and on disk
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let url = serve("/clock.png", headers: [:])
        XCTAssertNotNil(try result(cache, url)?.get())
        XCTAssertNotNil(cache.peek(url))

        // When the clock goes back an hour
        clock.advance(-3_600)

        // Then memory no longer serves it, and a fetch downloads it again rather than read the disk
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(try result(cache, url)?.get().source, .network)
        XCTAssertEqual(server.requestCount("/clock.png"), 2)
        // And what was downloaded at the earlier time is served from then on
        XCTAssertNotNil(cache.peek(url))
    }

    func testTheSweepCountsAFileUsedInTheFutureAsTheLeastRecentlyUsed() throws {
        // Given two images on disk, `old` used before `recent`, and `recent`'s use date then set to 2100
        let old = serve("/old.png", headers: [:]), recent = serve("/recent.png", headers: [:])
        populate([old, recent])
        let cache = makeCache()
        try setDates(cache, recent, accessed: year2100)

        // When the disk is reduced to one image
        cache.reduceDiskCache(maxImageCount: 1)

        // Then the one used "in 2100" goes
        XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: old).path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: recent).path))
    }

    func testTheSweepCountsAFileDownloadedInTheFutureAsTheLeastRecentlyUsed() throws {
        // Given two images with validators on disk, `old` used before `recent`, and `recent`'s download date then set to 2100
        let old = serve("/old-tagged.png", headers: ["ETag": "\"o\""]), recent = serve("/recent-tagged.png", headers: ["ETag": "\"r\""])
        populate([old, recent])
        let cache = makeCache()
        try setDates(cache, recent, modified: year2100)

        // When the disk is reduced to one image
        cache.reduceDiskCache(maxImageCount: 1)

        // Then the one downloaded "in 2100" goes
        XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: old).path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: recent).path))
    }

    func testAServersMaxAgeLongerThanTheTimeToLiveIsStillTrusted() throws {
        // Given an image whose server says max-age one day, with a time to live of 10 minutes
        let first = makeCache()
        first.usesServerMaxAge = true
        let url = serve("/day.png", headers: ["Cache-Control": "max-age=86400"])
        XCTAssertNotNil(try result(first, url)?.get())

        // Then memory serves it, and a new instance reads it from disk, without the network
        XCTAssertNotNil(first.peek(url))
        first.drainDisk()
        let second = makeCache()
        second.usesServerMaxAge = true
        XCTAssertEqual(try result(second, url)?.get().source, .disk)
        XCTAssertEqual(server.requestCount("/day.png"), 1)
    }

    // MARK: Files that do not decode

    func testAFileThatDoesNotDecodeIsDeletedAndTheImageDownloadedAgainOnce() throws {
        // Given an image on disk whose file was damaged since (cut short: on Linux the structure
        // check is the decoder; on Apple platforms ImageIO would reject it the same way)
        let url = serve("/damaged.png", headers: [:])
        populate([url])
        let path = fileURL(makeCache(), for: url).path
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
        server.resetCounters()

        // When a new instance fetches it
        let cache = makeCache()
        let fetched = try XCTUnwrap(result(cache, url)).get()

        // Then the damaged file is not the answer: the image is downloaded again, once, and written
        XCTAssertEqual(fetched.source, .network)
        XCTAssertEqual(fetched.value.data, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/damaged.png"), 1)
        cache.drainDisk()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), fixture("photo.png"))
        XCTAssertNil(cache.error(for: url))
    }

    func testADownloadThatDoesNotDecodeIsFinal() throws {
        // Given a damaged file on disk, and a server that sends damaged bytes too
        let url = serve("/bad.png", headers: [:])
        populate([url])
        let path = fileURL(makeCache(), for: url).path
        let damaged = fixture("photo.png").prefix(fixture("photo.png").count / 2)
        try damaged.write(to: URL(fileURLWithPath: path))
        server.set("/bad.png", .ok(Data(damaged)))
        server.resetCounters()

        // When a new instance fetches it
        let cache = makeCache()
        let failed = result(cache, url)

        // Then it fails as corrupt after one download: no loop between the disk and the network
        guard case .failure(.corruptImage)? = failed else { return XCTFail("\(String(describing: failed))") }
        XCTAssertEqual(server.requestCount("/bad.png"), 1)
    }

    // MARK: Keys

    func testAKeyWithANULIsAnEntryOfItsOwnOnDisk() throws {
        // Given two images stored under "avatar" and under "avatar", NUL, "72x72", then persisted
        let a = PNGEncoder.rgb(width: 2, height: 2, pixels: Array(repeating: 10, count: 12))
        let b = PNGEncoder.rgb(width: 3, height: 3, pixels: Array(repeating: 200, count: 27))
        let first = makeCache()
        try first.store(a, for: "avatar")
        try first.store(b, for: "avatar\u{0}72x72")
        first.persistCacheToDisk()

        // When a new instance fetches each key
        let second = makeCache()
        let url = server.url("/not-served.png")
        let plain = try XCTUnwrap(result(second, url, key: "avatar")).get()
        let withNUL = try XCTUnwrap(result(second, url, key: "avatar\u{0}72x72")).get()

        // Then each has its own image, from its own file
        XCTAssertEqual(plain.value.data, a)
        XCTAssertEqual(withNUL.value.data, b)
        XCTAssertEqual(plain.source, .disk)
        XCTAssertEqual(withNUL.source, .disk)
        XCTAssertEqual(second.diskCount, 2)
    }

    func testAKeysFileNameDoesNotChangeWithoutANUL() {
        // File names of keys without NUL are those written before: existing folders stay valid.
        XCTAssertEqual(ImageCache.diskFileName(for: URL(string: "https://example.com/a.png")!), "fa378f653a3984b6")
    }

    func testStoringAKeyForgetsItsSizesButNotAKeyThatMerelyStartsTheSame() throws {
        // Given an image bound at a size under "k", and an image stored under "k", NUL, "1x1"
        let cache = makeCache()
        try cache.store(fixture("photo.png"), for: "k\u{0}1x1")
        let url = serve("/k.png", headers: [:])
        let shown = expectation(description: "sized")
        let target = SizedTarget { if $0 != nil { shown.fulfill() } }
        let binder = ImageCache.Binder(target, queue: callbacks)
        callbacks.sync { _ = binder.bind(url, key: "k", pixelSize: CGSize(width: 1, height: 1), cache: cache) }
        wait(for: [shown], timeout: 10)
        XCTAssertNotNil(cache.peek(key: "k", filling: (1, 1)))

        // When "k" is stored again
        try cache.store(fixture("photo.png"), for: "k")

        // Then its sized image is forgotten, and the other key is not
        XCTAssertNil(cache.peek(key: "k", filling: (1, 1)))
        XCTAssertNotNil(cache.peek(key: "k\u{0}1x1"))
        withExtendedLifetime(binder) {}
    }
}

private final class SizedTarget: ImageCache.ImageTarget, @unchecked Sendable {
    var image: ImageCache.Image? { didSet { onSet(image) } }
    let isDisplayed = true
    let onSet: (ImageCache.Image?) -> Void
    init(_ onSet: @escaping (ImageCache.Image?) -> Void) { self.onSet = onSet }
}
