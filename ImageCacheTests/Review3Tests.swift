import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Regression tests for the third review (one deadline timer, the disk-tier refactor, the sweep 2 s
/// after the first lookup).
final class Review3Tests: CacheTestCase {
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
