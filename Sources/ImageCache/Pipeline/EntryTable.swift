// The entry table: what names an entry (`Key`), an entry (loaded, loading, failed), and the table
// of them, which also remembers the failures' order and the variants (sizes, processors) a key has
// had entries at.

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
    /// An entry's key: the caller's key (a URL's absolute string by default), and for a variant of
    /// its image, what made the variant: the size it was decoded to fill (a view's) and the
    /// processors that ran on it (``ImageCache/Processor``). Neither is part of the string, so every
    /// string a caller gives is an entry of its own (NUL bytes included), and a variant finds its
    /// key's file by the string. Two keys are the same when their bytes are (as for file names:
    /// canonically equivalent strings in other bytes are two keys). A key hashes its bytes once,
    /// when it is made, with a hash of its own.
    internal struct Key: Hashable, CustomStringConvertible {
        let string: String
        /// `size`, with `animation` in a bit a size never sets (bit 23 of the width: a view's sizes
        /// are at most 100,000 pixels), so that a key is six words: a table of them is read by
        /// `peek`, and every load copies one.
        private let sizeAndAnimation: UInt64
        /// The processors' identifiers, in order (see ``Processor/variant(of:)``); empty for none.
        let processors: String
        private let hash: Int

        /// Hundredths of the scale (0 for 1x) << 48 | width << 24 | height, in pixels; 0: none.
        var size: UInt64 { sizeAndAnimation & ~Self.firstFrameBit }
        /// How its image's animation is decoded (see ``AnimationDecode``): a view's first frame and
        /// bytes are an entry of their own, beside `fetch`'s every frame.
        var animation: AnimationDecode { sizeAndAnimation & Self.firstFrameBit == 0 ? .everyFrame : .firstFrame }
        private static var firstFrameBit: UInt64 { 1 << 47 }

        init(_ url: URL) { self.init(string: url.absoluteString) }

        /// The whole image's key (no size, processors, every frame): what `peek` and a fetch make,
        /// small enough to be inlined where they make it.
        init(string: consuming String) {  // consuming: no retain
            string.makeContiguousUTF8()  // a bridged string is hashed by the same bytes; free for a native one
            let hash = string.utf8.withContiguousStorageIfAvailable(Self.hash) ?? 0  // contiguous now
            (self.string, sizeAndAnimation, processors, self.hash) = (string, 0, "", hash)
        }

        init(string: consuming String, size: UInt64 = 0, processors: String = "",
             animation: AnimationDecode = .everyFrame) {
            assert(size & Self.firstFrameBit == 0, "a width of 2^23 pixels or more")  // never: see `pixels`
            string.makeContiguousUTF8()
            let bytes = string.utf8.withContiguousStorageIfAvailable(Self.hash) ?? 0
            var hash = size == 0 ? bytes : Self.mix(UInt64(UInt(bitPattern: bytes)) ^ size)
            if animation != .everyFrame { hash = Self.mix(UInt64(UInt(bitPattern: hash)) ^ UInt64(animation.rawValue)) }
            let sizeAndAnimation = animation == .everyFrame ? size : size | Self.firstFrameBit
            if !processors.isEmpty {
                var processors = processors
                let made = processors.withUTF8 { Self.hash($0) }
                hash = Self.mix(UInt64(UInt(bitPattern: hash)) ^ UInt64(UInt(bitPattern: made)))
            }
            (self.string, self.sizeAndAnimation, self.processors, self.hash) = (string, sizeAndAnimation, processors, hash)
        }

        /// The key of the image this variant is made from: the same size and decode, no processors.
        var original: Key { processors.isEmpty ? self : Key(string: string, size: size, animation: animation) }

        /// Whether it names the whole image as downloaded: no size, no processors, every frame.
        var isWhole: Bool { sizeAndAnimation == 0 && processors.isEmpty }

        static func == (a: Key, b: Key) -> Bool {
            a.hash == b.hash && a.sizeAndAnimation == b.sizeAndAnimation && a.string == b.string
                && a.processors == b.processors
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        /// What `Dictionary` hashes a key with: the key's hash mixed with the dictionary's seed. By
        /// default it runs a `Hasher` (SipHash-1-3), most of a lookup's cost, once per `peek` and
        /// twice per insert at the cap. (The requirement is the standard library's: were it gone,
        /// `hash(into:)` would be used, and nothing would break.)
        func _rawHashValue(seed: Int) -> Int {
            Self.mix(UInt64(UInt(bitPattern: hash)) ^ UInt64(UInt(bitPattern: seed)))
        }

        /// The string, then NUL and the size if it has one (as the binder's keys were written once),
        /// then the scale if it is not 1 (`@2x`), then NUL and the processors if there are any, then
        /// NUL and `first frame` for a view's decode (``AnimationDecode/firstFrame``).
        var description: String {
            let processed = (processors.isEmpty ? "" : "\u{0}" + processors)
                + (animation == .firstFrame ? "\u{0}first frame" : "")
            guard size != 0 else { return string + processed }
            let scale = size >> 48 == 0 ? "" : "@" + String(format: "%g", Double(size >> 48) / 100) + "x"
            return "\(string)\u{0}\(size >> 24 & 0xff_ffff)x\(size & 0xff_ffff)\(scale)\(processed)"
        }

        /// Random per process, so that keys made to collide in one process do not in another.
        private static let seed = UInt64.random(in: 0 ... .max)

        /// Eight bytes at a time, a multiply and a shift each (the last eight overlap the ones
        /// before when the count is not a multiple of 8; the count is hashed too), then a full mix.
        private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
            guard let base = bytes.baseAddress.map(UnsafeRawPointer.init) else { return mix(seed) }
            var hash = seed ^ UInt64(bytes.count)
            func add(_ word: UInt64) {
                hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
                hash ^= hash >> 29
            }
            guard bytes.count >= 8 else {
                var word: UInt64 = 0
                for (index, byte) in bytes.enumerated() { word |= UInt64(byte) << (8 * UInt64(index)) }
                add(word)
                return mix(hash)
            }
            var offset = 0
            while bytes.count - offset > 8 {
                add(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            add(base.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
            return mix(hash)
        }

        /// SplitMix64's finalizer: every bit of the result depends on every bit of `x`.
        private static func mix(_ x: UInt64) -> Int {
            var x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
            x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int(truncatingIfNeeded: x ^ (x >> 31))
        }
    }

    internal enum Entry {
        case loaded(Int)  // a slot in the memory tier (`Ledger.memory`)
        case loading(Download)
        case processing(VariantJob)  // a variant being made from its original
        case decodingStore(StoreDecode)  // bytes a store gave, being decoded
        case failed(Error, serial: UInt64)

        /// A download, a variant's job or a store's decode under way.
        var isUnderWay: Bool {
            switch self {
            case .loading, .processing, .decodingStore: return true
            case .loaded, .failed: return false
            }
        }
    }

    /// The entries by key, with what only the table needs to keep them bounded: the order of the
    /// failures it remembers (at most `maxFailures`), and the variants each key has had entries at (a
    /// binder's sizes, processors), so that a key is forgotten with its variants. Changed only through its own methods.
    internal struct EntryTable {
        private var entries: [Key: Entry] = [:]  // first: what `peek` reads
        private var failureOrder = FIFO<(key: Key, serial: UInt64)>()  // live and superseded records
        private var serial: UInt64 = 0  // of the failures, to tell live records from superseded ones
        private var variants: [String: [Key]] = [:]  // see `noteVariant`
        private var variantRecords = 0  // the keys in `variants`
        let maxFailures: Int

        init(maxFailures: Int) { self.maxFailures = maxFailures }

        subscript(key: Key) -> Entry? {
            get { entries[key] }
            set { entries[key] = newValue }
        }

        var keys: Dictionary<Key, Entry>.Keys { entries.keys }
        var all: [Key: Entry] { entries }

        mutating func removeValue(forKey key: Key) -> Entry? { entries.removeValue(forKey: key) }

        mutating func updateValue(_ entry: Entry, forKey key: Key) -> Entry? { entries.updateValue(entry, forKey: key) }

        /// Records that `key` failed with `error`; the oldest failures past `maxFailures` are forgotten.
        mutating func setFailed(_ key: Key, _ error: Error) {
            serial += 1
            entries[key] = .failed(error, serial: serial)
            failureOrder.append((key, serial))
            while failureOrder.count > maxFailures, let (oldKey, serial) = failureOrder.popFirst() {
                if case .failed(_, serial)? = entries[oldKey] { entries[oldKey] = nil }
            }
        }

        /// Notes that `key`, a variant (see ``Key/isWhole``), has an entry, for `takeVariants`.
        /// Variants whose entries have gone since stay noted (forgetting one that is gone does
        /// nothing) until the notes outnumber the entries: then they are made again from the entries,
        /// so that they stay within twice the entries, at O(1) amortized.
        mutating func noteVariant(_ key: Key) {
            guard !key.isWhole, !(variants[key.string]?.contains(key) ?? false) else { return }
            variants[key.string, default: []].append(key)
            variantRecords += 1
            guard variantRecords > 2 * entries.count + 64 else { return }
            (variants, variantRecords) = ([:], 0)
            for variant in entries.keys where !variant.isWhole {
                variants[variant.string, default: []].append(variant)
                variantRecords += 1
            }
        }

        /// The variants noted for the key named `string` (some may have no entry any more).
        func variants(of string: String) -> [Key] { variants[string] ?? [] }

        /// The variants noted for the key named `string`, which are forgotten.
        mutating func takeVariants(of string: String) -> [Key] {
            let taken = variants.removeValue(forKey: string) ?? []
            variantRecords -= taken.count
            return taken
        }
    }
}
