import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Many threads mixing every public call on overlapping URLs. CI runs this class again under
/// ThreadSanitizer (`swift test --sanitize=thread --filter StressTests`) with a longer duration.
final class StressTests: CacheTestCase {
    /// Seconds to run; `IMAGECACHE_STRESS_SECONDS` overrides (CI's sanitizer run sets it).
    private var duration: TimeInterval {
        ProcessInfo.processInfo.environment["IMAGECACHE_STRESS_SECONDS"].flatMap(Double.init) ?? 1.5
    }

    private final class Record: @unchecked Sendable {
        let task: ImageCache.FetchTask
        let calls: Locked<Int>
        init(_ task: ImageCache.FetchTask, calls: Locked<Int>) {
            self.task = task
            self.calls = calls
        }
        // Set only by the thread that made the record, read after all threads joined.
        var cancelReturned = false
    }

    private static let identity: @Sendable (URLRequest) -> URLRequest? = { $0 }

    /// A request with a header and progress, which must never go back.
    private func fetchWithProgress(_ cache: ImageCache, _ url: URL, token: Int, slow: Bool, calls: Locked<Int>) -> ImageCache.FetchTask {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let reported = Locked(0)
        return cache.fetch(request, slow: slow, onProgress: { received, _ in
            reported.mutate { last in
                XCTAssertGreaterThan(received, last, "progress went back")
                last = received
            }
        }) { _ in calls.mutate { $0 += 1 } }
    }

    func testThirtyTwoThreadsMixingEveryCallKeepEveryPromise() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 15
        var generator = SplitMix(seed: 42)
        let names = ["photo.png", "photo.jpg", "palette.gif", "lossy.webp"]
        let urls: [URL] = (0..<60).map { i in
            let path = "/stress\(i).img"
            switch i % 10 {
            case 0: server.set(path, .status(404))
            case 1: server.set(path, sequence: [.status(500), .ok(fixture("photo.png"))])
            case 2: server.set(path, .ok(Data("<html>nope</html>".utf8), contentType: "text/html"))
            default:
                var response = LoopbackServer.Response.ok(fixture(names[i % names.count]))
                response.delay = Double(generator.next() % 40) / 1000
                server.set(path, response)
            }
            // Two hosts, which share the lanes.
            return i % 2 == 0 ? server.url(path) : localhost(path)
        }

