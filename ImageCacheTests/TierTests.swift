import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The memory and disk tiers, time to live, persistence and size control.
final class TierTests: CacheTestCase {
    // MARK: Memory

    func testEvictsTheLeastRecentlyUsedTenPercentWhenTheCapIsReached() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 20
        let urls = (0..<20).map { serve("/m\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertEqual(cache.memoryCount, 20)
        // Use the two oldest, so that m2 and m3 become the least recently used.
        XCTAssertNotNil(cache.peek(urls[0]))
        XCTAssertNotNil(fetchAndWait(cache, urls[1]))

        XCTAssertNotNil(fetchAndWait(cache, serve("/new.png")))

        // 10% of 20 left in one batch: the two least recently used.
        XCTAssertEqual(cache.memoryCount, 19)
        let inMemory = Set(cache.memoryURLs)
        XCTAssertFalse(inMemory.contains(urls[2].absoluteString))
        XCTAssertFalse(inMemory.contains(urls[3].absoluteString))
        XCTAssertTrue(inMemory.contains(urls[0].absoluteString))
        XCTAssertTrue(inMemory.contains(urls[1].absoluteString))
        assertInvariants(cache)

        // The evicted images are on disk: a new instance finds them without the network.
        cache.persistCacheToDisk()
        let before = server.totalRequests
        let relaunched = makeCache()
        XCTAssertNotNil(fetchAndWait(relaunched, urls[2]))
        XCTAssertNotNil(fetchAndWait(relaunched, urls[3]))
        XCTAssertEqual(server.totalRequests, before)
    }

    /// Memory evicts in CLOCK order (see `MemoryList`): a use sets a bit, and eviction gives an
    /// entry whose bit is set a second pass.
    func testAnEntryUsedSinceTheLastEvictionSurvivesTheNextBatch() throws {
        // Given a cap of 20 (batches of 2), filled in the order k0...k19
        let cache = makeCache()
        cache.imageMemoryMaxCount = 20
        for i in 0..<20 { try cache.store(fixture("photo.png"), for: "k\(i)") }
        // When the three oldest are used, and one more comes in
        for i in 0..<3 { XCTAssertNotNil(cache.peek(key: "k\(i)")) }
        try cache.store(fixture("photo.png"), for: "k20")
        // Then the batch is the two oldest that were not used
        XCTAssertEqual(Set(cache.memoryURLs), Set((0..<21).map { "k\($0)" }).subtracting(["k3", "k4"]))

        // And when the oldest left is used through a fetch, and two more come in (the batch left 19)
        XCTAssertNotNil(fetchAndWait(cache, URL(string: "http://127.0.0.1:1/k5")!, key: "k5"))
        try cache.store(fixture("photo.png"), for: "k21")
        try cache.store(fixture("photo.png"), for: "k22")
        // Then it outlives the next two, and the three used before the last batch stay too
        XCTAssertEqual(Set(cache.memoryURLs), Set((0..<23).map { "k\($0)" }).subtracting(["k3", "k4", "k6", "k7"]))
        assertInvariants(cache)
    }

    func testAnEntryNeverUsedGoesFirstWhereverItStands() throws {
        // Given ten entries, all used but k7, the newest but two
        let cache = makeCache()
        cache.imageMemoryMaxCount = 10
        for i in 0..<10 { try cache.store(fixture("photo.png"), for: "k\(i)") }
        for i in 0..<10 where i != 7 { XCTAssertNotNil(cache.peek(key: "k\(i)")) }
        // When one more comes in
        try cache.store(fixture("photo.png"), for: "new")
        // Then k7 is the one that leaves, though six were older
        XCTAssertEqual(Set(cache.memoryURLs), Set(["new"] + (0..<10).filter { $0 != 7 }.map { "k\($0)" }))
        assertInvariants(cache)
    }

    func testANewEntryOutlivesItsOwnEvictionWhenEveryOlderOneWasUsed() throws {
        // Given ten entries, every one used
        let cache = makeCache()
        cache.imageMemoryMaxCount = 10
        for i in 0..<10 { try cache.store(fixture("photo.png"), for: "k\(i)") }
        for i in 0..<10 { XCTAssertNotNil(cache.peek(key: "k\(i)")) }
        // When one more comes in
        try cache.store(fixture("photo.png"), for: "new")
        // Then every old entry had its second pass, the oldest left, and the new one stays
        XCTAssertEqual(cache.memoryURLs, (1..<10).map { "k\($0)" } + ["new"], "least recently used first")
        XCTAssertNotNil(cache.peek(key: "new"))
        assertInvariants(cache)
    }

    func testCapOfOneEvictsOneAtATime() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 0
        XCTAssertEqual(cache.imageMemoryMaxCount, 1, "clamped to 1")
        let a = serve("/a.png"), b = serve("/b.png")
        XCTAssertNotNil(fetchAndWait(cache, a))
        XCTAssertNotNil(fetchAndWait(cache, b))
        XCTAssertEqual(cache.memoryURLs, [b.absoluteString])
    }

