// Prefetching: `ListPrefetcher`, the object a list holds so that its images load ahead of the scroll
// and leave memory behind it. What it decides is `ListWindow`'s (ListWindow.swift); the SwiftUI
// modifier (ListRow.swift) and the UIKit data source (PrefetchingDataSource.swift) only tell it which
// rows appear and disappear.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// Loads a list's images ahead of its scroll, and lets them go behind it: told which rows appear
    /// and disappear, it infers the scroll's direction, prefetches the next `ahead` rows' images in
    /// that direction, cancels the prefetches the scroll left behind, and lets go of the images of
    /// rows more than `window` rows away from the visible ones, so that memory holds about
    /// `2 * window` rows' images (plus the visible ones) however long the list.
    ///
    /// ```swift
    /// let prefetcher = ImageCache.ListPrefetcher(count: posts.count) { index in
    ///     ImageCache.Request(url: posts[index].photo, size: CGSize(width: 320, height: 200))
    /// }
    /// // For each row: prefetcher.appeared(index) and prefetcher.disappeared(index)
    /// // (the SwiftUI modifier `prefetchingImages(row:with:)` does it).
    /// ```
    ///
    /// **Requests.** The rows' requests come from a closure, index to ``Request``, asked once for
    /// each row it prefetches or lets go (and again after it let one go); give each the size the row
    /// shows its image at (the `size` of the request the row's view binds), so that the prefetched
    /// decode is the one the row uses: a request of another size is another entry. A row with no
    /// image returns nil. In a grid, give `columns` (items per line): an index is an item, in
    /// reading order, and `ahead` and `window` count lines.
    ///
    /// **Lanes.** Prefetches load on the slow lane, which starts nothing while a visible row's
    /// load (on the fast lane) is queued or under way: they never make a visible row wait. A row
    /// that appears while its prefetch waits takes it to the fast lane (its view's request joins
    /// the download). The slow lane runs ``ImageCache/maxConcurrentSlowDownloads`` at once: 1 by
    /// default, which keeps ahead of a list that shows one new image per round trip (5 a second
    /// for images that take 200 ms); raise it for faster lists.
    ///
    /// **Memory.** A row more than `window` rows (lines) away from the visible ones is let go:
    /// its image leaves memory at once (unless a row still within the window shows the same
    /// entry), its file stays on disk, and a ``Binder`` registered for it (``register(_:row:)``,
    /// which the SwiftUI views do) shows its placeholder if its target is not displayed, until it
    /// is bound again. Scrolling back, the rows within the window are memory hits, shown at once;
    /// the others come from disk, prefetched ahead of the scroll as any row.
    ///
    /// **Thread safety.** A prefetcher belongs to the serial queue it is made with (the main
    /// queue for views): call it there, where it asks for the rows' requests.
    public final class ListPrefetcher: @unchecked Sendable {
        #if canImport(UIKit) || canImport(AppKit)
        /// The request of the row at an index, nil for a row with no image: on the main actor.
        public typealias RowRequest = @MainActor (Int) -> Request?
        #else
        /// The request of the row at an index, nil for a row with no image: on the prefetcher's queue.
        public typealias RowRequest = (Int) -> Request?
        #endif

        /// The cache it prefetches into.
        public let cache: ImageCache
        private let queue: DispatchQueue
        private let request: RowRequest
        private let columns: Int
        private var window: ListWindow
        private var requests: [Int: Request] = [:]  // of the rows held (prefetched or shown), asked once
        private var keys: [Key: Int] = [:]  // how many held rows show each entry
        private var binders: [Int: [WeakBinder]] = [:]  // registered by the rows' views
        /// What it did, for the tests and the benchmark.
        internal private(set) var counts = Counts()

        internal struct Counts: Equatable {
            var started = 0, cancelled = 0, releasedRows = 0, releasedImages = 0, releasedViews = 0
        }

        private struct WeakBinder { weak var binder: Binder? }

        /// A prefetcher for a list of `count` rows (nil: unknown; it then prefetches until the
        /// closure returns nil), whose row at an index shows `request(index)`.
        /// - Parameters:
        ///   - cache: the cache it prefetches into, and lets go of images in: `.shared` by default.
        ///   - count: how many rows the list has; nil (the default) while unknown.
        ///   - ahead: rows (lines, in a grid) prefetched ahead of the visible ones in the scroll's
        ///     direction. 10 by default; values below 0 are clamped to 0 (no prefetching).
        ///   - window: rows (lines) kept on each side of the visible ones; those beyond are let go.
        ///     30 by default; never fewer than `ahead`.
        ///   - columns: items per line, for a grid. 1 by default; values below 1 are clamped to 1.
        ///   - queue: where it is used: on Apple platforms, the main queue (another stops the program).
        ///   - request: the request of the row at an index (see ``RowRequest``), asked on `queue`.
        public init(cache: ImageCache = .shared, count: Int? = nil, ahead: Int = 10, window: Int = 30,
                    columns: Int = 1, queue: DispatchQueue = .main, request: @escaping RowRequest) {
            #if canImport(UIKit) || canImport(AppKit)
            precondition(queue === DispatchQueue.main, "a list's prefetcher is used on the main queue")
            #endif
            self.columns = max(1, columns)
            (self.cache, self.queue, self.request) = (cache, queue, request)
            self.window = ListWindow(ahead: max(0, ahead) * self.columns, window: max(0, window) * self.columns,
                                     count: count)
        }

        /// A prefetcher for a list whose row at an index shows `requests[index]`: as
        /// ``init(cache:count:ahead:window:columns:queue:request:)`` with the array's count.
        public convenience init(_ requests: [Request], cache: ImageCache = .shared, ahead: Int = 10,
                                window: Int = 30, columns: Int = 1, queue: DispatchQueue = .main) {
            self.init(cache: cache, count: requests.count, ahead: ahead, window: window, columns: columns,
                      queue: queue, request: { requests.indices.contains($0) ? requests[$0] : nil })
        }

        /// How many rows (items) the list has; nil while unknown. Set it when rows are added or
        /// removed at the end; when rows change elsewhere, ``reset()``.
        public var count: Int? {
            get { window.count }
            set {
                dispatchPrecondition(condition: .onQueue(queue))
                window.setCount(newValue.map { max(0, $0) })
            }
        }

        /// The row at `index` appeared (a SwiftUI row's `onAppear`, a cell's `willDisplay`):
        /// what that says of the scroll is done at once (prefetches started, cancelled, rows let go).
        public func appeared(_ index: Int) {
            dispatchPrecondition(condition: .onQueue(queue))
            let plan = window.appeared(index)
            if window.held.contains(index) { _ = hold(index) }  // shown: let go with the others
            carry(out: plan)
        }

        /// The row at `index` disappeared (`onDisappear`, `didEndDisplaying`).
        public func disappeared(_ index: Int) {
            dispatchPrecondition(condition: .onQueue(queue))
            carry(out: window.disappeared(index))
        }

        /// Prefetches the rows at `indexes`, as a list asks (UIKit's `prefetchItemsAt`), beside
        /// those it infers.
        public func prefetch(_ indexes: [Int]) {
            dispatchPrecondition(condition: .onQueue(queue))
            carry(out: window.prefetch(indexes))
        }

        /// Cancels the prefetches of the rows at `indexes` (UIKit's `cancelPrefetchingForItemsAt`);
        /// a load that a view shares goes on.
        public func cancelPrefetching(_ indexes: [Int]) {
            dispatchPrecondition(condition: .onQueue(queue))
            carry(out: window.cancelPrefetching(indexes))
        }

        /// `binder` shows the row at `index`: when the row is let go, the binder lets its image go
        /// too, if its target is not displayed (see ``Binder``). Held weakly, until the row is let go.
        public func register(_ binder: Binder, row index: Int) {
            dispatchPrecondition(condition: .onQueue(queue))
            guard !(binders[index]?.contains { $0.binder === binder } ?? false) else { return }
            binders[index, default: []].append(WeakBinder(binder: binder))
        }

        /// Forgets the rows (their order or contents changed): cancels every prefetch and lets
        /// every row's image go. The next rows to appear start afresh.
        public func reset() {
            dispatchPrecondition(condition: .onQueue(queue))
            carry(out: window.reset())
        }

        /// Starts, cancels and lets go what `plan` says.
        private func carry(out plan: ListWindow.Plan) {
            if !plan.cancel.isEmpty {
                let cancelled = plan.cancel.compactMap { requests[$0] }
                cache.cancelPrefetching(cancelled)
                counts.cancelled += cancelled.count
            }
            if !plan.start.isEmpty {
                let started = plan.start.compactMap(hold)
                cache.prefetch(started)
                counts.started += started.count
            }
            if !plan.release.isEmpty { release(plan.release) }
        }

        /// The request of the row at `index`, kept while the row is held.
        private func hold(_ index: Int) -> Request? {
            if let kept = requests[index] { return kept }
            guard let found = ImageCache.onTargetActor(index, request) else { return nil }
            requests[index] = found
            keys[found.cacheKey, default: 0] += 1
            return found
        }

        /// Lets go of the rows at `indexes`: their views' images, then memory's (but for entries a
        /// held row still shows).
        private func release(_ indexes: [Int]) {
            var gone: [Key] = []
            for index in indexes {
                for weak in binders.removeValue(forKey: index) ?? [] {
                    if let binder = weak.binder, binder.letGo(of: cache) { counts.releasedViews += 1 }
                }
                guard let request = requests.removeValue(forKey: index) else { continue }
                let key = request.cacheKey
                let left = (keys[key] ?? 1) - 1
                keys[key] = left > 0 ? left : nil
                if left <= 0 { gone += [key, key.decoded(as: .firstFrame)] }  // and its view's decode (AnimationDecode)
            }
            counts.releasedRows += indexes.count
            counts.releasedImages += cache.release(gone)
        }
    }
}