        let records = Locked([Record]())
        let deadline = Date().addingTimeInterval(duration)
        DispatchQueue.concurrentPerform(iterations: 32) { thread in
            var random = SplitMix(seed: UInt64(thread))
            var mine: [Record] = []
            while Date() < deadline {
                let url = urls[Int(random.next() % UInt64(urls.count))]
                let roll = random.next() % 100
                switch roll {
                case 0..<55:
                    // Fetch (fast or slow); cancel half of the fast ones with 15% odds.
                    // Every form: callbacks, results under a key two URLs share, and data with a decoder.
                    let calls = Locked(0)
                    let callback: @Sendable (URL, ImageCache.Image?) -> Void = { _, _ in calls.mutate { $0 += 1 } }
                    let task: ImageCache.FetchTask
                    switch random.next() % 5 {
                    case 0: task = cache.fetch(url, key: "k\(url.path.count % 3)", slow: roll >= 40) { _ in calls.mutate { $0 += 1 } }
                    case 1: task = cache.fetch(url, slow: roll >= 40, decode: { $0.count }) { _ in calls.mutate { $0 += 1 } }
                    case 2: task = fetchWithProgress(cache, url, token: thread, slow: roll >= 40, calls: calls)
                    default: task = roll < 40 ? cache.fetch(url, callback: callback) : cache.slowFetch(url, callback: callback)
                    }
                    let record = Record(task, calls: calls)
                    mine.append(record)
                    if roll >= 25, roll < 40 {
                        task.cancel()
                        record.cancelReturned = true
                    }
                case 55..<75:
                    _ = cache.peek(url)
                case 75..<80:
                    cache.moveToSlowQueue(url)
                case 80..<85:
                    _ = (cache.fetching(url), cache.failedToFetch(url), cache.error(for: url))
                case 85..<90:
                    cache.remove(url)
                case 90..<92:
                    cache.purgeMemory()
                case 92:
                    try? cache.store(fixture("photo.jpg"), for: "k\(random.next() % 3)")
                case 93..<96:
                    cache.persistCacheToDisk()
                case 96:
                    switch random.next() % 5 {
                    case 0: cache.reduceDiskCache(maxImageCount: 20)
                    case 1: cache.reduceDiskCache(maxBytes: 20_000) {}
                    case 2: cache.prefetch([url, urls[Int(random.next() % UInt64(urls.count))], url])
                    case 3: cache.cancelPrefetching([url])
                    default: _ = cache.statistics()
                    }
                case 97:
                    // Settings change under load too (a new session, a wider lane, a smaller cap).
                    switch random.next() % 8 {
                    case 7: cache.maxStalledDownloads = Int(random.next() % 4)
                    case 6: cache.stallTime = Double(1 + random.next() % 3) / 10
                    case 5: cache.requestModifier = random.next() % 2 == 0 ? nil : Self.identity
                    case 0: cache.requestTimeout = Double(5 + random.next() % 5)
                    case 1: cache.maxConcurrentDownloads = Int(1 + random.next() % 8)
                    case 2: cache.imageMemoryMaxBytes = Int(3_000 + random.next() % 20_000)
                    case 3: cache.diskMaxBytes = Int(10_000 + random.next() % 40_000)
                    default: cache.imageMemoryMaxCount = Int(5 + random.next() % 11)
                    }
                default:
                    cache.removeAll()
                }
                if let last = mine.last, random.next() % 10 == 0, !last.cancelReturned {
                    last.task.cancel()
                    last.cancelReturned = true
                }
            }
            records.mutate { $0 += mine }
        }

