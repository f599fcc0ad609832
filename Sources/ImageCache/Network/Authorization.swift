// The authorization hook: a request refused with 401 (or another status the app names) waits while
// the app refreshes its credentials, once for all the requests refused meanwhile, and is then sent
// again (``ImageCache/requestModifier`` puts the new credentials in); a refresh that throws fails
// them all. What it keeps between refusals is the `Authorizer`.

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
    /// How the cache gets new credentials when a server refuses the ones it sent; see
    /// ``ImageCache/authorization``.
    ///
    /// The credentials themselves go into each request where they always do, in
    /// ``ImageCache/requestModifier``, which runs again for the request sent after a refresh:
    ///
    /// ```swift
    /// cache.requestModifier = { request in
    ///     var request = request
    ///     request.setValue("Bearer \(tokens.current)", forHTTPHeaderField: "Authorization")
    ///     return request
    /// }
    /// cache.authorization = ImageCache.Authorization { url, status in
    ///     try await tokens.refresh()  // once, however many requests were refused meanwhile
    /// }
    /// ```
    public struct Authorization: Sendable {
        /// The statuses that mean the credentials sent are no longer good: `[401]` by default; add
        /// 403 for a server that answers so.
        public var statuses: Set<Int>
        /// Refreshes the app's credentials, given the URL and status of the first request refused
        /// since the last refresh. Runs in a task of its own, outside the cache's lock. Returning
        /// sends every request that waited for it again; throwing fails them all.
        public var refresh: @Sendable (_ url: URL, _ status: Int) async throws -> Void

        /// An authorization hook that calls `refresh` when a response has one of `statuses`.
        ///
        /// - Parameters:
        ///   - statuses: The statuses that mean the credentials are stale; `[401]` by default.
        ///   - refresh: Refreshes the credentials; see ``refresh``.
        public init(statuses: Set<Int> = [401],
                    refresh: @escaping @Sendable (_ url: URL, _ status: Int) async throws -> Void) {
            (self.statuses, self.refresh) = (statuses, refresh)
        }
    }

    /// What the authorization hook keeps between refusals: how many refreshes have ended (each
    /// request is sent with the number it was made after, in `Download.credentials`), whether one
    /// is under way, the downloads waiting for it, and how the last one ended. Guarded by the
    /// cache's lock.
    internal final class Authorizer: @unchecked Sendable {
        private(set) var refreshes: UInt64 = 0  // refreshes ended, succeeded or not
        private(set) var refreshing = false
        private var waiting: [Download] = []
        private var lastFailure: Error?  // how the last refresh failed; nil if it succeeded

        /// What to do with `download`, refused with its credentials of refresh number `credentials`.
        enum Step { case retry, fail(Error), wait, refresh }

        func refused(_ download: Download, credentials: UInt64) -> Step {
            // A refresh ended after it was sent: its newest outcome answers.
            if credentials < refreshes { return lastFailure.map { .fail($0) } ?? .retry }
            waiting.append(download)
            if refreshing { return .wait }
            refreshing = true
            return .refresh
        }

        /// The refresh under way ended (`failure`: how it failed); returns the downloads that waited.
        func refreshed(_ failure: Error?) -> [Download] {
            refreshing = false
            refreshes += 1
            lastFailure = failure
            defer { waiting = [] }
            return waiting
        }
    }

    /// `result` of an attempt of `download`, or nil when the authorization hook takes the attempt
    /// over (a status of ``Authorization/statuses``, the download not refused since a refresh
    /// already): it then waits, holding no lane slot, and is sent again or fails when the refresh
    /// ends. Other results pass at the cost of one comparison.
    @inline(__always)
    internal func authorizing(_ download: Download, _ result: Result<Payload, Error>) -> Result<Payload, Error>? {
        guard case .failure(.httpStatus(let status)) = result, status >= 400 else { return result }
        return reauthorize(download, status: status, result)
    }

    private func reauthorize(_ download: Download, status: Int,
                             _ result: Result<Payload, Error>) -> Result<Payload, Error>? {
        enum Decision { case pass, fail(Error), step(Authorizer.Step, Authorization, started: [Download]) }
        let decision: Decision = locked { ledger in
            guard let authorization = ledger.settings.authorization, authorization.statuses.contains(status),
                  !download.reauthorized else { return .pass }
            let step = authorizer.refused(download, credentials: download.credentials)
            if case .fail(let error) = step { return .fail(error) }
            guard let started = ledger.move(download, ifIn: \.isRunning, to: .waitingToRetry) else { return .pass }
            download.waitForReauthorization()
            return .step(step, authorization, started: started)
        }
        switch decision {
        case .pass:
            return result
        case .fail(let error):
            return .failure(error)
        case .step(let step, let authorization, let started):
            startNetwork(started)
            switch step {
            case .retry: NetworkAttempt(cache: self, download: download).requeue()
            case .refresh: Task { await self.refresh(authorization, url: download.url, status: status) }
            case .wait, .fail: break
            }
            return nil
        }
    }

    /// Runs the app's refresh, then sends again every download that waited for it, or fails them
    /// all with its error (``Error/network(_:_:)`` `.userAuthenticationRequired`, which says it).
    private func refresh(_ authorization: Authorization, url: URL, status: Int) async {
        var failure: Error?
        do {
            try await authorization.refresh(url, status)
        } catch {
            failure = .network(.userAuthenticationRequired, "the authorization's refresh failed: \(error)")
        }
        let waiting = locked { _ in authorizer.refreshed(failure) }
        for download in waiting {
            if let failure {
                startNetwork(NetworkAttempt(cache: self, download: download).finished(.failure(failure)))
            } else {
                NetworkAttempt(cache: self, download: download).requeue()
            }
        }
    }
}
