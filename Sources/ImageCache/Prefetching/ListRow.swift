// Prefetching: the SwiftUI glue of a `ListPrefetcher`: the modifier a list's rows wear
// (`prefetchingImages(row:with:)`), which tells the prefetcher when a row appears and disappears,
// and the row it puts in the environment, where the views (`Bound`, SwiftUIViews.swift) find it to
// register their binders. Apple platforms only; what it drives is tested on Linux.

import Dispatch
import Foundation
#if canImport(SwiftUI)
import SwiftUI
#endif

#if canImport(SwiftUI)  // (a comment, so that .ci/amalgamate does not read it as part of the imports)
extension ImageCache {
    /// The row of a list with a ``ListPrefetcher`` that a view is in, as
    /// `prefetchingImages(row:with:)` puts it in the environment.
    internal struct ListRow: Sendable {
        let prefetcher: ListPrefetcher
        let index: Int

        /// Where the environment keeps it: nil outside such a row.
        struct Key: EnvironmentKey {
            static let defaultValue: ListRow? = nil
        }
    }
}

extension EnvironmentValues {
    /// The list row a view is in, if its list has a prefetcher (see `prefetchingImages(row:with:)`).
    internal var imageCacheListRow: ImageCache.ListRow? {
        get { self[ImageCache.ListRow.Key.self] }
        set { self[ImageCache.ListRow.Key.self] = newValue }
    }
}

/// A row of a list whose images a ``ImageCache/ListPrefetcher`` loads ahead.
extension View {
    /// Makes this view the row at `index` of a list whose images `prefetcher` loads ahead (see
    /// ``ImageCache/ListPrefetcher``): it tells the prefetcher when the row appears and disappears,
    /// and the ``ImageCache/RemoteImage`` and ``ImageCache/AsyncImage`` views inside it let their
    /// images go when the row falls beyond the prefetcher's window.
    ///
    /// ```swift
    /// ScrollView {
    ///     LazyVStack {
    ///         ForEach(posts.indices, id: \.self) { index in
    ///             ImageCache.RemoteImage(posts[index].photo)
    ///                 .prefetchingImages(row: index, with: prefetcher)
    ///         }
    ///     }
    /// }
    /// ```
    @MainActor
    public func prefetchingImages(row index: Int, with prefetcher: ImageCache.ListPrefetcher) -> some View {
        environment(\.imageCacheListRow, ImageCache.ListRow(prefetcher: prefetcher, index: index))
            .onAppear { prefetcher.appeared(index) }
            .onDisappear { prefetcher.disappeared(index) }
    }
}
#endif
