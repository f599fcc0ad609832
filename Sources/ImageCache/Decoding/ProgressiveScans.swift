// Progressive JPEG as it downloads: where each scan of a progressive frame (SOF2) ends, read from
// the bytes so far, and when a preview of them is due. Shared code: the Linux tests reach every
// decision; on Apple platforms ImageIO's incremental source makes the preview's pixels.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// The scans of a progressive JPEG found so far in a body that grows: fed each time bytes
    /// arrive, it goes on from where it stopped (each byte is read once, whatever the chunks), and
    /// says how many scans are complete and where the last complete one ends. A scan is complete
    /// when the marker after its entropy-coded data has arrived (the next table, scan header or
    /// end of image; restart markers and stuffed bytes are inside a scan). A baseline or lossless
    /// JPEG (any frame header but SOF2, progressive Huffman), or bytes that are not a JPEG, have
    /// none: ``isProgressive`` stays false and ``scans`` 0, for good.
    ///
    /// Untrusted bytes: every read is inside the bytes given; a broken stream stops the count where
    /// it breaks (``isBroken``), never traps.
    internal struct ProgressiveScans: Sendable {
        private enum Place: Sendable {
            case marker  // at a marker (FF xx), or its fill bytes
            case segment(end: Int)  // inside a marker segment that ends at `end`
            case entropy  // inside a scan's entropy-coded data
        }
        private var place = Place.marker
        private var offset = 2  // after SOI
        private var frame: Int?  // the frame header's marker (C0...CF), once seen
        /// Scans whose data has ended, and the offset where the last of them ends (the marker after it).
        private(set) var scans = 0
        private(set) var end = 0
        /// Whether the stream broke its structure (no marker where one must be): nothing more is read.
        private(set) var isBroken = false
        /// Whether the end of image has arrived: the body is whole, and no preview is due.
        var hasEnded: Bool { offset == Int.max }
        /// Whether the frame header seen says progressive (SOF2).
        var isProgressive: Bool { frame == 0xC2 }

        /// Reads the bytes of `data` not read yet (`data` holds all the bytes so far: it only grows).
        mutating func read(_ data: Data) {
            guard !isBroken, frame == nil || isProgressive else { return }
            data.withUnsafeBytes { raw in read(raw.bindMemory(to: UInt8.self)) }
        }

        private mutating func read(_ bytes: UnsafeBufferPointer<UInt8>) {
            if offset == 2, bytes.count >= 2, bytes[0] != 0xFF || bytes[1] != 0xD8 { isBroken = true; return }
            while offset < bytes.count {
                switch place {
                case .segment(let end):
                    guard end <= bytes.count else { return }  // the rest of the segment has not come
                    offset = end
                    place = .marker
                case .entropy:
                    // FF 00 is a stuffed byte, FF D0...D7 a restart, FF FF fill: still the scan.
                    guard let next = nextFF(bytes, from: offset), next + 1 < bytes.count else {
                        offset = max(offset, bytes.count - 1)  // the last byte may be an FF: read again
                        return
                    }
                    let marker = bytes[next + 1]
                    if marker == 0x00 || (0xD0...0xD7).contains(marker) || marker == 0xFF {
                        offset = next + (marker == 0xFF ? 1 : 2)
                        continue
                    }
                    (scans, end, offset, place) = (scans + 1, next, next, .marker)
                case .marker:
                    guard offset + 1 < bytes.count else { return }
                    guard bytes[offset] == 0xFF else { isBroken = true; return }
                    let marker = Int(bytes[offset + 1])
                    if marker == 0xFF { offset += 1; continue }
                    if marker == 0xD9 { offset = Int.max; return }  // end of image: nothing follows
                    if marker == 0x01 || (0xD0...0xD7).contains(marker) { offset += 2; continue }
                    guard offset + 3 < bytes.count else { return }
                    let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
                    guard length >= 2 else { isBroken = true; return }
                    if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                        guard frame == nil else { isBroken = true; return }  // one frame in a JPEG
                        frame = marker
                        guard isProgressive else { return }  // a baseline: no previews, nothing more to read
                    }
                    if marker == 0xDA {
                        guard frame != nil else { isBroken = true; return }
                        guard offset + 2 + length <= bytes.count else { return }  // the scan header is not whole
                        (offset, place) = (offset + 2 + length, .entropy)
                        continue
                    }
                    place = .segment(end: offset + 2 + length)
                }
            }
        }

        private func nextFF(_ bytes: UnsafeBufferPointer<UInt8>, from offset: Int) -> Int? {
            guard offset < bytes.count, let base = bytes.baseAddress,
                  let found = Foundation.memchr(base + offset, 0xFF, bytes.count - offset) else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }

        /// The bytes of `data` up to the end of its last complete scan, and an end-of-image marker:
        /// a whole JPEG that any decoder reads as the scans so far (the preview's bytes); nil while
        /// no scan is complete.
        func preview(of data: Data) -> Data? {
            guard scans > 0, end <= data.count else { return nil }
            return data.prefix(end) + Data([0xFF, 0xD9])
        }
    }

    /// When a preview of a progressive download is due: one with more complete scans than the
    /// last shown, at most one every ``interval`` seconds (a view redraws a few times a second at
    /// most, and each preview costs a decode), never after the body is whole (the final image
    /// follows then). The last scans before the end may so be skipped, never shown out of order.
    internal struct PreviewSchedule: Sendable {
        /// The least time between two previews, in seconds: at most 4 a second.
        static let interval: TimeInterval = 0.25
        private(set) var shownScans = 0
        private var shownAt: TimeInterval = -.infinity
        /// Previews let through.
        private(set) var count = 0

        /// Whether a preview of `scans` complete scans is due at `now` (seconds, any clock that does
        /// not go back); if so, it counts as shown.
        mutating func isDue(scans: Int, at now: TimeInterval) -> Bool {
            guard scans > shownScans, now - shownAt >= Self.interval else { return false }
            (shownScans, shownAt, count) = (scans, now, count + 1)
            return true
        }
    }
}
