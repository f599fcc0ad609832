// The size before the image: an image's pixel size and EXIF orientation read from the first bytes
// of its file (PNG's IHDR, GIF's screen, WebP's first chunk, JPEG's frame header and Exif segment),
// with no decode, for `ImageSize`.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache.ImageSize {
    /// How many bytes of a file are read for its header first; a JPEG whose frame header lies
    /// beyond them (large Exif or color profile segments) is read again up to ``maxHeaderBytes``.
    internal static let headerBytes = 64 * 1024
    /// The most bytes of a file read for its header.
    internal static let maxHeaderBytes = 1024 * 1024

    /// The size and orientation `header`, the first bytes of an image, say; nil when they are not
    /// the start of a PNG, GIF, WebP or JPEG whose size lies within them. Every read is inside
    /// `header`: untrusted bytes give a size or nil, never a trap. The size is the first frame
    /// header's (PNG's IHDR, GIF's logical screen, WebP's VP8/VP8L/VP8X chunk: what ``ImageCache``'s
    /// structural check reads too), and 1 to 65,535 for a JPEG; the orientation is a JPEG's Exif
    /// `Orientation` (1 to 8; 1 when absent or out of range, and for the other formats).
    internal init?(header: Data) {
        // Read in place: a copy of the header would copy a whole downloaded body, once per download.
        let size = header.withUnsafeBytes { Self.size(in: UnsafeRawBufferPointer(rebasing: $0.prefix(Self.maxHeaderBytes))) }
        guard let size else { return nil }
        self.init(width: size.width, height: size.height, orientation: size.orientation)
    }

    /// What `init(header:)` reads from `bytes`.
    private static func size(in bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int, orientation: Int)? {
        func byte(_ i: Int) -> Int { i >= 0 && i < bytes.count ? Int(bytes[i]) : 0 }
        func be16(_ i: Int) -> Int { byte(i) << 8 | byte(i + 1) }
        func le16(_ i: Int) -> Int { byte(i) | byte(i + 1) << 8 }
        // 0 past 2^31 - 1 (PNG's limit, and more than `Int` holds on watchOS): not a size.
        func be32(_ i: Int) -> Int { be16(i) < 0x8000 ? be16(i) << 16 | be16(i + 2) : 0 }
        func matches(_ text: String, at offset: Int) -> Bool {
            text.utf8.enumerated().allSatisfy { byte(offset + $0.offset) == Int($0.element) }
        }
        var size: (width: Int, height: Int, orientation: Int)?
        if bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), matches("IHDR", at: 12) {
            size = (be32(16), be32(20), 1)
        } else if bytes.count >= 10, matches("GIF87a", at: 0) || matches("GIF89a", at: 0) {
            size = (le16(6), le16(8), 1)
        } else if matches("RIFF", at: 0), matches("WEBP", at: 8) {
            if matches("VP8 ", at: 12), bytes.count >= 30, byte(23) == 0x9D, byte(24) == 0x01, byte(25) == 0x2A {
                size = (le16(26) & 0x3FFF, le16(28) & 0x3FFF, 1)
            } else if matches("VP8L", at: 12), bytes.count >= 25, byte(20) == 0x2F {
                let bits = le16(21) | (le16(23) & 0x0FFF) << 16  // 14 bits of width, 14 of height
                size = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, 1)
            } else if matches("VP8X", at: 12), bytes.count >= 30 {
                size = ((byte(24) | byte(25) << 8 | byte(26) << 16) + 1, (byte(27) | byte(28) << 8 | byte(29) << 16) + 1, 1)
            }
        } else if bytes.count >= 4, byte(0) == 0xFF, byte(1) == 0xD8 {
            size = jpeg(bytes)
        }
        guard let size, size.width > 0, size.height > 0 else { return nil }
        return size
    }

    /// A JPEG's first frame header's size, and the orientation of an Exif segment before it: the
    /// markers walked by their lengths up to the first frame header (or the first scan: none).
    private static func jpeg(_ bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int, orientation: Int)? {
        func byte(_ i: Int) -> Int { i >= 0 && i < bytes.count ? Int(bytes[i]) : 0 }
        func be16(_ i: Int) -> Int { byte(i) << 8 | byte(i + 1) }
        var (offset, orientation) = (2, 1)
        while offset + 4 <= bytes.count {
            guard byte(offset) == 0xFF else { return nil }
            let marker = byte(offset + 1)
            if marker == 0xFF { offset += 1; continue }  // fill bytes
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { offset += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }  // a scan or the end before any frame header
            let length = be16(offset + 2)
            guard length >= 2 else { return nil }
            if marker == 0xE1, length >= 8, bytes.count >= offset + 2 + length {
                orientation = exifOrientation(bytes, from: offset + 4, to: offset + 2 + length) ?? orientation
            }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                guard length >= 7, offset + 9 <= bytes.count else { return nil }
                return (be16(offset + 7), be16(offset + 5), orientation)
            }
            offset += 2 + length
        }
        return nil
    }

    /// The `Orientation` (tag 0x0112) of the first IFD of the Exif segment in `bytes[start..<end]`
    /// ("Exif\0\0", then a TIFF header): 1 to 8, or nil.
    private static func exifOrientation(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int? {
        func byte(_ i: Int) -> Int { i >= start && i < end ? Int(bytes[i]) : 0 }
        guard [0x45, 0x78, 0x69, 0x66, 0, 0].enumerated().allSatisfy({ byte(start + $0.offset) == $0.element }) else {
            return nil
        }
        let tiff = start + 6
        let little: Bool
        switch (byte(tiff), byte(tiff + 1)) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ i: Int) -> Int { little ? byte(i) | byte(i + 1) << 8 : byte(i) << 8 | byte(i + 1) }
        // An offset inside one segment (at most 65,535 bytes): a larger one is not (nor an `Int` on watchOS).
        let (high, low) = little ? (u16(tiff + 6), u16(tiff + 4)) : (u16(tiff + 4), u16(tiff + 6))
        guard u16(tiff + 2) == 42, high == 0 else { return nil }
        let ifd = tiff + low
        guard ifd > tiff, ifd + 2 <= end else { return nil }
        let entries = min(u16(ifd), (end - ifd - 2) / 12)
        for entry in 0..<entries where u16(ifd + 2 + entry * 12) == 0x0112 {
            let value = u16(ifd + 2 + entry * 12 + 8)
            return (1...8).contains(value) ? value : nil
        }
        return nil
    }
}
