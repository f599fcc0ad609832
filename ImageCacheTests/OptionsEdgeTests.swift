import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Per-load options at the edges (issue 40): the second chance, variants that may or may not use
/// the network, options joined to a shared download, a waiting completion with no file. A review
/// of the first options commit wrote them; each failed on it.
final class OptionsEdgeTests: CacheTestCase {
    private func load(_ cache: ImageCache, _ request: ImageCache.Request) -> ImageResult? {
        let done = expectation(description: "\(request)")
        let result = Locked<ImageResult?>(nil)
        cache.fetch(request) { received in
            result.value = received
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value
    }

    private func exists(_ cache: ImageCache, _ url: URL) -> Bool {
        cache.diskQueue.sync {}
        return FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)
    }

    private func wide(_ width: Int) -> ImageCache.Processor {
        let data = png(width: width)
        return ImageCache.Processor("wide\(width)") { _ in ImageCache.Image(data: data) }
    }

    /// notWrittenToDisk: "memory never writes it later". The second chance re-inserts the evicted
    /// entry without its `diskless` mark, so persistCacheToDisk (or the next eviction) writes it.
    func testANotWrittenEntryBackFromTheSecondChanceIsStillNeverWritten() throws {
        // Eviction by count takes a tenth of the cap at once; the second chance keeps what fits
        // beside memory: with a cap of 20, the second of two evicted stays on the shelf.
        let cache = makeCache()
        cache.imageMemoryMaxCount = 20
        XCTAssertNotNil(fetchAndWait(cache, serve("/filler-0.png")))  // evicted first, popped
        let url = serve("/private-again.png")
        XCTAssertNotNil(try XCTUnwrap(load(cache, ImageCache.Request(url: url, options: .notWrittenToDisk))).get().value)
        for index in 1...19 { XCTAssertNotNil(fetchAndWait(cache, serve("/filler-\(index).png"))) }
        XCTAssertNil(cache.memoryURLs.first { $0.contains("private-again") }, "evicted")
        XCTAssertFalse(exists(cache, url), "evicted, not written: fine")
        // A plain request gets it back from the second chance
        XCTAssertEqual(try XCTUnwrap(load(cache, ImageCache.Request(url: url))).get().source, .memory)
        cache.persistCacheToDisk()
        XCTAssertFalse(exists(cache, url), "a load asked never to write it, and memory wrote it")
    }

    /// A variant fetch with onlyFromCache, while a plain fetch of the same variant is under way,
    /// starts a second job under the same key: the first job is no longer current, and its fetch's
    /// completion never runs.
    func testAnOnlyFromCacheVariantFetchDoesNotStrandTheVariantFetchUnderWay() throws {
        let cache = makeCache()
        let network = Gate()
        serveBehind(network, prefix: "/strand")
        defer { network.open() }
        let url = server.url("/strand.png")
        let processors = [wide(1_234)]
        let first = expectation(description: "the first variant fetch")
        let firstResult = Locked<ImageResult?>(nil)
        cache.fetch(ImageCache.Request(url: url, processors: processors)) { result in
            firstResult.value = result
            first.fulfill()
        }
        XCTAssertTrue(eventually { self.server.requestCount("/strand.png") == 1 })
        // The offline one fails at once (nothing cached): fine
        guard case .failure? = load(cache, ImageCache.Request(url: url, processors: processors,
                                                              options: .onlyFromCache)) else {
            return XCTFail("an offline miss did not fail")
        }
        XCTAssertNil(cache.error(for: ImageCache.Request(url: url, processors: processors)),
                     "onlyFromCache's miss is remembered nowhere")
        network.open()
        wait(for: [first], timeout: 10)
        XCTAssertEqual(try XCTUnwrap(firstResult.value).get().value.width, 1_234)
    }

