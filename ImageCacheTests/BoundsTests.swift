import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Memory in bytes, disk in bytes, and maintenance that does not block (issue 10).
final class BoundsTests: CacheTestCase {
    private var imageSize: Int { fixture("photo.png").count }  // 1,086 bytes; an image's cost on Linux

    private func folderBytes(_ cache: ImageCache) -> Int {
        cache.drainDisk()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: cache.folder.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: cache.folder.appendingPathComponent(name).path)[.size]) as? Int
            return total + (size ?? 0)
        }
    }

    func testMemoryByteBudgetEvictsLeastRecentlyUsedDownToNinetyPercent() {
        // Given a budget of ten images' bytes and no count limit in the way
        let cache = makeCache()
        cache.imageMemoryMaxBytes = 10 * imageSize
        let urls = (0..<25).map { serve("/b\($0).png") }
        // When 25 images are fetched
        for url in urls {
            XCTAssertNotNil(fetchAndWait(cache, url))
            XCTAssertLessThanOrEqual(cache.memoryBytes, 10 * imageSize)
        }
        // Then memory, second chance included, stays within the budget, and the most recent stay
        assertInvariants(cache)
        XCTAssertEqual(cache.memoryBytes, cache.memoryCount * imageSize)
        XCTAssertEqual(cache.memoryURLs.last, urls.last?.absoluteString)
        XCTAssertLessThanOrEqual(urls.reversed().filter { cache.peek($0) != nil }.count, 10)
        XCTAssertNotNil(cache.peek(urls[24]))
        XCTAssertNil(cache.peek(urls[0]))
    }

    func testAnImageOverAQuarterOfTheBudgetIsDeliveredButNotKeptInMemory() {
        // Given a budget whose quarter is smaller than one image
        let cache = makeCache()
        cache.imageMemoryMaxBytes = 4 * imageSize - 4
        let url = serve("/big.png")
        // Then the image is delivered, not kept in memory, and kept on disk
        XCTAssertEqual(fetchAndWait(cache, url)?.data, fixture("photo.png"))
        XCTAssertEqual(cache.memoryCount, 0)
        XCTAssertNil(cache.peek(url))
        XCTAssertFalse(cache.fetching(url))
        cache.drainDisk()
        XCTAssertEqual(try? Data(contentsOf: fileURL(cache, for: url)), fixture("photo.png"))
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/big.png"), 1, "the second fetch reads the disk")
        assertInvariants(cache)
    }

    func testLoweringTheByteBudgetEvictsAtOnce() {
        let cache = makeCache()
        let urls = (0..<10).map { serve("/l\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertEqual(cache.memoryCount, 10)
        cache.imageMemoryMaxBytes = 5 * imageSize
        XCTAssertLessThanOrEqual(cache.memoryBytes, 5 * imageSize)
        XCTAssertEqual(cache.memoryURLs.last, urls.last?.absoluteString, "the most recent stays")
        assertInvariants(cache)
    }

    func testAnAppExtensionGetsAByteBudgetItsLimitsAllow() {
        // A widget is stopped near 30 MB: an extension's default budget is 8 MiB, whatever the device
        let gigabytes: UInt64 = 8 << 30
        for path in ["/private/var/containers/Bundle/Application/X/Feed.app/PlugIns/Widget.appex",
                     "/Applications/Feed.app/Contents/PlugIns/Share.appex/"] {
            XCTAssertEqual(ImageCache.defaultMemoryMaxBytes(bundlePath: path, physicalMemory: gigabytes), 8 << 20, path)
        }
        // and an app's is a tenth of physical memory, at most 512 MiB
        XCTAssertEqual(ImageCache.defaultMemoryMaxBytes(bundlePath: "/Applications/Feed.app", physicalMemory: gigabytes), 512 << 20)
        XCTAssertEqual(ImageCache.defaultMemoryMaxBytes(bundlePath: "/usr/bin/feed", physicalMemory: 2 << 30), Int((2 << 30) / 10))
        XCTAssertEqual(ImageCache.defaultMemoryMaxBytes(bundlePath: "/opt/appex-tools/bin", physicalMemory: 2 << 30), Int((2 << 30) / 10))
    }

    func testTheDefaultByteBudgetComesFromPhysicalMemory() {
        let cache = makeCache()
        let expected = min(ProcessInfo.processInfo.physicalMemory / 10, 512 * 1024 * 1024)
        XCTAssertEqual(UInt64(cache.imageMemoryMaxBytes), expected)
        XCTAssertEqual(cache.diskMaxBytes, 256 * 1024 * 1024)
    }

    func testDiskStaysWithinItsByteLimitLeastRecentlyUsedFirst() {
        // Given a disk limit of ten images
        let cache = makeCache()
        cache.diskMaxBytes = 10 * imageSize
        let urls = (0..<30).map { serve("/d\($0).png") }
        // When 30 are downloaded, the folder never holds more than the limit once the writes are done
        for url in urls {
            XCTAssertNotNil(fetchAndWait(cache, url))
            XCTAssertLessThanOrEqual(folderBytes(cache), 10 * imageSize)
        }
        // Then the newest are on disk and the oldest are not
        XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: urls[29]).path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: urls[0]).path))
        XCTAssertGreaterThanOrEqual(cache.diskCount, 8, "down to 90% of the limit, not further")
        assertInvariants(cache)
    }

    func testEnforcingTheDiskLimitSweepsExpiredFilesFirst() {
        // Given 5 images that have expired and a limit that the next writes pass
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        let old = (0..<5).map { serve("/old\($0).png") }
        for url in old { XCTAssertNotNil(fetchAndWait(cache, url)) }
        clock.advance(601)
        cache.diskMaxBytes = 100 * imageSize
        // Expired files go in the sweep that the first lookup scheduled (setting the limit lists nothing)
        cache.drainDisk()
        XCTAssertEqual(cache.diskCount, 5)
        cache.waitForSweep()
        XCTAssertEqual(cache.diskCount, 0)
        // And a written image is not swept while it is fresh
        let new = serve("/new.png")
        XCTAssertNotNil(fetchAndWait(cache, new))
        XCTAssertEqual(cache.diskCount, 1)
    }

    func testReduceDiskCacheByBytesKeepsTheMostRecentlyUsed() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 1
        let urls = (0..<6).map { serve("/r\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.reduceDiskCache(maxBytes: 3 * imageSize)
        XCTAssertEqual(cache.diskCount, 3)
        for url in urls[3...] { XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)) }
        cache.reduceDiskCache(maxImageCount: 2, maxBytes: .max)
        XCTAssertEqual(cache.diskCount, 2)
        cache.reduceDiskCache(maxBytes: imageSize - 1)
        XCTAssertEqual(cache.diskCount, 0, "no image fits in fewer bytes than its own")
    }

    func testMaintenanceHasFormsThatDoNotWaitForTheDisk() {
        // Given a disk queue held up, so that a blocking call could not return
        let cache = makeCache()
        let url = serve("/m.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        let gate = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: gate)
        // When each non-blocking form is called
        let order = Locked<[String]>([])
        let done = expectation(description: "three completions")
        done.expectedFulfillmentCount = 3
        let returned = expectation(description: "the calls returned")
        DispatchQueue.global().async {
            cache.persistCacheToDisk { dispatchPrecondition(condition: .onQueue(self.callbacks)); order.mutate { $0.append("persist") }; done.fulfill() }
            cache.reduceDiskCache(maxImageCount: 5) { order.mutate { $0.append("reduce") }; done.fulfill() }
            cache.removeAll { dispatchPrecondition(condition: .onQueue(self.callbacks)); order.mutate { $0.append("remove") }; done.fulfill() }
            returned.fulfill()
        }
        // Then they return while the disk is held, memory is already empty, and the completions
        // run on the callback queue, in order, once the disk work is done
        wait(for: [returned], timeout: 10)
        XCTAssertEqual(order.value, [])
        XCTAssertNil(cache.peek(url))
        gate.signal()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(order.value, ["persist", "reduce", "remove"])
        XCTAssertEqual(cache.diskCount, 0)
    }

    /// Plants `count` sparse files of `size` bytes under image names in the folder of the cache
    /// named "cache"; returns their names.
    private func plantLargeFiles(_ count: Int, size: UInt64) throws -> [String] {
        let folder = directory.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let names = (0..<count).map { String(format: "%016x", 0xabc000 + $0) }
        for name in names {
            let path = folder.appendingPathComponent(name).path
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]))
            let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
            try handle.truncate(atOffset: size)  // sparse: no disk space taken
            try handle.close()
        }
        return names
    }

    func testAWriteBeforeTheSweepThatDoesNotPassTheDiskLimitDeletesNothing() throws {
        // Given a folder at 94% of the default disk limit (24 files of 10 MiB: 240 of 256 MiB)
        let names = try plantLargeFiles(24, size: 10 << 20)
        let cache = makeCache()
        XCTAssertEqual(cache.diskMaxBytes, 256 << 20)
        // When one small image is downloaded and written, before the sweep that the lookup scheduled
        XCTAssertNotNil(fetchAndWait(cache, serve("/small.png")))
        cache.drainDisk()
        // Then nothing is deleted: the folder is counted, and the write (240 MiB + 1 KB) is under the limit
        let left = try FileManager.default.contentsOfDirectory(atPath: cache.folder.path)
        XCTAssertEqual(names.filter(left.contains).count, 24, "files deleted though the limit was not passed")
        XCTAssertEqual(left.filter { !$0.hasPrefix(".") }.count, 25)
    }
}
