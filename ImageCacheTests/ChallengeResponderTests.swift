import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's authentication challenges and the app's hook (`challengeResponder`). On Linux,
/// swift-corelibs-foundation raises a task's HTTP Basic challenge only (after the whole 401); the
/// tests reach it against the loopback server. The session-level challenge (server trust, client
/// certificates on Apple platforms) never comes from corelibs: it is tested by calling the
/// transport through the protocol, as URLSession would.
final class ChallengeResponderTests: CacheTestCase {
    private static let basic = "Basic dXNlcjpwYXNz"  // user:pass

    /// Serves the photo at `path` to requests with user:pass's Basic credentials, 401 Basic otherwise.
    private func serveBehindBasic(_ path: String, on server: LoopbackServer? = nil) -> URL {
        let server = server ?? self.server!
        let photo = fixture("photo.png")
        server.recordsRequestHeaders = true
        server.headersHandler = { requested, headers in
            guard requested == path else { return nil }
            guard headers["authorization"] == Self.basic else {
                return LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"images\""],
                                               body: Data("who are you?".utf8))
            }
            return .ok(photo)
        }
        return server.url(path)
    }

    /// What a responder was asked: the challenges' hosts, methods and URLs.
    private final class Asked: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [(host: String, method: String, url: URL?, failures: Int)] = []
        func add(_ challenge: URLAuthenticationChallenge, _ url: URL?) {
            let space = challenge.protectionSpace
            lock.withLock { list.append((space.host, space.authenticationMethod, url, challenge.previousFailureCount)) }
        }
        var all: [(host: String, method: String, url: URL?, failures: Int)] { lock.withLock { list } }
    }

    private func responder(_ asked: Asked, _ disposition: URLSession.AuthChallengeDisposition,
                           _ credential: URLCredential? = nil) -> ImageCache.ChallengeResponder {
        ImageCache.ChallengeResponder { challenge, url in
            asked.add(challenge, url)
            return (disposition, credential)
        }
    }

    func testNoResponderByDefault() {
        XCTAssertNil(makeCache().challengeResponder)
    }

    func testABasicChallengeIsAskedOfTheResponderAndItsCredentialSent() {
        // Given a server that wants Basic credentials, and a responder that gives them
        let url = serveBehindBasic("/basic.png")
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .useCredential,
                                             URLCredential(user: "user", password: "pass", persistence: .none))
        // When the image is fetched
        let image = fetchAndWait(cache, url)
        // Then the responder was asked once, for this host and URL, and the image came with the credential
        XCTAssertNotNil(image)
        XCTAssertEqual(asked.all.count, 1)
        XCTAssertEqual(asked.all.first?.host, url.host)
        XCTAssertEqual(asked.all.first?.method, NSURLAuthenticationMethodHTTPBasic)
        XCTAssertEqual(asked.all.first?.url, url)
        XCTAssertEqual(server.requestCount("/basic.png"), 2)
        XCTAssertEqual(server.lastRequestHeaders("/basic.png")?["authorization"], Self.basic)
        assertInvariants(cache)
    }

    func testARedirectAfterACredentialFailsAtOnceOnLinux() {
        // Given a URL behind Basic credentials that, given them, redirects to another path of its server
        let photo = fixture("photo.png")
        server.recordsRequestHeaders = true
        let target = server.url("/target.png")
        server.headersHandler = { path, headers in
            switch path {
            case "/gate.png":
                guard headers["authorization"] == Self.basic else {
                    return LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"images\""])
                }
                return LoopbackServer.Response(status: 302, headers: ["Location": target.absoluteString])
            case "/target.png": return .ok(photo)
            default: return nil
            }
        }
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .useCredential,
                                             URLCredential(user: "user", password: "pass", persistence: .none))
        // When it is fetched
        let outcome = result(cache, server.url("/gate.png"))
        // Then, on Linux, the load fails at the first redirect, saying why (corelibs would send the
        // first URL again on every redirect, credential and all, twenty times); elsewhere it arrives
        XCTAssertEqual(asked.all.count, 1)
        #if canImport(FoundationNetworking)
        guard case .failure(.network(.httpTooManyRedirects, let text))? = outcome else {
            return XCTFail("\(String(describing: outcome))")
        }
        XCTAssertTrue(text.contains("credential"), text)
        XCTAssertEqual(server.requestCount("/gate.png"), 2)
        XCTAssertEqual(server.requestCount("/target.png"), 0)
        #else
        guard case .success? = outcome else { return XCTFail("\(String(describing: outcome))") }
        #endif
    }

    func testACancelFailsTheLoadWithTheServersStatus() {
        // Given a responder that cancels
        let url = serveBehindBasic("/basic.png")
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .cancelAuthenticationChallenge)
        // When the image is fetched
        let outcome = result(cache, url)
        // Then the load fails with the 401 (not as cancelled), sent once, the responder asked once
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(asked.all.count, 1)
        XCTAssertEqual(server.requestCount("/basic.png"), 1)
        assertInvariants(cache)
    }

    func testTheSystemsHandlingWithNoStoredCredentialFailsWithTheServersStatus() {
        // Given a responder that leaves the challenge to the system, and one that says
        // `.useCredential` with no credential (corelibs 6.3 never completes a task so handled with
        // no stored credential, and stops the process on a credential of nil: the cache cancels
        // the challenge instead)
        for (path, answer) in [("/default.png", URLSession.AuthChallengeDisposition.performDefaultHandling),
                               ("/nil.png", .useCredential)] {
            let url = serveBehindBasic(path)
            let cache = makeCache(path)
            let asked = Asked()
            cache.challengeResponder = responder(asked, answer)
            // When the image is fetched
            let outcome = result(cache, url)
            // Then the responder was asked, and the load fails with the 401, sent once
            guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(path): \(String(describing: outcome))") }
            XCTAssertEqual(asked.all.count, 1, path)
            XCTAssertEqual(server.requestCount(path), 1, path)
        }
    }

    #if canImport(FoundationNetworking)
    func testOnLinuxTheSystemsHandlingFindsNoStoredCredentialAndTheLoadFailsWithTheServersStatus() throws {
        // Given a credential stored for the challenged protection space (this server, its realm),
        // and a responder that leaves the challenge to the system
        let url = serveBehindBasic("/stored.png")
        let space = URLProtectionSpace(host: try XCTUnwrap(url.host), port: try XCTUnwrap(url.port), protocol: "http",
                                       realm: "images", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let stored = URLCredential(user: "user", password: "pass", persistence: .forSession)
        URLCredentialStorage.shared.set(stored, for: space)
        defer { URLCredentialStorage.shared.remove(stored, for: space) }
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .performDefaultHandling)
        // When the image is fetched
        let outcome = result(cache, url)
        // Then corelibs (6.3) proposed nothing (its protection spaces compare by identity, so its
        // storage never finds one it made from a response), and the load ends with the 401
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(asked.all.count, 1)
        XCTAssertEqual(server.requestCount("/stored.png"), 1)
    }
    #endif

    func testAWrongCredentialIsAskedAgainWithItsFailureCounted() {
        // Given a responder that gives a wrong credential first, then the right one
        let url = serveBehindBasic("/basic.png")
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = ImageCache.ChallengeResponder { challenge, url in
            asked.add(challenge, url)
            let password = challenge.previousFailureCount == 0 ? "wrong" : "pass"
            return (.useCredential, URLCredential(user: "user", password: password, persistence: .none))
        }
        // When the image is fetched
        let image = fetchAndWait(cache, url)
        // Then it arrives on the third request, the responder asked twice
        XCTAssertNotNil(image)
        XCTAssertEqual(asked.all.map(\.failures), [0, 1])
        XCTAssertEqual(server.requestCount("/basic.png"), 3)
    }

    func testAChallengeAfterARedirectToAnotherOriginNeverGetsTheResponsersCredential() throws {
        // Given a URL that redirects to another origin (another port) that wants Basic credentials,
        // and a responder that would give them to anyone
        let other = try LoopbackServer()
        defer { other.stop() }
        let target = serveBehindBasic("/elsewhere.png", on: other)
        server.recordsRequestHeaders = true
        server.set("/moved.png", LoopbackServer.Response(status: 302, headers: ["Location": target.absoluteString]))
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .useCredential,
                                             URLCredential(user: "user", password: "pass", persistence: .none))
        // When the first URL is fetched
        let outcome = result(cache, server.url("/moved.png"))
        // Then the load fails with the other origin's 401, and no request carried a credential:
        // corelibs would send it to the first URL, whatever host asked
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertNil(server.lastRequestHeaders("/moved.png")?["authorization"])
        XCTAssertNil(other.lastRequestHeaders("/elsewhere.png")?["authorization"])
        XCTAssertEqual(server.requestCount("/moved.png"), 1)
        #if canImport(FoundationNetworking)
        XCTAssertTrue(asked.all.isEmpty, "corelibs: not asked, since its credential would go to the first URL")
        #endif
    }

    func testABearerChallengeNeverReachesTheResponderOnLinux() {
        // Given a 401 that asks for a Bearer token (corelibs stops the process on a credential for it)
        server.set("/bearer.png", LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Bearer"],
                                                         body: Data("no".utf8)))
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .useCredential,
                                             URLCredential(user: "user", password: "pass", persistence: .none))
        // When it is fetched
        let outcome = result(cache, server.url("/bearer.png"))
        // Then it fails with its status at once
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        #if canImport(FoundationNetworking)
        XCTAssertTrue(asked.all.isEmpty)
        #endif
        XCTAssertEqual(server.requestCount("/bearer.png"), 1)
    }

    func testALarge401BodyIsNotReadPast64KiB() {
        // Given a Basic challenge with a body of 4 MiB, and a responder
        server.set("/big.png", LoopbackServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"x\""],
                                                      body: Data(repeating: 0x41, count: 4 << 20)))
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .useCredential,
                                             URLCredential(user: "user", password: "pass", persistence: .none))
        // When it is fetched
        let outcome = result(cache, server.url("/big.png"))
        // Then it fails with its status, without the responder (corelibs asks only at the body's end)
        guard case .failure(.httpStatus(401))? = outcome else { return XCTFail("\(String(describing: outcome))") }
        XCTAssertTrue(asked.all.isEmpty)
        assertInvariants(cache)
    }

    func testTheChallengeGoesFirstAndTheAuthorizationHookAfterACancel() {
        // Given both hooks: a responder that cancels, and an authorization hook whose refresh
        // makes `requestModifier` send the credentials
        let url = serveBehindBasic("/both.png")
        let credentials = Locked<String?>(nil)
        let cache = makeCache()
        let asked = Asked()
        cache.challengeResponder = responder(asked, .cancelAuthenticationChallenge)
        cache.requestModifier = { request in
            var request = request
            if let credentials = credentials.value { request.setValue(credentials, forHTTPHeaderField: "Authorization") }
            return request
        }
        cache.authorization = ImageCache.Authorization { _, _ in credentials.value = Self.basic }
        // When the image is fetched
        let image = fetchAndWait(cache, url)
        // Then it arrives on the second request, after the responder was asked once
        XCTAssertNotNil(image)
        XCTAssertEqual(asked.all.count, 1)
        XCTAssertEqual(server.requestCount("/both.png"), 2)
    }

    // MARK: - The delegate's methods, called as URLSession calls them

    private final class Sender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {
        func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
        func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
        func cancel(_ challenge: URLAuthenticationChallenge) {}
        func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
        func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
    }

    // Apple's values of NSURLAuthenticationMethodServerTrust and ...ClientCertificate, which
    // corelibs marks unavailable.
    private static let serverTrust = "NSURLAuthenticationMethodServerTrust"
    private static let clientCertificate = "NSURLAuthenticationMethodClientCertificate"

    private func challenge(method: String) -> URLAuthenticationChallenge {
        let space = URLProtectionSpace(host: "images.example.com", port: 443, protocol: "https", realm: nil,
                                       authenticationMethod: method)
        return URLAuthenticationChallenge(protectionSpace: space, proposedCredential: nil, previousFailureCount: 0,
                                          failureResponse: nil, error: nil, sender: Sender())
    }

    /// What the transport answers a session-level challenge, called through `URLSessionDelegate`
    /// (so that a method that did not match the protocol's would not be the one called).
    private func sessionAnswer(_ cache: ImageCache, _ challenge: URLAuthenticationChallenge)
        -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let answered = expectation(description: "answered")
        let answer = Locked<(URLSession.AuthChallengeDisposition, URLCredential?)?>(nil)
        let delegate: URLSessionDelegate = cache.transport
        delegate.urlSession(URLSession.shared, didReceive: challenge) { disposition, credential in
            answer.value = (disposition, credential)
            answered.fulfill()
        }
        wait(for: [answered], timeout: 10)
        return answer.value ?? (.rejectProtectionSpace, nil)
    }

    func testASessionLevelChallengeGetsTheSystemsHandlingWithoutAResponder() {
        let cache = makeCache()
        let (disposition, credential) = sessionAnswer(cache, challenge(method: Self.serverTrust))
        XCTAssertEqual(disposition, .performDefaultHandling)
        XCTAssertNil(credential)
    }

    func testASessionLevelChallengeGetsTheRespondersAnswer() {
        // Given a responder that cancels server-trust challenges and gives a client credential
        let cache = makeCache()
        let asked = Asked()
        let identity = URLCredential(user: "client", password: "certificate", persistence: .forSession)
        cache.challengeResponder = ImageCache.ChallengeResponder { challenge, url in
            asked.add(challenge, url)
            return challenge.protectionSpace.authenticationMethod == Self.serverTrust
                ? (.cancelAuthenticationChallenge, nil) : (.useCredential, identity)
        }
        // When the session hears a challenge of each kind
        let trust = sessionAnswer(cache, challenge(method: Self.serverTrust))
        let client = sessionAnswer(cache, challenge(method: Self.clientCertificate))
        // Then each is the responder's answer, asked with no URL (the connection's challenge)
        XCTAssertEqual(trust.0, .cancelAuthenticationChallenge)
        XCTAssertEqual(client.0, .useCredential)
        XCTAssertTrue(client.1 === identity)
        XCTAssertEqual(asked.all.map(\.host), ["images.example.com", "images.example.com"])
        XCTAssertEqual(asked.all.map(\.url), [nil, nil])
    }
}
