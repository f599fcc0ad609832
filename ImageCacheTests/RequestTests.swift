import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Requests a real app makes: a `URLRequest` with its headers, the request modifier, redirects
/// that must not leak credentials, progress, and prefetching lists. Everything is checked at the
/// loopback server, which records each request's headers and counts requests per path.
final class RequestTests: CacheTestCase {
    private func authorized(_ url: URL, token: String = "secret") -> URLRequest {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("session=\(token)", forHTTPHeaderField: "Cookie")
        request.setValue("feed-7", forHTTPHeaderField: "X-Feed")
        return request
    }

    // MARK: URLRequest

    func testARequestIsSentWithItsHeadersAndCachedUnderItsURL() throws {
        // Given an image behind an Authorization header
        let cache = makeCache()
        let url = serve("/private.png")
        // When it is fetched with a request that carries the header
        let fetched = try XCTUnwrap(result(cache, authorized(url))?.get())
        // Then the server saw the app's headers and the cache's own
        XCTAssertEqual(fetched.source, .network)
        let headers = try XCTUnwrap(server.lastRequestHeaders("/private.png"))
        XCTAssertEqual(headers["authorization"], "Bearer secret")
        XCTAssertEqual(headers["cookie"], "session=secret")
        XCTAssertEqual(headers["x-feed"], "feed-7")
        XCTAssertEqual(headers["accept-encoding"], "identity")
        // And the image is cached under the URL: the plain URL finds it, headers are not the key
        XCTAssertNotNil(cache.peek(url))
        XCTAssertEqual(try result(cache, URLRequest(url: url))?.get().source, .memory)
        XCTAssertEqual(server.requestCount("/private.png"), 1)
    }

    func testTheAppsAcceptHeaderWins() throws {
        let cache = makeCache()
        let url = serve("/accept.png")
        var request = URLRequest(url: url)
        request.setValue("image/png", forHTTPHeaderField: "Accept")
        XCTAssertNotNil(try result(cache, request)?.get())
        XCTAssertEqual(server.lastRequestHeaders("/accept.png")?["accept"], "image/png")
    }

    func testTheCachesHeadersComeFromItsSessionAndTheAppsSessionHeadersWin() throws {
        // Given a cache made with the app's session, whose configuration asks for WebP and names a feed
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = ["Accept": "image/webp", "X-Feed": "feed-9"]
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let cache = ImageCache(uniqueName: "session-headers", directory: directory, session: session)
        cache.callbackQueue = callbacks
        defer { cache.persistCacheToDisk() }
        // And a requestModifier that records what it is given
        let seen = Locked<[String: String]?>(nil)
        cache.requestModifier = { request in
            seen.mutate { $0 = request.allHTTPHeaderFields ?? [:] }
            return request
        }
        // When an image is fetched
        let url = serve("/session-headers.png")
        XCTAssertNotNil(try result(cache, URLRequest(url: url))?.get())
        // Then the app's session headers are sent and win over the cache's Accept; the cache's
        // Accept-Encoding is still sent; the modifier saw the request without either default
        let headers = try XCTUnwrap(server.lastRequestHeaders("/session-headers.png"))
        XCTAssertEqual(headers["accept"], "image/webp")
        XCTAssertEqual(headers["x-feed"], "feed-9")
        XCTAssertEqual(headers["accept-encoding"], "identity")
        let modified = try XCTUnwrap(seen.value)
        XCTAssertNil(modified.first { $0.key.lowercased() == "accept" })
        // And a cache made without a session sends its own Accept
        let plain = makeCache("plain")
        let other = serve("/plain-headers.png")
        XCTAssertNotNil(try result(plain, URLRequest(url: other))?.get())
        XCTAssertEqual(server.lastRequestHeaders("/plain-headers.png")?["accept"], "image/*, */*;q=0.8")
    }

