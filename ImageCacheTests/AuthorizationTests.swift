import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The authorization hook (`authorization`), against a loopback server that answers 401 with
/// `WWW-Authenticate: Bearer` unless the request carries the token it wants. The refresh is the
/// app's code: here it counts its calls and swaps the token that `requestModifier` puts in.
final class AuthorizationTests: CacheTestCase {
    private struct Expired: Swift.Error, CustomStringConvertible {
        var description: String { "the refresh token has expired" }
    }

    /// A cache that sends `Bearer <token>` with every request, and refreshes with `refresh`.
    private func makeAuthorizingCache(_ token: Locked<String>,
                                      refresh: @escaping @Sendable (URL, Int) async throws -> Void) -> ImageCache {
        let cache = makeCache()
        cache.requestModifier = { request in
            var request = request
            request.setValue("Bearer \(token.value)", forHTTPHeaderField: "Authorization")
            return request
        }
        cache.authorization = ImageCache.Authorization(refresh: refresh)
        return cache
    }

    /// Serves the photo under `/auth/` to requests with `Bearer fresh`, and 401 to the others.
    private func serveBehindBearer(redirects: [String: URL] = [:]) {
        let photo = fixture("photo.png")
        server.headersHandler = { path, headers in
            guard path.hasPrefix("/auth/") else { return nil }
            guard headers["authorization"] == "Bearer fresh" else {
                return LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Bearer realm=\"images\""],
                                               body: Data("no".utf8))
            }
            if let target = redirects[path] {
                return LoopbackServer.Response(status: 302, headers: ["Location": target.absoluteString])
            }
            return .ok(photo)
        }
    }

    func testTwentyConcurrentRefusalsCauseOneRefreshThenTwentySuccesses() {
        // Given a server that refuses the stale token, and an app whose refresh counts its calls
        serveBehindBearer()
        let token = Locked("stale")
        let refreshes = Locked(0)
        let server = self.server!
        let cache = makeAuthorizingCache(token) { _, status in
            XCTAssertEqual(status, 401)
            refreshes.mutate { $0 += 1 }
            // A slow refresh: it ends once all 20 were refused (they wait holding no slot).
            while server.totalRequests < 20 { try await Task.sleep(nanoseconds: 1_000_000) }
            token.value = "fresh"
        }
        // When 20 URLs are fetched at once
        let urls = (0..<20).map { server.url("/auth/\($0).png") }
        let (group, images) = fetchAll(cache, urls)
        // Then all 20 arrive, after exactly one refresh
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(images.value, 20)
        XCTAssertEqual(refreshes.value, 1)
        for url in urls { XCTAssertEqual(server.lastRequestHeaders(url.path)?["authorization"], "Bearer fresh") }
        assertInvariants(cache)
    }

    func testARefreshThatThrowsFailsEveryRefusedRequestWithItsError() {
        // Given a server that refuses the stale token, and a refresh that throws
        serveBehindBearer()
        let token = Locked("stale")
        let refreshes = Locked(0)
        let server = self.server!
        let cache = makeAuthorizingCache(token) { _, _ in
            refreshes.mutate { $0 += 1 }
            while server.totalRequests < 20 { try await Task.sleep(nanoseconds: 1_000_000) }
            throw Expired()
        }
        // When 20 URLs are fetched at once
        let urls = (0..<20).map { server.url("/auth/\($0).png") }
        let results = Locked<[URL: ImageResult]>([:])
        let done = expectation(description: "20 results")
        done.expectedFulfillmentCount = 20
        for url in urls {
            cache.fetch(url) { result in
                results.mutate { $0[url] = result }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 30)
        // Then every one fails with the refresh's error, fatal, after one refresh, and none is
        // sent again
        for url in urls {
            let result = results.value[url]
            guard case .failure(let error)? = result else { XCTFail("\(url): \(String(describing: result))"); continue }
            guard case .network(.userAuthenticationRequired, let text) = error else { XCTFail("\(error)"); continue }
            XCTAssertTrue(text.contains("the refresh token has expired"), text)
            XCTAssertTrue(error.isFatal)
        }
        XCTAssertEqual(refreshes.value, 1)
        XCTAssertEqual(server.totalRequests, 20, "each sent once: none sent again after the refresh failed")
    }

    func testARequestRefusedAgainAfterARefreshFailsWithItsStatus() {
        // Given a server that never accepts the token, and a refresh that changes nothing
        serveBehindBearer()
        let token = Locked("stale")
        let refreshes = Locked(0)
        let cache = makeAuthorizingCache(token) { _, _ in refreshes.mutate { $0 += 1 } }
        // When a URL is fetched
        let url = server.url("/auth/never.png")
        let outcome = result(cache, url)
        // Then it is sent twice, around one refresh, and fails with the 401
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(refreshes.value, 1)
        XCTAssertEqual(server.requestCount("/auth/never.png"), 2)
    }

    func testARedirectToAnotherOriginAfterARefreshCarriesNoCredential() {
        // Given a path that, with the fresh token, redirects to another origin (the same server
        // named `localhost`)
        let elsewhere = serve("/elsewhere.png")
        let other = URL(string: "http://localhost:\(server.port)/elsewhere.png")!
        XCTAssertEqual(elsewhere.path, other.path)
        serveBehindBearer(redirects: ["/auth/moved.png": other])
        let token = Locked("stale")
        let cache = makeAuthorizingCache(token) { _, _ in token.value = "fresh" }
        // When it is fetched: refused, refreshed, sent again and redirected
        let image = fetchAndWait(cache, server.url("/auth/moved.png"))
        // Then the image comes from the other origin, which got no credential
        XCTAssertNotNil(image)
        XCTAssertEqual(server.lastRequestHeaders("/auth/moved.png")?["authorization"], "Bearer fresh")
        XCTAssertEqual(server.requestCount("/elsewhere.png"), 1)
        XCTAssertNotNil(server.lastRequestHeaders("/elsewhere.png"))
        XCTAssertNil(server.lastRequestHeaders("/elsewhere.png")?["authorization"])
    }

    func testWithoutTheHookA401FailsAsBefore() {
        // Given no authorization hook
        serveBehindBearer()
        let cache = makeCache()
        // When a refused URL is fetched
        let outcome = result(cache, server.url("/auth/plain.png"))
        // Then it fails with its status, sent once
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(server.requestCount("/auth/plain.png"), 1)
    }

    func testA401WithABasicChallengeFailsWithItsStatusAndNeverHangs() {
        // Given a server that asks for Basic credentials (corelibs' URLSession treats this
        // challenge itself; a task left waiting on it would hang)
        let cache = makeCache()
        server.set("/basic.png", LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"images\""],
                                                        body: Data("who?".utf8)))
        // When it is fetched, with no authorization hook
        let outcome = result(cache, server.url("/basic.png"))
        // Then the load ends (the wait has an outcome), failing with the 401, sent once
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(server.requestCount("/basic.png"), 1)
    }

    func testA401WithABasicChallengeReachesTheHookAndTheRequestIsSentAgain() {
        // Given a server that asks for Basic credentials until it gets them, and a hook that finds them
        let photo = fixture("photo.png")
        server.headersHandler = { path, headers in
            guard path == "/auth/basic.png" else { return nil }
            guard headers["authorization"] == "Basic dXNlcjpwYXNz" else {
                return LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"images\""])
            }
            return .ok(photo)
        }
        let credentials = Locked<String?>(nil)
        let cache = makeCache()
        cache.requestModifier = { request in
            var request = request
            if let credentials = credentials.value { request.setValue(credentials, forHTTPHeaderField: "Authorization") }
            return request
        }
        cache.authorization = ImageCache.Authorization { _, _ in credentials.value = "Basic dXNlcjpwYXNz" }
        // When it is fetched
        let image = fetchAndWait(cache, server.url("/auth/basic.png"))
        // Then it arrives, on the second request
        XCTAssertNotNil(image)
        XCTAssertEqual(server.requestCount("/auth/basic.png"), 2)
    }
}
