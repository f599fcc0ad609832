// The session's authentication challenges (server trust, client certificates, HTTP Basic, ...)
// and the app's hook that answers them (`ChallengeResponder`), with the system's handling when it
// is not set. On Apple platforms URLSession raises them for the connection (the session-level
// method) and for each task; swift-corelibs-foundation raises only a task's HTTP challenge, after
// the whole 401 has been read, and sends a credential to the task's first URL: what it may be
// given here is bounded so (see `readsChallenge`).

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif
#if canImport(ImageIO)
import ImageIO
#endif
#if canImport(SwiftUI)
import SwiftUI
#endif

nonisolated extension ImageCache {
    /// How the cache answers the authentication challenges of its `URLSession`: a server's trust
    /// (to pin a certificate), a client certificate, HTTP Basic credentials; see
    /// ``ImageCache/challengeResponder``.
    ///
    /// ```swift
    /// cache.challengeResponder = ImageCache.ChallengeResponder { challenge, url in
    ///     guard challenge.protectionSpace.host == "images.example.com",
    ///           challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPBasic
    ///     else { return (.performDefaultHandling, nil) }
    ///     return (.useCredential, URLCredential(user: "app", password: secret, persistence: .forSession))
    /// }
    /// ```
    ///
    /// A credential answers the challenge it is given, for that challenge's host
    /// (`challenge.protectionSpace.host`) only; look at the host before handing one out.
    public struct ChallengeResponder: Sendable {
        /// Answers `challenge`, as a session delegate's completion handler would be called: with
        /// a disposition and, for `.useCredential`, the credential. `url` is the URL of the
        /// request challenged, nil for a challenge of the connection (Apple platforms' session
        /// level: server trust, client certificates). Runs in a task of its own, outside the
        /// cache's lock; the request waits for its answer.
        public var respond: @Sendable (_ challenge: URLAuthenticationChallenge, _ url: URL?) async
            -> (URLSession.AuthChallengeDisposition, URLCredential?)

        /// A responder that answers each challenge with `respond`.
        ///
        /// - Parameter respond: Answers a challenge; see ``respond``.
        public init(respond: @escaping @Sendable (_ challenge: URLAuthenticationChallenge, _ url: URL?) async
                        -> (URLSession.AuthChallengeDisposition, URLCredential?)) {
            self.respond = respond
        }
    }
}

