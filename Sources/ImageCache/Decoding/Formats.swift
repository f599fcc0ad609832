// Formats: the structural check of PNG, JPEG, GIF and WebP bytes (where an image ends, its size, its
// frames and their timing; an animated WebP's by WebPAnimation), which runs on every platform before
// any decoder.

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
    /// What the header and structure of `data` say: format, size, `end`, where the image ends
    /// (after PNG's `IEND` chunk with its CRC; after JPEG's end-of-image marker; after GIF's trailer,
    /// or its last whole frame when it has none; at WebP's RIFF size + 8, + 1 when odd unless the data
    /// ends first), and `frames` (see ``Image/frameCount``). Or why `data` does not start with a whole image.
    ///
    /// Every field it reads lies inside the chunk, segment or block that declares it, and header
    /// fields are checked against their format's rules (PNG: color type and bit depth pairs, the
    /// methods, every chunk's CRC but the image data's, a palette before the data, data before
    /// `IEND`; WebP: chunks inside the RIFF, image data after a VP8X header): so the bytes up to
    /// `end` inspect again to the same result.
    internal static func inspect(_ data: Data)
        -> Result<(format: Format, width: Int, height: Int, end: Int, frames: Int, timing: FrameTiming), Error> {
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
        typealias Info = Result<(format: Format, width: Int, height: Int, end: Int, frames: Int, timing: FrameTiming), Error>

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
            guard offset >= 0, offset + pattern.count <= bytes.count else { return false }
            var index = offset  // not `enumerated()`: over a string's UTF-8 view it cost ~300 instructions a call
            for byte in pattern {
                guard bytes[index] == byte else { return false }
                index += 1
            }
            return true
        }

        func png() -> Info {
            guard count >= 33, be32(12) == Chunk.ihdr, be32(8) == 13 else {
                return corrupt(.png, "no IHDR header")
            }
            let (width, height) = (be32(16), be32(20))
            guard (1...0x7FFF_FFFF).contains(width), (1...0x7FFF_FFFF).contains(height) else {  // PNG's limit
                return corrupt(.png, "size \(width)x\(height) out of range")
            }
            guard crc32(12, 17) == be32(29) else { return corrupt(.png, "IHDR's CRC does not match its bytes") }
            let (depth, color) = (byte(24), byte(25))
            guard Self.depthExists(depth, color: color) else {
                return corrupt(.png, "bit depth \(depth) with color type \(color) does not exist")
            }
            guard byte(26) == 0, byte(27) == 0, byte(28) <= 1 else {
                return corrupt(.png, "unknown compression, filter or interlace method")
            }
            var offset = 33
            var (claimed, controls): (UInt32?, Int) = (nil, 0)  // acTL's number of frames; fcTL chunks seen
            var (palette, data) = (false, false)  // PLTE and IDAT chunks seen
            var (durations, plays): ([Double], Int?) = ([], nil)  // fcTL delays, acTL plays: a timing built whole
            while count - offset >= 12, be32(offset) <= min(count - offset - 12, 0x7FFF_FFFF) {
                let length = Int(be32(offset))
                let end = offset + 12 + length
                guard (0..<4).allSatisfy({ Self.isLetter(byte(offset + 4 + $0)) }) else {
                    return corrupt(.png, "no chunk type at byte \(offset + 4)")
                }
                // Every chunk's CRC but the image data's (IDAT, fdAT): those are most of the bytes, a CRC
                // over them costs many times the rest of the check (CHANGELOG), and a decoder checks them.
                let type = be32(offset + 4)  // four letters, compared as one number (`Chunk`)
                let imageData = type == Chunk.idat || type == Chunk.fdat
                guard imageData || crc32(offset + 4, 4 + length) == be32(end - 4) else {
                    return corrupt(.png, "the CRC of the chunk at byte \(offset) does not match its bytes")
                }
                if type == Chunk.iend {
                    guard data else { return corrupt(.png, "no IDAT before IEND") }
                    // An APNG's frames: as many as acTL claims, if the file holds a frame control for each.
                    let frames = max(1, claimed.map { controls < $0 ? controls : Int($0) } ?? 1)
                    let timing = frames > 1 ? FrameTiming(durations: Array(durations.prefix(frames)), plays: plays ?? 1)
                        : FrameTiming()
                    return .success((.png, Int(width), Int(height), end, frames, timing))
                }
                if type == Chunk.plte { palette = true }
                if type == Chunk.idat {
                    guard color != 3 || palette else { return corrupt(.png, "no PLTE before IDAT") }
                    data = true
                }
                if type == Chunk.actl, length >= 8 {
                    claimed = be32(offset + 8)
                    plays = Int(min(be32(offset + 12), UInt32(Int32.max)))
                }
                if type == Chunk.fctl {
                    controls += 1
                    // delay_num / delay_den (0: hundredths), after 20 bytes; a chunk too short has none.
                    let denominator = Double(be16(offset + 30) == 0 ? 100 : be16(offset + 30))
                    let delay = length < 26 ? nil : Double(be16(offset + 28)) / denominator
                    durations.append(FrameTiming.duration(delay: delay))
                }
                offset = end
            }
            return corrupt(.png, "ends before IEND (truncated at \(count) bytes)")
        }

        /// Whether PNG allows bit depth `depth` with color type `color` (PNG, 11.2.2): one bit per
        /// depth allowed, not a table of sets (hashed twice a check).
        private static func depthExists(_ depth: Int, color: Int) -> Bool {
            let allowed: Int
            switch color {
            case 0: allowed = 1 << 1 | 1 << 2 | 1 << 4 | 1 << 8 | 1 << 16  // grayscale
            case 3: allowed = 1 << 1 | 1 << 2 | 1 << 4 | 1 << 8  // palette
            case 2, 4, 6: allowed = 1 << 8 | 1 << 16  // RGB, gray and alpha, RGBA
            default: return false
            }
            return (1...16).contains(depth) && allowed & 1 << depth != 0
        }

        private static func isLetter(_ byte: Int) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }

        /// PNG's CRC-32 (the one zlib computes) of `length` bytes from `start`, which lie inside the buffer.
        /// The PNG chunk types `png` reads, as their four letters read big-endian (`be32`).
        private enum Chunk {
            static let ihdr: UInt32 = 0x4948_4452, idat: UInt32 = 0x4944_4154, fdat: UInt32 = 0x6664_4154, iend: UInt32 = 0x4945_4E44
            static let plte: UInt32 = 0x504C_5445, actl: UInt32 = 0x6163_544C, fctl: UInt32 = 0x6663_544C
        }

        private func crc32(_ start: Int, _ length: Int) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            Self.crcTable.withUnsafeBufferPointer { table in
                for byte in UnsafeBufferPointer(rebasing: bytes[start..<(start + length)]) {
                    crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
                }
            }
            return crc ^ 0xFFFF_FFFF
        }

        private static let crcTable: [UInt32] = (0..<256).map { (n: UInt32) -> UInt32 in
            (0..<8).reduce(n) { crc, _ in crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
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
                    return .success((.jpeg, width, height, offset + 2, 1, FrameTiming()))
                }
                if (0xD0...0xD7).contains(marker) || marker == 0x01 { offset += 2; continue }
                let length = be16(offset + 2)
                guard length >= 2, length <= count - offset - 2 else { break }
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    // Length, precision, height, width, components, then 3 bytes a component: all inside it.
                    guard byte(offset + 9) > 0, length >= 8 + 3 * byte(offset + 9) else {
                        return corrupt(.jpeg, "frame header of \(length) bytes too short for its fields")
                    }
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
                let timing = frames > 1 ? FrameTiming(durations: delays, plays: FrameTiming.plays(gifLoopCount: loopCount)) : FrameTiming()
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
                    } else if byte(offset + 1) == 0xFF, byte(offset + 2) == 11, matches("NETSCAPE2.0".utf8, at: offset + 3),
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
                    delays.append(FrameTiming.duration(delay: delay))
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
            // The chunks inside the RIFF (with its pad byte, if it is odd and the data has it): the
            // first is the header (VP8, VP8L or VP8X), whose fields lie inside it; an extended file
            // (VP8X) holds image data (VP8, VP8L or ANMF) after it.
            let riffEnd = 8 + min(count - 8, Int(riffSize) + Int(riffSize & 1))
            var (offset, size, image): (Int, (Int, Int)?, Bool) = (12, nil, false)
            while riffEnd - offset >= 8 {
                let (kind, start) = (offset, offset + 8)
                guard le32(offset + 4) <= riffEnd - start else {
                    return corrupt(.webp, "chunk at byte \(offset) of \(le32(offset + 4)) bytes overruns the RIFF size")
                }
                let length = Int(le32(offset + 4))
                if offset == 12 {
                    if matches("VP8 ".utf8, at: kind), length >= 10, matches([0x9D, 0x01, 0x2A], at: start + 3) {
                        (size, image) = ((le16(start + 6) & 0x3FFF, le16(start + 8) & 0x3FFF), true)
                    } else if matches("VP8L".utf8, at: kind), length >= 5, byte(start) == 0x2F {
                        let bits = Int(le32(start + 1) & 0x0FFF_FFFF)  // 14 bits of width, 14 of height
                        (size, image) = (((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1), true)
                    } else if matches("VP8X".utf8, at: kind), length >= 10 {
                        size = (le24(start + 4) + 1, le24(start + 7) + 1)
                    } else {
                        break
                    }
                } else if ["VP8 ", "VP8L", "ANMF"].contains(where: { matches($0.utf8, at: kind) }) {
                    image = true
                }
                offset = start + length + (length & 1)
            }
            guard let (width, height) = size, width > 0, height > 0 else {
                return corrupt(.webp, "no VP8, VP8L or VP8X header")
            }
            guard image else { return corrupt(.webp, "no image data after the VP8X header") }
            guard matches("VP8X".utf8, at: 12) else { return .success((.webp, width, height, riffEnd, 1, FrameTiming())) }
            // An extended WebP: its ANIM and ANMF chunks, if it is animated (WebPAnimation).
            switch WebPAnimation(bytes).frames(to: riffEnd, canvas: (width, height)) {
            case .success(let animation): return .success((.webp, width, height, riffEnd, animation.frames, animation.timing))
            case .failure(let refusal): return corrupt(.webp, refusal.reason)
            }
        }

        /// A short description of bytes that are not an image, for error messages.
        func describe() -> String {
            if let heif = HEIFBrands(bytes) { return heif.description }  // Format cannot grow in 1.x
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
