// Alternatives under constraint: a request's lower-cost URL (`Request.Alternative`), when it is used
// instead of the request's own (`Conditions`, read from the error URLSession gives), and what a
// result says of it (`UsedAlternative`). The load that falls back to it is Pipeline/Alternatives.swift.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache.Request {
    /// A lower-cost URL of the same image (a smaller size, a stronger compression), loaded instead of
    /// the request's own URL when the network is constrained (Low Data Mode) or expensive, or when
    /// the request's own URL fails, as its ``conditions`` say. See ``ImageCache/Request/alternative``.
    ///
    /// ```swift
    /// var request = ImageCache.Request(url: photo.fullURL)
    /// request.alternative = .init(url: photo.smallURL)  // Low Data Mode, or a failure
    /// imageView.setImage(with: request)
    /// ```
    ///
    /// It grows in 1.x by new properties with defaults, and new conditions, only.
    public struct Alternative: Sendable, Hashable {
        /// The lower-cost URL, loaded as the request's own is (its size, processors and options; a
        /// `URLRequest`'s headers too) and cached under its own key (its absolute string), never
        /// under the request's.
        public var url: URL
        /// When it is used instead of the request's own URL: `[.constrainedNetwork, .failure]` by
        /// default.
        public var conditions: Conditions

        /// An alternative at `url`, used under `conditions` (by default, Low Data Mode or a failure).
        public init(url: URL, when conditions: Conditions = [.constrainedNetwork, .failure]) {
            (self.url, self.conditions) = (url, conditions)
        }

        /// When an alternative is used instead of the request's own URL. A set; it grows in 1.x by
        /// new static members only.
        public struct Conditions: OptionSet, Sendable, Hashable {
            /// The bits of the conditions (see the static members).
            public let rawValue: Int

            /// Conditions of these bits (see the static members).
            public init(rawValue: Int) { self.rawValue = rawValue }

            /// The network is constrained (Low Data Mode): on Apple platforms the request's own URL
            /// is sent with `allowsConstrainedNetworkAccess` false, and URLSession's refusal (a
            /// `URLError` `.notConnectedToInternet` whose `networkUnavailableReason` is
            /// `.constrained`) loads the alternative at once, with no retry.
            public static let constrainedNetwork = Conditions(rawValue: 1 << 0)
            /// The network is expensive (most cellular networks, a personal hotspot): the request's
            /// own URL is sent with `allowsExpensiveNetworkAccess` false, and the refusal
            /// (`networkUnavailableReason` `.expensive`) loads the alternative, as for
            /// ``constrainedNetwork``.
            public static let expensiveNetwork = Conditions(rawValue: 1 << 1)
            /// The request's own URL failed for any other reason than a cancellation, once its
            /// retries (``ImageCache/retryPolicy``) ran out.
            public static let failure = Conditions(rawValue: 1 << 2)
        }

        /// The condition under which a load of the request's own URL that failed with `error` uses
        /// this alternative, if it does: the network constraint that refused it, else `failure`.
        internal func condition(for error: ImageCache.Error) -> Conditions? {
            if let constraint = error.networkConstraint {
                return conditions.contains(constraint) ? constraint : nil
            }
            return conditions.contains(.failure) && error != .cancelled ? .failure : nil
        }

        /// Has `request` refused where this alternative would serve better: on Apple platforms,
        /// URLSession then answers with the constraint's error instead of using such a network.
        /// (swift-corelibs-foundation has neither property: there a constraint is whatever the
        /// app's session says, through a `URLProtocol`, say.)
        internal func restrict(_ request: inout URLRequest) {
            #if canImport(UIKit) || canImport(AppKit)
            if conditions.contains(.constrainedNetwork) { request.allowsConstrainedNetworkAccess = false }
            if conditions.contains(.expensiveNetwork) { request.allowsExpensiveNetworkAccess = false }
            #endif
        }
    }
}

nonisolated extension ImageCache {
    /// What a load used instead of its request's own URL (see ``Request/alternative``), in
    /// ``Fetched/usedAlternative``. It grows in 1.x by new properties only.
    public struct UsedAlternative: Sendable {
        /// The alternative's URL, whose image the result holds.
        public let url: URL
        /// Why: `.constrainedNetwork`, `.expensiveNetwork` or `.failure` (one of them).
        public let condition: Request.Alternative.Conditions
        /// Why the request's own URL gave no image.
        public let mainError: Error
    }

    /// URLSession's key for why the network was unavailable (`NSURLErrorNetworkUnavailableReasonKey`,
    /// whose value is its own name), and the values of `NSURLErrorNetworkUnavailableReason` that are
    /// a constraint an alternative may answer: 1 expensive, 2 constrained (0 is cellular access
    /// turned off, which no alternative helps). Read from the error's `userInfo` so that the same
    /// code decides on every platform: swift-corelibs-foundation has no `networkUnavailableReason`.
    fileprivate static let unavailableReasonKey = "NSURLErrorNetworkUnavailableReasonKey"

    /// The network constraint that made URLSession refuse a request, if `error` says one did.
    internal static func networkConstraint(of error: Swift.Error) -> Request.Alternative.Conditions? {
        guard let error = error as? URLError, error.code == .notConnectedToInternet else { return nil }
        switch error.userInfo[unavailableReasonKey] as? Int {
        case 1?: return .expensiveNetwork
        case 2?: return .constrainedNetwork
        default: return nil
        }
    }

    /// What ``Error/network(_:_:)``'s message starts with for a request refused by a constraint.
    fileprivate static let constraintPrefixes: [(Request.Alternative.Conditions, String)] = [
        (.constrainedNetwork, "refused on a constrained network (Low Data Mode)"),
        (.expensiveNetwork, "refused on an expensive network"),
    ]

    /// URLSession's `error` as the cache says it (``Error/network(_:_:)``), its message saying which
    /// constraint refused the request, if one did: the code stays URLSession's.
    internal static func networkError(_ code: URLError.Code, _ text: String, _ error: Swift.Error) -> Error {
        guard let constraint = networkConstraint(of: error),
              let prefix = constraintPrefixes.first(where: { $0.0 == constraint })?.1 else { return .network(code, text) }
        return .network(code, prefix + ": " + text)
    }
}

nonisolated extension ImageCache.Error {
    /// The network constraint that refused the request, if one did (see
    /// ``ImageCache/networkError(_:_:_:)``): retrying at once cannot help, and an alternative may.
    internal var networkConstraint: ImageCache.Request.Alternative.Conditions? {
        guard case .network(.notConnectedToInternet, let text) = self else { return nil }
        return ImageCache.constraintPrefixes.first { text.hasPrefix($0.1) }?.0
    }
}
