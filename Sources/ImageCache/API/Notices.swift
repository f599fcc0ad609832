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

            /// A progressive JPEG that a load with ``ImageCache/Request/Options-swift.struct/progressivePreviews``
            /// downloads has more complete scans: ``Notice/data`` holds the bytes up to the end of the
            /// last complete one and an end-of-image marker (a whole JPEG of the scans so far), and
            /// ``Notice/scans`` their count. At most 4 a second, each with more scans than the last,
            /// none once the body is whole; the final image follows as usual. An interlaced PNG
            /// (Adam7) has them too: its `data` ends with the IDAT chunk that completed its last
            /// complete pass and an IEND chunk, and its `scans` count its passes (1 to 7).
            public static let preview = Kind("preview")

            /// A load used its request's ``ImageCache/Request/alternative`` instead of the request's
            /// own URL (the notice's ``Notice/url``): ``Notice/detail`` names the alternative and
            /// why (the network constraint that refused the request's URL, or its failure).
            public static let alternativeUsed = Kind("alternativeUsed")

            /// The kind's name, as written here.
            public var description: String { name }
        }

        /// What kind of thing happened.
        public let kind: Kind
        /// The URL of the load it concerns; nil for none.
        public let url: URL?
        /// What happened, in words.
        public let detail: String
        /// The bytes a ``Kind/preview`` shows; nil for other kinds.
        public let data: Data?
        /// How many complete scans a ``Kind/preview``'s bytes hold; 0 for other kinds.
        public let scans: Int

        /// The kind, the URL and the detail, in one line.
        public var description: String { "\(kind): \(url?.absoluteString ?? "-"): \(detail)" }

        internal init(_ kind: Kind, url: URL?, detail: String, data: Data? = nil, scans: Int = 0) {
            (self.kind, self.url, self.detail, self.data, self.scans) = (kind, url, detail, data, scans)
        }
    }

    /// Called for each ``Notice``: a BlurHash that was ignored, a progressive JPEG's preview, an
    /// alternative used. Runs on
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
