// Prefetching: `ListWindow`, what a list's prefetcher (ListPrefetcher.swift) decides from the rows
// that appear and disappear: the scroll's direction, the rows to prefetch, the prefetches the scroll
// left behind, and the rows whose images to let go. Plain values, so that the Linux tests reach it.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// The decisions of a ``ListPrefetcher`` over the indexes of a list's items (a grid's too: its
    /// items in reading order). The visible span is from the least to the greatest visible index;
    /// the scroll goes forward when an index beyond it appears (or the first one disappears), and
    /// backward the other way. It prefetches `ahead` items beyond the span in the scroll's direction
    /// (nearest first), cancels the prefetches on the other side of the span (the scroll passed
    /// them, or turned back), and lets go of the items more than `window` away from the span.
    internal struct ListWindow {
        enum Direction: Equatable { case forward, backward }

        /// What a change comes to: the items to prefetch (nearest first), the items whose
        /// prefetches to cancel, and the items whose images to let go (in memory and in their views).
        struct Plan: Equatable {
            var start: [Int] = []
            var cancel: [Int] = []
            var release: [Int] = []
        }

        /// Items prefetched ahead of the visible span.
        let ahead: Int
        /// Items kept on each side of the visible span; never fewer than `ahead`.
        let window: Int
        /// How many items the list has; nil while unknown (prefetching then stops where the list's
        /// requests end).
        private(set) var count: Int?
        private(set) var visible: Set<Int> = []
        private(set) var direction = Direction.forward
        /// Items whose prefetch was started and not cancelled: a visible item's too (its view's load
        /// shares the download), cancelled once the scroll leaves it behind.
        private(set) var prefetching: Set<Int> = []
        /// Items that may hold an image: shown or prefetched, and not let go since.
        private(set) var held: Set<Int> = []
        /// The visible span, kept while nothing is visible (between a row's disappearing and the
        /// next one's appearing).
        private(set) var span: ClosedRange<Int>?

        init(ahead: Int, window: Int, count: Int?) {
            self.ahead = max(0, ahead)
            self.window = max(self.ahead, window)
            self.count = count.map { max(0, $0) }
        }

        /// Sets how many items the list has (nil: unknown).
        mutating func setCount(_ count: Int?) { self.count = count }

        /// Item `index` appeared: it is visible and holds its image; its prefetch, if any, goes on
        /// (its view's request shares the download) until the scroll leaves it behind.
        mutating func appeared(_ index: Int) -> Plan {
            guard index >= 0, !visible.contains(index) else { return Plan() }
            if let span {
                if index > span.upperBound { direction = .forward } else if index < span.lowerBound { direction = .backward }
            }
            visible.insert(index)
            held.insert(index)
            return plan()
        }

        /// Item `index` disappeared: it stays held (its image is shown by a view that may be
        /// shown again) until it is beyond the window.
        mutating func disappeared(_ index: Int) -> Plan {
            guard visible.remove(index) != nil else { return Plan() }
            if let lower = visible.min(), let upper = visible.max() {
                if index < lower { direction = .forward } else if index > upper { direction = .backward }
            }
            return plan()
        }

        /// Items the list itself asks to prefetch (UIKit's prefetching data source): started
        /// unless they are visible or prefetched already.
        mutating func prefetch(_ indexes: [Int]) -> Plan {
            var plan = Plan()
            for index in indexes where index >= 0 && !visible.contains(index) && !prefetching.contains(index) {
                if let count, index >= count { continue }
                prefetching.insert(index)
                held.insert(index)
                plan.start.append(index)
            }
            return plan
        }

        /// Items the list itself no longer needs prefetched (UIKit's `cancelPrefetching`).
        mutating func cancelPrefetching(_ indexes: [Int]) -> Plan {
            Plan(cancel: indexes.filter { prefetching.remove($0) != nil })
        }

        /// Forgets everything (the list's items changed): the prefetches under way are cancelled,
        /// and the items held are let go.
        mutating func reset() -> Plan {
            let plan = Plan(cancel: prefetching.sorted(), release: held.sorted())
            (visible, prefetching, held, span, direction) = ([], [], [], nil, .forward)
            return plan
        }

        /// What the visible span calls for now.
        private mutating func plan() -> Plan {
            if let lower = visible.min(), let upper = visible.max() { span = lower...upper }
            guard let span else { return Plan() }
            var plan = Plan()
            // Ahead, nearest first.
            let ahead = direction == .forward
                ? Array(stride(from: span.upperBound + 1, through: span.upperBound + self.ahead, by: 1))
                : Array(stride(from: span.lowerBound - 1, through: span.lowerBound - self.ahead, by: -1))
            for index in ahead where index >= 0 && index < (count ?? .max) && !prefetching.contains(index) {
                prefetching.insert(index)
                held.insert(index)
                plan.start.append(index)
            }
            // Behind: the scroll passed them, or turned back; and any beyond the window (asked by
            // the list itself).
            let kept = (span.lowerBound - window)...(span.upperBound + window)
            let behind = prefetching.filter {
                !kept.contains($0) || (direction == .forward ? $0 < span.lowerBound : $0 > span.upperBound)
            }
            prefetching.subtract(behind)
            plan.cancel = behind.sorted()
            // Beyond the window, on either side.
            let beyond = held.filter { !kept.contains($0) }
            held.subtract(beyond)
            plan.release = beyond.sorted()
            return plan
        }
    }
}
