// Interlaced PNG (Adam7) as it downloads: how many of its 7 passes are complete in the bytes so
// far, read by inflating its IDAT chunks as they arrive (Inflater.swift), and where the chunk that
// completed the last of them ends. Shared code: the Linux tests reach every decision.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// The passes of an interlaced PNG found so far in a body that grows: fed all the bytes so far
    /// each time more arrive, it reads each chunk once, when the whole chunk has come, and inflates
    /// each IDAT chunk's data as it comes. Pass *n* is complete when the inflated image data holds
    /// its rows (each a filter byte and its pixels); the preview's bytes end with the IDAT chunk
    /// that completed the last complete pass. A PNG that is not interlaced, bytes that are not a
    /// PNG, or an image of more than ``maxPixels`` pixels have none: ``isInterlaced`` stays false.
    ///
    /// Untrusted bytes: every read is inside the bytes given; a broken stream (a chunk out of
    /// place, a bad header, bad zlib data) stops the count where it breaks (``isBroken``), never
    /// traps. It inflates at most the image data the header announces.
    internal struct InterlacedPasses: Sendable {
        /// Images past this many pixels get no previews: their inflated size, which bounds the work,
        /// would be too large.
        static let maxPixels = 1 << 26
        /// Adam7's passes: the first column and row, and the steps between them.
        private static let adam7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                                    (1, 0, 2, 2), (0, 1, 1, 2)]

        private var offset = 8  // after the signature: the next chunk's start
        private var passEnds: [Int] = []  // in the inflated data, each pass's end (an empty pass: the previous end)
        private var inflater: Inflater?
        /// Passes complete so far (0...7), and the offset where the IDAT chunk that completed the
        /// last of them ends.
        private(set) var passes = 0
        private(set) var end = 0
        /// Whether the stream broke its structure: nothing more is read.
        private(set) var isBroken = false
        /// Whether the image data has ended (a chunk after the IDATs, or every pass complete): no
        /// preview is due.
        private(set) var hasEnded = false
        /// Whether the header says Adam7 interlace (and the image is within ``maxPixels``).
        var isInterlaced: Bool { inflater != nil }

        /// Reads the chunks of `data` not read yet (`data` holds all the bytes so far: it only grows).
        mutating func read(_ data: Data) {
            guard !isBroken, !hasEnded else { return }
            data.withUnsafeBytes { raw in read(raw.bindMemory(to: UInt8.self)) }
        }

        private mutating func read(_ bytes: UnsafeBufferPointer<UInt8>) {
            if offset == 8 {
                guard bytes.count >= 8 else { return }
                guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return broke() }
            }
            while !isBroken, !hasEnded, offset + 8 <= bytes.count {
                let length = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                    | Int(bytes[offset + 3])
                guard length <= 0x7FFF_FFFF else { return broke() }
                let type = bytes[(offset + 4)..<(offset + 8)]
                let dataEnd = offset + 8 + length
                if offset == 8 {  // the header, first and whole before anything else
                    guard type.elementsEqual("IHDR".utf8), length == 13 else { return broke() }
                    guard dataEnd + 4 <= bytes.count else { return }
                    header(bytes[(offset + 8)..<dataEnd])
                    guard isInterlaced else { hasEnded = true; return }  // nothing more to read
                } else if type.elementsEqual("IDAT".utf8) {
                    // A chunk's data is inflated as it arrives; its end counts once its CRC follows.
                    sawData = true
                    inflate(bytes[min(offset + 8, bytes.count)..<min(dataEnd, bytes.count)])
                    guard !isBroken, dataEnd + 4 <= bytes.count else { return }
                    count(upTo: dataEnd + 4)
                    fed = 0
                } else if sawData {
                    hasEnded = true  // a chunk after the image data: it has ended
                    return
                } else {
                    guard dataEnd + 4 <= bytes.count else { return }
                }
                offset = dataEnd + 4
            }
        }

        private var fed = 0  // bytes of the IDAT chunk under way already inflated
        private var sawData = false  // an IDAT chunk began

        private mutating func inflate(_ data: Slice<UnsafeBufferPointer<UInt8>>) {
            guard data.count > fed else { return }
            inflater?.feed(data.dropFirst(fed))
            fed = data.count
            if inflater?.isBroken == true { broke() }
        }

        /// Counts the passes complete now that the IDAT chunk ending at `chunkEnd` has come.
        private mutating func count(upTo chunkEnd: Int) {
            guard let made = inflater?.made else { return }
            let complete = passEnds.prefix { $0 <= made }.count
            if complete > passes { (passes, end) = (complete, chunkEnd) }
            if complete == passEnds.count { hasEnded = true }
        }

        /// Reads IHDR: an Adam7 image's pass ends, and an inflater that stops after the last.
        private mutating func header(_ fields: Slice<UnsafeBufferPointer<UInt8>>) {
            let field = Array(fields)
            let width = Int(field[0]) << 24 | Int(field[1]) << 16 | Int(field[2]) << 8 | Int(field[3])
            let height = Int(field[4]) << 24 | Int(field[5]) << 16 | Int(field[6]) << 8 | Int(field[7])
            let (depth, color, interlace) = (Int(field[8]), Int(field[9]), field[12])
            let channels = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][color]
            guard interlace == 1, let channels, [1, 2, 4, 8, 16].contains(depth), width > 0, height > 0,
                  width <= Self.maxPixels, height <= Self.maxPixels, width * height <= Self.maxPixels else { return }
            let bitsPerPixel = channels * depth
            var total = 0
            for (x0, y0, dx, dy) in Self.adam7 {
                let columns = width > x0 ? (width - x0 + dx - 1) / dx : 0
                let rows = height > y0 ? (height - y0 + dy - 1) / dy : 0
                if columns > 0, rows > 0 { total += rows * (1 + (columns * bitsPerPixel + 7) / 8) }
                passEnds.append(total)
            }
            inflater = Inflater(limit: total)
        }

        private mutating func broke() { isBroken = true }

        /// The bytes of `data` up to the end of the IDAT chunk that completed the last complete
        /// pass, and an IEND chunk: a whole PNG that a decoder reads as far as its data goes (the
        /// preview's bytes); nil while no pass is complete.
        func preview(of data: Data) -> Data? {
            guard passes > 0, end <= data.count else { return nil }
            return data.prefix(end) + Data([0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82])
        }
    }
}
