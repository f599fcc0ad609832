import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The disk tier's edges: a folder replaced behind an instance's back, a folder it must not trust,
/// oversized or damaged files, the order of use across writes, and `persistCacheToDisk` racing a
/// remove, another persist, or a newer file.
final class DiskTierEdgeTests: CacheTestCase {
    /// A clock that parks the thread marked "gate" the first time that thread reads it after
    /// `arm()`: it holds `persistCacheToDisk` between its locked part and its disk work.
    private final class GateClock: @unchecked Sendable {
        private let lock = NSLock()
        private var armed = false
        let reached = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        func arm() { lock.withLock { armed = true } }
        func now() -> TimeInterval {
            if Thread.current.threadDictionary["gate"] != nil, lock.withLock({ defer { armed = false }; return armed }) {
                reached.signal()
                go.wait()
            }
            return Date().timeIntervalSince1970
        }
    }

    private func gatedCache() -> (ImageCache, GateClock) {
        let cache = makeCache()
        let gate = GateClock()
        cache.clock = { gate.now() }
        return (cache, gate)
    }

    private func onGateThread(_ body: @escaping () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            Thread.current.threadDictionary["gate"] = true
            body()
            done.signal()
        }
        thread.start()
        return done
    }

    func testAFolderDeletedAndMadeAgainByAnotherInstanceIsFollowed() throws {
        let a = makeCache(), b = makeCache()
        let first = serve("/first.png"), second = serve("/second.png")
        XCTAssertNotNil(fetchAndWait(a, first))
        a.persistCacheToDisk()  // `a` holds the folder open
        try FileManager.default.removeItem(at: a.folder)
        XCTAssertNotNil(fetchAndWait(b, second))
        b.persistCacheToDisk()  // `b` made the folder again; `a` has written nothing since
        XCTAssertNotNil(fetchAndWait(a, second))
        XCTAssertEqual(server.requestCount("/second.png"), 1, "`a` reads the new folder's file")
        a.removeAll()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: a.folder.path), [], "and empties the new folder")
    }

    func testAFolderOfAnotherUserIsNotUsed() throws {
        try XCTSkipUnless(geteuid() == 0, "needs root to give the folder away")
        let cache = makeCache()
        let events = Locked([String]())
        cache.onEvent = { event in if case .diskProblem(let text) = event { events.mutate { $0.append(text) } } }
        try FileManager.default.createDirectory(at: cache.folder, withIntermediateDirectories: true)
        XCTAssertEqual(chown(cache.folder.path, 65_534, 65_534), 0)
        let url = serve("/theirs.png")
        XCTAssertNotNil(fetchAndWait(cache, url), "served from the network all the same")
        cache.persistCacheToDisk()
        callbacks.sync {}
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cache.folder.path), [], "nothing written there")
        XCTAssertTrue(events.value.contains { $0.contains("belongs to another user") }, "\(events.value)")
    }

    func testAFileLargerThanMaxImageBytesIsAMiss() throws {
        let url = serve("/big.png")
        populate([url])
        let cache = makeCache()
        cache.maxImageBytes = fixture("photo.png").count + 100
        cache.maxDiskImageBytes = 0  // the larger of the two limits applies to a file
        let handle = try FileHandle(forWritingTo: fileURL(cache, for: url))
        handle.seekToEndOfFile()
        handle.write(Data(count: 1_000))  // bytes after IEND: a valid PNG, but over the limit
        handle.closeFile()
        XCTAssertEqual(fetchAndWait(cache, url)?.data, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/big.png"), 2, "fetched again rather than read")
    }

    func testAFileWithBytesAfterTheImageIsReadAsTheImageAlone() throws {
        let url = serve("/padded-on-disk.png")
        populate([url])
        let cache = makeCache()
        let handle = try FileHandle(forWritingTo: fileURL(cache, for: url))
        handle.seekToEndOfFile()
        handle.write(Data(repeating: 0xA5, count: 4_000))  // written by an older version, say
        handle.closeFile()

        XCTAssertEqual(fetchAndWait(cache, url)?.data, fixture("photo.png"))
        XCTAssertEqual(server.requestCount("/padded-on-disk.png"), 1, "read from disk")
        cache.persistCacheToDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(cache, for: url)), fixture("photo.png"), "and written again without them")
    }

    func testPersistWritesAgainAFileThatWasEmptied() throws {
        let cache = makeCache()
        let url = serve("/emptied.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.persistCacheToDisk()
        try Data().write(to: fileURL(cache, for: url))  // a fresh date, the wrong size
        cache.persistCacheToDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(cache, for: url)), fixture("photo.png"))
    }

    func testPersistRacingRemoveDoesNotBringTheImageBack() {
        let (cache, gate) = gatedCache()
        let url = serve("/u.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.reduceDiskCache(maxImageCount: 0)  // in memory, no longer on disk
        gate.arm()
        let done = onGateThread { cache.persistCacheToDisk() }
        gate.reached.wait()
        cache.remove(url)
        gate.go.signal()
        done.wait()
        cache.persistCacheToDisk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path))
        XCTAssertNotNil(fetchAndWait(cache, url))
        XCTAssertEqual(server.requestCount("/u.png"), 2, "the removed image was not served from disk")
    }

    func testPersistRacingRemoveAllLeavesTheDiskEmpty() {
        let (cache, gate) = gatedCache()
        let urls = (0..<3).map { serve("/ra\($0).png") }
        for url in urls { XCTAssertNotNil(fetchAndWait(cache, url)) }
        cache.reduceDiskCache(maxImageCount: 0)
        gate.arm()
        let done = onGateThread { cache.persistCacheToDisk() }
        gate.reached.wait()
        cache.removeAll()
        gate.go.signal()
        done.wait()
        XCTAssertEqual(cache.diskCount, 0)
    }

    func testConcurrentPersistsBothReturnWithTheImageOnDisk() {
        let (cache, gate) = gatedCache()
        let url = serve("/p.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.reduceDiskCache(maxImageCount: 0)
        gate.arm()
        let done = onGateThread { cache.persistCacheToDisk() }
        gate.reached.wait()
        cache.persistCacheToDisk()
        let onDisk = FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)
        gate.go.signal()
        done.wait()
        XCTAssertTrue(onDisk)
    }

    func testPersistNeverOverwritesANewerFileWithAnOlderCopy() throws {
        let clock = TestClock()
        let url = serve("/v.png", "photo.png")
        let first = makeCache("shared", clock: clock)
        XCTAssertNotNil(fetchAndWait(first, url))
        first.drainDisk()
        clock.advance(10)
        let second = makeCache("shared", clock: clock)  // same folder, later
        let newer = fixture("photo.jpg")
        try second.store(newer, for: url.absoluteString)
        second.drainDisk()
        first.persistCacheToDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(first, for: url)), newer, "the newer file was replaced by the older copy")
    }

    func testAPersistOfManyImagesListsTheFolderAndStillLooksAtTheFilesThere() throws {
        // Twenty images beside an empty folder: one listing instead of a look per image, which
        // must still leave a newer file alone and write again an emptied one.
        let clock = TestClock()
        let urls = (0..<20).map { serve("/batch\($0).png", "photo.png") }
        let first = makeCache("shared", clock: clock)
        for url in urls { XCTAssertNotNil(fetchAndWait(first, url)) }
        first.reduceDiskCache(maxImageCount: 0)
        XCTAssertEqual(first.diskCount, 0)
        clock.advance(10)
        let second = makeCache("shared", clock: clock)  // same folder, later
        let newer = fixture("photo.jpg")
        try second.store(newer, for: urls[3].absoluteString)
        second.drainDisk()
        try Data().write(to: fileURL(first, for: urls[5]))  // a fresh date, the wrong size
        first.persistCacheToDisk()
        XCTAssertEqual(try Data(contentsOf: fileURL(first, for: urls[3])), newer, "the newer file was replaced")
        for url in urls where url != urls[3] {
            XCTAssertEqual(try Data(contentsOf: fileURL(first, for: url)), fixture("photo.png"), url.path)
        }
    }

    func testAClockPastIntMaxSecondsStillWritesFiles() throws {
        // Where `Int` is 32 bits, `Int.max` seconds is in 2038; here it is 9.2e18 s. The file
        // system clamps such dates (ext4 stops in 2446), so the file may then be swept as expired
        // by the disk limit's first count: what matters is that writing neither traps nor fails.
        let cache = makeCache(clock: TestClock(1e19))
        let problems = Locked<[String]>([])
        cache.onEvent = { if case .diskProblem(let text) = $0 { problems.mutate { $0.append(text) } } }
        let url = serve("/future.png")
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.drainDisk()
        cache.persistCacheToDisk()
        let flushed = expectation(description: "events delivered")
        cache.callbackQueue.async { flushed.fulfill() }
        wait(for: [flushed], timeout: 5)
        XCTAssertEqual(problems.value, [], "the write succeeded")
    }

    func testAnImageWrittenAtEvictionKeepsItsPlaceInTheOrderOfUse() {
        let clock = TestClock()  // never moves: only the order of calls tells uses apart
        let cache = makeCache(clock: clock)
        cache.imageMemoryMaxCount = 2
        let a = serve("/a.png"), x = serve("/x.png"), b = serve("/b.png"), c = serve("/c.png"), d = serve("/d.png")
        XCTAssertNotNil(fetchAndWait(cache, a))
        XCTAssertNotNil(fetchAndWait(cache, x))
        cache.injectDiskWriteError(.ENOSPC)
        XCTAssertNotNil(fetchAndWait(cache, b))  // not written when it arrives
        cache.injectDiskWriteError(nil)
        XCTAssertNotNil(fetchAndWait(cache, c))
        XCTAssertNotNil(fetchAndWait(cache, d))  // b is evicted, and written then
        cache.reduceDiskCache(maxImageCount: 3)
        let kept = [a, x, b, c, d].filter { FileManager.default.fileExists(atPath: fileURL(cache, for: $0).path) }
        XCTAssertEqual(kept, [b, c, d])
    }

    func testALookUpRequestedAfterARemovalRunsAfterItEvenInABurst() throws {
        // Given an image on disk, and the disk queue held with the look-up of another key queued on
        // it, which the look-ups of a burst join
        let cache = makeCache()
        let (url, other) = (serve("/removed.png"), serve("/other.png"))
        XCTAssertNotNil(fetchAndWait(cache, url))
        cache.drainDisk()
        let hold = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: hold)
        let otherDone = expectation(description: "the other image")
        cache.fetch(other) { _ in otherDone.fulfill() }
        // When the image is removed, then fetched again in the same burst
        cache.remove(url)
        let done = expectation(description: "the image again")
        let got = Locked<ImageResult?>(nil)
        cache.fetch(url) { got.value = $0; done.fulfill() }
        hold.signal()
        wait(for: [done, otherDone], timeout: 10)
        // Then the removal ran before its look-up: the image came from the network again, not
        // from the file the removal deleted
        XCTAssertNotNil(try got.value?.get().value)
        XCTAssertEqual(server.requestCount("/removed.png"), 2)
    }
}
