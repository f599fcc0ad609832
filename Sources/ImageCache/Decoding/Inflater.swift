// A zlib stream inflated as it arrives, only to count what it makes: how many bytes its deflate
// blocks put out so far. The interlaced PNG passes (InterlacedPasses.swift) end at offsets of that
// output. Shared code on untrusted bytes: every read is checked, a broken stream stops it.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// Inflates a zlib stream (RFC 1950/1951) fed in pieces, keeping only the last 32 KiB it made
    /// (what back-references reach) and the count of bytes made. It goes as far as the bytes go and
    /// stops before the first symbol (or block header) not wholly arrived: nothing is emitted until
    /// a symbol's bits are all read (a stored block's bytes are emitted as they come), so the next
    /// piece resumes there, and each byte is read about once, whatever the pieces. It stops at
    /// `limit` bytes made (the caller needs no more).
    ///
    /// Untrusted bytes: a bad header, an over-subscribed code, a distance before the start or a
    /// stored block's wrong length make it ``isBroken`` for good; nothing traps, and the memory it
    /// holds is the window, the block's codes and the input not read yet.
    internal struct Inflater: Sendable {
        private enum Mode: Sendable {
            case header  // the zlib header
            case block  // at a block's header
            case codes(Huffman, Huffman, last: Bool)  // inside a compressed block
            case stored(left: Int, last: Bool)  // inside a stored block, with this many bytes to come
        }
        private enum Stop: Swift.Error { case needMore, broken, ended }

        /// Bytes made so far.
        private(set) var made = 0
        private(set) var isBroken = false
        /// Whether the stream's last block has ended, or `limit` bytes were made.
        private(set) var hasEnded = false
        private let limit: Int
        private var input: [UInt8] = []
        private var bit = 0  // in `input`
        private var window = [UInt8](repeating: 0, count: 32_768)
        private var mode = Mode.header

        /// An inflater that stops once it made `limit` bytes.
        init(limit: Int) { self.limit = max(0, limit) }

        /// Inflates `bytes` after those fed before, as far as they go.
        mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
            guard !isBroken, !hasEnded else { return }
            input.append(contentsOf: bytes)
            while true {
                let start = bit
                do {
                    try step()
                } catch Stop.needMore {
                    bit = start  // nothing was emitted: read it again when more has come
                    trim()
                    return
                } catch Stop.ended {
                    hasEnded = true
                    return
                } catch {
                    isBroken = true
                    return
                }
            }
        }

        /// Drops the input already read, now and then.
        private mutating func trim() {
            let byte = bit / 8
            guard byte >= 4_096 else { return }
            input.removeFirst(byte)
            bit -= byte * 8
        }

        /// One step: the zlib header, a block's header, one symbol, or what has come of a stored block.
        private mutating func step() throws {
            switch mode {
            case .header:
                let (cmf, flg) = (try bits(8), try bits(8))
                guard cmf & 0x0F == 8, cmf >> 4 <= 7, (cmf << 8 | flg) % 31 == 0, flg & 0x20 == 0 else {
                    throw Stop.broken
                }
                mode = .block
            case .block:
                let last = try bits(1) == 1
                switch try bits(2) {
                case 0:
                    bit = (bit + 7) & ~7
                    let length = try bits(16), complement = try bits(16)
                    guard length == ~complement & 0xFFFF else { throw Stop.broken }
                    mode = .stored(left: length, last: last)
                case 1: mode = .codes(Self.fixed.lengths, Self.fixed.distances, last: last)
                case 2:
                    let (lengths, distances) = try dynamicTables()
                    mode = .codes(lengths, distances, last: last)
                default: throw Stop.broken
                }
            case .codes(let lengths, let distances, let last):
                try symbol(lengths, distances, last: last)
            case .stored(let left, let last):
                try stored(left: left, last: last)
            }
        }

        private mutating func bits(_ count: Int) throws -> Int {
            guard bit + count <= input.count * 8 else { throw Stop.needMore }
            var value = 0
            for index in 0..<count {
                let at = bit + index
                value |= Int(input[at >> 3] >> UInt8(at & 7) & 1) << index
            }
            bit += count
            return value
        }

        private mutating func emit(_ byte: UInt8) throws {
            window[made & 0x7FFF] = byte
            made += 1
            if made >= limit { throw Stop.ended }
        }

        /// What has come of a stored block's `left` bytes (each is final as it comes).
        private mutating func stored(left: Int, last: Bool) throws {
            guard left > 0 else {
                mode = .block
                if last { throw Stop.ended }
                return
            }
            let first = bit / 8, count = min(left, input.count - bit / 8)
            guard count > 0 else { throw Stop.needMore }
            bit += count * 8
            mode = .stored(left: left - count, last: last)
            for index in first..<(first + count) { try emit(input[index]) }
        }

        /// One symbol of a compressed block: a literal, a copy (emitted once its bits are all read),
        /// or the block's end.
        private mutating func symbol(_ lengths: Huffman, _ distances: Huffman, last: Bool) throws {
            let symbol = try decode(lengths)
            if symbol < 256 { return try emit(UInt8(symbol)) }
            if symbol == 256 {
                mode = .block
                if last { throw Stop.ended }
                return
            }
            let index = symbol - 257
            guard index < 29 else { throw Stop.broken }
            let length = Self.lengthBase[index] + (try bits(Self.lengthExtra[index]))
            let code = try decode(distances)
            guard code < 30 else { throw Stop.broken }
            let distance = Self.distanceBase[code] + (try bits(Self.distanceExtra[code]))
            guard distance <= made else { throw Stop.broken }
            for _ in 0..<length { try emit(window[(made - distance) & 0x7FFF]) }
        }

        private mutating func dynamicTables() throws -> (Huffman, Huffman) {
            let lengthCount = try bits(5) + 257, distanceCount = try bits(5) + 1, codeCount = try bits(4) + 4
            guard lengthCount <= 286, distanceCount <= 30 else { throw Stop.broken }
            var codeLengths = [Int](repeating: 0, count: 19)
            for index in 0..<codeCount { codeLengths[Self.order[index]] = try bits(3) }
            let lengthCode = try Huffman(codeLengths)
            var lengths: [Int] = []
            while lengths.count < lengthCount + distanceCount {
                let symbol = try decode(lengthCode)
                switch symbol {
                case 0...15: lengths.append(symbol)
                case 16:
                    guard let previous = lengths.last else { throw Stop.broken }
                    lengths += repeatElement(previous, count: 3 + (try bits(2)))
                case 17: lengths += repeatElement(0, count: 3 + (try bits(3)))
                default: lengths += repeatElement(0, count: 11 + (try bits(7)))
                }
            }
            guard lengths.count == lengthCount + distanceCount, lengths[256] != 0 else { throw Stop.broken }
            return (try Huffman(Array(lengths[..<lengthCount])), try Huffman(Array(lengths[lengthCount...])))
        }

        /// One symbol of `code`, read a bit at a time (canonical codes, as zlib's `puff` reads them).
        private mutating func decode(_ code: Huffman) throws -> Int {
            var (value, first, index) = (0, 0, 0)
            for length in 1...15 {
                value |= try bits(1)
                let count = code.counts[length]
                if value - first < count { return code.symbols[index + value - first] }
                index += count
                first = (first + count) << 1
                value <<= 1
            }
            throw Stop.broken
        }

        /// A canonical Huffman code: how many codes of each length, and the symbols in code order.
        private struct Huffman: Sendable {
            let counts: [Int]
            let symbols: [Int]

            init(_ lengths: [Int]) throws {
                var counts = [Int](repeating: 0, count: 16)
                for length in lengths { counts[length] += 1 }
                var left = 1
                for length in 1...15 {
                    left = left << 1 - counts[length]
                    guard left >= 0 else { throw Stop.broken }  // over-subscribed
                }
                var offsets = [Int](repeating: 0, count: 16)
                for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
                var symbols = [Int](repeating: 0, count: lengths.count)
                for (symbol, length) in lengths.enumerated() where length != 0 {
                    symbols[offsets[length]] = symbol
                    offsets[length] += 1
                }
                counts[0] = 0
                (self.counts, self.symbols) = (counts, symbols)
            }
        }

        private static let fixed: (lengths: Huffman, distances: Huffman) = {
            let lengths = Array(repeating: 8, count: 144) + Array(repeating: 9, count: 112)
                + Array(repeating: 7, count: 24) + Array(repeating: 8, count: 8)
            // Both are complete codes: they cannot be over-subscribed.
            guard let litlen = try? Huffman(lengths), let distance = try? Huffman(Array(repeating: 5, count: 30)) else {
                preconditionFailure("the fixed codes")
            }
            return (litlen, distance)
        }()
        private static let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
                                         67, 83, 99, 115, 131, 163, 195, 227, 258]
        private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                          5, 5, 5, 5, 0]
        private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385,
                                           513, 769, 1_025, 1_537, 2_049, 3_073, 4_097, 6_145, 8_193, 12_289,
                                           16_385, 24_577]
        private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10,
                                            10, 11, 11, 12, 12, 13, 13]
    }
}