    /// A variant fetch that may use the network joins an onlyFromCache fetch's job for the same
    /// variant (the job is registered under the variant's key) and fails with its offline miss.
    func testAVariantFetchMayingUseTheNetworkIsNotFailedByAnOnlyFromCacheJob() throws {
        let cache = makeCache()
        let url = serve("/offline-job.png")
        let processors = [wide(1_111)]
        let disk = Gate()
        cache.diskQueue.async { disk.wait() }  // the offline read waits behind it
        let offline = expectation(description: "offline"), online = expectation(description: "online")
        let onlineResult = Locked<ImageResult?>(nil)
        cache.fetch(ImageCache.Request(url: url, processors: processors, options: .onlyFromCache)) { _ in offline.fulfill() }
        cache.fetch(ImageCache.Request(url: url, processors: processors)) { result in
            onlineResult.value = result
            online.fulfill()
        }
        disk.open()
        wait(for: [offline, online], timeout: 10)
        let result = try XCTUnwrap(onlineResult.value)
        XCTAssertEqual((try? result.get())?.value.width, 1_111, "a load allowed the network got: \(result)")
        XCTAssertEqual(server.requestCount("/offline-job.png"), 1)
    }

    /// "not written to disk if any of them asks so": a variant fetch that asks joins a plain
    /// variant fetch's job; the job's request for its original carries only the first load's
    /// options, so the original is written.
    func testAVariantNotWrittenToDiskThatJoinsAPlainOneIsNotWritten() throws {
        let cache = makeCache()
        let network = Gate()
        serveBehind(network, prefix: "/joined-variant")
        defer { network.open() }
        let url = server.url("/joined-variant.png")
        let processors = [wide(1_222)]
        let both = expectation(description: "both")
        both.expectedFulfillmentCount = 2
        cache.fetch(ImageCache.Request(url: url, processors: processors)) { _ in both.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/joined-variant.png") == 1 })
        cache.fetch(ImageCache.Request(url: url, processors: processors, options: .notWrittenToDisk)) { _ in both.fulfill() }
        network.open()
        wait(for: [both], timeout: 10)
        XCTAssertFalse(exists(cache, url), "a load that asked not to write it shared the download")
    }

    /// waitsForDiskWrite: "The completion runs once the image's file is written". Joined to a
    /// download that another load asked not to write (the any-rule), it reports success with no file.
    func testAWaitingCompletionJoinedToANotWrittenDownloadDoesNotReportAFileThatIsNotThere() throws {
        let cache = makeCache()
        let network = Gate()
        serveBehind(network, prefix: "/wait-joined")
        defer { network.open() }
        let url = server.url("/wait-joined.png")
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        let said = Locked<(Bool, Bool)?>(nil)  // (succeeded, file there)
        cache.fetch(ImageCache.Request(url: url, options: .notWrittenToDisk)) { _ in done.fulfill() }
        XCTAssertTrue(eventually { self.server.requestCount("/wait-joined.png") == 1 })
        cache.fetch(ImageCache.Request(url: url, options: .waitsForDiskWrite)) { result in
            let there = FileManager.default.fileExists(atPath: self.fileURL(cache, for: url).path)
            said.value = ((try? result.get()) != nil, there)
            done.fulfill()
        }
        network.open()
        wait(for: [done], timeout: 10)
        let (succeeded, there) = try XCTUnwrap(said.value)
        XCTAssertTrue(!succeeded || there, "waitsForDiskWrite completed with success and no file")
        XCTAssertFalse(succeeded, "a load that asked not to write it shared the download: no file")
    }

    /// waitsForDiskWrite when the write fails (a full disk): a failure that says there is no file.
    func testAWaitingCompletionWhoseWriteFailsDoesNotReportSuccess() throws {
        let cache = makeCache()
        let url = serve("/wait-full.png")
        cache.injectDiskWriteError(.ENOSPC)
        let result = try XCTUnwrap(load(cache, ImageCache.Request(url: url, options: .waitsForDiskWrite)))
        let there = FileManager.default.fileExists(atPath: fileURL(cache, for: url).path)
        XCTAssertFalse(there)
        guard case .failure(.network(.cannotWriteToFile, let why)) = result else {
            return XCTFail("waitsForDiskWrite completed with \(result) and no file")
        }
        XCTAssertTrue(why.contains("no file"), why)
    }
}
