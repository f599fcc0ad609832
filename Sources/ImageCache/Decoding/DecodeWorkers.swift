// The decode workers: where downloaded bytes are decoded, off the transport's delegate queue.

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
    /// Where downloaded bytes are decoded: in the order they came, at most two at a time, on a queue
    /// of their own (not URLSession's delegate queue, where one large decode would hold back every
    /// transfer's data; a cheap decoder, Linux's check of an image, runs there instead of hopping).
    /// A decode that ends takes the next waiting one in the same block. (Not an
    /// `OperationQueue`: its own machinery showed in a profile of small downloads; see CHANGELOG.)
    internal final class DecodeWorkers: @unchecked Sendable {
        private let queue: DispatchQueue
        private let lock = NSLock()
        private var waiting = FIFO<@Sendable () -> Void>()  // guarded by `lock`
        private var running = 0  // guarded by `lock`
        static let width = 2  // decodes at once

        init(label: String) {
            queue = DispatchQueue(label: label, qos: .userInitiated, attributes: .concurrent)
        }

        /// How many decodes wait for a worker.
        var backlog: Int { lock.withLock { waiting.count } }

        /// No decode runs or waits.
        var isIdle: Bool { lock.withLock { running == 0 && waiting.count == 0 } }

        func async(_ work: @escaping @Sendable () -> Void) {
            let starts: Bool = lock.withLock {
                guard running < Self.width else { waiting.append(work); return false }
                running += 1
                return true
            }
            if starts { queue.async { self.drain(from: work) } }
        }

        private func drain(from first: @escaping @Sendable () -> Void) {
            var next: (@Sendable () -> Void)? = first
            while let work = next {
                work()
                next = lock.withLock {
                    if let following = waiting.popFirst() { return following }
                    running -= 1
                    return nil
                }
            }
        }
    }
}
