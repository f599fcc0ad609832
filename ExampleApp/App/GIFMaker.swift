import Foundation

/// Makes real GIF89a files in code: a 216-colour palette (6 levels of red, green and blue), LZW
/// compression, and for more than one frame a looping animation.
enum GIFMaker {
    /// `frames` must all have the same size; `delay` is in hundredths of a second.
    static func encode(_ frames: [RGBPicture], delay: Int = 25) -> Data {
        let (width, height) = (frames[0].width, frames[0].height)
        var gif = Data("GIF89a".utf8)
        gif.appendLittleEndian(width)
        gif.appendLittleEndian(height)
        gif.append(contentsOf: [0xF7, 0, 0])  // global colour table of 256 entries; background 0; square pixels
        for index in 0..<256 {
            let level = { (value: Int) in UInt8(value * 51) }
            gif.append(contentsOf: index < 216 ? [level(index / 36), level(index / 6 % 6), level(index % 6)] : [0, 0, 0])
        }
        if frames.count > 1 {
            gif.append(contentsOf: [0x21, 0xFF, 0x0B] + Array("NETSCAPE2.0".utf8) + [0x03, 0x01, 0x00, 0x00, 0x00])  // loop forever
        }
        for frame in frames {
            if frames.count > 1 {
                gif.append(contentsOf: [0x21, 0xF9, 0x04, 0x00, UInt8(delay & 0xFF), UInt8(delay >> 8), 0x00, 0x00])
            }
            gif.append(0x2C)
            gif.append(contentsOf: [0, 0, 0, 0])  // left, top
            gif.appendLittleEndian(width)
            gif.appendLittleEndian(height)
            gif.append(0)  // no local colour table, not interlaced
            let indices = stride(from: 0, to: frame.pixels.count, by: 3).map { (i: Int) -> UInt8 in
                let level = { (value: UInt8) -> Int in (Int(value) * 5 + 127) / 255 }  // nearest of 0, 51, ... 255
                return UInt8(level(frame.pixels[i]) * 36 + level(frame.pixels[i + 1]) * 6 + level(frame.pixels[i + 2]))
            }
            gif.append(8)  // LZW minimum code size
            let compressed = lzw(indices)
            var offset = 0
            while offset < compressed.count {  // data sub-blocks of at most 255 bytes
                let length = min(255, compressed.count - offset)
                gif.append(UInt8(length))
                gif.append(contentsOf: compressed[offset..<(offset + length)])
                offset += length
            }
            gif.append(0)
        }
        gif.append(0x3B)
        return gif
    }

    /// Variable-length-code LZW as GIF wants it: 8-bit symbols, codes of 9 to 12 bits packed least
    /// significant bit first, a clear code first and whenever the table is full.
    private static func lzw(_ symbols: [UInt8]) -> [UInt8] {
        let clearCode = 256, endCode = 257
        // next[code * 256 + symbol] is the code for string(code) + symbol, or 0 when there is none.
        var next = [UInt16](repeating: 0, count: 4096 * 256)
        var used: [Int] = []
        var codeSize = 9
        var lastCode = endCode
        var output: [UInt8] = []
        var bitBuffer = 0, bitCount = 0
        func write(_ code: Int) {
            bitBuffer |= code << bitCount
            bitCount += codeSize
            while bitCount >= 8 {
                output.append(UInt8(bitBuffer & 0xFF))
                bitBuffer >>= 8
                bitCount -= 8
            }
        }

        write(clearCode)
        var current = -1
        for symbol in symbols {
            let value = Int(symbol)
            if current < 0 {
                current = value
                continue
            }
            let slot = current * 256 + value
            if next[slot] != 0 {
                current = Int(next[slot])
                continue
            }
            write(current)
            lastCode += 1
            next[slot] = UInt16(lastCode)
            used.append(slot)
            if lastCode >= 1 << codeSize { codeSize += 1 }
            if lastCode == 4095 {
                write(clearCode)
                for slot in used { next[slot] = 0 }
                used.removeAll(keepingCapacity: true)
                codeSize = 9
                lastCode = endCode
            }
            current = value
        }
        if current >= 0 { write(current) }
        write(endCode)
        if bitCount > 0 { output.append(UInt8(bitBuffer & 0xFF)) }
        return output
    }
}

extension Data {
    mutating func appendLittleEndian(_ value: Int) {
        append(contentsOf: [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)])
    }
}
