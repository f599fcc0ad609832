// Progressive previews on their way: the transport's delegate hands each transfer that received
// bytes here, which reads its scans (Decoding/ProgressiveScans.swift) and sends a preview when due.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// `transfer` received bytes (on the transport's delegate queue, which alone touches its
    /// scans): if its load asked for ``Request/Options-swift.struct/progressivePreviews``, its body
    /// is in memory, and a progressive JPEG has more complete scans than its last preview, a
    /// preview is sent when ``PreviewSchedule`` says it is due, by the cache's clock. Never once the
    /// body is whole: the final image comes then.
    internal func received(_ transfer: Transfer) {
        let load = transfer.download.load
        guard load.options.contains(.progressivePreviews), transfer.spool == nil, let url = load.url else { return }
        if transfer.data.first == 0x89 { return receivedPNG(transfer, url: url) }
        transfer.scans.read(transfer.data)
        let scans = transfer.scans
        guard scans.isProgressive, !scans.hasEnded, transfer.received < (transfer.expected ?? .max),
              transfer.previews.isDue(scans: scans.scans, at: currentTime()),
              let bytes = scans.preview(of: transfer.data) else { return }
        notify(Notice(.preview, url: url, detail: "\(scans.scans) scans, \(bytes.count) bytes",
                      data: bytes, scans: scans.scans))
    }

    /// An interlaced PNG's part of `received`: a preview each time more of its Adam7 passes are
    /// complete (see ``InterlacedPasses``), by the same schedule; its `scans` are the passes.
    private func receivedPNG(_ transfer: Transfer, url: URL) {
        transfer.passes.read(transfer.data)
        let passes = transfer.passes
        guard passes.isInterlaced, !passes.hasEnded, transfer.received < (transfer.expected ?? .max),
              transfer.previews.isDue(scans: passes.passes, at: currentTime()),
              let bytes = passes.preview(of: transfer.data) else { return }
        notify(Notice(.preview, url: url, detail: "\(passes.passes) passes, \(bytes.count) bytes",
                      data: bytes, scans: passes.passes))
    }
}
