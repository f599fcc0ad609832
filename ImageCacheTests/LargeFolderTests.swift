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

    func testAScanOfOneHundredThousandFilesKeepsTheMostRecentlyUsedAndSweepsLeftOvers() throws {
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

        // When the disk is reduced to 1,000 images
        cache.reduceDiskCache(maxImageCount: 1_000)

        // Then the 1,000 most recently used are left, with the live writer's file and the other name
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: cache.folder.path))
        XCTAssertEqual(left.count, 1_000 + 2)
        XCTAssertEqual(left, Set((count - 1_000..<count).map { ImageCache.diskFileName(for: url($0)) } + [live, "notes.txt"]))
    }
}
