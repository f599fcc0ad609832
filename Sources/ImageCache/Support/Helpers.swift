// Small helpers: `FIFO`, boxes, and a `FetchTask`'s bridge to Swift concurrency.

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
    /// A first-in first-out queue with O(1) amortized append and pop.
    internal struct FIFO<Element> {
        private var items: [Element?] = []
        private var head = 0

        var count: Int { items.count - head }

        var first: Element? { head < items.count ? items[head] : nil }

        mutating func append(_ element: Element) { items.append(element) }

        mutating func popFirst() -> Element? {
            guard head < items.count else { return nil }
            let element = items[head]
            items[head] = nil
            head += 1
            if head >= 64, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return element
        }
    }

    /// Carries a value across a `@Sendable` boundary where the cache's lock or queue already
    /// orders every access to it.
    internal struct Unchecked<Value>: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// Counts down work that ends on several threads: `done()` is true for the last of it.
    internal final class Countdown: @unchecked Sendable {
        private let lock = NSLock()
        private var left: Int

        init(_ count: Int) { left = count }

        func done() -> Bool {
            lock.withLock {
                left -= 1
                return left == 0
            }
        }
    }

    /// The request of an `image(for:)` call, for a cancellation that may come before it is made.
    internal final class TaskBox: @unchecked Sendable {
        private let lock = NSLock()
        private var task: FetchTask?
        private var cancelled = false

        func set(_ task: FetchTask) {
            let cancelled = lock.withLock {
                self.task = task
                return self.cancelled
            }
            if cancelled { task.cancel() }
        }

        func cancel() {
            lock.withLock {
                cancelled = true
                return task
            }?.cancel()
        }
    }
}
