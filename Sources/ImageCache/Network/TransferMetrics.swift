// What a load's transfer measured (`TransferMetrics`, in `Fetched.metrics`): when it was sent, how
// long it took, its bytes and redirects, by the cache's own clocks, and URLSession's metrics where
// the platform delivers them.

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
    /// What the transfer that answered a load measured; see ``Fetched/metrics``. Grows in 1.x by
    /// new properties.
    public struct TransferMetrics: Sendable {
        /// When its request was sent, by the wall clock.
        public let sentAt: Date
        /// Seconds from sending the request to the end of its response, by a monotonic clock.
        public let duration: TimeInterval
        /// Bytes of the body received (inflated, if the server compressed it); 0 for a `304`.
        public let bytesReceived: Int
        /// Redirects followed on the way.
        public let redirects: Int
        /// The status of the response that ended it.
        public let statusCode: Int
        private let collected: Unchecked<URLSessionTaskMetrics>?

        /// URLSession's own metrics of the task, where the platform delivers them (Apple
        /// platforms; swift-corelibs-foundation does not call `didFinishCollecting` today, so nil
        /// on Linux).
        public var taskMetrics: URLSessionTaskMetrics? { collected?.value }

        /// The metrics of `transfer`, which has just ended.
        internal init(_ transfer: Transfer) {
            sentAt = Date(timeIntervalSince1970: transfer.sentAt)
            duration = TimeInterval(DispatchTime.now().uptimeNanoseconds - transfer.startedAt) / 1_000_000_000
            bytesReceived = transfer.received
            redirects = transfer.redirects
            statusCode = (transfer.response as? HTTPURLResponse)?.statusCode ?? 0
            collected = transfer.taskMetrics.map(Unchecked.init)
        }
    }
}
