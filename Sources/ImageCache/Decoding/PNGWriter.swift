// Pixels as PNG bytes, where no UI framework exists: how a plugged decoder (or a placeholder) on Linux
// makes an `Image` of a format the cache already has.

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


#if !canImport(UIKit) && !canImport(AppKit)
nonisolated extension ImageCache.Image {
    /// An image of `rgba` pixels, 4 bytes each (red, green, blue, alpha; rows top to bottom),
    /// `width` x `height` of them, kept as PNG bytes (stored, not compressed): how a plugged
    /// decoder (``ImageCache/ImageDecoder``) makes an image where no UI framework exists. Its
    /// ``format`` is ``ImageCache/Format/png``. Nil when the sizes are not positive or the bytes
    /// are not `width * height * 4`.
    public init?(rgba: [UInt8], width: Int, height: Int) {
        guard width > 0, height > 0, width <= 1 << 24, height <= 1 << 24,
              width.multipliedReportingOverflow(by: height).partialValue <= Int.max / 4,
              rgba.count == width * height * 4,
              let image = ImageCache.Image(data: ImageCache.PNGWriter.png(rgba, channels: 4, width: width, height: height)) else {
            return nil
        }
        self = image
    }
}
#endif

nonisolated extension ImageCache {
    /// Writes 8-bit pixels as a PNG: no filter, one IDAT of stored (uncompressed) deflate blocks (a
    /// few dozen bytes more than the pixels, and no compressor needed), every chunk with its CRC.
    /// Any PNG decoder reads it; on Linux ``Image`` holds it as is. The one PNG writer: a plugged
    /// decoder's image (RGBA) and a BlurHash placeholder (RGB).
    internal enum PNGWriter {
        /// The PNG of `pixels`, `channels` bytes each (3: RGB, 4: RGBA), `width` x `height` of them
        /// row by row.
        static func png(_ pixels: [UInt8], channels: Int, width: Int, height: Int) -> Data {
            precondition((channels == 3 || channels == 4) && width > 0 && height > 0
                         && pixels.count == width * height * channels, "pixels for the size")
            let rowBytes = width * channels
            var raw = [UInt8]()
            raw.reserveCapacity(height * (rowBytes + 1))
            for row in 0..<height {
                raw.append(0)  // filter: none
                raw.append(contentsOf: pixels[(row * rowBytes)..<((row + 1) * rowBytes)])
            }
            var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            let colorType: UInt8 = channels == 4 ? 6 : 2  // RGBA or RGB
            var header = [UInt8]()
            header += be32(width) + be32(height) + [8, colorType, 0, 0, 0]  // 8 bits, no interlace
            chunk("IHDR", header, into: &png)
            chunk("IDAT", zlibStored(raw), into: &png)
            chunk("IEND", [], into: &png)
            return png
        }

        private static func be32(_ value: Int) -> [UInt8] {
            [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }

        private static func chunk(_ type: String, _ body: [UInt8], into png: inout Data) {
            let typed = Array(type.utf8) + body
            png.append(contentsOf: be32(body.count) + typed + be32(Int(crc32(typed))))
        }

        /// `bytes` as a zlib stream of stored deflate blocks (at most 65,535 bytes each).
        private static func zlibStored(_ bytes: [UInt8]) -> [UInt8] {
            var out: [UInt8] = [0x78, 0x01]
            var start = 0
            repeat {
                let count = min(65_535, bytes.count - start)
                let last: UInt8 = start + count == bytes.count ? 1 : 0
                out += [last, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8(~count >> 8 & 0xFF)]
                out += bytes[start..<(start + count)]
                start += count
            } while start < bytes.count
            var (a, b): (UInt32, UInt32) = (1, 0)
            for byte in bytes {
                a = (a + UInt32(byte)) % 65_521
                b = (b + a) % 65_521
            }
            return out + be32(Int(b << 16 | a))
        }

        private static let crcTable: [UInt32] = (0..<256).map { n in
            (0..<8).reduce(UInt32(n)) { c, _ in c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }

        private static func crc32(_ bytes: [UInt8]) -> UInt32 {
            ~bytes.reduce(~UInt32(0)) { crcTable[Int(($0 ^ UInt32($1)) & 0xFF)] ^ ($0 >> 8) }
        }
    }
}
