import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// The disk tier's edges: a folder replaced behind an instance's back, a folder it must not trust,
/// oversized or damaged files, the order of use across writes, `persistCacheToDisk` racing a
/// remove, another persist, or a newer file (also in a batch that listed the folder), and the
/// files' names.
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

    func testNameIsSixteenLowercaseHexDigitsForEveryNumber() {
        var ids: [UInt64] = [0, 1, 9, 10, 15, 16, 0xa, 0xf0, UInt64.max, UInt64.max - 1, 1 << 63, (1 << 63) - 1,
                             0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 { ids.append(generator.next()) }
        for shift in 0..<64 { ids.append(1 << UInt64(shift)) }
        for id in ids {
            XCTAssertEqual(ImageCache.DiskStore.name(id), String(format: "%016llx", id))
            let name = ImageCache.DiskStore.name(id)
            var bytes = Array(name.utf8) + [0]
            let back = bytes.withUnsafeMutableBytes { ImageCache.DiskStore.imageID(UnsafeRawBufferPointer($0)) }
            XCTAssertEqual(back, id)
        }
    }

    func testTemporaryNameIsAsInterpolationMadeItAndItsPidReadsBack() {
        let name = ImageCache.DiskStore.name(UInt64.max)
        for writer: Int32 in [0, 1, 12_345, Int32.max, getpid()] {
            for number: UInt64 in [0, 1, 9, 10, UInt64(UInt32.max), UInt64.max] {
                let made = ImageCache.DiskStore.temporaryName(name, writer: writer, number: number)
                XCTAssertEqual(made, ".\(name).\(writer).\(number).tmp")
                XCTAssertTrue(ImageCache.DiskStore.isTemporaryName(made))
                XCTAssertEqual(made.split(separator: ".").dropFirst().first.flatMap { Int32($0) }, writer)
            }
        }
    }

    /// The folder deleted and made again by another instance, which writes newer files there: a
    /// batch that lists the folder must list the new one, and a write whose folder went away must
    /// not replace a newer file in the new one.
    func testAPersistAfterTheFolderWasMadeAgainLeavesItsNewerFilesAlone() throws {
        let clock = TestClock()
        let urls = (0..<20).map { serve("/remade\($0).png", "photo.png") }
        let first = makeCache("shared", clock: clock)
        for url in urls { XCTAssertNotNil(fetchAndWait(first, url)) }
        first.persistCacheToDisk()  // `first` holds the folder open, and has counted its files
        first.diskQueue.sync { first.disk.sweep?.cancel() }  // no sweep reopens the folder meanwhile
        XCTAssertEqual(first.statistics().diskFiles, 20)
        try FileManager.default.removeItem(at: first.folder)
        clock.advance(10)
        let second = makeCache("shared", clock: clock)  // same folder, made again, later
        let newer = fixture("photo.jpg")
        for url in urls { try second.store(newer, for: url.absoluteString) }
        second.drainDisk()
        first.persistCacheToDisk()
        let replaced = urls.filter { (try? Data(contentsOf: fileURL(first, for: $0))) != newer }
        // The files after the first: a listing of the deleted folder would find none of them.
        XCTAssertEqual(replaced.dropFirst().map(\.path), [], "newer files replaced by older copies")
        // The first: its write found the folder gone, and wrote again in the new one.
        XCTAssertEqual(replaced.prefix(1).map(\.path), [], "the first newer file replaced by an older copy")
    }

    /// One image in memory whole and at a size: two items of one file in one batch, which a listing
    /// finds missing for both: the file is written once and counted once.
    func testAPersistOfImagesAtTwoSizesCountsEachFileOnce() {
        let urls = (0..<16).map { serve("/sized\($0).png") }
        let cache = makeCache()
        for url in urls {
            XCTAssertNotNil(fetchAndWait(cache, url))
            let done = expectation(description: "sized \(url)")
            cache.fetch(ImageCache.Request(url: url, size: CGSize(width: 10, height: 10))) { _, image in
                XCTAssertNotNil(image)
                done.fulfill()
            }
            wait(for: [done], timeout: 10)
        }
        XCTAssertEqual(cache.memoryURLs.count, 32, "\(cache.memoryURLs)")
        cache.reduceDiskCache(maxImageCount: 0)
        XCTAssertEqual(cache.statistics().diskFiles, 0)
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 16, "files in the folder")
        let counted = cache.statistics()
        XCTAssertEqual(counted.diskFiles, 16, "files counted")
        XCTAssertEqual(counted.diskBytes, 16 * fixture("photo.png").count, "bytes counted")
    }

    /// The same double count against `diskMaxBytes`: a folder within its limit has images deleted.
    func testAPersistOfImagesAtTwoSizesWithinTheDiskLimitDeletesNothing() {
        let urls = (0..<16).map { serve("/limit\($0).png") }
        let cache = makeCache()
        for url in urls {
            XCTAssertNotNil(fetchAndWait(cache, url))
            let done = expectation(description: "sized \(url)")
            cache.fetch(ImageCache.Request(url: url, size: CGSize(width: 10, height: 10))) { _, _ in done.fulfill() }
            wait(for: [done], timeout: 10)
        }
        cache.reduceDiskCache(maxImageCount: 0)
        cache.diskMaxBytes = 16 * fixture("photo.png").count + 100  // room for all sixteen
        cache.persistCacheToDisk()
        XCTAssertEqual(cache.diskCount, 16, "images deleted from a folder within its limit")
    }

    /// Another instance (or process) writes newer files while a batch it listed before goes on: none
    /// of them is replaced. Made deterministic by holding the cache's lock, which the batch's first
    /// write takes to tell its count (`DiskStore.count` -> `diskCounted`), after the listing.
    func testAPersistLeavesAFileAnotherInstanceWroteDuringTheBatchAlone() throws {
        let clock = TestClock()
        let urls = (0..<20).map { serve("/during\($0).png", "photo.png") }
        let first = makeCache("shared", clock: clock)
        for url in urls { XCTAssertNotNil(fetchAndWait(first, url)) }
        first.reduceDiskCache(maxImageCount: 0)  // counted: 0 files, so `keep` lists the folder
        first.diskQueue.sync { first.disk.sweep?.cancel() }
        clock.advance(10)
        let second = makeCache("shared", clock: clock)  // same folder, later
        let newer = fixture("photo.jpg")

        let diskBlocked = DispatchSemaphore(value: 0)
        first.diskQueue.async { diskBlocked.wait() }
        let persisted = expectation(description: "persisted")
        first.persistCacheToDisk { persisted.fulfill() }  // queued behind the block
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread.detachNewThread { first.locked { _ in holding.signal(); release.wait() } }
        holding.wait()
        diskBlocked.signal()  // `keep` lists the folder, writes urls[0], then waits for the lock
        XCTAssertTrue(eventually { FileManager.default.fileExists(atPath: self.fileURL(first, for: urls[0]).path) })
        for url in urls.dropFirst() { try second.store(newer, for: url.absoluteString) }
        second.drainDisk()
        release.signal()
        wait(for: [persisted], timeout: 10)
        let replaced = urls.dropFirst().filter { (try? Data(contentsOf: fileURL(first, for: $0))) != newer }
        XCTAssertEqual(replaced.map(\.path), [], "newer files replaced by older copies")
    }
}
