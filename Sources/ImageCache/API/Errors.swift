// `ImageCache.Error`: what went wrong, with its cause.

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
    /// Why an image could not be had.
    public enum Error: Swift.Error, CustomStringConvertible, Sendable, Equatable {
        /// No source loads the URL: it is not `http` or `https` with a host, nor `data:`, nor one a
        /// plugged source (``ImageCache/ImageSource``, such as ``ImageCache/FileSource`` for
        /// `file:` URLs) loads.
        case unsupportedURL(String)
        /// The request cannot be sent as an image load: it has no URL, a method other than `GET`,
        /// or a body, or ``ImageCache/requestModifier`` returned nil for it. Nothing was sent.
        case invalidRequest(String)
        /// The server answered with a status outside 200...299.
        case httpStatus(Int)
        /// The request failed below HTTP: no connection, timeout, connection lost...
        case network(URLError.Code, String)
        /// The server answered 2xx with no body.
        case emptyBody
        /// The body ended before the length the server announced.
        case truncatedBody(expected: Int64, received: Int)
        /// The body is not an image of a known format; says what it looks like instead.
        case notAnImage(String)
        /// The body starts as an image of `format` but is broken; says where.
        case corruptImage(Format, String)
        /// The response is larger than may be cached (``ImageCache/maxDiskImageBytes``, or
        /// ``ImageCache/maxImageBytes`` where it cannot be streamed to disk), or bytes given to
        /// `store` are larger than ``ImageCache/maxImageBytes``: `limit` says which applied. A
        /// response is not read to the end.
        case tooLarge(limit: Int)
        /// The fetch was cancelled, or the URL removed, before the image arrived.
        case cancelled
        /// The decoder given to a `decode:` form of `fetch` threw this error (described).
        case decodingFailed(String)

        /// True when trying the same URL again cannot help: a 4xx other than 408 and 429, an
        /// unsupported URL or invalid request, a body that is not an image or is broken.
        public var isFatal: Bool {
            switch self {
            case .unsupportedURL, .invalidRequest, .notAnImage, .corruptImage, .emptyBody, .tooLarge, .decodingFailed:
                return true
            case .httpStatus(let code):
                // 3xx here is not a redirect URLSession could follow; 5xx, 408 and 429 may pass.
                return (300..<500).contains(code) && code != 408 && code != 429
            case .network(let code, _):
                let fatal: [URLError.Code] = [
                    .badURL, .unsupportedURL, .httpTooManyRedirects, .redirectToNonExistentLocation,
                    .appTransportSecurityRequiresSecureConnection, .serverCertificateUntrusted,
                    .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot,
                    .clientCertificateRejected, .clientCertificateRequired, .userAuthenticationRequired,
                    .userCancelledAuthentication, .cannotDecodeContentData, .cannotDecodeRawData,
                    .fileDoesNotExist, .dataLengthExceedsMaximum,
                ]
                return fatal.contains(code)
            case .truncatedBody, .cancelled:
                return false
            }
        }

        /// What went wrong, in words, with the detail each case carries.
        public var description: String {
            switch self {
            case .unsupportedURL(let url): return "unsupported URL (only http, https, data and the plugged sources' URLs): \(url)"
            case .invalidRequest(let why): return "invalid request: \(why)"
            case .httpStatus(let code): return "HTTP status \(code)"
            case .network(let code, let text): return "network error \(code.rawValue): \(text)"
            case .emptyBody: return "not an image: the body is empty"
            case .truncatedBody(let expected, let received): return "truncated body: \(received) of \(expected) bytes"
            case .notAnImage(let what): return "not an image: \(what)"
            case .corruptImage(let format, let what): return "corrupt \(format.rawValue) image: \(what)"
            case .tooLarge(let limit): return "too large: the response is over the \(limit)-byte limit"
            case .cancelled: return "cancelled"
            case .decodingFailed(let what): return "the decoder failed: \(what)"
            }
        }
    }
}
