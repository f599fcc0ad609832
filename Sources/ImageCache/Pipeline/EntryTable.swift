// The entry table: what names an entry (`Key`), an entry (loaded, loading, failed), and the table
// of them, which also remembers the failures' order and the sizes a key has had entries at.

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
    /// An entry's key: the caller's key (a URL's absolute string by default), and for an image a
    /// ``Binder`` decoded to a size, that size. The size is no part of the string, so every string
    /// a caller gives is an entry of its own (NUL bytes included), and a sized entry finds its key's
    /// file by the string. Two keys are the same when their bytes are (as for file names:
    /// canonically equivalent strings in other bytes are two keys). A key hashes its bytes once,
    /// when it is made, with a hash of its own.
    internal struct Key: Hashable, CustomStringConvertible {
        let string: String
        let size: UInt64  // hundredths of the scale (0 for 1x) << 48 | width << 24 | height, in pixels; 0: none
        private let hash: Int

        init(_ url: URL) { self.init(string: url.absoluteString) }

        init(string: consuming String, size: UInt64 = 0) {  // consuming: stored without a retain
            string.makeContiguousUTF8()  // a bridged string is hashed by the same bytes; free for a native one
            let bytes = string.utf8.withContiguousStorageIfAvailable(Self.hash) ?? 0  // contiguous now
            (self.string, self.size) = (string, size)
            hash = size == 0 ? bytes : Self.mix(UInt64(UInt(bitPattern: bytes)) ^ size)
        }

        static func == (a: Key, b: Key) -> Bool { a.hash == b.hash && a.size == b.size && a.string == b.string }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        /// What `Dictionary` hashes a key with: the key's hash mixed with the dictionary's seed. By
        /// default it runs a `Hasher` (SipHash-1-3), most of a lookup's cost, once per `peek` and
        /// twice per insert at the cap. (The requirement is the standard library's: were it gone,
        /// `hash(into:)` would be used, and nothing would break.)
        func _rawHashValue(seed: Int) -> Int {
            Self.mix(UInt64(UInt(bitPattern: hash)) ^ UInt64(UInt(bitPattern: seed)))
        }

        /// The string, then NUL and the size if it has one (as the binder's keys were written once),
        /// then the scale if it is not 1 (`@2x`).
        var description: String {
            guard size != 0 else { return string }
            let scale = size >> 48 == 0 ? "" : "@" + String(format: "%g", Double(size >> 48) / 100) + "x"
            return "\(string)\u{0}\(size >> 24 & 0xff_ffff)x\(size & 0xff_ffff)\(scale)"
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
        case failed(Error, serial: UInt64)
    }

    /// The entries by key, with what only the table needs to keep them bounded: the order of the
    /// failures it remembers (at most `maxFailures`), and the sizes each key has had entries at (a
    /// binder's), so that a key is forgotten with its sizes. Changed only through its own methods.
    internal struct EntryTable {
        private var entries: [Key: Entry] = [:]  // first: what `peek` reads
        private var failureOrder = FIFO<(key: Key, serial: UInt64)>()  // live and superseded records
        private var serial: UInt64 = 0  // of the failures, to tell live records from superseded ones
        private var sizes: [String: [UInt64]] = [:]  // see `noteSize`
        private var sizeRecords = 0  // the sizes in `sizes`
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

        /// Notes that `key`, which has a size, has an entry, for `takeSizes`. Sizes whose entries
        /// have gone since stay noted (forgetting one that is gone does nothing) until the notes
        /// outnumber the entries: then they are made again from the entries, so that they stay
        /// within twice the entries, at O(1) amortized.
        mutating func noteSize(_ key: Key) {
            guard !(sizes[key.string]?.contains(key.size) ?? false) else { return }
            sizes[key.string, default: []].append(key.size)
            sizeRecords += 1
            guard sizeRecords > 2 * entries.count + 64 else { return }
            (sizes, sizeRecords) = ([:], 0)
            for sized in entries.keys where sized.size != 0 {
                sizes[sized.string, default: []].append(sized.size)
                sizeRecords += 1
            }
        }

        /// The sizes noted for the key named `string` (some may have no entry any more).
        func sizes(of string: String) -> [UInt64] { sizes[string] ?? [] }

        /// The sizes noted for the key named `string`, which are forgotten.
        mutating func takeSizes(of string: String) -> [UInt64] {
            let taken = sizes.removeValue(forKey: string) ?? []
            sizeRecords -= taken.count
            return taken
        }
    }
}
