// Notices (`onNotice`): what the cache did beside loads that ``ImageCache/Event`` cannot say, since a
// public enum cannot gain a case in 1.x; a struct whose kinds are static members grows instead.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// Something the cache did that is not an ``Event``: for logs and metrics; see ``onNotice``. It
    /// grows in 1.x by new kinds (static members of ``Kind``) and new properties only, so a
    /// `switch` over it cannot break: compare ``kind`` with `==`.
    public struct Notice: Sendable, CustomStringConvertible {
        /// What kind of thing happened.
        public struct Kind: Sendable, Hashable, CustomStringConvertible {
            private let name: String
            private init(_ name: String) { self.name = name }

            /// A request's ``ImageCache/Request/blurHash`` is not a BlurHash (see ``Notice/detail``
            /// for why): the view showed its placeholder instead.
            public static let placeholderIgnored = Kind("placeholderIgnored")

            /// The kind's name, as written here.
            public var description: String { name }
        }

        /// What kind of thing happened.
        public let kind: Kind
        /// The URL of the load it concerns; nil for none.
        public let url: URL?
        /// What happened, in words.
        public let detail: String

        /// The kind, the URL and the detail, in one line.
        public var description: String { "\(kind): \(url?.absoluteString ?? "-"): \(detail)" }

        internal init(_ kind: Kind, url: URL?, detail: String) {
            (self.kind, self.url, self.detail) = (kind, url, detail)
        }
    }

    /// Called for each ``Notice``, for logs and metrics: a BlurHash that was ignored. Runs on
    /// ``callbackQueue``. Nil by default.
    public var onNotice: (@Sendable (Notice) -> Void)? {
        get { locked { $0.settings.onNotice } }
        set { locked { $0.change(\.onNotice, to: newValue) } }
    }

    /// Sends `notice` to ``onNotice``, if set, on ``callbackQueue``.
    internal func notify(_ notice: Notice) {
        let (handler, queue) = locked { ($0.settings.onNotice, $0.settings.callbackQueue) }
        guard let handler else { return }
        queue.async { handler(notice) }
    }
}
