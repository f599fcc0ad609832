import Foundation

/// Real PNG files made in code (RGB, stored deflate), because on Linux `ImageCache.Image(data:)`
/// checks that the bytes are a whole image. Same idea as the example app's `PNGMaker`.
enum TestImages {
    /// A 130 x 130 RGB picture: 50.9 KB, the "50 KB image" of the figures.
    static let photo = png(width: 130, height: 130, seed: 1)
    /// An 8 x 8 RGB picture (about 270 bytes), for the 10,000-entry disk index.
    static let thumbnail = png(width: 8, height: 8, seed: 2)

    /// A `width` x `height` RGB picture: a diagonal gradient tinted by `seed`.
    static func png(width: Int, height: Int, seed: Int) -> Data {
        var raw = Data(capacity: (width * 3 + 1) * height)
        let tint = (UInt8(truncatingIfNeeded: seed &* 73), UInt8(truncatingIfNeeded: seed &* 151),
                    UInt8(truncatingIfNeeded: seed &* 29))
        for y in 0..<height {
            raw.append(0)  // filter: none
            for x in 0..<width {
                let shade = UInt8(truncatingIfNeeded: (x + y) * 255 / max(1, width + height - 2))
                raw.append(contentsOf: [shade ^ tint.0, UInt8(truncatingIfNeeded: x * 255 / max(1, width - 1)) ^ tint.1,
                                        shade &+ tint.2])
            }
        }
        var header = Data()
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header.append(contentsOf: [8, 2, 0, 0, 0])  // 8-bit RGB, deflate, no filter set, no interlace
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", zlibStored(raw))
        png.appendChunk("IEND", Data())
        return png
    }

    /// A zlib stream of stored (uncompressed) deflate blocks.
    private static func zlibStored(_ data: Data) -> Data {
        var out = Data([0x78, 0x01])
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            out.append(offset + length == data.count ? 1 : 0)
            out.append(contentsOf: [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)])
            out.append(data[data.startIndex + offset ..< data.startIndex + offset + length])
            offset += length
        } while offset < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        out.appendBigEndian(b << 16 | a)
        return out
    }

    fileprivate static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}

private extension Data {
    mutating func appendBigEndian(_ value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }

    mutating func appendChunk(_ type: String, _ body: Data) {
        appendBigEndian(UInt32(body.count))
        let typed = Data(type.utf8) + body
        append(typed)
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in typed { crc = TestImages.crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        appendBigEndian(crc ^ 0xFFFF_FFFF)
    }
}
