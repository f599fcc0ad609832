import Foundation

/// Makes real baseline JPEG files in code: YCbCr without subsampling, the example quantization
/// table and Huffman tables of the JPEG standard (ITU T.81, Annex K), scaled by `quality` as
/// libjpeg does.
///
/// All three components share the luminance tables. That is valid baseline JPEG; files are a little
/// larger than with separate chrominance tables, and the encoder is half the size.
enum JPEGMaker {
    static func encode(_ picture: RGBPicture, quality: Int = 75) -> Data {
        let scale = quality < 50 ? 5000 / max(1, quality) : 200 - min(100, quality) * 2
        let quant = baseQuantization.map { max(1, min(255, ($0 * scale + 50) / 100)) }

        var out = Data([0xFF, 0xD8])
        out.appendSegment(0xE0, Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
        out.appendSegment(0xDB, [0] + zigzag.map { UInt8(quant[$0]) })
        out.appendSegment(0xC0, [8, UInt8(picture.height >> 8), UInt8(picture.height & 0xFF),
                                 UInt8(picture.width >> 8), UInt8(picture.width & 0xFF), 3,
                                 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0])
        out.appendSegment(0xC4, [0x00] + dcBits + dcValues + [0x10] + acBits + acValues)
        out.appendSegment(0xDA, [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0])

        // The three planes, level-shifted to -128...127, then 8x8 blocks in order, each block
        // holding Y, Cb and Cr. Blocks that overhang the edge repeat the last row and column.
        let count = picture.width * picture.height
        var planes = [[Double]](repeating: [Double](repeating: 0, count: count), count: 3)
        for i in 0..<count {
            let (r, g, b) = (Double(picture.pixels[3 * i]), Double(picture.pixels[3 * i + 1]), Double(picture.pixels[3 * i + 2]))
            planes[0][i] = 0.299 * r + 0.587 * g + 0.114 * b - 128
            planes[1][i] = -0.168_736 * r - 0.331_264 * g + 0.5 * b
            planes[2][i] = 0.5 * r - 0.418_688 * g - 0.081_312 * b
        }
        var writer = BitWriter()
        var previousDC = [0, 0, 0]
        var block = [Double](repeating: 0, count: 64)
        var coefficients = [Int](repeating: 0, count: 64)
        for blockY in stride(from: 0, to: picture.height, by: 8) {
            for blockX in stride(from: 0, to: picture.width, by: 8) {
                for component in 0..<3 {
                    for y in 0..<8 {
                        let row = min(blockY + y, picture.height - 1) * picture.width
                        for x in 0..<8 { block[y * 8 + x] = planes[component][row + min(blockX + x, picture.width - 1)] }
                    }
                    forwardDCT(&block)
                    for i in 0..<64 { coefficients[i] = Int((block[i] / Double(quant[i])).rounded()) }
                    encodeBlock(coefficients, previousDC: &previousDC[component], writer: &writer)
                }
            }
        }
        writer.flush()
        out.append(contentsOf: writer.bytes)
        out.append(contentsOf: [0xFF, 0xD9])
        return out
    }

    /// The 8x8 DCT-II in place, rows then columns, with the 1/4 C(u) C(v) scaling of the standard.
    private static func forwardDCT(_ block: inout [Double]) {
        var line = [Double](repeating: 0, count: 8)
        let cosines = Self.cosines
        block.withUnsafeMutableBufferPointer { block in
            line.withUnsafeMutableBufferPointer { line in
                for (step, stride) in [(1, 8), (8, 1)] {  // each row, then each column
                    for start in 0..<8 {
                        let base = start * stride
                        for u in 0..<8 {
                            var sum = 0.0
                            for x in 0..<8 { sum += block[base + x * step] * cosines[x * 8 + u] }
                            line[u] = sum * (u == 0 ? 0.5.squareRoot() : 1) / 2
                        }
                        for u in 0..<8 { block[base + u * step] = line[u] }
                    }
                }
            }
        }
    }

    private static func encodeBlock(_ coefficients: [Int], previousDC: inout Int, writer: inout BitWriter) {
        let dc = coefficients[0]
        let difference = dc - previousDC
        previousDC = dc
        let dcCategory = bitLength(difference)
        writer.write(dcTable[dcCategory])
        writer.write(magnitude(difference, dcCategory))

        var zeros = 0
        for position in 1..<64 {
            let value = coefficients[zigzag[position]]
            if value == 0 {
                zeros += 1
                continue
            }
            while zeros >= 16 {
                writer.write(acTable[0xF0])  // sixteen zeros
                zeros -= 16
            }
            let category = bitLength(value)
            writer.write(acTable[zeros << 4 | category])
            writer.write(magnitude(value, category))
            zeros = 0
        }
        if zeros > 0 { writer.write(acTable[0x00]) }  // end of block
    }

    private static func bitLength(_ value: Int) -> Int {
        var magnitude = abs(value), bits = 0
        while magnitude > 0 {
            bits += 1
            magnitude >>= 1
        }
        return bits
    }

    /// The extra bits after a Huffman code: the value itself, or for a negative value its ones' complement.
    private static func magnitude(_ value: Int, _ bits: Int) -> (code: Int, length: Int) {
        (value < 0 ? value - 1 + (1 << bits) : value, bits)
    }

    /// Canonical Huffman codes from the counts of codes of each length and the symbols in order.
    private static func huffmanTable(bits: [UInt8], values: [UInt8]) -> [(code: Int, length: Int)] {
        var table = [(code: Int, length: Int)](repeating: (0, 0), count: 256)
        var code = 0, index = 0
        for length in 1...16 {
            for _ in 0..<Int(bits[length - 1]) {
                table[Int(values[index])] = (code, length)
                code += 1
                index += 1
            }
            code <<= 1
        }
        return table
    }

    private struct BitWriter {
        var bytes: [UInt8] = []
        private var buffer = 0, count = 0

        mutating func write(_ bits: (code: Int, length: Int)) {
            buffer = buffer << bits.length | bits.code & ((1 << bits.length) - 1)
            count += bits.length
            while count >= 8 {
                let byte = UInt8((buffer >> (count - 8)) & 0xFF)
                bytes.append(byte)
                if byte == 0xFF { bytes.append(0) }  // a data byte 0xFF is followed by a stuffed zero
                count -= 8
            }
            buffer &= (1 << count) - 1
        }

        mutating func flush() {
            if count > 0 { write((code: (1 << (8 - count)) - 1, length: 8 - count)) }  // pad with ones
        }
    }

    // MARK: Tables (ITU T.81, Annex K)

    /// cosines[x * 8 + u] = cos((2x + 1) u pi / 16)
    private static let cosines: [Double] = (0..<64).map { (index: Int) -> Double in
        let (x, u) = (Double(index / 8), Double(index % 8))
        return cos((2 * x + 1) * u * Double.pi / 16)
    }

    private static let zigzag = [
        0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
        35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
    ]

    private static let baseQuantization = [
        16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
        18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
    ]

    private static let dcBits: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    private static let dcValues: [UInt8] = Array(0...11)
    private static let acBits: [UInt8] = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D]
    private static let acValues: [UInt8] = [
        0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
        0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xA1, 0x08, 0x23, 0x42, 0xB1, 0xC1, 0x15, 0x52, 0xD1, 0xF0,
        0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0A, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x27, 0x28,
        0x29, 0x2A, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
        0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
        0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
        0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
        0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5,
        0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xE1, 0xE2,
        0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
        0xF9, 0xFA,
    ]
    private static let dcTable = huffmanTable(bits: dcBits, values: dcValues)
    private static let acTable = huffmanTable(bits: acBits, values: acValues)
}

private extension Data {
    /// A marker segment: FF, the marker, a big-endian length that counts itself, the payload.
    mutating func appendSegment(_ marker: UInt8, _ payload: [UInt8]) {
        let length = payload.count + 2
        append(contentsOf: [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)])
        append(contentsOf: payload)
    }
}