        // Let every download end (the longest delay is 40 ms), then drain the callback queue. The
        // downloads under the keys "k0"..."k2" are not found by URL: wait until every request has
        // been answered or cancelled (a lost callback makes this time out, and the checks below fail).
        XCTAssertTrue(eventually(10) { urls.allSatisfy { !cache.fetching($0) } })
        XCTAssertTrue(eventually(10) { records.value.allSatisfy { $0.task.isCancelled || $0.calls.value > 0 } })
        callbacks.sync {}
        let all = records.value
        XCTAssertGreaterThan(all.count, 100)
        var delivered = 0, cancelled = 0
        for record in all {
            let calls = record.calls.value
            if record.task.isCancelled {
                cancelled += 1
                XCTAssertEqual(calls, 0, "a cancelled callback ran")
            } else if record.cancelReturned {
                // cancel() came after the callback had run: exactly once.
                XCTAssertEqual(calls, 1)
            } else {
                delivered += 1
                XCTAssertEqual(calls, 1, "a callback that was not cancelled must run exactly once")
            }
        }
        XCTAssertGreaterThan(delivered, 0)
        XCTAssertGreaterThan(cancelled, 0)
        XCTAssertLessThanOrEqual(cache.memoryCount, cache.imageMemoryMaxCount)
        cache.persistCacheToDisk()
        assertInvariants(cache)
        print("stress: \(all.count) tasks, \(cancelled) cancelled, \(server.totalRequests) requests, \(cache.statistics().stalls) stalls")
    }

    func testThreadsFetchingAndCancellingTransfersThatStallAndResumeKeepTheLanesCounts() {
        // Given two hosts whose responses come late or drip (so transfers stall and resume), a
        // short stall time and little room for stalled transfers
        let cache = makeCache()
        cache.stallTime = 0.1
        cache.maxStalledDownloads = 2
        let urls: [URL] = (0..<24).map { i in
            let path = "/stall\(i).png"
            var response = LoopbackServer.Response.ok(fixture("photo.jpg"))
            if i % 3 == 0 { response.delay = 0.15 }
            if i % 3 == 1 { response.behavior = .slowBody(chunkSize: 1_000, interval: 0.12) }
            server.set(path, response)
            return i % 2 == 0 ? server.url(path) : localhost(path)
        }
        // When threads fetch on both lanes, cancel, move to the slow lane and change the limits
        // (`kept`: fetches not cancelled, each owed one callback; `made`: all of them.)
        let calls = Locked(0), kept = Locked(0), made = Locked(0)
        let deadline = Date().addingTimeInterval(duration)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var random = SplitMix(seed: UInt64(100 + thread))
            while Date() < deadline {
                let url = urls[Int(random.next() % UInt64(urls.count))]
                switch random.next() % 10 {
                case 0..<5:
                    let task = cache.fetch(url, slow: random.next() % 3 == 0) { _ in calls.mutate { $0 += 1 } }
                    made.mutate { $0 += 1 }
                    if random.next() % 2 == 0 { task.cancel() } else { kept.mutate { $0 += 1 } }
                case 5: cache.moveToSlowQueue(url)
                case 6: cache.maxStalledDownloads = Int(random.next() % 4)
                case 7: cache.maxConcurrentDownloads = Int(1 + random.next() % 6)
                case 8: _ = cache.statistics()
                default: cache.remove(url)
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
        // Then every download ends, nothing stays counted as stalled, and the lifecycle held
        XCTAssertTrue(eventually(30) { urls.allSatisfy { !cache.fetching($0) } })
        callbacks.sync {}
        XCTAssertGreaterThanOrEqual(calls.value, kept.value)
        XCTAssertLessThanOrEqual(calls.value, made.value)
        XCTAssertEqual(cache.statistics().stalledNow, 0)
        XCTAssertEqual(cache.downloadCounts.running, 0)
        assertInvariants(cache)
        print("stress: \(cache.statistics().stalls) stalls, \(cache.statistics().resumes) resumes")
    }

    /// Look-ups on disk in their lanes' order (`LookUpQueue`) from many threads: prefetches,
    /// their cancellations, fetches on both lanes and purges of memory over images that are all on
    /// disk. Every fetch not cancelled gets its image once, none from the network, and no look-up
    /// is left waiting or lost.
    func testThreadsPrefetchingFetchingAndCancellingDiskHitsKeepEveryPromise() {
        let urls = (0..<40).map { serve("/held\($0).png") }
        populate(urls, name: "held")
        server.resetCounters()
        let cache = makeCache("held")
        cache.imageMemoryMaxCount = 8  // most fetches look on disk
        let kept = DispatchGroup(), calls = Locked([Int: Int]()), keptCount = Locked(0), missing = Locked(0)
        let deadline = Date().addingTimeInterval(duration)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var random = SplitMix(seed: UInt64(300 + thread))
            var made = 0
            while Date() < deadline {
                let some = (0..<Int(1 + random.next() % 20)).map { _ in urls[Int(random.next() % UInt64(urls.count))] }
                switch random.next() % 10 {
                case 0..<3: cache.prefetch(some)
                case 3..<5: cache.cancelPrefetching(some)
                case 5..<8:
                    made += 1
                    let id = thread * 1_000_000 + made, slow = random.next() % 3 == 0
                    let callback: @Sendable (URL, ImageCache.Image?) -> Void = { _, image in
                        if image == nil { missing.mutate { $0 += 1 } }
                        calls.mutate { $0[id, default: 0] += 1 }
                        kept.leave()
                    }
                    kept.enter()
                    keptCount.mutate { $0 += 1 }
                    if slow { cache.slowFetch(some[0], callback: callback) } else { cache.fetch(some[0], callback: callback) }
                case 8: cache.purgeMemory()
                default: cache.moveToSlowQueue(some[0])
                }
            }
        }
        XCTAssertEqual(kept.wait(timeout: .now() + 30), .success, "a fetch never got its callback")
        callbacks.sync {}
        XCTAssertEqual(calls.value.count, keptCount.value)
        XCTAssertTrue(calls.value.values.allSatisfy { $0 == 1 })
        XCTAssertEqual(missing.value, 0, "every image is on disk")
        XCTAssertTrue(eventually(30) { urls.allSatisfy { !cache.fetching($0) } })
        cache.drainDisk()
        XCTAssertTrue(cache.lookUps.counts == (0, 0), "no look-up left waiting")
        XCTAssertEqual(server.totalRequests, 0, "none came from the network")
        assertInvariants(cache)
        print("stress: \(keptCount.value) fetches over prefetches and cancellations")
    }

    func testEveryCallbackRunsExactlyOnceUnderContention() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 5
        let urls = (0..<20).map { serve("/c\($0).png", delay: Double($0 % 4) / 100) }
        let calls = Locked([Int: Int]())
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            group.enter()
            let url = urls[i % urls.count]
            let callback: @Sendable (URL, ImageCache.Image?) -> Void = { _, _ in
                calls.mutate { $0[i, default: 0] += 1 }
                group.leave()
            }
            if i % 2 == 0 { cache.fetch(url, callback: callback) } else { cache.slowFetch(url, callback: callback) }
            if i % 7 == 0 { cache.purgeMemory() }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 20), .success)
        callbacks.sync {}
        XCTAssertEqual(calls.value.count, 400)
        XCTAssertTrue(calls.value.values.allSatisfy { $0 == 1 })
        assertInvariants(cache)
    }

    /// Variants (issue 39) from many threads: three processors over overlapping URLs, plain fetches
    /// of the same URLs, cancellations, stores, removals and purges. Every callback runs once, a
    /// variant's callback gets its own processor's image, each processor never runs on the main
    /// thread, and the cache's books balance.
    func testThreadsFetchingVariantsWhileStoringRemovingAndCancellingKeepEveryPromise() {
        let cache = makeCache()
        cache.imageMemoryMaxCount = 12
        let urls = (0..<12).map { serve("/v\($0).png", delay: Double($0 % 3) / 100) }
        let made = (0..<3).map { png(width: 3_000 + $0) }
        let processors = (0..<3).map { index in
            ImageCache.Processor("p\(index)") { _ in
                XCTAssertFalse(Thread.isMainThread)
                return ImageCache.Image(data: made[index])
            }
        }
        let calls = Locked([Int: Int]()), wrong = Locked(0)
        let group = DispatchGroup()
        let deadline = Date().addingTimeInterval(duration)
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            var i = thread * 100_000
            while Date() < deadline {
                i += 1
                let url = urls[i % urls.count], which = i % 3
                switch i % 11 {
                case 0: try? cache.store(made[which], for: url.absoluteString)
                case 1: cache.remove(url)
                case 2: if i % 5 == 0 { cache.purgeMemory() }
                default:
                    group.enter()
                    let id = i
                    let plain = i % 4 == 0
                    let request = ImageCache.Request(url: url, slow: i % 3 == 0,
                                                     processors: plain ? [] : [processors[which]])
                    let task = cache.fetch(request) { _, image in
                        calls.mutate { $0[id, default: 0] += 1 }
                        if !plain, let image, image.width != 3_000 + which { wrong.mutate { $0 += 1 } }
                        group.leave()
                    }
                    if i % 6 == 0 {
                        task.cancel()
                        if task.isCancelled { group.leave() }
                    }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        callbacks.sync {}
        XCTAssertTrue(calls.value.values.allSatisfy { $0 == 1 }, "a callback ran twice")
        XCTAssertEqual(wrong.value, 0, "a variant's callback got another image")
        XCTAssertEqual(cache.downloadCounts.running, 0)
        assertInvariants(cache)
    }
}
