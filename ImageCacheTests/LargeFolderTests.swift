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
}
