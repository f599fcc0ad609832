import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// A network that refuses some paths as URLSession refuses a request on a constrained (Low Data Mode)
/// or expensive network: a `URLError` `.notConnectedToInternet` whose `NSURLErrorNetworkUnavailableReasonKey`
/// is 2 (constrained) or 1 (expensive). Plugged into the cache through its session's configuration,
/// the seam an app has; every other path goes to the loopback server.
final class ConstrainedNetwork: URLProtocol {
    /// The reason each refused path is refused for.
    static let refused = Locked<[String: Int]>([:])
    /// How many requests of each path it refused.
    static let refusals = Locked<[String: Int]>([:])

    override class func canInit(with request: URLRequest) -> Bool {
        request.url.map { refused.value[$0.path] != nil } ?? false
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let path = request.url?.path ?? ""
        Self.refusals.mutate { $0[path, default: 0] += 1 }
        let reason = Self.refused.value[path] ?? 2
        let error = URLError(.notConnectedToInternet, userInfo: [
            "NSURLErrorNetworkUnavailableReasonKey": reason,
            NSLocalizedDescriptionKey: "The Internet connection appears to be offline.",
        ])
        client?.urlProtocol(self, didFailWithError: error)
    }

    override func stopLoading() {}

    /// A session whose requests go through it first.
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.default
        configuration.protocolClasses = [ConstrainedNetwork.self] + (configuration.protocolClasses ?? [])
        return URLSession(configuration: configuration)
    }
}

/// Alternatives under constraint (issue 52, item 5): a request's lower-cost URL, used when the network
/// refuses the request's own (Low Data Mode, an expensive network) or when it fails; the result says
/// so; the request's own image replaces it once the network allows.
final class AlternativeTests: BinderTestCase {
    private var session: URLSession!

    override func setUpWithError() throws {
        try super.setUpWithError()
        session = ConstrainedNetwork.session()
        (ConstrainedNetwork.refused.value, ConstrainedNetwork.refusals.value) = ([:], [:])
    }

    override func tearDown() {
        super.tearDown()
        session.invalidateAndCancel()
        (ConstrainedNetwork.refused.value, ConstrainedNetwork.refusals.value) = ([:], [:])
    }

