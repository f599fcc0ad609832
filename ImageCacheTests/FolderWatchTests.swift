import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A miss's look-up knows an absent name from the folder's watch (`FolderWatch`) without opening
/// it, and still finds every file another instance (as another process would) writes there.
final class FolderWatchTests: CacheTestCase {
    /// Lists `cache`'s watched folder now (as its disk queue does 2 s after its first look-up), and
    /// returns whether the watch knows `url`'s file absent then; nil if it has no watch.
    private func knowsAbsent(_ cache: ImageCache, _ url: URL) -> Bool? {
        cache.diskQueue.sync {
            guard let watch = cache.disk.folderWatch else { return nil }
            cache.disk.listWatched(watch)
            return watch.knowsAbsent(ImageCache.DiskStore.fileID(for: url.absoluteString))
        }
    }

    func testAFileAnotherInstanceWritesAfterTheListingIsFoundOnDisk() throws {
        #if !canImport(Glibc)
        throw XCTSkip("the folder's watch is inotify's (Linux)")
        #else
        // Given: a cache whose folder exists, is watched and listed, and holds one image.
        let (kept, lookedUp, later) = (serve("/kept.png"), serve("/looked-up.png"), serve("/later.png"))
        let first = makeCache("shared")
        XCTAssertNotNil(fetchAndWait(first, kept))
        first.drainDisk()
        XCTAssertNotNil(fetchAndWait(first, lookedUp))  // a look-up in a folder that exists: watched
        first.drainDisk()
        XCTAssertEqual(knowsAbsent(first, later), true, "a name never in the folder is known absent")
        XCTAssertEqual(knowsAbsent(first, kept), false, "a listed name is not")

        // When: another instance on the same folder downloads and writes `later`.
        let second = makeCache("shared")
        XCTAssertNotNil(fetchAndWait(second, later))
        second.drainDisk()

        // Then: the first one no longer knows it absent, and serves it from disk.
        XCTAssertEqual(knowsAbsent(first, later), false, "the new name came through the watch")
        guard case .success(let fetched)? = result(first, later) else { return XCTFail("no image for \(later)") }
        XCTAssertEqual(fetched.source, .disk)
        XCTAssertEqual(server.requestCount("/later.png"), 1, "downloaded once, by the second instance")
        #endif
    }

    func testAReplacedFolderIsStillNoticedWhenTheWatchKnowsANameAbsent() throws {
        #if !canImport(Glibc)
        throw XCTSkip("the folder's watch is inotify's (Linux)")
        #else
        // Given: a watched and listed folder.
        let (kept, lookedUp, planted) = (serve("/kept.png"), serve("/looked-up.png"), serve("/planted.png"))
        let cache = makeCache("replaced")
        XCTAssertNotNil(fetchAndWait(cache, kept))
        cache.drainDisk()
        XCTAssertNotNil(fetchAndWait(cache, lookedUp))
        cache.drainDisk()
        XCTAssertEqual(knowsAbsent(cache, planted), true)

        // When: the folder is replaced by one that holds `planted`'s file (written by another instance).
        let folder = cache.disk.folder
        let aside = folder.deletingLastPathComponent().appendingPathComponent("aside")
        try FileManager.default.moveItem(at: folder, to: aside)
        let other = makeCache("other")
        XCTAssertNotNil(fetchAndWait(other, planted))
        other.drainDisk()
        try FileManager.default.moveItem(at: other.disk.folder, to: folder)

        // Then: the look-up notices the new folder and finds the file there.
        guard case .success(let fetched)? = result(cache, planted) else { return XCTFail("no image for \(planted)") }
        XCTAssertEqual(fetched.source, .disk)
        XCTAssertEqual(server.requestCount("/planted.png"), 1)
        #endif
    }

    /// Deleted rather than moved: inotify tells nothing of a folder deleted while the cache holds it
    /// open (its `IN_DELETE_SELF` waits for the last descriptor), so the look-up's own check finds it.
    func testADeletedAndRemadeFolderIsNoticedUnderALiveWatch() throws {
        #if !canImport(Glibc)
        throw XCTSkip("the folder's watch is inotify's (Linux)")
        #else
        // Given: a watched and listed folder, whose watch knows `planted`'s name absent.
        let (kept, lookedUp, planted) = (serve("/kept.png"), serve("/looked-up.png"), serve("/planted.png"))
        let cache = makeCache("remade")
        XCTAssertNotNil(fetchAndWait(cache, kept))
        cache.drainDisk()
        XCTAssertNotNil(fetchAndWait(cache, lookedUp))
        cache.drainDisk()
        XCTAssertEqual(knowsAbsent(cache, planted), true)

        // When: the folder is deleted, and made again by another instance that writes `planted`.
        try FileManager.default.removeItem(at: cache.disk.folder)
        let other = makeCache("remade")
        XCTAssertNotNil(fetchAndWait(other, planted))
        other.drainDisk()
        let id = ImageCache.DiskStore.fileID(for: planted.absoluteString)
        XCTAssertEqual(cache.diskQueue.sync { cache.disk.folderWatch?.knowsAbsent(id) }, true,
                       "the watch heard nothing: it is live, and knows the name absent")

        // Then: the look-up notices the new folder and finds the file there.
        guard case .success(let fetched)? = result(cache, planted) else { return XCTFail("no image for \(planted)") }
        XCTAssertEqual(fetched.source, .disk)
        XCTAssertEqual(server.requestCount("/planted.png"), 1)
        #endif
    }

    func testANoStoreAnswerStillRemovesAFileAnotherInstanceWroteAfterTheLookUp() throws {
        #if !canImport(Glibc)
        throw XCTSkip("the folder's watch is inotify's (Linux)")
        #else
        // Given: a watched and listed folder, and a download whose look-up found no file, answered
        // no-store once the test says so.
        let (kept, lookedUp) = (serve("/kept.png"), serve("/looked-up.png"))
        let cache = makeCache("shared")
        XCTAssertNotNil(fetchAndWait(cache, kept))
        cache.drainDisk()
        XCTAssertNotNil(fetchAndWait(cache, lookedUp))
        cache.drainDisk()
        let gate = Gate(), photo = fixture("photo.png")
        server.handler = { path in
            guard path == "/no-store.png" else { return nil }
            gate.wait()
            var response = LoopbackServer.Response.ok(photo)
            response.headers["Cache-Control"] = "no-store"
            return response
        }
        let url = server.url("/no-store.png")
        XCTAssertEqual(knowsAbsent(cache, url), true)
        let done = expectation(description: "the no-store answer")
        cache.fetch(url) { _, _ in done.fulfill() }
        XCTAssertTrue(server.waitForRequests("/no-store.png", count: 1, timeout: 10))

        // When: another instance on the folder stores the key's file, then the answer says no-store.
        let other = makeCache("shared")
        try other.store(photo, for: url.absoluteString)
        other.drainDisk()
        let file = fileURL(cache, for: url).path
        XCTAssertTrue(FileManager.default.fileExists(atPath: file))
        gate.open()
        wait(for: [done], timeout: 10)
        cache.drainDisk()

        // Then: the key keeps no file: the watch told of the other's.
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
        #endif
    }
}
