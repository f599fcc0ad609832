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
        /// says nothing of it. `identity`: what `isIdentity` said of the response's `Content-Encoding`
        /// when it came (`Transfer.identity`; corelibs lowercases every name at each look-up).
        internal static func validate(data: Data, response: URLResponse?, error: Swift.Error?,
                                      identity: Bool) -> Result<Data, Error> {
            validate(count: data.count, response: response, error: error, identity: identity).map { data }
        }

        /// `validate(data:response:error:identity:)` of a body of `count` bytes that is not in memory
        /// (one streamed to disk).
        internal static func validate(count: Int, response: URLResponse?, error: Swift.Error?,
                                      identity: Bool) -> Result<Void, Error> {
            let expected = identity ? response?.expectedContentLength ?? -1 : -1
            let truncated: Error? = expected > 0 && Int64(count) < expected
                ? .truncatedBody(expected: expected, received: count) : nil
            if let error {
                let code = (error as? URLError)?.code ?? .unknown
                if code == .cancelled { return .failure(.cancelled) }
                // libcurl reports a body cut short as a generic error: say what it was.
                if let truncated { return .failure(truncated) }
                let text = (error as? URLError)?.localizedDescription ?? String(describing: error)
                return .failure(ImageCache.networkError(code, text, error))  // a constraint's refusal says so (Alternative.swift)
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 200
            guard (200..<300).contains(status) else { return .failure(.httpStatus(status)) }
            if let truncated { return .failure(truncated) }
            return count == 0 ? .failure(.emptyBody) : .success(())
        }

        /// Whether a `Content-Encoding` value (nil: none) leaves the body as it was sent.
        internal static func isIdentity(_ encoding: String?) -> Bool {
            ["", "identity"].contains(HTTP.trimmed((encoding ?? "")[...]).lowercased())
        }

        /// What a `Cache-Control` value says, as a private cache reads it (RFC 9111, 5.2.2): directive
        /// names in any case, in a list with others; `s-maxage` and the other shared-cache
        /// directives ignored; `no-cache` with field names taken as `no-cache`.
        internal struct CacheControl {
            var noStore = false, noCache = false, mustRevalidate = false
            /// The first `max-age` (4.2.1): 0 (stale) if it is not a number of seconds.
            var maxAge: TimeInterval?

            /// Whether the entry must never be served stale, not even by `servesStaleWhenOffline` (4.2.4).
            var forbidsStale: Bool { noCache || mustRevalidate }

            init(_ value: String?) {
                guard var value, !value.isEmpty else { return }
                // An ASCII value (every server's) is read byte by byte, the same reading without a
                // `String` per directive: this one costs microseconds a response on Linux.
                if value.utf8.allSatisfy({ $0 < 0x80 }) {
                    self = value.withUTF8 { bytes in
                        var read = CacheControl()
                        var start = 0
                        while start < bytes.count {
                            var end = start
                            while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                            read.read(directive: UnsafeBufferPointer(rebasing: bytes[start..<end]))
                            start = end + 1
                        }
                        return read
                    }
                    return
                }
                for directive in value.split(separator: ",") {
                    let parts = HTTP.trimmed(directive)
                        .split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    let name = HTTP.trimmed(parts[0]).lowercased()
                    // No space around "=" in the grammar: "max-age =60" is a max-age that says nothing.
                    let argument = parts.count > 1 && parts[0].last?.isWhitespace != true ? String(parts[1]) : nil
                    switch name {
                    case "no-store": noStore = true
                    case "no-cache": noCache = true
                    case "must-revalidate": mustRevalidate = true
                    case "max-age" where maxAge == nil:
                        // The quoted form is tolerated (5.2); anything else is invalid freshness: stale.
                        let unquoted = argument.map { $0.count > 2 && $0.hasPrefix("\"") && $0.hasSuffix("\"")
                            ? $0.dropFirst().dropLast() : Substring($0) }
                        maxAge = unquoted.flatMap(HTTP.delta) ?? 0
                    default: break
                    }
                }
            }

            private init() {}

            /// Reads one directive of an ASCII value as `init(_:)` reads one of any value.
            private mutating func read(directive bytes: UnsafeBufferPointer<UInt8>) {
                func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }  // as `HTTP.trimmed`
                var (start, end) = (0, bytes.count)
                while start < end, isSpace(bytes[start]) { start += 1 }
                while end > start, isSpace(bytes[end - 1]) { end -= 1 }
                var equals = start
                while equals < end, bytes[equals] != UInt8(ascii: "=") { equals += 1 }
                var (nameStart, nameEnd) = (start, equals)
                while nameStart < nameEnd, isSpace(bytes[nameStart]) { nameStart += 1 }
                while nameEnd > nameStart, isSpace(bytes[nameEnd - 1]) { nameEnd -= 1 }
                let name = UnsafeBufferPointer(rebasing: bytes[nameStart..<nameEnd])
                func `is`(_ expected: StaticString) -> Bool {
                    name.count == expected.utf8CodeUnitCount && name.indices.allSatisfy { index in
                        let byte = name[index]
                        return (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected.utf8Start[index]
                    }
                }
                if `is`("no-store") { return noStore = true }
                if `is`("no-cache") { return noCache = true }
                if `is`("must-revalidate") { return mustRevalidate = true }
                guard maxAge == nil, `is`("max-age") else { return }
                // As `Character.isWhitespace` of the name's last byte: no space before "=".
                let spaced = equals > start && (bytes[equals - 1] == 0x20 || (0x09...0x0D).contains(bytes[equals - 1]))
                guard equals < end, !spaced else { return maxAge = 0 }
                var (argumentStart, argumentEnd) = (equals + 1, end)
                if argumentEnd - argumentStart > 2, bytes[argumentStart] == UInt8(ascii: "\""),
                   bytes[argumentEnd - 1] == UInt8(ascii: "\"") {
                    (argumentStart, argumentEnd) = (argumentStart + 1, argumentEnd - 1)
                }
                let argument = UnsafeBufferPointer(rebasing: bytes[argumentStart..<argumentEnd])
                maxAge = HTTP.delta(Substring(String(decoding: argument, as: UTF8.self))) ?? 0
            }
        }

        /// The headers that judge a stored response, kept with its file: a `304` that leaves one
        /// out leaves the stored one in force (RFC 9111, 4.3.4).
        internal struct FreshnessHeaders {
            var cacheControl: String?, expires: String?

            /// `response`'s, each in place of the one in `stored`, if it has one.
            init(_ response: URLResponse?, updating stored: FreshnessHeaders? = nil) {
                self.init(cacheControl: Self.cacheControl(response, updating: stored), expiresOf: response, updating: stored)
            }

            /// `cacheControl` (read by `cacheControl(_:updating:)`), and `response`'s `Expires`, else `stored`'s.
            init(cacheControl: String?, expiresOf response: URLResponse?, updating stored: FreshnessHeaders?) {
                let expires = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Expires") ?? stored?.expires
                self.init(cacheControl: cacheControl, expires: expires)
            }

            /// `response`'s `Cache-Control`, else `stored`'s: read alone first, as a `no-store` answer
            /// needs no other header (corelibs lowercases every name of the response at each look-up).
            static func cacheControl(_ response: URLResponse?, updating stored: FreshnessHeaders?) -> String? {
                (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control") ?? stored?.cacheControl
            }

            init(cacheControl: String?, expires: String?) {
                (self.cacheControl, self.expires) = (cacheControl, expires)
            }
        }

        /// How long a response is fresh, and how old it was when it arrived (RFC 9111, 4.2).
        internal struct Freshness {
            let cacheControl: CacheControl
            /// `max-age`, else `Expires` minus `Date` (an invalid `Expires`: 0); nil: neither.
            let lifetime: TimeInterval?
            /// Its corrected initial age (4.2.3): the larger of the time since its `Date` and its
            /// `Age` plus the time the request took.
            let age: TimeInterval

            /// `response` with `headers` (its own, or the stored ones it updates), for a request
            /// sent at `sentAt` and answered at `receivedAt`. A missing or invalid `Date` is the
            /// time it arrived (RFC 9110, 6.6.1); an invalid `Age` is ignored (RFC 9111, 5.1). `parsed`:
            /// `headers.cacheControl` read already (nil: read here).
            init(_ response: URLResponse?, _ headers: FreshnessHeaders, parsed: CacheControl? = nil,
                 sentAt: TimeInterval, receivedAt: TimeInterval) {
                let http = response as? HTTPURLResponse
                cacheControl = parsed ?? CacheControl(headers.cacheControl)
                let date = http?.value(forHTTPHeaderField: "Date").flatMap(HTTP.date) ?? receivedAt
                if let maxAge = cacheControl.maxAge {
                    lifetime = maxAge
                } else if let expires = headers.expires {
                    lifetime = HTTP.date(expires).map { min(max(0, $0 - date), HTTP.maxSeconds) } ?? 0
                } else {
                    lifetime = nil
                }
                // A list's first member (RFC 9111, 5.1).
                let ageValue = http?.value(forHTTPHeaderField: "Age").flatMap {
                    $0.split(separator: ",").first.flatMap { HTTP.delta(HTTP.trimmed($0)) }
                } ?? 0
                age = max(max(0, receivedAt - date), ageValue + max(0, receivedAt - sentAt))
            }
        }

        /// `text` without the optional whitespace around a field's value or a list's member: spaces and
        /// horizontal tabs (RFC 9110, 5.6.3). Not Foundation's `trimmingCharacters`, which also takes
        /// other Unicode spaces and costs more than the rest of a response's checks on Linux.
        static func trimmed(_ text: Substring) -> Substring {
            let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
            guard let first = text.firstIndex(where: { !isSpace($0) }),
                  let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
            return text[first...last]
        }

        /// The most seconds a delta-seconds value counts for (RFC 9111, 1.2.2).
        static let maxSeconds: TimeInterval = 2_147_483_648

        /// A delta-seconds value: digits only (not "inf", "1e999" or " 60"), at most `maxSeconds`.
        static func delta(_ text: Substring) -> TimeInterval? {
            guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return min(Double(text) ?? maxSeconds, maxSeconds)
        }

        /// An HTTP date (RFC 9110, 5.6.7) in seconds since 1970: the IMF-fixdate
        /// "Sun, 06 Nov 1994 08:49:37 GMT", or the obsolete "Sunday, 06-Nov-94 08:49:37 GMT" and
        /// "Sun Nov  6 08:49:37 1994", each exactly as the grammar writes it (one space between fields,
        /// two digits for day, hour, minute and second, a day that its month has), except that the
        /// names of the day, month and zone may be in any case (the standard asks recipients to be
        /// robust; "GMT" in any case, no other zone); nil for anything else (a cache takes an invalid
        /// `Expires` as a time in the past).
        static func date(_ text: String) -> TimeInterval? {
            let parts = trimmed(text[...]).split(separator: " ", omittingEmptySubsequences: false)
            let fields: (day: Substring, month: Substring, year: Substring, time: Substring)
            if parts.count == 6, parts[0].hasSuffix(",") {  // IMF-fixdate
                guard name(parts[0].dropLast(), in: shortDays) != nil, name(parts[5], in: ["gmt"]) != nil,
                      parts[1].count == 2, parts[3].count == 4 else { return nil }
                fields = (parts[1], parts[2], parts[3], parts[4])
            } else if parts.count == 4, parts[0].hasSuffix(",") {  // rfc850-date
                let dayMonthYear = parts[1].split(separator: "-", omittingEmptySubsequences: false)
                guard name(parts[0].dropLast(), in: longDays) != nil, name(parts[3], in: ["gmt"]) != nil,
                      dayMonthYear.count == 3, dayMonthYear[0].count == 2, dayMonthYear[2].count == 2 else { return nil }
                fields = (dayMonthYear[0], dayMonthYear[1], dayMonthYear[2], parts[2])
            } else if parts.count == 5 || (parts.count == 6 && parts[2].isEmpty && parts[3].count == 1) {  // asctime-date
                let day = parts[parts.count - 3]  // "06", or "6" after a padding space
                guard name(parts[0], in: shortDays) != nil, day.count == 2 || parts.count == 6,
                      parts[parts.count - 1].count == 4 else { return nil }
                fields = (day, parts[1], parts[parts.count - 1], parts[parts.count - 2])
            } else {
                return nil
            }
            let time = fields.time.split(separator: ":", omittingEmptySubsequences: false)
            guard time.count == 3, time.allSatisfy({ $0.count == 2 }),
                  let hour = number(time[0]), let minute = number(time[1]), let second = number(time[2]),
                  hour < 24, minute < 60, second <= 60,  // 60: a leap second
                  let month = name(fields.month, in: months), var year = number(fields.year),
                  let day = number(fields.day), (1...daysIn(month: month + 1, year: year)).contains(day)
            else { return nil }
            if fields.year.count == 2 {  // two digits: 50 years ahead at most, else the century before (5.6.7)
                let thisYear = 1970 + Int(Date().timeIntervalSince1970 / 31_556_952)
                year += 2000
                if year > thisYear + 50 { year -= 100 }
            }
            let days = daysSince1970(year: year, month: month + 1, day: day)
            return TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second)
        }

        private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

        /// The index in `names` (lowercase) of `text` in any case of ASCII letters.
        private static func name(_ text: Substring, in names: [String]) -> Int? {
            let lower = text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }
            return names.firstIndex { $0.utf8.elementsEqual(lower) }
        }

        /// The days of `month` (1...12) in `year` of the proleptic Gregorian calendar.
        private static func daysIn(month: Int, year: Int) -> Int {
            guard month == 2 else { return [4, 6, 9, 11].contains(month) ? 30 : 31 }
            return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        }

        /// Decimal digits only (`Int("+5")` would take a sign).
        private static func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int(text)
        }

        /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
        /// `days_from_civil`).
        private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
            let shifted = month <= 2 ? year - 1 : year  // the year as if it began in March
            let era = (shifted >= 0 ? shifted : shifted - 399) / 400
            let yearOfEra = shifted - era * 400
            let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
            return era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
        }

        /// A `Retry-After` header in seconds, from a number of seconds (at most `maxSeconds`) or an HTTP date.
        static func retryAfter(_ response: URLResponse?) -> TimeInterval? {
            guard let http = response as? HTTPURLResponse,
                  let value = http.value(forHTTPHeaderField: "Retry-After").map({ String(HTTP.trimmed($0[...])) })
            else { return nil }
            // Seconds: digits, and a fraction (a few servers send one); not "inf", "nan" or "1e300".
            let number = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            if number.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) } }) {
                return min(TimeInterval(value) ?? maxSeconds, maxSeconds)
            }
            return date(value).map { max(0, $0 - Date().timeIntervalSince1970) }
        }
    }
}
