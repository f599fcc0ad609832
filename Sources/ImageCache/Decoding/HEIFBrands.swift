// HEIFBrands: what an ISO base media file's `ftyp` box says it is (a HEIF or AVIF still, or an image
// sequence: HEICS, AVIS), for the format check's description of bytes that are not one of its formats.


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
    /// The brands of a HEIF file's leading `ftyp` box (ISO/IEC 23008-12): the major brand and the
    /// compatible ones, and whether they name an image sequence (`msf1`, `hevc`, `hevx`, `avis`: an
    /// animation, HEICS or AVIS) rather than stills (`mif1`, `heic`, `heix`, `avif`, ...).
    ///
    /// ``Format`` cannot grow in 1.x, so on Linux such a file is not an ``Image``: it fails with
    /// ``Error/notAnImage(_:)``, whose text (``description``) names it, say "a HEIF image sequence
    /// (HEICS; brands msf1, hevc)". Where ImageIO decodes, it decodes such a file itself.
    internal struct HEIFBrands: Sendable, Equatable {
        /// The major brand, then the compatible brands, as four-character strings.
        private(set) var brands: [String]

        /// The brands of `bytes`' first box, if it is an `ftyp` box that lies inside `bytes`, has a
        /// major brand, and names at least one HEIF brand; else nil.
        internal init?(_ bytes: some Collection<UInt8>) {
            let head = Array(bytes.prefix(4_096))  // an ftyp box is tens of bytes
            guard head.count >= 16, Array(head[4..<8]) == Array("ftyp".utf8) else { return nil }
            let size = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 16, size <= head.count else { return nil }
            // The major brand, then the minor version (4 bytes, skipped), then compatible brands.
            let offsets = [8] + Array(stride(from: 16, to: size - 3, by: 4))
            brands = offsets.map { String(decoding: head[$0..<($0 + 4)], as: UTF8.self) }
            guard brands.contains(where: { Self.stills.contains($0) || Self.sequences.contains($0) }) else { return nil }
        }

        /// Whether the file is an image sequence (an animation), not stills.
        internal var isSequence: Bool { brands.contains { Self.sequences.contains($0) } }

        /// The file in words, for ``Error/notAnImage(_:)``.
        internal var description: String {
            let avif = brands.contains { $0.hasPrefix("av") }
            let kind = isSequence ? (avif ? "an AVIF image sequence (AVIS" : "a HEIF image sequence (HEICS")
                : (avif ? "an AVIF image (AVIF" : "a HEIF image (HEIC")
            var seen = Set<String>()
            let named = brands.filter { seen.insert($0).inserted && !$0.contains("\0") }
            return kind + "; brands " + named.joined(separator: ", ") + ")"
        }

        private static let stills: Set<String> = ["mif1", "mif2", "heic", "heix", "heim", "heis", "avif", "miaf"]
        private static let sequences: Set<String> = ["msf1", "hevc", "hevx", "hevm", "hevs", "avis"]
    }
}
