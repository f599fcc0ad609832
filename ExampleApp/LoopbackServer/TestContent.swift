import Foundation

/// Real PNG files made in code (8-bit RGB, stored deflate blocks): the example app, the tests and
/// the benchmarks serve them, since the cache checks that bytes are a whole image.
public enum PNGEncoder {
    /// A PNG of `width` x `height` pixels from `pixels`, 3 bytes (R, G, B) per pixel, row by row.
    public static func rgb(width: Int, height: Int, pixels: [UInt8]) -> Data {
        precondition(pixels.count == width * height * 3, "PNGEncoder: \(pixels.count) bytes for \(width)x\(height)")
        var raw = Data(capacity: (width * 3 + 1) * height)
        for y in 0..<height {
            raw.append(0)  // filter: none
            raw.append(contentsOf: pixels[(y * width * 3)..<((y + 1) * width * 3)])
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
        for byte in typed { crc = PNGEncoder.crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        appendBigEndian(crc ^ 0xFFFF_FFFF)
    }
}

/// A small seedable random number generator (SplitMix64): the same sequence on every run, so
/// that generated content and a failing seed can be replayed.
public struct SplitMix {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
