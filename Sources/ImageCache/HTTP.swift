// HTTP: what a response says (status, length, cache control, validators, Retry-After).

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
    /// What the cache reads in HTTP: a redirect's target and headers, whether a body is whole, and
    /// what `Cache-Control` and `Retry-After` say.
    internal enum HTTP {
        /// The request a redirect is followed with. The headers of the request as sent go with it to
        /// the same origin (scheme, host and port) only; to another, just the cache's own (`Accept`,
        /// `Accept-Encoding`, the revalidation's), so that an `Authorization`, a cookie or any header
        /// the app or ``requestModifier`` gave one host never reaches another. Nil (not followed, the
        /// load fails with its 3xx) for a target that is not http(s). The target is the response's
        /// `Location` (corelibs proposes an http URL on the same host for a `file:` location).
        internal static func redirect(_ response: HTTPURLResponse, _ proposed: URLRequest,
                                         from sent: URLRequest?) -> URLRequest? {
            let location = response.value(forHTTPHeaderField: "Location")
                .flatMap { URL(string: $0, relativeTo: response.url) }
            guard let url = location?.absoluteURL ?? proposed.url, Load.refusal(of: url) == nil else { return nil }
            var next = URLRequest(url: url, cachePolicy: sent?.cachePolicy ?? .reloadIgnoringLocalCacheData,
                                  timeoutInterval: sent?.timeoutInterval ?? proposed.timeoutInterval)
            func origin(_ url: URL?) -> [String?] {
                let scheme = url?.scheme?.lowercased()
                return [scheme, url?.host?.lowercased(), String(url?.port ?? (scheme == "https" ? 443 : 80))]
            }
            let sameOrigin = origin(url) == origin(sent?.url)
            let ownHeaders: Set<String> = ["accept", "accept-encoding", "if-none-match", "if-modified-since"]
            for (name, value) in sent?.allHTTPHeaderFields ?? [:]
                where sameOrigin || ownHeaders.contains(name.lowercased()) {
                next.setValue(value, forHTTPHeaderField: name)
            }
            return next
        }

        /// Checks a finished transfer: its status, and that its body is whole. A body sent compressed
        /// (a server that ignored `Accept-Encoding: identity`) arrives inflated: its Content-Length
        /// says nothing of it.
        internal static func validate(data: Data, response: URLResponse?,
                                         error: Swift.Error?) -> Result<Data, Error> {
            let encoding = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Encoding") ?? ""
            let identity = ["", "identity"].contains(encoding.trimmingCharacters(in: .whitespaces).lowercased())
            let expected = identity ? response?.expectedContentLength ?? -1 : -1
            let truncated: Error? = expected > 0 && Int64(data.count) < expected
                ? .truncatedBody(expected: expected, received: data.count) : nil
            if let error {
                let code = (error as? URLError)?.code ?? .unknown
                if code == .cancelled { return .failure(.cancelled) }
                // libcurl reports a body cut short as a generic error: say what it was.
                if let truncated { return .failure(truncated) }
                let text = (error as? URLError)?.localizedDescription ?? String(describing: error)
                return .failure(.network(code, text))
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 200
            guard (200..<300).contains(status) else { return .failure(.httpStatus(status)) }
            if let truncated { return .failure(truncated) }
            return data.isEmpty ? .failure(.emptyBody) : .success(data)
        }

        /// What a response's `Cache-Control` says about keeping it.
        internal struct CachePolicy {
            var noStore = false
            var maxAge: TimeInterval?  // only when the cache is told to use it

            init(_ response: URLResponse?, usesMaxAge: Bool) {
                let value = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control")?.lowercased()
                    ?? ""
                for directive in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                    if directive == "no-store" { noStore = true }
                    let digits = directive.dropFirst(8)  // after "max-age="
                    // Digits only (not "inf" or "1e999"), at most 2^31 seconds (RFC 9111, 1.2.2).
                    if usesMaxAge, directive.hasPrefix("max-age="), !digits.isEmpty,
                       digits.allSatisfy({ ("0"..."9").contains($0) }) {
                        maxAge = min(Double(digits) ?? 0, 2_147_483_648)
                    }
                }
            }
        }

        /// A `Retry-After` header in seconds, from a number of seconds or an HTTP date.
        static func retryAfter(_ response: URLResponse?) -> TimeInterval? {
            guard let http = response as? HTTPURLResponse,
                  let value = http.value(forHTTPHeaderField: "Retry-After")?.trimmingCharacters(in: .whitespaces)
            else { return nil }
            if let seconds = TimeInterval(value) { return max(0, seconds) }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            return formatter.date(from: value).map { max(0, $0.timeIntervalSinceNow) }
        }
    }
}