    func testLoweringTheCapEvictsAtOnce() {
        let cache = makeCache()
        let urls = (0..<10).map { serve("/l\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.imageMemoryMaxCount = 4
        XCTAssertEqual(cache.memoryURLs, urls.suffix(4).map(\.absoluteString))
        assertInvariants(cache)
    }

    func testSecondChanceServesAnEvictedImageAndPersistWritesIt() {
        // Given a cap of 20: the 21st image evicts a batch of 2 (a tenth), and the second chance
        // may keep what memory leaves free under the cap: one image, the batch's most recent.
        let cache = makeCache()
        cache.imageMemoryMaxCount = 20
        let urls = (0..<21).map { serve("/sc\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertFalse(cache.memoryURLs.contains(urls[1].absoluteString), "evicted")
        cache.reduceDiskCache(maxImageCount: 0)
        // The disk is empty; memory, second chance included, is not changed by reduceDiskCache.
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: urls[1]).path))
        XCTAssertNil(cache.peek(urls[0]), "no room left under the cap for the batch's older image")
        XCTAssertEqual(cache.peek(urls[1])?.data, fixture("photo.png"), "back from the second chance")
        cache.persistCacheToDisk()
        XCTAssertEqual(try? Data(contentsOf: fileURL(cache, for: urls[1])), fixture("photo.png"), "persist writes it again")
        XCTAssertEqual(server.requestCount("/sc1.png"), 1)

        let more = (0..<21).map { serve("/more\($0).png") }
        for url in more { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.remove(more[1])
        XCTAssertNil(cache.peek(more[1]), "remove clears the second chance")
        assertInvariants(cache)
    }

    func testPeekReturnsOnlyWhatIsInMemoryAndNeverFetches() {
        let cache = makeCache()
        let url = serve("/peek.png")
        XCTAssertNil(cache.peek(url))
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(server.requestCount("/peek.png"), 0, "peek never starts a download")
        XCTAssertFalse(cache.fetching(url))

        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(cache.peek(url)?.data, fixture("photo.png"))

        // On disk but not in memory: peek does not read the disk.
        cache.persistCacheToDisk()
        let relaunched = makeCache()
        XCTAssertNil(relaunched.peek(url))
        XCTAssertEqual(relaunched.memoryCount, 0)
    }

    func testPeekCountsAsAUse() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 10
        let urls = (0..<10).map { serve("/p\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertNotNil(cache.peek(urls[0]))
        XCTAssertEqual(cache.memoryURLs.last, urls[0].absoluteString)
        XCTAssertNotNil(fetchAndWait(cache, serve("/q.png")))
        XCTAssertFalse(cache.memoryURLs.contains(urls[1].absoluteString), "p1 was the least recently used")
        XCTAssertTrue(cache.memoryURLs.contains(urls[0].absoluteString))
    }

    func testEverythingPeekCanReturnIsWithinTheCountCap() {
        // Given a cap of 10 and 30 images fetched (the second chance is part of memory's cap)
        let cache = makeCache()
        cache.imageMemoryMaxCount = 10
        let urls = (0..<30).map { serve("/cap\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        // Then at most 10 are peekable (most recent first, so that a second chance coming back
        // into memory cannot push out one not yet counted)
        XCTAssertEqual(urls.reversed().filter { cache.peek($0) != nil }.count, 10)
        assertInvariants(cache)
    }

    func testPurgeMemoryEmptiesMemoryAndKeepsDisk() {
        let cache = makeCache()
        let urls = (0..<5).map { serve("/purge\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.purgeMemory()
        XCTAssertEqual(cache.memoryCount, 0)
        for url in urls { XCTAssertNil(cache.peek(url)) }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        XCTAssertEqual(server.totalRequests, 5, "served from disk after the purge")
        assertInvariants(cache)
    }

    // MARK: Disk

    func testFileNamesAreAStableHashOfTheURL() {
        // FNV-1a 64 of the absolute string, pinned: the same on every launch and platform.
        XCTAssertEqual(ImageCache.diskFileName(for: URL(string: "https://example.com/images/cat.png")!), "b477175cfd4219a8")
        XCTAssertEqual(ImageCache.diskFileName(for: URL(string: "http://127.0.0.1:8080/a%20b.png?x=1#frag")!), "3a1822c853695b80")
    }

    func testDiskKeepsTheOriginalBytesUnderTheStableName() throws {
        let cache = makeCache()
        for name in ["photo.jpg", "palette.gif", "lossy.webp"] {
            let url = serve("/\(name)", name)
            XCTAssertNotNil(fetchAndWait(cache, url))
        }
        cache.persistCacheToDisk()
        for name in ["photo.jpg", "palette.gif", "lossy.webp"] {
            let file = fileURL(cache, for: server.url("/\(name)"))
            XCTAssertEqual(try Data(contentsOf: file), fixture(name))
        }
        XCTAssertEqual(cache.folder, directory.appendingPathComponent("cache", isDirectory: true))
    }

    func testFilesAreReadableByTheOwnerOnly() throws {
        let cache = makeCache()
        let url = serve("/private.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.persistCacheToDisk()
        let fileAttributes = try FileManager.default.attributesOfItem(atPath: fileURL(cache, for: url).path)
        XCTAssertEqual((fileAttributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let folderAttributes = try FileManager.default.attributesOfItem(atPath: cache.folder.path)
        XCTAssertEqual((folderAttributes[.posixPermissions] as? NSNumber)?.intValue, 0o700)
    }

    func testInitTouchesNothingOnDisk() {
        let cache = makeCache()
        XCTAssertNil(cache.peek(server.url("/x.png")))
        XCTAssertFalse(FileManager.default.fileExists(atPath: cache.folder.path))
    }

    func testANewInstanceFindsEverythingThePreviousOnePersisted() {
        let urls = (0..<10).map { serve("/keep\($0).png", $0 % 2 == 0 ? "photo.png" : "photo.jpg") }
        do {
            let first = makeCache()
            for url in urls { XCTAssertNotNil(fetchAndWait(first, url)) }
            first.persistCacheToDisk()
        }
        let second = makeCache()
        for (i, url) in urls.enumerated() {
            XCTAssertEqual(fetchAndWait(second, url)?.data, fixture(i % 2 == 0 ? "photo.png" : "photo.jpg"))
        }
        XCTAssertEqual(server.totalRequests, 10, "the second instance made no request")
        assertInvariants(second)
    }

    func testInstancesWithDifferentNamesShareNothing() {
        let url = serve("/one.png")
        let a = makeCache("a"), b = makeCache("b")
        XCTAssertNotNil(fetchAndWait(a, url))
        a.persistCacheToDisk()
        XCTAssertNotNil(fetchAndWait(b, url))
        XCTAssertEqual(server.requestCount("/one.png"), 2)
        XCTAssertNotEqual(a.folder, b.folder)
    }

    func testNamesCannotEscapeTheParentFolder() {
        for name in ["../escape", "..", ".", "a/b", ""] {
            let cache = makeCache(name)
            XCTAssertEqual(cache.folder.deletingLastPathComponent().standardizedFileURL.path,
                           directory.standardizedFileURL.path, name)
            XCTAssertFalse([".", ".."].contains(cache.folder.lastPathComponent))
        }
        XCTAssertNotEqual(makeCache("a/b").folder, makeCache("a_b").folder)
    }

    func testMissingTruncatedOrGarbageFilesAreMissesAndRefetched() throws {
        let names = ["missing", "truncated", "garbage", "empty"]
        let urls = names.map { serve("/\($0).png") }
        do {
            let first = makeCache()
            for url in urls { XCTAssertNotNil(fetchAndWait(first, url)) }
            first.persistCacheToDisk()
        }
        let files = urls.map { directory.appendingPathComponent("cache").appendingPathComponent(ImageCache.diskFileName(for: $0)) }
        try FileManager.default.removeItem(at: files[0])
        try fixture("photo.png").prefix(100).write(to: files[1])
        try Data(repeating: 0x42, count: fixture("photo.png").count).write(to: files[2])
        try Data().write(to: files[3])

        let second = makeCache()
        for url in urls { XCTAssertEqual(fetchAndWait(second, url)?.data, fixture("photo.png")) }
        XCTAssertEqual(server.totalRequests, 8, "each damaged file was fetched again")
        XCTAssertFalse(urls.contains { second.failedToFetch($0) })
        second.persistCacheToDisk()
        for file in files { XCTAssertEqual(try Data(contentsOf: file), fixture("photo.png")) }
        assertInvariants(second)
    }

    func testRandomFilesInTheFolderAreMissesAndNeverCrashALookup() throws {
        let url = serve("/r.png")
        var generator = SplitMix(seed: 5)
        let folder = directory.appendingPathComponent("cache")
        let name = ImageCache.diskFileName(for: url)
        for round in 0..<30 {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let junk = { (count: Int) in Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }) }
            // Random bytes under the image's own name, and under names the cache does not use.
            try junk(Int(generator.next() % 3000)).write(to: folder.appendingPathComponent(name))
            try junk(500).write(to: folder.appendingPathComponent(".index"))
            try junk(500).write(to: folder.appendingPathComponent("0123456789abcdef"))
            let cache = makeCache()
            XCTAssertEqual(fetchAndWait(cache, url)?.data, fixture("photo.png"), "round \(round)")
            cache.persistCacheToDisk()
            XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent(name)), fixture("photo.png"), "replaced")
            cache.removeAll()
        }
        XCTAssertEqual(server.requestCount("/r.png"), 30, "garbage is never served")
    }

    func testFilesOfTheOldIndexAreIgnoredAndItsImagesStillFound() throws {
        let url = serve("/upgrade.png")
        populate([url])
        let folder = directory.appendingPathComponent("cache")
        try Data("garbage\u{0}\u{1}".utf8).write(to: folder.appendingPathComponent(".index"))
        try Data("+\tnot\ta\trow\n-\n\u{FF}".utf8).write(to: folder.appendingPathComponent(".journal"))

        let second = makeCache()
        XCTAssertNotNil(fetchAndWait(second, url))
        XCTAssertEqual(server.totalRequests, 1, "served from the file the first instance wrote")
    }

    // MARK: Time to live

    func testTimeToLiveDefaultsAndClamps() {
        let cache = makeCache()
        XCTAssertEqual(cache.imageTimeToLive, 600)
        cache.imageTimeToLive = 0.2
        XCTAssertEqual(cache.imageTimeToLive, 1)
        XCTAssertEqual(cache.imageMemoryMaxCount, 100)
    }

    func testExpiredImagesAreNeverReturnedFromMemory() {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.imageTimeToLive = 60
        let url = serve("/ttl.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        clock.advance(59)
        XCTAssertNotNil(cache.peek(url))
        clock.advance(2)
        XCTAssertNil(cache.peek(url), "expired 60 s after download, even though it was used since")
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/ttl.png"), 2, "an expired image is downloaded again, not read from disk")
    }

    func testSecondChanceNeverServesAnExpiredImage() {
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        cache.imageMemoryMaxCount = 20
        let urls = (0..<21).map { serve("/exp\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }  // urls[1] goes to the second chance
        clock.advance(601)
        XCTAssertNil(cache.peek(urls[1]))
    }

    func testExpiryHoldsAcrossRelaunchesAndDeletesTheFiles() throws {
        let clock = TestClock()
        let url = serve("/old.png")
        let fresh = serve("/fresh.png")
        do {
            let first = makeCache(clock: clock)
            first.imageTimeToLive = 100
            XCTAssertNotNil(fetchAndWait(first, url))
            clock.advance(50)
            XCTAssertNotNil(fetchAndWait(first, fresh))
            first.persistCacheToDisk()
        }
        clock.advance(60)  // old.png is 110 s old, fresh.png 60 s
        let second = makeCache(clock: clock)
        second.imageTimeToLive = 100
        XCTAssertNotNil(fetchAndWait(second, fresh))
        XCTAssertEqual(server.requestCount("/fresh.png"), 1)
        second.waitForSweep()  // the sweep that follows the first lookup
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(second, for: url).path), "expired file deleted")
        XCTAssertNotNil(fetchAndWait(second, url))
        XCTAssertEqual(server.requestCount("/old.png"), 2)
        assertInvariants(second)
    }

    func testTimeToLiveWithTheRealClock() {
        let cache = makeCache()
        cache.imageTimeToLive = 1
        let url = serve("/real.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertNotNil(cache.peek(url))
        Thread.sleep(forTimeInterval: 1.2)
        XCTAssertNil(cache.peek(url))
    }

    // MARK: Persist and reduce

    func testPersistWritesEverythingInMemoryWithItsRow() {
        let cache = makeCache()
        let urls = (0..<6).map { serve("/persist\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.persistCacheToDisk()
        for url in urls { XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)) }
        XCTAssertEqual(cache.diskCount, 6)
        cache.persistCacheToDisk()  // nothing pending: returns at once
        XCTAssertEqual(cache.diskCount, 6)
        assertInvariants(cache)
    }

    func testReduceDiskCacheKeepsTheMostRecentlyUsed() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 4
        let urls = (0..<10).map { serve("/r\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        // r0 comes back from disk: now the most recent.
        XCTAssertNotNil(fetchAndWait(cache, urls[0]))
        cache.reduceDiskCache(maxImageCount: 3)
        XCTAssertEqual(cache.diskCount, 3)
        let kept = urls.filter { FileManager.default.fileExists(atPath: fileURL(cache, for: $0).path) }
        XCTAssertEqual(Set(kept), Set([urls[0], urls[9], urls[8]]))
        let visible = try? FileManager.default.contentsOfDirectory(at: cache.folder, includingPropertiesForKeys: nil,
                                                                   options: .skipsHiddenFiles)
        XCTAssertEqual(visible?.count, 3, "the folder shows exactly the images kept")
        assertInvariants(cache)

        cache.reduceDiskCache(maxImageCount: 0)
        XCTAssertEqual(cache.diskCount, 0)
        assertInvariants(cache)
    }

    func testRemoveAllEmptiesBothTiers() {
        let cache = makeCache()
        let url = serve("/gone.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.removeAll()
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(cache.diskCount, 0)
        let relaunched = makeCache()
        XCTAssertNotNil(fetchAndWait(relaunched, url))
        XCTAssertEqual(server.requestCount("/gone.png"), 2)
    }

    func testRemoveForgetsOneURLEverywhere() {
        let cache = makeCache()
        let a = serve("/a.png"), b = serve("/b.png")
        XCTAssertNotNil(fetchAndWait(cache, a))
        XCTAssertNotNil(fetchAndWait(cache, b))
        cache.remove(a)
        XCTAssertNil(cache.peek(a))
        XCTAssertNotNil(cache.peek(b))
        cache.persistCacheToDisk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: a).path))
        XCTAssertNotNil(fetchAndWait(cache, a))
        XCTAssertEqual(server.requestCount("/a.png"), 2)
    }

    func testRemoveInALaterLaunchHoldsAcrossTheNext() {
        let a = serve("/a.png"), b = serve("/b.png")
        populate([a, b])
        do {
            let second = makeCache()
            second.remove(a)
            second.persistCacheToDisk()
        }
        let third = makeCache()
        XCTAssertNotNil(fetchAndWait(third, a))
        XCTAssertNotNil(fetchAndWait(third, b))
        XCTAssertEqual(server.requestCount("/a.png"), 2)
        XCTAssertEqual(server.requestCount("/b.png"), 1)
    }
}
