import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Resumable downloads (issue 50, item 4): a large body cut short keeps its part on disk, and the
/// next fetch asks for the rest with `Range` and `If-Range`; the entry's file is the body byte for
/// byte. The server here honours ranges as a test says, and counts the bytes it sends.
final class ResumableDownloadTests: CacheTestCase {
    typealias LargePNG = LargeBodyTests.LargePNG

    /// What the server did: each request's `Range` and `If-Range`, and the body bytes sent for each.
    struct Served { var ranges: [String?] = [], ifRanges: [String?] = [], bytes: [Int] = [] }

    /// Serves `body()` (with its ETag `etag()`) at `path`: a response to a request without `Range` is cut after
    /// `cut` bytes (announcing the whole length); a request with `Range` and a matching `If-Range` gets
    /// a `206` of the rest if `honoursRange`, anything else the whole body with `200`.
    private func serveResumable(_ path: String, cut: Int, honoursRange: Bool = true,
                                body: @escaping @Sendable () -> LargePNG,
                                etag: @escaping @Sendable () -> String) -> (URL, Locked<Served>) {
        let served = Locked(Served())
        server.headersHandler = { requested, headers in
            guard requested == path else { return nil }
            let (png, tag) = (body(), etag())
            let index = served.mutate { served -> Int in
                served.ranges.append(headers["range"])
                served.ifRanges.append(headers["if-range"])
                served.bytes.append(0)
                return served.bytes.count - 1
            }
            var start = 0, status = 200, extra: [String: String] = [:]
            if honoursRange, let range = headers["range"], headers["if-range"] == tag, range.hasPrefix("bytes="),
               let from = Int(range.dropFirst(6).dropLast()), from < png.length {
                (start, status) = (from, 206)
                extra["Content-Range"] = "bytes \(from)-\(png.length - 1)/\(png.length)"
            }
            // A request for the whole body is cut; one that asked for a range (honoured or not) is not.
            let (length, first) = (headers["range"] == nil ? cut : png.length - start, start)
            var response = LoopbackServer.Response(
                status: status, headers: ["Content-Type": "image/png", "ETag": tag].merging(extra) { $1 },
                declaredLength: png.length - start,
                behavior: .generated(length: length) { offset, count in
                    let data = png.bytes(first + offset, min(count, length - offset))
                    served.mutate { $0.bytes[index] += data.count }
                    return data
                })
            response.body = Data()
            return response
        }
        return (server.url(path), served)
    }

    private func largeCache() -> ImageCache {
        let cache = makeCache("large")
        cache.maxDiskImageBytes = 1 << 30
        cache.diskMaxBytes = 8 << 30
        cache.retryPolicy = .never
        return cache
    }

    /// Whether the file at `file` holds exactly the bytes of `png`.
    private func file(_ file: URL, holds png: LargePNG) throws -> Bool {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var offset = 0
        while offset < png.length {
            let expected = png.bytes(offset, LargePNG.piece)
            guard let read = try handle.read(upToCount: expected.count), read == expected else { return false }
            offset += expected.count
        }
        return try handle.read(upToCount: 1)?.isEmpty ?? true
    }

    /// The names in the cache's folder, and in the folder of kept parts inside it (there only while
    /// a part is kept).
    private func names(in cache: ImageCache) -> [String] {
        let parts = cache.folder.appendingPathComponent(ImageCache.PartialBody.folderName)
        return ((try? FileManager.default.contentsOfDirectory(atPath: cache.folder.path)) ?? [])
            + ((try? FileManager.default.contentsOfDirectory(atPath: parts.path)) ?? [])
    }

    /// Fetches `url` in a cache, which fails (the body is cut), and returns the names it left.
    private func cutFirst(_ cache: ImageCache, _ url: URL) throws -> [String] {
        let failed = try XCTUnwrap(result(cache, url))
        XCTAssertThrowsError(try failed.get())
        return names(in: cache)
    }

