// Prefetching: rows that do not jump. The height a row reserves for its image before the image comes,
// from the size the cache knows without decoding it (`peekSize`, API/ImageSize.swift): a UIKit list
// asks `reservedHeight(for:width:)` in its layout; a SwiftUI view takes the aspect ratio with
// `reservesAspectRatio(_:)` (SwiftUIViews.swift), which asks `knownAspectRatio(ofKey:)` here.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache.ImageSize {
    /// The height the image takes shown whole at `width` (in any unit: points, pixels), as shown (a
    /// quarter turn swaps its sides): `width / aspectRatio`. A row that shows its image at the
    /// list's width reserves this height before the image comes.
    public func height(forWidth width: CGFloat) -> CGFloat {
        width * CGFloat(displayHeight) / CGFloat(displayWidth)
    }
}

nonisolated extension ImageCache {
    /// The height a row `width` wide (points) reserves for the image `request` loads, shown whole at
    /// that width, if this process knows its size now (``peekSize(_:)``: decoded, read from disk, or
    /// asked with ``size(of:completion:)``); nil otherwise (give your estimate: the row takes its
    /// height when the image comes). The original's size: processors that change the shape (a crop,
    /// a circle) are not counted. For `heightForRowAt`, a layout's item size, a cell's height
    /// constraint; never reads the disk or waits.
    ///
    /// ```swift
    /// func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat {
    ///     ImageCache.shared.reservedHeight(for: rows[indexPath.row].photo, width: tableView.bounds.width) ?? 200
    /// }
    /// // Before the list's first layout in a new launch, learn its first rows' sizes from disk:
    /// // ImageCache.shared.size(of: request) { _ in tableView.reloadData() }
    /// ```
    ///
    /// - Complexity: O(1), as ``peekSize(_:)``.
    public func reservedHeight(for request: Request, width: CGFloat) -> CGFloat? {
        peekSize(request)?.height(forWidth: width)
    }

    /// The aspect ratio (width over height, as shown) of the image of `key` (a key's string) if
    /// this process knows its size: what a SwiftUI view that reserves its aspect ratio takes.
    internal func knownAspectRatio(ofKey key: String) -> Double? {
        sizes.size(of: key)?.aspectRatio
    }
}