    private func fetched(_ cache: ImageCache, _ request: ImageCache.Request) -> ImageResult? {
        let done = expectation(description: "result")
        let result = Locked<ImageResult?>(nil)
        cache.fetch(request) { result.value = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        return result.value
    }

    func testOnAConstrainedNetworkTheAlternativeIsUsedThenTheRequestsOwnOnceAllowed() throws {
        // Given a request with an alternative, and a network that refuses its own URL as Low Data Mode does
        let cache = makeCache(session: session)
        let notices = Locked<[ImageCache.Notice]>([])
        cache.onNotice = { notice in notices.mutate { $0.append(notice) } }
        let main = serveImage("/full.png", width: 1_200), small = serveImage("/small.png", width: 120)
        ConstrainedNetwork.refused.value = ["/full.png": 2]
        var request = ImageCache.Request(url: main)
        request.alternative = .init(url: small)
        // When it is fetched
        let first = try XCTUnwrap(fetched(cache, request)).get()
        // Then the alternative's image comes, and the result says which URL and why
        XCTAssertEqual(first.value.width, 120)
        XCTAssertEqual(first.source, .network)
        let used = try XCTUnwrap(first.usedAlternative)
        XCTAssertEqual(used.url, small)
        XCTAssertEqual(used.condition, .constrainedNetwork)
        XCTAssertEqual(used.mainError.networkConstraint, .constrainedNetwork)
        guard case .network(.notConnectedToInternet, _) = used.mainError else { return XCTFail("\(used.mainError)") }
        // And the refusal was not retried, the request's own URL never reached the server
        XCTAssertEqual(ConstrainedNetwork.refusals.value["/full.png"], 1)
        XCTAssertEqual(server.requestCount("/full.png"), 0)
        XCTAssertEqual(server.requestCount("/small.png"), 1)
        // And the alternative's image is cached under its own URL, never under the request's key
        XCTAssertNil(cache.peek(request))
        XCTAssertEqual(cache.peek(small)?.width, 120)
        cache.persistCacheToDisk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileURL(cache, for: main).path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: fileURL(cache, for: small).path))
        XCTAssertTrue(eventually { notices.value.contains { $0.kind == .alternativeUsed && $0.url == main } })
        // When the network allows the request's own URL, and it is fetched again
        ConstrainedNetwork.refused.value = [:]
        let second = try XCTUnwrap(fetched(cache, request)).get()
        // Then its own image comes and replaces the alternative's
        XCTAssertEqual(second.value.width, 1_200)
        XCTAssertNil(second.usedAlternative)
        XCTAssertEqual(cache.peek(request)?.width, 1_200)
        XCTAssertEqual(server.requestCount("/full.png"), 1)
        XCTAssertEqual(server.requestCount("/small.png"), 1)
    }

    func testAFailureUsesTheAlternativeOnlyWhenItsConditionsSaySo() throws {
        // Given a request's own URL that answers 404, and an alternative
        let cache = makeCache(session: session)
        let main = server.url("/missing.png"), small = serveImage("/fallback.png", width: 80)
        server.set("/missing.png", .status(404))
        var request = ImageCache.Request(url: main)
        // When its alternative is used on failures (the default)
        request.alternative = .init(url: small)
        let fellBack = try XCTUnwrap(fetched(cache, request)).get()
        // Then the alternative's image comes, saying the request's own failed
        XCTAssertEqual(fellBack.value.width, 80)
        XCTAssertEqual(fellBack.usedAlternative?.condition, .failure)
        XCTAssertEqual(fellBack.usedAlternative?.mainError, .httpStatus(404))
        // When it is used only on a constrained network
        request.alternative = .init(url: small, when: .constrainedNetwork)
        // Then the failure is the result, and the alternative is not asked again
        guard case .failure(let error)? = fetched(cache, request) else { return XCTFail("no failure") }
        XCTAssertEqual(error, .httpStatus(404))
        XCTAssertEqual(server.requestCount("/fallback.png"), 1)
    }

    func testAnExpensiveNetworksRefusalUsesTheAlternativeOnlyWhenItsConditionsNameIt() throws {
        // Given a network that refuses a request's own URL as expensive
        let cache = makeCache(session: session)
        let main = serveImage("/expensive.png", width: 900), small = serveImage("/cheap.png", width: 90)
        ConstrainedNetwork.refused.value = ["/expensive.png": 1]
        var request = ImageCache.Request(url: main)
        // When its alternative names expensive networks
        request.alternative = .init(url: small, when: .expensiveNetwork)
        // Then it is used, for that reason
        let fetched = try XCTUnwrap(fetched(cache, request)).get()
        XCTAssertEqual(fetched.value.width, 90)
        XCTAssertEqual(fetched.usedAlternative?.condition, .expensiveNetwork)
        // And one that names only constrained networks is not: the refusal is the result
        request.alternative = .init(url: small, when: .constrainedNetwork)
        guard case .failure(let error)? = self.fetched(cache, request) else { return XCTFail("no failure") }
        XCTAssertEqual(error.networkConstraint, .expensiveNetwork)
        XCTAssertEqual(server.requestCount("/cheap.png"), 1)
    }

    func testTheDecisionReadsTheReasonURLSessionGives() {
        // Given URLSession's errors
        func error(_ code: URLError.Code, reason: Any?) -> URLError {
            URLError(code, userInfo: reason.map { ["NSURLErrorNetworkUnavailableReasonKey": $0] } ?? [:])
        }
        // Then constrained is 2, expensive 1; cellular (0), no reason, another code are none
        XCTAssertEqual(ImageCache.networkConstraint(of: error(.notConnectedToInternet, reason: 2)), .constrainedNetwork)
        XCTAssertEqual(ImageCache.networkConstraint(of: error(.notConnectedToInternet, reason: NSNumber(value: 1))),
                       .expensiveNetwork)
        XCTAssertNil(ImageCache.networkConstraint(of: error(.notConnectedToInternet, reason: 0)))
        XCTAssertNil(ImageCache.networkConstraint(of: error(.notConnectedToInternet, reason: nil)))
        XCTAssertNil(ImageCache.networkConstraint(of: error(.timedOut, reason: 2)))
        // And the cache's error keeps it, and the code
        let said = ImageCache.networkError(.notConnectedToInternet, "offline", error(.notConnectedToInternet, reason: 2))
        XCTAssertEqual(said.networkConstraint, .constrainedNetwork)
        XCTAssertEqual(ImageCache.Error.network(.notConnectedToInternet, "offline").networkConstraint, nil)
        // And an alternative answers only its conditions, never a cancellation
        let alternative = ImageCache.Request.Alternative(url: URL(string: "https://example.com/s.jpg")!)
        XCTAssertEqual(alternative.condition(for: said), .constrainedNetwork)
        XCTAssertEqual(alternative.condition(for: .httpStatus(500)), .failure)
        XCTAssertNil(alternative.condition(for: .cancelled))
        XCTAssertNil(ImageCache.Request.Alternative(url: alternative.url, when: .failure).condition(for: said))
    }

    func testCancellingWhileTheAlternativeLoadsEndsTheLoadAsCancelled() async throws {
        // Given a refused request's own URL and an alternative that answers only when let through
        let cache = makeCache(session: session)
        let gate = Gate()
        let main = server.url("/held-full.png"), small = server.url("/held-small.png")
        ConstrainedNetwork.refused.value = ["/held-full.png": 2]
        let photo = png(width: 60)
        server.handler = { path in
            guard path == "/held-small.png" else { return nil }
            gate.wait()
            return .ok(photo)
        }
        defer { gate.open() }
        var request = ImageCache.Request(url: main)
        request.alternative = .init(url: small)
        // When its load is cancelled once the alternative was asked for
        let load = Task { try await cache.image(for: request) }
        XCTAssertTrue(server.waitForRequests("/held-small.png", count: 1, timeout: 10))
        load.cancel()
        // Then it ends as cancelled
        do {
            _ = try await load.value
            XCTFail("not cancelled")
        } catch let error as ImageCache.Error {
            XCTAssertEqual(error, .cancelled)
        }
    }

    func testCancelPrefetchingARequestStopsTheLoadOfItsAlternative() {
        // Given a prefetch of a request whose own URL is refused, and an alternative held by the server
        let cache = makeCache(session: session)
        let gate = Gate()
        let main = server.url("/prefetched-full.png"), small = server.url("/prefetched-small.png")
        ConstrainedNetwork.refused.value = ["/prefetched-full.png": 2]
        let photo = png(width: 60)
        server.handler = { path in
            guard path == "/prefetched-small.png" else { return nil }
            gate.wait()
            return .ok(photo)
        }
        defer { gate.open() }
        var request = ImageCache.Request(url: main)
        request.alternative = .init(url: small)
        cache.prefetch([request])
        XCTAssertTrue(server.waitForRequests("/prefetched-small.png", count: 1, timeout: 10))
        XCTAssertTrue(cache.fetching(small))
        // When the request's prefetch is cancelled while its alternative loads
        cache.cancelPrefetching([request])
        // Then the alternative's load, which stood in for it, stops too
        XCTAssertFalse(cache.fetching(small))
    }

    func testCancelPrefetchingARequestLeavesAnotherPrefetchOfItsAlternativesURL() {
        // Given a prefetch of an image's URL, which is also another request's alternative
        let cache = makeCache(session: session)
        let gate = Gate()
        let main = server.url("/other-full.png"), small = server.url("/shared-small.png")
        let photo = png(width: 60)
        server.handler = { path in
            guard path == "/shared-small.png" else { return nil }
            gate.wait()
            return .ok(photo)
        }
        defer { gate.open() }
        cache.prefetch([small])
        XCTAssertTrue(server.waitForRequests("/shared-small.png", count: 1, timeout: 10))
        var request = ImageCache.Request(url: main)
        request.alternative = .init(url: small)
        // When the other request's prefetch, never made, is cancelled
        cache.cancelPrefetching([request])
        // Then the image's own prefetch goes on
        XCTAssertTrue(cache.fetching(small))
    }

    func testAViewShowsTheAlternativeThenBoundAgainShowsItAtOnceAndItsOwnOnceAllowed() {
        // Given a refused request's own URL, and a view bound to the request
        let cache = makeCache(session: session)
        let main = serveImage("/view-full.png", width: 1_500), small = serveImage("/view-small.png", width: 150)
        ConstrainedNetwork.refused.value = ["/view-full.png": 2]
        var request = ImageCache.Request(url: main)
        request.alternative = .init(url: small)
        let (target, binder) = makeTarget()
        let alternativeShown = expectation(description: "the alternative")
        target.onSet = { if $0?.width == 150 { alternativeShown.fulfill() } }
        callbacks.sync {
            target.expected = 150
            binder.bind(request, placeholder: placeholder, cache: cache)
        }
        // Then it shows the placeholder, then the alternative
        wait(for: [alternativeShown], timeout: 10)
        callbacks.sync { XCTAssertEqual(target.history, [Self.placeholderWidth, 150]) }
        // When the network allows the request's own URL and the view is bound again (a reused cell)
        ConstrainedNetwork.refused.value = [:]
        let ownShown = expectation(description: "its own")
        let atOnce: [Int?] = callbacks.sync {
            target.onSet = { if $0?.width == 1_500 { ownShown.fulfill() } }
            binder.bind(nil, placeholder: placeholder, cache: cache)
            target.expected = 150
            binder.bind(request, placeholder: placeholder, cache: cache)
            target.expected = 1_500
            return target.history
        }
        // Then the alternative shows at once from memory (no placeholder), then its own replaces it
        XCTAssertEqual(atOnce.suffix(2), [Self.placeholderWidth, 150])
        wait(for: [ownShown], timeout: 10)
        callbacks.sync {
            XCTAssertEqual(target.history.suffix(3), [Self.placeholderWidth, 150, 1_500])
            XCTAssertEqual(target.wrong, 0)
        }
        XCTAssertEqual(server.requestCount("/view-small.png"), 1)
    }
}