    func testACutBodyResumesWithRangeAndIfRange() throws {
        // Given a body of ~20 MiB that the server cuts at 90% the first time
        let png = LargePNG(chunks: 20)
        let (url, served) = serveResumable("/cut.png", cut: png.length * 9 / 10, body: { png }, etag: { "\"v1\"" })
        let cache = largeCache()
        // When it is fetched, fails, and is fetched again
        let left = try cutFirst(cache, url)
        XCTAssertEqual(left.filter(ImageCache.PartialBody.isPartialName).count, 1, "\(left)")
        XCTAssertEqual(try XCTUnwrap(result(cache, url)).get().source, .network)
        // Then the second request asked for the rest, and under 15% of the body was sent again
        let seen = served.value
        XCTAssertEqual(seen.ranges, [nil, "bytes=\(png.length * 9 / 10)-"])
        XCTAssertEqual(seen.ifRanges, [nil, "\"v1\""])
        print("resumed: \(seen.bytes[1]) of \(png.length) bytes sent again")
        XCTAssertLessThan(seen.bytes[1], png.length * 15 / 100)
        // And the entry's file is the body byte for byte, with nothing left beside it
        cache.persistCacheToDisk()  // the disk work queued before is done
        XCTAssertTrue(try file(fileURL(cache, for: url), holds: png))
        XCTAssertEqual(names(in: cache).filter { $0.hasPrefix(".") }, [])
    }

    func testAPartKeptAfterTheFolderWatchListedIsResumed() throws {
        #if !canImport(Glibc)
        throw XCTSkip("the folder's watch is inotify's (Linux)")
        #else
        // Given: a cache whose folder is watched and listed with no folder of kept parts, which the
        // watch then knows (a first attempt skips its look-up of one)
        let png = LargePNG(chunks: 20)
        let (url, served) = serveResumable("/watched.png", cut: png.length * 9 / 10, body: { png }, etag: { "\"v1\"" })
        let cache = largeCache()
        XCTAssertNotNil(fetchAndWait(cache, serve("/kept.png")))
        cache.drainDisk()
        XCTAssertNotNil(fetchAndWait(cache, serve("/looked-up.png")))  // a look-up in a folder that exists: watched
        cache.drainDisk()
        let knowsNoParts: () -> Bool? = {
            cache.diskQueue.sync {
                guard let watch = cache.disk.folderWatch else { return nil }
                return watch.knowsAbsent(ImageCache.DiskStore.fileID(for: url.absoluteString)) && watch.knowsNoParts
            }
        }
        cache.diskQueue.sync { if let watch = cache.disk.folderWatch { cache.disk.listWatched(watch) } }
        XCTAssertEqual(knowsNoParts(), true)
        // When: its body is cut (its part kept in a folder of parts made after the listing), and it is
        // fetched again
        _ = try cutFirst(cache, url)
        XCTAssertEqual(knowsNoParts(), false, "the folder of parts came through the watch")
        XCTAssertEqual(try XCTUnwrap(result(cache, url)).get().source, .network)
        // Then: the second request resumed the part
        XCTAssertEqual(served.value.ranges, [nil, "bytes=\(png.length * 9 / 10)-"])
        XCTAssertEqual(served.value.ifRanges, [nil, "\"v1\""])
        #endif
    }

    func testACutBodyResumesInANewCacheInstance() throws {
        let png = LargePNG(chunks: 20)
        let (url, served) = serveResumable("/new.png", cut: png.length * 9 / 10, body: { png }, etag: { "\"v1\"" })
        _ = try cutFirst(largeCache(), url)
        // A new instance on the same folder (as a new process would be) resumes the part
        let cache = largeCache()
        XCTAssertEqual(try XCTUnwrap(result(cache, url)).get().source, .network)
        XCTAssertEqual(served.value.ranges.last, "bytes=\(png.length * 9 / 10)-")
        XCTAssertLessThan(served.value.bytes[1], png.length * 15 / 100)
        cache.persistCacheToDisk()  // the disk work queued before is done
        XCTAssertTrue(try file(fileURL(cache, for: url), holds: png))
    }

    func testARetryOfACutBodyResumes() throws {
        let png = LargePNG(chunks: 20)
        let (url, served) = serveResumable("/retry.png", cut: png.length * 9 / 10, body: { png }, etag: { "\"v1\"" })
        let cache = largeCache()
        cache.retryPolicy = ImageCache.RetryPolicy(maxRetries: 1, baseDelay: 0.01)
        // One fetch: its retry asks for the rest
        XCTAssertEqual(try XCTUnwrap(result(cache, url)).get().source, .network)
        XCTAssertEqual(served.value.ranges, [nil, "bytes=\(png.length * 9 / 10)-"])
        XCTAssertLessThan(served.value.bytes[1], png.length * 15 / 100)
        cache.persistCacheToDisk()
        XCTAssertTrue(try file(fileURL(cache, for: url), holds: png))
    }