nonisolated extension ImageCache.Transport {
    typealias ChallengeAnswer = @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void

    /// A challenge of the connection (Apple platforms: server trust, client certificates): the
    /// app's responder answers it, or the system does.
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        guard let responder = cache?.locked({ $0.settings.challengeResponder }) else {
            return completionHandler(.performDefaultHandling, nil)
        }
        ask(responder, challenge, url: nil, completionHandler)
    }

    /// A challenge of one task: the app's responder answers it, or the system does. Under corelibs
    /// only a challenge `readsChallenge` let through is asked, and the answer is applied within what
    /// corelibs does safely (`corelibsAnswer`).
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        let responder = cache?.locked { $0.settings.challengeResponder }
        let url = task.currentRequest?.url ?? task.originalRequest?.url
        #if canImport(FoundationNetworking)
        let transfer = transfer(of: task)
        guard let responder, let transfer, transfer.awaitsChallenge, transfer.failure == nil,
              Self.origin(of: challenge.protectionSpace) == Self.origin(of: task.originalRequest?.url) else {
            return Self.corelibsAnswer(transfer, ours: false, challenge, .performDefaultHandling, nil, completionHandler)
        }
        let queue = session.delegateQueue
        ask(responder, challenge, url: url) { disposition, credential in
            queue.addOperation {
                Self.corelibsAnswer(transfer, ours: true, challenge, disposition, credential, completionHandler)
            }
        }
        #else
        guard let responder else { return completionHandler(.performDefaultHandling, nil) }
        ask(responder, challenge, url: url, completionHandler)
        #endif
    }

    /// Asks `responder` in a task of its own, and passes its answer on.
    private func ask(_ responder: ImageCache.ChallengeResponder, _ challenge: URLAuthenticationChallenge, url: URL?,
                     _ answer: @escaping ChallengeAnswer) {
        let challenge = ImageCache.Unchecked(challenge)  // the session holds it until answered
        Task {
            let (disposition, credential) = await responder.respond(challenge.value, url)
            answer(disposition, credential)
        }
    }

    /// The origin (scheme, host, port) a URL or a protection space names, as credentials are scoped.
    static func origin(of url: URL?) -> [String?] {
        let scheme = url?.scheme?.lowercased()
        return [scheme, url?.host?.lowercased(), String(url?.port ?? (scheme == "https" ? 443 : 80))]
    }

    static func origin(of space: URLProtectionSpace) -> [String?] {
        [space.protocol?.lowercased(), space.host.lowercased(), String(space.port)]
    }

    #if canImport(FoundationNetworking)
    /// Whether a 401 `response` of `transfer` is read to its end so that corelibs raises its
    /// challenge (which it does only then): with a responder set, for a Basic challenge (corelibs
    /// stops the process on a credential for any other scheme) of the URL first requested (corelibs
    /// sends the credential to the task's original request, whatever URL was challenged). Any other
    /// 401 stops at its head, as before. Called on the delegate queue.
    func readsChallenge(_ transfer: ImageCache.Transfer, _ response: HTTPURLResponse) -> Bool {
        guard transfer.redirects == 0, response.url == transfer.task.originalRequest?.url,
              let scheme = response.value(forHTTPHeaderField: "WWW-Authenticate")?
                .split(whereSeparator: { $0 == " " || $0 == "," }).first,
              scheme.lowercased() == "basic",
              cache?.locked({ $0.settings.challengeResponder }) != nil else { return false }
        transfer.awaitChallenge()
        return true
    }

    /// Applies an answer on the delegate queue, as far as corelibs (6.3) takes it safely: a
    /// credential is sent (corelibs sends the request again with it); the system's handling goes
    /// on only with a credential corelibs proposes from its storage; anything else (a cancel, a
    /// rejection, `.useCredential` without a credential, which would stop the process, or the
    /// system's handling with nothing to propose, which never completes the task) cancels the
    /// challenge, and the load fails with the 401 it got.
    /// `ours`: the challenge is one `readsChallenge` let through, of the URL first requested.
    private static func corelibsAnswer(_ transfer: ImageCache.Transfer?, ours: Bool, _ challenge: URLAuthenticationChallenge,
                                       _ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?,
                                       _ completionHandler: ChallengeAnswer) {
        let ours = ours && transfer?.failure == nil
        switch disposition {
        case .useCredential where credential != nil && ours:
            transfer?.sentCredential()
            completionHandler(.useCredential, credential)
        case .performDefaultHandling where challenge.proposedCredential != nil && ours:
            completionHandler(.performDefaultHandling, nil)
        default:
            if let transfer, transfer.failure == nil { transfer.fail(.httpStatus(401)) }
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    /// Whether the redirect of `task` is refused: corelibs (6.3) sends a request it sent again with
    /// a challenge's credential to its first URL on every redirect that follows, until "too many
    /// redirects" (-1007), so the first such redirect fails the load at once, saying so. (Refused,
    /// the redirect's own response ends the task; cancelling it here too stops corelibs.)
    func refusesRedirect(_ task: URLSessionTask) -> Bool {
        guard let transfer = transfer(of: task), transfer.credentialSent else { return false }
        transfer.fail(.network(.httpTooManyRedirects, "a redirect after a challenge's credential, "
                               + "which swift-corelibs-foundation cannot follow"))
        return true
    }
    #endif

    /// The body of a 401 read for its challenge (`readsChallenge`) is not kept; past 64 KiB it is
    /// not read either, and the load fails with its status.
    func droppedChallengeBody(_ transfer: ImageCache.Transfer, _ data: Data) {
        transfer.skipped(data.count)
        guard transfer.received > 64 * 1024 else { return }
        transfer.fail(.httpStatus(401))
        stop(transfer, nil)
    }
}
