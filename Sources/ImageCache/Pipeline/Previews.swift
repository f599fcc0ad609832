// Progressive previews on their way: the transport's delegate hands each transfer that received
// bytes here, which reads its scans (Decoding/ProgressiveScans.swift) and, when a preview is due,
// sends it as a notice (`.progressivePreviews`) and to the views that wait for the download, as an
// image: on Apple platforms ImageIO's incremental source makes its pixels, on Linux it is the
// preview's bytes (a whole JPEG of the complete scans). Views decide what they show
// (Views/ViewPreviews.swift).

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

nonisolated extension ImageCache {
    /// A preview of a download under way: its image and how many complete scans (an interlaced PNG's
    /// passes) it shows. Made for the waiters of one download, handed to each on its queue.
    internal struct Preview: @unchecked Sendable {  // its image is shown on one queue, the binder's
        let image: Image
        let scans: Int
    }

    /// `transfer` received bytes (on the transport's delegate queue, which alone touches its
    /// scans): if its load asked for ``Request/Options-swift.struct/progressivePreviews`` or is a
    /// view's (which hooks its previews), its body is in memory, and a progressive JPEG has more
    /// complete scans than its last preview, a preview is sent when ``PreviewSchedule`` says it is
    /// due, by the cache's clock. Never once the body is whole: the final image comes then.
    internal func received(_ transfer: Transfer) {
        let load = transfer.download.load
        guard load.options.contains(.progressivePreviews) || load.onPreview != nil, transfer.spool == nil,
              let url = load.url else { return }
        if transfer.data.first == 0x89 { return receivedPNG(transfer, url: url) }
        let scans = transfer.readScans()
        guard scans.isProgressive, !scans.hasEnded, transfer.received < (transfer.expected ?? .max),
              transfer.previewDue(scans: scans.scans, at: currentTime()),
              let bytes = scans.preview(of: transfer.data) else { return }
        previewed(transfer, url, bytes, scans: scans.scans, what: "scans")
    }

    /// An interlaced PNG's part of `received`: a preview each time more of its Adam7 passes are
    /// complete (see ``InterlacedPasses``), by the same schedule; its `scans` are the passes.
    private func receivedPNG(_ transfer: Transfer, url: URL) {
        let passes = transfer.readPasses()
        guard passes.isInterlaced, !passes.hasEnded, transfer.received < (transfer.expected ?? .max),
              transfer.previewDue(scans: passes.passes, at: currentTime()),
              let bytes = passes.preview(of: transfer.data) else { return }
        previewed(transfer, url, bytes, scans: passes.passes, what: "passes")
    }

    /// Sends a preview of `bytes` (a whole image of the `scans` complete so far): the notice, if the
    /// load asked for it, and the image to each waiter that hooks previews, on its queue, unless it
    /// was answered or cancelled by then (its final image is never followed by a preview).
    private func previewed(_ transfer: Transfer, _ url: URL, _ bytes: Data, scans: Int, what: String) {
        if transfer.download.load.options.contains(.progressivePreviews) {
            notify(Notice(.preview, url: url, detail: "\(scans) \(what), \(bytes.count) bytes", data: bytes, scans: scans))
        }
        let tasks = locked { _ in transfer.download.waiters }.filter { $0.load.onPreview != nil }
        guard !tasks.isEmpty, let image = Self.previewImage(bytes, soFar: transfer.data) else { return }
        let preview = Preview(image: image, scans: scans)
        for task in tasks {
            task.queue.async { if task.isWaiting { task.load.onPreview?(preview) } }
        }
    }

    /// A preview's image: on Apple platforms ImageIO's incremental source of the bytes `soFar` (the
    /// pixels of the scans it has, decoded when drawn); elsewhere the image of `bytes`, the whole
    /// JPEG (or PNG) of the complete scans.
    internal static func previewImage(_ bytes: Data, soFar: Data) -> Image? {
        #if canImport(ImageIO) && (canImport(UIKit) || canImport(AppKit))
        let source = CGImageSourceCreateIncremental(nil)
        CGImageSourceUpdateData(source, soFar as CFData, false)
        guard let cgImage = CGImageSourceCreateImageAtIndex(source, 0, nil) else { return nil }
        #if canImport(UIKit)
        return UIImage(cgImage: cgImage)
        #else
        return NSImage(cgImage: cgImage, size: NSSize(width: cgImage.width, height: cgImage.height))
        #endif
        #else
        return Image(data: bytes)
        #endif
    }
}
