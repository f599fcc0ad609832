// Images: formats and decoding, and the decisions about sizes, scales and frames that every
// platform shares.

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

    /// Checks that `data` starts with a whole image of a known format and decodes it for the platform.
    ///
    /// Bytes after the image's end (see ``inspect(_:)``) are not part of it and are dropped: padding
    /// a server adds, or the video a motion photo appends to its JPEG. The result's `data` is the
    /// image's own bytes (`data` itself when nothing follows): what the cache keeps and delivers.
    ///
    /// Where the platform decodes (ImageIO), the bitmap is made at
    /// ``decodedSize(width:height:orientation:filling:maxPixels:)`` within `limits.maxPixels`, carrying
    /// `scale` (see ``displayScale(_:screen:)``: its `size` is in points), and a GIF or APNG animates
    /// if ``animates(frames:width:height:within:)`` says so.
    internal static func decode(_ data: Data, filling size: (width: Int, height: Int)? = nil,
                       limits: DecodeLimits = DecodeLimits(),
                       scale: Double = 1) -> Result<(image: Image, data: Data), Error> {
        let checked = inspect(data)
        #if canImport(ImageIO)
        // ImageIO decides what is an image (HEIC, AVIF, BMP...); the check finds a known format cut short.
        // Such an image shows its first frame: only GIF's and APNG's frames are counted and timed.
        if case .failure(.notAnImage) = checked,
           let image = bitmap(data, filling: size, limits: limits, frames: 1, scale: scale) {
            return .success((image, data))
        }
        #endif
        return checked.flatMap { info in
            // A copy, not a slice: a slice would keep the padding's memory alive.
            let trimmed = info.end < data.count ? Data(data.prefix(info.end)) : data
            #if canImport(ImageIO)
            guard let image = bitmap(trimmed, filling: size, limits: limits, frames: info.frames, scale: scale) else {
                return .failure(.corruptImage(info.format, "the system decoder rejected it"))
            }
            #else
            let image = Image(data: trimmed, format: info.format, width: info.width, height: info.height,
                              frameCount: info.frames, timing: info.timing)
            #endif
            return .success((image, trimmed))
        }
    }

    /// What bounds a decode: the settings when its request was made.
    internal struct DecodeLimits: Sendable {
        /// The longest side of an image decoded with no size to fill (``ImageCache/maxDecodedPixelSize``).
        var maxPixels = Int.max
        /// The most frames an animation may have (``ImageCache/maxAnimatedFrames``).
        var maxAnimatedFrames = 200
        /// The memory budget (``ImageCache/imageMemoryMaxBytes``); an animation may cost a quarter of it.
        var memoryMaxBytes = Int.max
    }

    /// Whether an image of `frames` frames, each decoded at `width` x `height` pixels, is shown
    /// animated: it has more than one frame, at most `limits.maxAnimatedFrames`, and its frames cost
    /// (4 bytes a pixel) at most a quarter of `limits.memoryMaxBytes`, the most that one image kept in
    /// memory may cost. Otherwise its first frame is shown.
    internal static func animates(frames: Int, width: Int, height: Int, within limits: DecodeLimits) -> Bool {
        frames > 1 && frames <= limits.maxAnimatedFrames
            && Double(frames) * Double(width) * Double(height) * 4 <= Double(limits.memoryMaxBytes) / 4
    }

    /// How long a frame is shown, in seconds, given the delay its file says (a GIF's unclamped one):
    /// as browsers do, a delay under 20 ms, 0 or none at all is shown for 100 ms.
    internal static func frameDuration(delay: Double?) -> Double {
        guard let delay, delay >= 0.02, delay.isFinite else { return 0.1 }
        return delay
    }

    /// An animation's timing as its file says it: how long each frame shows (by
    /// ``frameDuration(delay:)``) and how many times it plays (0: forever).
    internal struct Timing: Sendable, Hashable {
        var durations: [Double] = []
        var plays = 1
    }

    /// How many times an animated GIF plays, from its NETSCAPE2.0 loop count (nil: the file has
    /// none): once without one, forever for 0, else the count plus one, as browsers read it (the
    /// count is of the repetitions after the first play). An APNG's `num_plays` is its plays.
    internal static func plays(gifLoopCount: Int?) -> Int {
        guard let count = gifLoopCount else { return 1 }
        return count == 0 ? 0 : count + 1
    }

    /// How to show frames of their own `durations` (seconds) where a platform shows every frame
    /// for the same time (`UIImage.animatedImage(with:duration:)`): each frame repeated `repeats`
    /// times, each time for `unit` seconds, so that every frame keeps its own duration (a frame of
    /// 2 s between frames of 20 ms shows for 2 s). `unit` is their greatest common divisor in whole
    /// milliseconds, coarsened so that the frames shown number at most `maxShown` (the references
    /// cost a pointer each; the frames are not copied); every frame shows at least once.
    internal static func frameSchedule(_ durations: [Double], maxShown: Int = 1_000) -> (unit: Double, repeats: [Int]) {
        let milliseconds = durations.map { max(1, Int(($0 * 1_000).rounded())) }
        guard let first = milliseconds.first else { return (0.1, []) }
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        let total = milliseconds.reduce(0, +)
        var unit = milliseconds.reduce(first, gcd)
        if total / unit > maxShown { unit = (total + maxShown - 1) / maxShown }
        let repeats = milliseconds.map { max(1, Int((Double($0) / Double(unit)).rounded())) }
        return (Double(unit) / 1_000, repeats)
    }

    /// The size, in pixels, that an image of `width` x `height` pixels as stored is decoded at,
    /// upright: turned by its EXIF `orientation` (5 to 8 swap the sides, as a camera held upright
    /// writes them), then scaled down, never up, until one side fits `size` (a binder's target,
    /// in the same orientation), or, with no target, until its longest side is at most `maxPixels`.
    /// A target larger than `maxPixels` is what its caller asked for, and is kept.
    internal static func decodedSize(width: Int, height: Int, orientation: Int = 1, filling size: (width: Int, height: Int)?,
                            maxPixels: Int = .max) -> (width: Int, height: Int) {
        let (width, height) = (5...8).contains(orientation) ? (height, width) : (width, height)
        guard width > 0, height > 0 else { return (width, height) }
        let scale = size.map { min(1, max(Double($0.width) / Double(width), Double($0.height) / Double(height))) }
            ?? min(1, Double(max(1, maxPixels)) / Double(max(width, height)))
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// Whether a whole image of `whole` pixels, found in memory for a binding to fill `target`
    /// pixels, is to be replaced by the target's own decode: only if a bounded decode made it
    /// smaller than its original (its longest side reached `decodeBound`, the longest side of a
    /// whole decode; nil where images are not decoded, so a whole one is its original) and it does
    /// not fill the target. Else it is as sharp as the target's decode would be, and stays.
    internal static func upgrades(whole: (width: Int, height: Int), to target: (width: Int, height: Int),
                                  decodeBound: Int?) -> Bool {
        guard let decodeBound, max(whole.width, whole.height) >= decodeBound else { return false }
        return whole.width < target.width || whole.height < target.height
    }

    /// The scale an image decoded for the screen carries, so that its `size` is in points and
    /// `size` x `scale` is its bitmap in pixels: `scale` (a view's `displayScale`) if it is one, else
    /// `screen` (the main screen's, ``screenScale``), else 1. A view not in a window says 0.
    internal static func displayScale(_ scale: Double?, screen: Double) -> Double {
        [scale, screen].lazy.compactMap { $0 }.first { (1...16).contains($0) } ?? 1
    }

    /// The size in points of a bitmap of `width` x `height` pixels at `scale`: the pixels over the
    /// scale, not rounded (301 pixels at 2x are 150.5 points, as `UIImage` says), so that the size
    /// times the scale is the pixels again.
    internal static func pointSize(width: Int, height: Int, scale: Double) -> CGSize {
        CGSize(width: Double(width) / scale, height: Double(height) / scale)
    }

    /// What the header and structure of `data` say: format, size, `end`, where the image ends
    /// (after PNG's `IEND` chunk with its CRC; after JPEG's end-of-image marker; after GIF's trailer,
    /// or its last whole frame when it has none; at WebP's RIFF size + 8, + 1 when odd unless the data
    /// ends first), and `frames` (see ``Image/frameCount``). Or why `data` does not start with a whole image.
    internal static func inspect(_ data: Data)
        -> Result<(format: Format, width: Int, height: Int, end: Int, frames: Int, timing: Timing), Error> {
        guard !data.isEmpty else { return .failure(.emptyBody) }
        return data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            let reader = ByteReader(bytes: bytes)
            if reader.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return reader.png() }
            if reader.starts(with: [0xFF, 0xD8, 0xFF]) { return reader.jpeg() }
            if reader.starts(with: "GIF87a".utf8) || reader.starts(with: "GIF89a".utf8) { return reader.gif() }
            if reader.starts(with: "RIFF".utf8), reader.matches("WEBP".utf8, at: 8) { return reader.webp() }
            return .failure(.notAnImage(reader.describe()))
        }
    }

    /// Bounds-checked reads over a buffer; every accessor returns 0 past the end, and callers
    /// check lengths before trusting what they read.
    fileprivate struct ByteReader {
        let bytes: UnsafeBufferPointer<UInt8>
        var count: Int { bytes.count }
        typealias Info = Result<(format: Format, width: Int, height: Int, end: Int, frames: Int, timing: Timing), Error>

        func byte(_ i: Int) -> Int { i >= 0 && i < bytes.count ? Int(bytes[i]) : 0 }
        func be16(_ i: Int) -> Int { byte(i) << 8 | byte(i + 1) }
        func le16(_ i: Int) -> Int { byte(i) | byte(i + 1) << 8 }
        func le24(_ i: Int) -> Int { le16(i) | byte(i + 2) << 16 }
        // 32-bit fields stay unsigned: up to 2^32 - 1, more than `Int` holds on watchOS (arm64_32).
        // They are compared with what is left (`count - offset`), never added to an offset unchecked.
        func be32(_ i: Int) -> UInt32 { UInt32(be16(i)) << 16 | UInt32(be16(i + 2)) }
        func le32(_ i: Int) -> UInt32 { UInt32(le16(i)) | UInt32(le16(i + 2)) << 16 }

        func starts(with prefix: some Collection<UInt8>) -> Bool { matches(prefix, at: 0) }
        func matches(_ pattern: some Collection<UInt8>, at offset: Int) -> Bool {
            guard offset + pattern.count <= bytes.count else { return false }
            for (i, b) in pattern.enumerated() where bytes[offset + i] != b { return false }
            return true
        }

        func png() -> Info {
            guard count >= 33, matches("IHDR".utf8, at: 12), be32(8) == 13 else {
                return corrupt(.png, "no IHDR header")
            }
            let (width, height) = (be32(16), be32(20))
            guard (1...0x7FFF_FFFF).contains(width), (1...0x7FFF_FFFF).contains(height) else {  // PNG's limit
                return corrupt(.png, "size \(width)x\(height) out of range")
            }
            var offset = 8
            var (claimed, controls): (UInt32?, Int) = (nil, 0)  // acTL's number of frames; fcTL chunks seen
            var timing = Timing()
            while count - offset >= 12, be32(offset) <= count - offset - 12 {
                let end = offset + 12 + Int(be32(offset))
                if matches("IEND".utf8, at: offset + 4) {
                    // An APNG's frames: as many as acTL claims, if the file holds a frame control for each.
                    let frames = max(1, claimed.map { controls < $0 ? controls : Int($0) } ?? 1)
                    timing.durations = frames > 1 ? Array(timing.durations.prefix(frames)) : []
                    if frames == 1 { timing.plays = 1 }
                    return .success((.png, Int(width), Int(height), end, frames, timing))
                }
                if matches("acTL".utf8, at: offset + 4), be32(offset) >= 8 {
                    claimed = be32(offset + 8)
                    timing.plays = Int(min(be32(offset + 12), UInt32(Int32.max)))
                }
                if matches("fcTL".utf8, at: offset + 4) {
                    controls += 1
                    if be32(offset) >= 26 {  // delay_num / delay_den (0: hundredths), after 20 bytes
                        let denominator = be16(offset + 30)
                        let delay = Double(be16(offset + 28)) / Double(denominator == 0 ? 100 : denominator)
                        timing.durations.append(frameDuration(delay: delay))
                    }
                }
                offset = end
            }
            return corrupt(.png, "ends before IEND (truncated at \(count) bytes)")
        }

        func jpeg() -> Info {
            var offset = 2
            var size: (Int, Int)?
            var inScan = false
            while offset < count {
                if inScan {
                    // Entropy-coded data: FF 00 is a stuffed byte, FF D0...D7 a restart marker.
                    guard let next = nextFF(from: offset) else { break }
                    let marker = byte(next + 1)
                    if marker == 0x00 || (0xD0...0xD7).contains(marker) || marker == 0xFF {
                        offset = next + (marker == 0xFF ? 1 : 2)
                        continue
                    }
                    inScan = false
                    offset = next
                    continue
                }
                guard byte(offset) == 0xFF else { return corrupt(.jpeg, "no marker at byte \(offset)") }
                var marker = byte(offset + 1)
                while marker == 0xFF, offset + 2 < count { offset += 1; marker = byte(offset + 1) }
                if marker == 0xD9 {
                    guard let (width, height) = size else { return corrupt(.jpeg, "no frame header") }
                    return .success((.jpeg, width, height, offset + 2, 1, Timing()))
                }
                if (0xD0...0xD7).contains(marker) || marker == 0x01 { offset += 2; continue }
                let length = be16(offset + 2)
                guard length >= 2, length <= count - offset - 2 else { break }
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    let (height, width) = (be16(offset + 5), be16(offset + 7))
                    guard width > 0, height > 0 else { return corrupt(.jpeg, "zero size") }
                    size = (width, height)
                }
                if marker == 0xDA {
                    guard size != nil else { return corrupt(.jpeg, "scan before frame header") }
                    inScan = true
                }
                offset += 2 + length
            }
            return corrupt(.jpeg, "ends before the end-of-image marker (truncated at \(count) bytes)")
        }

        private func nextFF(from offset: Int) -> Int? {
            guard offset < count, let base = bytes.baseAddress,
                  let found = Foundation.memchr(base + offset, 0xFF, count - offset) else { return nil }
            let index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            return index + 1 < count ? index : nil
        }

        func gif() -> Info {
            guard count >= 13 else { return corrupt(.gif, "header cut short") }
            let (width, height) = (le16(6), le16(8))
            guard width > 0, height > 0 else { return corrupt(.gif, "zero size") }
            var offset = 13
            if byte(10) & 0x80 != 0 { offset += 3 << ((byte(10) & 0x07) + 1) }
            var frames = 0
            var (delays, delay, loopCount): ([Double], Double?, Int?) = ([], nil, nil)
            func whole(_ end: Int) -> Info {
                let timing = frames > 1 ? Timing(durations: delays, plays: plays(gifLoopCount: loopCount)) : Timing()
                return .success((.gif, width, height, end, frames, timing))
            }
            while offset < count {
                switch byte(offset) {
                case 0x3B:
                    guard frames > 0 else { return corrupt(.gif, "no frames") }
                    return whole(offset + 1)
                case 0x21:
                    if byte(offset + 1) == 0xF9, byte(offset + 2) >= 4 {  // graphic control: the next frame's delay
                        delay = Double(le16(offset + 4)) / 100
                    } else if byte(offset + 1) == 0xFF, matches("NETSCAPE2.0".utf8, at: offset + 3),
                              byte(offset + 14) >= 3, byte(offset + 15) == 1 {
                        loopCount = le16(offset + 16)
                    }
                    guard let end = skipSubBlocks(offset + 2) else { return truncatedGIF() }
                    offset = end
                case 0x2C:
                    guard count - offset >= 10 else { return truncatedGIF() }
                    let packed = byte(offset + 9)
                    offset += 10
                    if packed & 0x80 != 0 { offset += 3 << ((packed & 0x07) + 1) }
                    guard let end = skipSubBlocks(offset + 1) else { return truncatedGIF() }
                    offset = end
                    frames += 1
                    delays.append(frameDuration(delay: delay))
                    delay = nil
                default:
                    return corrupt(.gif, "unknown block at byte \(offset)")
                }
            }
            // Many GIFs in the wild lack the trailer; a last frame that is whole is enough.
            return frames > 0 && offset == count ? whole(count) : truncatedGIF()
        }

        private func truncatedGIF() -> Info {
            corrupt(.gif, "ends inside a block (truncated at \(count) bytes)")
        }

        /// Why the bytes are not a whole image of `format`.
        private func corrupt(_ format: Format, _ reason: String) -> Info {
            .failure(.corruptImage(format, reason))
        }

        /// Skips GIF data sub-blocks starting at `offset`; returns the offset after the terminator.
        private func skipSubBlocks(_ start: Int) -> Int? {
            var offset = start
            while offset < count {
                let size = byte(offset)
                offset += 1
                if size == 0 { return offset }
                offset += size
            }
            return nil
        }

        func webp() -> Info {
            let riffSize = le32(4)  // the bytes after the first 8
            guard riffSize <= count - 8 else {
                return corrupt(.webp, "RIFF says \(Int64(riffSize) + 8) bytes, got \(count) (truncated)")
            }
            guard count >= 30 else { return corrupt(.webp, "header cut short") }
            var size: (Int, Int)?
            if matches("VP8 ".utf8, at: 12), matches([0x9D, 0x01, 0x2A], at: 23) {
                size = (le16(26) & 0x3FFF, le16(28) & 0x3FFF)
            } else if matches("VP8L".utf8, at: 12), byte(20) == 0x2F {
                let bits = Int(le32(21) & 0x0FFF_FFFF)  // 14 bits of width, 14 of height
                size = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
            } else if matches("VP8X".utf8, at: 12) {
                size = (le24(24) + 1, le24(27) + 1)
            }
            guard let (width, height) = size, width > 0, height > 0 else {
                return corrupt(.webp, "no VP8, VP8L or VP8X header")
            }
            // An animated WebP (ANIM and ANMF chunks) counts as 1 frame: its frames are not walked.
            return .success((.webp, width, height, 8 + min(count - 8, Int(riffSize) + Int(riffSize & 1)), 1, Timing()))
        }

        /// A short description of bytes that are not an image, for error messages.
        func describe() -> String {
            let prefix = Array(bytes.prefix(16))
            let text = String(decoding: prefix, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let lower = text.lowercased()
            if lower.hasPrefix("<!doctype html") || lower.hasPrefix("<html") { return "an HTML page" }
            if lower.hasPrefix("<?xml") || lower.hasPrefix("<svg") { return "XML or SVG text" }
            if lower.hasPrefix("{") || lower.hasPrefix("[") { return "JSON-like text" }
            if prefix.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                return "text starting \"\(text)\""
            }
            return "unknown bytes " + prefix.prefix(8).map { String(format: "%02X", $0) }.joined(separator: " ")
        }
    }
}