    func testBadRequestsFailAtOnceWithNothingSentAndNothingCached() throws {
        // Given a cache and a server that would answer
        let cache = makeCache()
        let url = serve("/bad.png")
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        var body = URLRequest(url: url)
        body.httpBody = Data("x".utf8)
        var noURL = URLRequest(url: url)
        noURL.url = nil
        let cases: [(URLRequest, String)] = [(post, "method POST"), (body, "body"), (noURL, "no URL")]
        for (request, what) in cases {
            // When each is fetched
            let outcome = result(cache, request)
            // Then it fails with a fatal invalidRequest that says why
            guard case .failure(let error)? = outcome, case .invalidRequest(let why) = error else {
                return XCTFail("\(what): \(String(describing: outcome))")
            }
            XCTAssertTrue(error.isFatal, what)
            XCTAssertTrue(why.contains(what == "body" ? "no body" : what), "\(what): \(why)")
        }
        var ftp = URLRequest(url: URL(string: "ftp://127.0.0.1/bad.png")!)
        ftp.setValue("x", forHTTPHeaderField: "X-Any")
        guard case .failure(.unsupportedURL)? = result(cache, ftp) else { return XCTFail("ftp is not http(s)") }
        // And nothing was sent or cached
        XCTAssertEqual(server.totalRequests, 0)
        XCTAssertNil(cache.peek(url))
        XCTAssertEqual(cache.memoryCount, 0)
        cache.drainDisk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: url).path))
    }

    func testTheAsyncAndDecodeFormsTakeARequest() async throws {
        let cache = makeCache()
        let url = serve("/forms.png")
        let image = try await cache.image(for: authorized(url), key: "forms")
        XCTAssertEqual(image.data, fixture("photo.png"))
        XCTAssertEqual(server.lastRequestHeaders("/forms.png")?["authorization"], "Bearer secret")
        let bytes: Data = try await withCheckedThrowingContinuation { continuation in
            cache.fetch(authorized(url, token: "other"), key: "forms-bytes", decode: { $0 }) { result in
                continuation.resume(with: result.map(\.value))
            }
        }
        XCTAssertEqual(bytes, fixture("photo.png"))
        XCTAssertEqual(server.lastRequestHeaders("/forms.png")?["authorization"], "Bearer other")
    }

    // MARK: The request modifier

    func testTheModifierMakesEveryAttemptAndSeesARefreshedToken() throws {
        // Given a server that fails the first attempt, and a modifier that hands out a new token
        // each time it is called
        let cache = makeCache()
        server.set("/retried.png", sequence: [.status(503), .ok(fixture("photo.png"))])
        let calls = Locked(0)
        cache.requestModifier = { request in
            let call = calls.mutate { $0 += 1; return $0 }
            var request = request
            request.setValue("Bearer token-\(call)", forHTTPHeaderField: "Authorization")
            return request
        }
        // When the image is fetched
        XCTAssertNotNil(try result(cache, URLRequest(url: server.url("/retried.png")))?.get())
        // Then both attempts went through the modifier, and the retry carried the new token
        XCTAssertEqual(calls.value, 2)
        XCTAssertEqual(server.requestCount("/retried.png"), 2)
        XCTAssertEqual(server.lastRequestHeaders("/retried.png")?["authorization"], "Bearer token-2")
    }

    func testTheModifierMakesRevalidationsToo() throws {
        // Given an entry that expired and has an ETag
        let clock = TestClock()
        let cache = makeCache(clock: clock)
        server.set("/etag.png", LoopbackServer.Response(headers: ["ETag": "\"v1\""], body: fixture("photo.png")))
        XCTAssertNotNil(fetchAndWait(cache, server.url("/etag.png")))
        cache.purgeMemory()
        clock.advance(cache.imageTimeToLive + 1)
        cache.requestModifier = { request in
            var request = request
            request.setValue("Bearer again", forHTTPHeaderField: "Authorization")
            return request
        }
        // When it is fetched again
        XCTAssertNotNil(fetchAndWait(cache, server.url("/etag.png")))
        // Then the conditional request was made by the modifier
        let headers = try XCTUnwrap(server.lastRequestHeaders("/etag.png"))
        XCTAssertEqual(headers["if-none-match"], "\"v1\"")
        XCTAssertEqual(headers["authorization"], "Bearer again")
    }

    func testAModifierThatReturnsNilFailsTheLoadAndSendsNothing() throws {
        let cache = makeCache()
        let url = serve("/refused.png")
        cache.requestModifier = { _ in nil }
        guard case .failure(let error)? = result(cache, URLRequest(url: url)), case .invalidRequest(let why) = error else {
            return XCTFail("a nil from the modifier is an invalid request")
        }
        XCTAssertTrue(error.isFatal)
        XCTAssertTrue(why.contains("modifier"), why)
        XCTAssertEqual(server.totalRequests, 0)
        XCTAssertEqual(cache.error(for: url), error)
        XCTAssertFalse(cache.fetching(url))
        assertInvariants(cache)
    }

    func testAModifierThatRefusesThousandsOfQueuedDownloadsFailsThemOneAfterAnother() throws {
        // Given one slot, held by a slow download, and then a modifier that refuses every request
        // (signed out) while 3,000 more wait for the slot
        let cache = makeCache()
        cache.maxConcurrentDownloads = 1
        let slow = serve("/holder.png", delay: 0.5)
        let held = expectation(description: "holder")
        cache.fetch(slow) { _, _ in held.fulfill() }
        XCTAssertTrue(server.waitForRequests("/holder.png", count: 1, timeout: 10))
        // The modifier notes how deep in its thread's stack each call runs.
        let stacks = Locked<[UInt: (low: UInt, high: UInt)]>([:])
        cache.requestModifier = { _ in
            var marker = 0
            let address = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
            stacks.mutate { stacks in
                let (low, high) = stacks[UInt(pthread_self()), default: (address, address)]
                stacks[UInt(pthread_self())] = (min(low, address), max(high, address))
            }
            return nil
        }
        let failed = Locked(0)
        let all = expectation(description: "every queued fetch")
        all.expectedFulfillmentCount = 3_000
        for i in 0..<3_000 {
            cache.fetch(server.url("/queued/\(i).png")) { result in
                if case .failure(.invalidRequest) = result { failed.mutate { $0 += 1 } }
                all.fulfill()
            }
        }
        // When the slot frees, each queued download fails in turn (before, each one's failure
        // started the next inside itself: 3,000 nested calls on one thread's stack)
        wait(for: [held, all], timeout: 60)
        // Then all of them failed as refused, none was sent, and no thread went deeper into its
        // stack for the later ones (3,000 nested calls take megabytes)
        XCTAssertEqual(failed.value, 3_000)
        for (low, high) in stacks.value.values { XCTAssertLessThan(high - low, 64 * 1024) }
        XCTAssertEqual(server.totalRequests, 1)
        assertInvariants(cache)
    }

    func testAModifierThatTurnsTheRequestIntoAPostFailsIt() throws {
        let cache = makeCache()
        let url = serve("/posted.png")
        cache.requestModifier = { request in
            var request = request
            request.httpMethod = "POST"
            return request
        }
        guard case .failure(.invalidRequest)? = result(cache, URLRequest(url: url)) else { return XCTFail("POST is refused") }
        XCTAssertEqual(server.totalRequests, 0)
    }

    func testWhatTheModifierSendsIsCachedUnderTheOriginalKey() throws {
        // Given a modifier that sends every request to another path
        let cache = makeCache()
        let original = server.url("/asked.png")
        serve("/moved.png")
        let moved = server.url("/moved.png")
        cache.requestModifier = { request in
            var request = request
            request.url = moved
            return request
        }
        // When the original URL is fetched
        XCTAssertNotNil(try result(cache, URLRequest(url: original))?.get())
        // Then the modified request was sent, and the image is cached under the original URL
        XCTAssertEqual(server.requestCount("/moved.png"), 1)
        XCTAssertEqual(server.requestCount("/asked.png"), 0)
        XCTAssertNotNil(cache.peek(original))
        XCTAssertNil(cache.peek(moved))
    }

    // MARK: Redirects

    /// Serves a redirect at `path` to `target`, and the image at the target's path.
    private func redirect(_ path: String, to target: URL) {
        server.set(path, LoopbackServer.Response(status: 302, headers: ["Location": target.absoluteString]))
        serve(target.path)
    }

    func testACrossHostRedirectCarriesNoneOfTheAppsHeaders() throws {
        // Given a redirect from 127.0.0.1 to localhost (another host name for the same server)
        let cache = makeCache()
        let target = try XCTUnwrap(URL(string: "http://localhost:\(server.port)/elsewhere.png"))
        redirect("/start.png", to: target)
        cache.requestModifier = { request in
            var request = request
            request.setValue("modified", forHTTPHeaderField: "X-Modified")
            return request
        }
        // When an authorized request is fetched
        XCTAssertEqual(try result(cache, authorized(server.url("/start.png")))?.get().value.data, fixture("photo.png"))
        // Then the first host saw every header, and the other host none of the app's
        let first = try XCTUnwrap(server.lastRequestHeaders("/start.png"))
        XCTAssertEqual(first["authorization"], "Bearer secret")
        XCTAssertEqual(first["x-modified"], "modified")
        let second = try XCTUnwrap(server.lastRequestHeaders("/elsewhere.png"))
        XCTAssertEqual(second["host"], "localhost:\(server.port)")
        for name in ["authorization", "cookie", "x-feed", "x-modified"] { XCTAssertNil(second[name], name) }
        XCTAssertEqual(second["accept-encoding"], "identity", "the cache's own headers go on")
        XCTAssertNotNil(cache.peek(server.url("/start.png")), "cached under the URL asked for")
    }

    func testARedirectOnTheSameOriginKeepsTheHeaders() throws {
        let cache = makeCache()
        redirect("/same.png", to: server.url("/same-target.png"))
        XCTAssertNotNil(try result(cache, authorized(server.url("/same.png")))?.get())
        let headers = try XCTUnwrap(server.lastRequestHeaders("/same-target.png"))
        XCTAssertEqual(headers["authorization"], "Bearer secret")
        XCTAssertEqual(headers["cookie"], "session=secret")
        XCTAssertEqual(headers["x-feed"], "feed-7")
    }

    func testAChainOfRedirectsBackToTheFirstHostGetsTheHeadersOnlyThere() throws {
        // Given 127.0.0.1 -> localhost -> 127.0.0.1
        let cache = makeCache()
        server.set("/hop1.png", LoopbackServer.Response(status: 302, headers: ["Location": "http://localhost:\(server.port)/hop2.png"]))
        redirect("/hop2.png", to: server.url("/hop3.png"))
        XCTAssertNotNil(try result(cache, authorized(server.url("/hop1.png")))?.get())
        XCTAssertNil(server.lastRequestHeaders("/hop2.png")?["authorization"])
        XCTAssertEqual(server.lastRequestHeaders("/hop3.png")?["authorization"], "Bearer secret")
    }

    func testARedirectToAnotherSchemeIsNotFollowed() throws {
        let cache = makeCache()
        server.set("/to-file.png", LoopbackServer.Response(status: 302, headers: ["Location": "file:///etc/passwd"]))
        guard case .failure(let error)? = result(cache, URLRequest(url: server.url("/to-file.png"))) else {
            return XCTFail("a redirect out of http(s) fails")
        }
        XCTAssertEqual(error, .httpStatus(302))
        XCTAssertEqual(server.totalRequests, 1)
    }

    // MARK: Progress

    func testProgressIsThrottledNeverDecreasesAndEndsWithTheWholeSize() throws {
        // Given a 100 KB body sent in 400 chunks of 256 bytes, 2 ms apart
        let cache = makeCache()
        let body = fixture("photo.png") + Data(count: max(0, 100_000 - fixture("photo.png").count))
        server.set("/slow.png", LoopbackServer.Response(body: body, behavior: .slowBody(chunkSize: 256, interval: 0.002)))
        let calls = Locked<[(Int, Int?)]>([])
        let started = Date()
        // When it is fetched with a progress handler
        let fetched = result(cache, URLRequest(url: server.url("/slow.png"))) { received, expected in
            calls.mutate { $0.append((received, expected)) }
        }
        let seconds = Date().timeIntervalSince(started)
        // Then it arrived, progress was reported in steps that never go back, far fewer than the
        // chunks (at most about 20 a second), and the last call is the whole size
        XCTAssertNotNil(try fetched?.get())
        let received = calls.value.map(\.0)
        XCTAssertGreaterThanOrEqual(received.count, 2)
        XCTAssertEqual(received, received.sorted())
        XCTAssertEqual(Set(received).count, received.count, "no call repeats the one before")
        XCTAssertLessThanOrEqual(received.count, Int(seconds * 20) + 2)
        XCTAssertEqual(calls.value.last?.0, body.count)
        XCTAssertTrue(calls.value.allSatisfy { $0.1 == body.count }, "the announced length")
    }

    func testProgressSaysNilWhenNoLengthIsAnnounced() throws {
        let cache = makeCache()
        var response = LoopbackServer.Response.ok(fixture("photo.png"))
        response.sendsLength = false
        server.set("/nolength.png", response)
        let calls = Locked<[(Int, Int?)]>([])
        XCTAssertNotNil(try result(cache, URLRequest(url: server.url("/nolength.png"))) { received, expected in
            calls.mutate { $0.append((received, expected)) }
        }?.get())
        XCTAssertEqual(calls.value.last?.0, fixture("photo.png").count)
        XCTAssertTrue(calls.value.allSatisfy { $0.1 == nil })
    }

    func testAWaiterThatJoinsADownloadIsToldFromWhereItIs() throws {
        // Given a download under way that has reported some progress
        let cache = makeCache()
        let body = fixture("photo.png") + Data(count: 60_000)
        server.set("/joined.png", LoopbackServer.Response(body: body, behavior: .slowBody(chunkSize: 1_000, interval: 0.01)))
        let url = server.url("/joined.png")
        let first = Locked<[Int]>([])
        let firstReport = expectation(description: "first progress")
        firstReport.assertForOverFulfill = false
        let firstDone = expectation(description: "first done")
        cache.fetch(url, onProgress: { received, _ in
            first.mutate { $0.append(received) }
            firstReport.fulfill()
        }) { _ in firstDone.fulfill() }
        wait(for: [firstReport], timeout: 10)
        let before = first.value.last ?? 0
        // When a second request joins it
        let joined = Locked<[Int]>([])
        let joinedDone = expectation(description: "joined done")
        cache.fetch(url, onProgress: { received, _ in joined.mutate { $0.append(received) } }) { _ in joinedDone.fulfill() }
        wait(for: [firstDone, joinedDone], timeout: 10)
        // Then it hears of no less than what was reported before it joined, up to the whole size
        XCTAssertGreaterThan(before, 0)
        XCTAssertGreaterThanOrEqual(joined.value.first ?? 0, before)
        XCTAssertEqual(joined.value.last, body.count)
        XCTAssertEqual(server.requestCount("/joined.png"), 1)
    }

    func testAWaiterOfAnotherTypeHearsTheWholeSizeWhenTheImageDecoderRejectsTheBytes() throws {
        // Given a download of text started by an image fetch, which its image decoder rejects
        let cache = makeCache()
        let body = Data(repeating: UInt8(ascii: "a"), count: 30_000)
        server.set("/text", LoopbackServer.Response(body: body, behavior: .slowBody(chunkSize: 1_000, interval: 0.01)))
        let url = server.url("/text")
        let imageDone = expectation(description: "image")
        cache.fetch(url) { _, image in
            XCTAssertNil(image)
            imageDone.fulfill()
        }
        // When a request for the bytes joins it, with a progress handler
        let calls = Locked<[Int]>([])
        let bytesDone = expectation(description: "bytes")
        let delivered = Locked<Int?>(nil)
        cache.fetch(url, decode: { $0 }, onProgress: { received, _ in calls.mutate { $0.append(received) } }) {
            delivered.value = try? $0.get().value.count
            XCTAssertEqual(calls.value.last, body.count, "the whole size, before the completion")
            bytesDone.fulfill()
        }
        wait(for: [imageDone, bytesDone], timeout: 10)
        // Then it gets the bytes, and its last progress call was their whole size
        XCTAssertEqual(delivered.value, body.count)
        XCTAssertEqual(server.requestCount("/text"), 1)
    }

    // MARK: Prefetching

    func testPrefetchingAListDownloadsEachOnceAndCostsNothingForWhatIsCached() throws {
        // Given one image in memory and one on disk
        let cache = makeCache()
        let urls = (0..<5).map { serve("/pf\($0).png") }
        XCTAssertNotNil(fetchAndWait(cache, urls[0]))
        populate([urls[1]], name: "other")
        let onDisk = makeCache("other")
        XCTAssertNotNil(fetchAndWait(onDisk, urls[0]))
        server.resetCounters()
        // When the list is prefetched, with duplicates, on both instances
        cache.prefetch(urls + urls)
        onDisk.prefetch([urls[1], urls[1]])
        // Then each image not cached is downloaded once, and the cached ones not at all
        XCTAssertTrue(eventually(10) { urls.dropFirst(2).allSatisfy { cache.peek($0) != nil } })
        XCTAssertTrue(eventually(10) { onDisk.peek(urls[1]) != nil })
        XCTAssertEqual(server.requestCount("/pf0.png"), 0)
        XCTAssertEqual(server.requestCount("/pf1.png"), 1, "fetched by the first instance only (it was not on its disk)")
        for i in 2..<5 { XCTAssertEqual(server.requestCount("/pf\(i).png"), 1) }
        assertInvariants(cache)
    }

    func testCancellingPrefetchingStopsOnlyWhatNothingElseWaitsFor() throws {
        // Given two prefetches that the server holds, one of which a fetch also waits for
        let cache = makeCache()
        let alone = serve("/alone.png", delay: 0.3), shared = serve("/shared.png", delay: 0.3)
        cache.maxConcurrentDownloads = 2
        cache.prefetch([alone])
        XCTAssertTrue(server.waitForRequests("/alone.png", count: 1, timeout: 10))
        let fetched = expectation(description: "fetch")
        let image = Locked<ImageCache.Image?>(nil)
        cache.fetch(shared) { _, received in
            image.value = received
            fetched.fulfill()
        }
        cache.prefetch([shared])
        // When prefetching both is cancelled
        cache.cancelPrefetching([alone, shared, serve("/never-prefetched.png")])
        // Then the download only the prefetch wanted stops, and nothing is cached from it
        wait(for: [fetched], timeout: 10)
        XCTAssertNotNil(image.value, "the fetch still gets its image")
        XCTAssertTrue(server.waitForDisconnects("/alone.png", count: 1, timeout: 10))
        XCTAssertFalse(cache.fetching(alone))
        XCTAssertNil(cache.peek(alone))
        XCTAssertEqual(server.requestCount("/shared.png"), 1)
        XCTAssertEqual(server.requestCount("/never-prefetched.png"), 0)
        assertInvariants(cache)
    }

    func testAPrefetchCanBeMadeAgainAfterItWasCancelled() throws {
        let cache = makeCache()
        let url = serve("/again.png", delay: 0.2)
        cache.prefetch([url])
        cache.cancelPrefetching([url])
        XCTAssertTrue(eventually { !cache.fetching(url) })
        cache.prefetch([URLRequest(url: url)])
        XCTAssertTrue(eventually(10) { cache.peek(url) != nil })
    }

    // MARK: Look-ups on disk: the screen's before a prefetch burst's (LookUpQueue)

    /// 40 images on disk, a fresh instance on their folder with its disk queue held, and the 40
    /// prefetched on it: the first `window` look-ups on the queue behind the hold, the rest waiting.
    private func heldBurst(_ name: String) -> (cache: ImageCache, urls: [URL], release: DispatchSemaphore) {
        let urls = (0..<40).map { serve("/\(name)/\($0).png") }
        populate(urls + [serve("/\(name)/visible.png")], name: name)
        let cache = makeCache(name)
        let release = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: release)
        cache.prefetch(urls)
        return (cache, urls, release)
    }

    /// Holds the disk queue again behind what is on it now (a `heldBurst`'s window, and what the
    /// test queued), lets the burst's hold go, and waits for `fetched`; runs `check` while the rest
    /// of the burst is still held, then lets it go. True if `fetched` came.
    private func firstPass(of cache: ImageCache, _ release: DispatchSemaphore, until fetched: XCTestExpectation,
                           then check: () -> Void = {}) -> Bool {
        let again = DispatchSemaphore(value: 0)
        cache.holdDiskQueue(until: again)
        release.signal()
        let came = XCTWaiter().wait(for: [fetched], timeout: 10) == .completed
        check()
        again.signal()
        return came
    }

    func testAVisibleLoadIsLookedUpOnDiskAheadOfAPrefetchBurst() throws {
        // Given a burst of prefetches waiting for the disk
        let (cache, urls, release) = heldBurst("burst")
        XCTAssertEqual(cache.lookUps.counts.waiting, urls.count - ImageCache.LookUpQueue.window)
        // When an image for the screen is fetched, and the disk queue is held again after it
        let fetched = expectation(description: "visible")
        cache.fetch(serve("/burst/visible.png")) { _, image in
            XCTAssertNotNil(image)
            fetched.fulfill()
        }
        // Then it was read after the `window` look-ups already on the queue, before the others (each
        // image was in memory when its look-up ended: on Linux the check of an image runs on the
        // disk queue, where ImageIO's decode would run on a decode worker)
        XCTAssertTrue(firstPass(of: cache, release, until: fetched) {
            XCTAssertEqual(urls.filter { cache.peek($0) != nil }.count, ImageCache.LookUpQueue.window)
        })
        // And the others follow, each read once
        XCTAssertTrue(eventually(10) { urls.allSatisfy { cache.peek($0) != nil } })
        XCTAssertTrue(eventually(10) { cache.lookUps.counts == (0, 0) }, "none waits, none is left on the queue")
        XCTAssertEqual(server.requestCount("/burst/0.png"), 1, "downloaded once, by populate")
        assertInvariants(cache)
    }

    func testAPrefetchAVisibleLoadJoinsIsLookedUpOnDiskAtOnce() throws {
        // Given a burst of prefetches waiting for the disk
        let (cache, urls, release) = heldBurst("joined")
        // When one of those that wait is fetched for the screen, and the disk queue is held after it
        let fetched = expectation(description: "visible")
        cache.fetch(urls[30]) { _, image in
            XCTAssertNotNil(image)
            fetched.fulfill()
        }
        // Then its look-up went on the queue when the fetch joined it: read after the `window` only
        XCTAssertTrue(firstPass(of: cache, release, until: fetched) {
            let read = urls.filter { cache.peek($0) != nil }
            XCTAssertEqual(read.count, ImageCache.LookUpQueue.window + 1)
            XCTAssertTrue(read.contains(urls[30]))
        })
        XCTAssertTrue(eventually(10) { urls.allSatisfy { cache.peek($0) != nil } })
        assertInvariants(cache)
    }

    /// The interleaving `request` allows between `Ledger.route` (under the lock) and
    /// `LookUpQueue.start` (after it): a fast load joins the new prefetch's download in between, and
    /// its `hurry` finds nothing waiting yet. Written out step by step, as two threads can run it.
    func testAFastLoadJoiningAPrefetchBeforeItsLookUpWaitsIsStillLookedUpAtOnce() throws {
        // Given a burst of prefetches waiting for the disk, and one more prefetch routed but not started
        let (cache, urls, release) = heldBurst("raced")
        let url = serve("/raced/visible.png")
        let task = ImageCache.FetchTask(ImageCache.Load(ImageCache.Request(url: url), slow: true).asPrefetch,
                                        cache: cache, queue: callbacks, completion: { _ in }, onCancel: nil)
        let route = cache.locked { $0.route(task, task.load, now: cache.currentTime()) }
        guard case .lookUp(let download, let maxBytes, let fast) = route else { return XCTFail("\(route)") }
        // When a fetch for the screen joins its download then, and only then its look-up starts
        let fetched = expectation(description: "visible")
        cache.fetch(url) { _, image in
            XCTAssertNotNil(image)
            fetched.fulfill()
        }
        ImageCache.DiskLookUp(cache: cache, download: download, maxBytes: maxBytes).start(fast: fast)
        // Then its look-up did not stay behind the burst's: it is on the disk queue
        XCTAssertEqual(cache.lookUps.counts.waiting, urls.count - ImageCache.LookUpQueue.window,
                       "the visible load's look-up waits behind the prefetch burst")
        XCTAssertTrue(firstPass(of: cache, release, until: fetched), "read only after the whole burst")
        cache.drainDisk()
        assertInvariants(cache)
    }

    /// The interleaving a variant's job allows between `Ledger.route` (the job made, under the
    /// lock) and `makeVariant` (its request for the original, after it): a fast fetch of the variant
    /// joins the job before the job has an original to raise. Written out step by step.
    func testAFastFetchJoiningAVariantsJobBeforeItAsksForItsOriginalHasTheOriginalLookedUpAtOnce() throws {
        // Given a burst of prefetches waiting for the disk, and a variant's prefetch routed, its job made
        let (cache, urls, release) = heldBurst("variant")
        let request = ImageCache.Request(url: serve("/variant/visible.png"), processors: [ImageCache.Processor("same") { $0 }])
        let task = ImageCache.FetchTask(ImageCache.Load(request, slow: true).asPrefetch, cache: cache, queue: callbacks,
                                        completion: { _ in }, onCancel: nil)
        let route = cache.locked { $0.route(task, task.load, now: cache.currentTime()) }
        guard case .process(let job) = route else { return XCTFail("\(route)") }
        // When a fetch of the variant for the screen joins the job then, and only then the job asks
        // for its original
        let fetched = expectation(description: "visible")
        cache.fetch(request) { _, _ in fetched.fulfill() }
        cache.makeVariant(job)
        // Then the original's look-up did not stay behind the burst's, nor its download on the slow lane
        XCTAssertEqual(cache.lookUps.counts.waiting, urls.count - ImageCache.LookUpQueue.window,
                       "the original of a visible variant is looked up behind the prefetch burst")
        XCTAssertEqual(cache.locked { _ in job.original?.download?.lane }, ImageCache.Lane.fast)
        XCTAssertTrue(firstPass(of: cache, release, until: fetched), "read only after the whole burst")
        cache.drainDisk()
        assertInvariants(cache)
    }

    func testACancelledPrefetchWaitingForTheDiskReadsNothing() throws {
        // Given a burst of prefetches waiting for the disk
        let (cache, urls, release) = heldBurst("cancelled")
        // When all but the last are cancelled before the disk gets to them
        cache.cancelPrefetching(Array(urls.dropLast()))
        release.signal()
        cache.drainDisk()
        // Then only the last one's file was read (its size is known from its header), and the
        // cancelled ones' were not opened
        XCTAssertNotNil(cache.peek(urls.last!), "`drainDisk` waited for the look-ups that waited their turn")
        XCTAssertNotNil(cache.peekSize(ImageCache.Request(url: urls.last!)))
        XCTAssertTrue(urls.dropLast().allSatisfy { cache.peekSize(ImageCache.Request(url: $0)) == nil })
        XCTAssertTrue(urls.dropLast().allSatisfy { cache.peek($0) == nil })
        assertInvariants(cache)
    }

    func testPrefetchingThousandsOfURLsIsOneRequestEach() throws {
        // Given 3,000 URLs (each twice) that answer 404 at once
        let cache = makeCache()
        let urls = (0..<3_000).map { server.url("/many/\($0).png") }
        // When they are prefetched and then cancelled in one call each
        cache.prefetch(urls + urls)
        cache.cancelPrefetching(urls)
        // Then none is left in flight, and no URL was asked for twice
        XCTAssertTrue(eventually(10) { urls.allSatisfy { !cache.fetching($0) } })
        XCTAssertTrue(urls.allSatisfy { server.requestCount($0.path) <= 1 })
        assertInvariants(cache)
    }
}