    func testAChangedETagStartsOver() throws {
        // Given a body cut at 90%, then changed on the server (a new ETag, other bytes)
        let first = LargePNG(chunks: 20), second = LargePNG(chunks: 19)
        let changed = Locked(false)
        let (url, served) = serveResumable("/changed.png", cut: first.length * 9 / 10,
                                           body: { changed.value ? second : first },
                                           etag: { changed.value ? "\"v2\"" : "\"v1\"" })
        let cache = largeCache()
        _ = try cutFirst(cache, url)
        changed.value = true
        // When it is fetched again, the old validator gets the whole new body, which is what is kept
        XCTAssertEqual(try XCTUnwrap(result(cache, url)).get().source, .network)
        XCTAssertEqual(served.value.ifRanges.last, "\"v1\"")
        XCTAssertEqual(served.value.bytes.last, second.length)
        cache.persistCacheToDisk()  // the disk work queued before is done
        XCTAssertTrue(try file(fileURL(cache, for: url), holds: second))
        XCTAssertEqual(names(in: cache).filter { $0.hasPrefix(".") }, [])
    }

    func testAServerThatIgnoresRangeStillWorks() throws {
        let png = LargePNG(chunks: 20)
        let (url, served) = serveResumable("/ignores.png", cut: png.length * 9 / 10, honoursRange: false,
                                           body: { png }, etag: { "\"v1\"" })
        let cache = largeCache()
        _ = try cutFirst(cache, url)
        XCTAssertEqual(try XCTUnwrap(result(cache, url)).get().source, .network)
        XCTAssertNotNil(served.value.ranges.last ?? nil)  // asked, and got a 200 of it all
        XCTAssertEqual(served.value.bytes.last, png.length)
        cache.persistCacheToDisk()  // the disk work queued before is done
        XCTAssertTrue(try file(fileURL(cache, for: url), holds: png))
    }

    func testAKeptPartIsClaimedOnceAndRemovedForRoomOrAge() throws {
        let png = LargePNG(chunks: 8)
        let (url, _) = serveResumable("/kept.png", cut: png.length / 2, body: { png }, etag: { "\"v1\"" })
        let cache = largeCache()
        _ = try cutFirst(cache, url)
        // Two claimants (two processes on the folder): one gets the part, the other nothing
        let key = url.absoluteString
        var first = URLRequest(url: url), second = URLRequest(url: url)
        var claimed = ImageCache.PartialBody.claim(in: cache.disk, key: key, &first)
        XCTAssertEqual(claimed?.spool.count, png.length / 2)
        XCTAssertNil(ImageCache.PartialBody.claim(in: cache.disk, key: key, &second))
        XCTAssertNil(second.value(forHTTPHeaderField: "Range"))
        XCTAssertEqual(first.value(forHTTPHeaderField: "If-Range"), "\"v1\"")
        claimed = nil  // dropped unused: its file goes
        XCTAssertEqual(names(in: cache).filter { $0.hasPrefix(".") }, [])
        // A kept part counts against the limit: kept if it fits, deleted if the room is short or it is too old
        _ = try cutFirst(cache, url)
        let part = png.length / 2
        XCTAssertEqual(ImageCache.PartialBody.reduce(in: cache.folder, maxAge: 3_600, room: part), part)
        XCTAssertEqual(ImageCache.PartialBody.reduce(in: cache.folder, maxAge: 3_600, room: part - 1), 0)
        XCTAssertEqual(names(in: cache).filter(ImageCache.PartialBody.isPartialName), [])
        _ = try cutFirst(cache, url)
        XCTAssertEqual(ImageCache.PartialBody.reduce(in: cache.folder, maxAge: 0, room: .max), 0)
        XCTAssertEqual(names(in: cache).filter(ImageCache.PartialBody.isPartialName), [])
    }

    func testContentRangeIsReadStrictly() {
        XCTAssertTrue(ImageCache.PartialBody.contentRange("bytes 100-199/200")! == (100, 200))
        XCTAssertTrue(ImageCache.PartialBody.contentRange("bytes 100-199/*")! == (100, 200))
        for bad in [nil, "bytes 100-99/200", "bytes 100-199/150", "items 1-2/3", "bytes -1-5/9", "bytes 1-2"] {
            XCTAssertNil(ImageCache.PartialBody.contentRange(bad), "\(bad ?? "nil")")
        }
    }
}
