import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Issue 24: a launch with a big folder. Settings change at launch without a scan ahead of the
/// first lookups, and the figures of `statistics()` cost no listing.
final class LargeFolderTests: CacheTestCase {
    private func fetchSource(_ cache: ImageCache, _ url: URL) -> ImageCache.Source? {
        let done = expectation(description: "result")
        let box = Locked<ImageCache.Source?>(nil)
        cache.fetch(url) { box.value = try? $0.get().source; done.fulfill() }
        wait(for: [done], timeout: 10)
        return box.value
    }

    func testSettingDiskMaxBytesAtLaunchLeavesTheFirstLookupToTheDisk() throws {
        // Given two images on disk from a previous launch, `old` used before `recent`
        let old = serve("/old.png"), recent = serve("/recent.png")
        populate([old, recent])
        server.resetCounters()

        // When a new launch (a second later) sets a limit that only one of them fits, then fetches the older
        let clock = TestClock()
        clock.advance(1)
        let cache = makeCache(clock: clock)
        cache.diskMaxBytes = fixture("photo.png").count + 100
        let source = fetchSource(cache, old)

        // Then it comes from disk: no scan deleted it ahead of the lookup
        XCTAssertEqual(source, .disk)
        XCTAssertEqual(server.requestCount("/old.png"), 0)
        // And the sweep applies the limit to what is least recently used by then
        cache.waitForSweep()
        XCTAssertEqual(cache.diskCount, 1)
        XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: old).path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: recent).path))
    }

    /// A folder of `count` small image files made with POSIX writes (downloads would take minutes):
    /// file `i` stands for `url(i)`, was downloaded now and last used `count - i` seconds ago.
    private func makeFolder(_ cache: ImageCache, count: Int) throws -> Data {
        let image = Data(repeating: 7, count: 100)  // what a scan reads is the file's size, not its bytes
        try FileManager.default.createDirectory(at: cache.folder, withIntermediateDirectories: true)
        let directory = open(cache.folder.path, O_RDONLY | O_DIRECTORY)
        defer { close(directory) }
        let now = Int(Date().timeIntervalSince1970)
        for i in 0..<count {
            let fd = openat(directory, ImageCache.diskFileName(for: url(i)), O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
            _ = image.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            var dates = [timespec(tv_sec: now - count + i, tv_nsec: 0), timespec(tv_sec: now, tv_nsec: 0)]
            futimens(fd, &dates)
            close(fd)
        }
        return image
    }

    /// Puts this test's folder on a memory file system where there is one: creating 100,000 files
    /// on this machine's ext4 takes 5-10 s.
    private func useMemoryFileSystem() {
        var info = stat()
        if stat("/dev/shm", &info) == 0, info.st_mode & S_IFMT == S_IFDIR, access("/dev/shm", W_OK) == 0 {
            directory = URL(fileURLWithPath: "/dev/shm", isDirectory: true).appendingPathComponent("ImageCacheTests-\(UUID().uuidString)")
        }
    }

    private func url(_ i: Int) -> URL { server.url("/big/\(i).png") }

    func testAScanOfOneHundredThousandFilesCountsThemKeepsTheMostRecentlyUsedAndSweepsLeftOvers() throws {
        // Given 100,000 image files, a crash's temporary file, a live writer's, and a file of another name
        useMemoryFileSystem()
        let cache = makeCache()
        let count = 100_000
        _ = try makeFolder(cache, count: count)
        let dead = ".\(ImageCache.diskFileName(for: url(0))).999999999.1.tmp"
        let live = ".\(ImageCache.diskFileName(for: url(1))).\(getpid()).2.tmp"
        for name in [dead, live, "notes.txt"] {
            XCTAssertTrue(FileManager.default.createFile(atPath: cache.folder.appendingPathComponent(name).path, contents: Data("x".utf8)))
        }

        // When the exact statistics are asked for, and then the disk is reduced to 1,000 images
        let before = exactStatistics(cache)
        cache.reduceDiskCache(maxImageCount: 1_000)

        // Then the 1,000 most recently used are left, with the live writer's file and the other name
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: cache.folder.path))
        XCTAssertEqual(left.count, 1_000 + 2)
        XCTAssertEqual(left, Set((count - 1_000..<count).map { ImageCache.diskFileName(for: url($0)) } + [live, "notes.txt"]))
        // And the statistics counted every image file before, and know what is left after
        XCTAssertEqual(before.diskFiles, count)
        XCTAssertEqual(before.diskBytes, 100 * count)
        XCTAssertEqual(cache.statistics().diskFiles, 1_000)
        XCTAssertEqual(cache.statistics().diskBytes, 100 * 1_000)
    }

    func testStatisticsNeverWaitForTheDisk() {
        // Given a disk queue that is held up
        let cache = makeCache()
        let gate = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: gate)
        defer { gate.signal() }

        // When statistics are asked for
        let answered = expectation(description: "statistics")
        DispatchQueue.global().async {
            _ = cache.statistics()
            answered.fulfill()
        }

        // Then they come without the disk queue
        wait(for: [answered], timeout: 10)
    }

    func testStatisticsCountWritesAndDeletesAndTheExactFormCountsTheFolder() throws {
        // Given three images stored by this instance, one of them removed again
        let cache = makeCache()
        let image = fixture("photo.png")
        for key in ["a", "b", "c"] { try cache.store(image, for: key) }
        cache.remove(key: "b")
        cache.drainDisk()
        let approximate = cache.statistics()
        XCTAssertEqual(approximate.diskFiles, 2)
        XCTAssertEqual(approximate.diskBytes, 2 * image.count)

        // When another instance on the folder writes one more
        let other = makeCache()
        try other.store(image, for: "e")
        other.drainDisk()

        // Then the quick figures know only this instance's writes, and the exact form counts them all, on the callback queue
        XCTAssertEqual(cache.statistics().diskFiles, 2)
        let done = expectation(description: "exact")
        let exact = Locked(ImageCache.Statistics())
        cache.statistics { stats in
            dispatchPrecondition(condition: .onQueue(self.callbacks))
            exact.value = stats
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(exact.value.diskFiles, 3)
        XCTAssertEqual(exact.value.diskBytes, 3 * image.count)
        XCTAssertEqual(cache.statistics().diskFiles, 3, "later figures start from the count")
    }
}
