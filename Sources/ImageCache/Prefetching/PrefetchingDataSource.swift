// Prefetching: the UIKit glue of a `ListPrefetcher`: a prefetching data source for a collection or
// table view, which hands the index paths UIKit gives to the prefetcher. Apple platforms only; what
// it drives is tested on Linux.

import Dispatch
import Foundation
#if canImport(UIKit)
import UIKit
#endif

#if canImport(UIKit) && !os(watchOS)
extension ImageCache {
    /// A `UICollectionView`'s or `UITableView`'s prefetching data source that hands what UIKit asks
    /// to a ``ListPrefetcher``: `prefetchItemsAt` prefetches, `cancelPrefetchingForItemsAt` cancels.
    /// Tell the prefetcher which cells appear too (`willDisplay` and `didEndDisplaying` call
    /// ``ListPrefetcher/appeared(_:)`` and ``ListPrefetcher/disappeared(_:)``), so that it follows the
    /// scroll and lets go of the rows behind it.
    ///
    /// ```swift
    /// let prefetching = ImageCache.PrefetchingDataSource(prefetcher)  // keep it: the view holds it weakly
    /// collectionView.prefetchDataSource = prefetching
    /// ```
    @MainActor
    public final class PrefetchingDataSource: NSObject, UICollectionViewDataSourcePrefetching,
                                              UITableViewDataSourcePrefetching {
        /// The prefetcher it hands the index paths to.
        public let prefetcher: ListPrefetcher
        private let index: (IndexPath) -> Int?

        /// A data source for `prefetcher`, whose index of an index path is `index` (by default the
        /// item, or row, of section 0; nil for one that is not the prefetcher's).
        public init(_ prefetcher: ListPrefetcher,
                    index: @escaping (IndexPath) -> Int? = { $0.section == 0 ? $0.item : nil }) {
            (self.prefetcher, self.index) = (prefetcher, index)
            super.init()
        }

        /// Prefetches the items at `indexPaths`.
        public func collectionView(_ collectionView: UICollectionView, prefetchItemsAt indexPaths: [IndexPath]) {
            prefetcher.prefetch(indexPaths.compactMap(index))
        }

        /// Cancels the prefetches of the items at `indexPaths`.
        public func collectionView(_ collectionView: UICollectionView,
                                   cancelPrefetchingForItemsAt indexPaths: [IndexPath]) {
            prefetcher.cancelPrefetching(indexPaths.compactMap(index))
        }

        /// Prefetches the rows at `indexPaths`.
        public func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath]) {
            prefetcher.prefetch(indexPaths.compactMap(index))
        }

        /// Cancels the prefetches of the rows at `indexPaths`.
        public func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {
            prefetcher.cancelPrefetching(indexPaths.compactMap(index))
        }
    }
}
#endif
