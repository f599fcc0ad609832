// Small helpers: `Key`, `FIFO`, boxes, and a `FetchTask`'s bridge to Swift concurrency.

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
        /// default it runs a `Hasher` (SipHash-1-3), 32 ns of a 70 ns lookup on the benchmark
        /// machine, once per `peek` and twice per insert at the cap. (The requirement is the
        /// standard library's: were it gone, `hash(into:)` would be used, and nothing would break.)
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

    /// A first-in first-out queue with O(1) amortized append and pop.
    internal struct FIFO<Element> {
        private var items: [Element?] = []
        private var head = 0

        var count: Int { items.count - head }

        var first: Element? { head < items.count ? items[head] : nil }

        mutating func append(_ element: Element) { items.append(element) }

        mutating func popFirst() -> Element? {
            guard head < items.count else { return nil }
            let element = items[head]
            items[head] = nil
            head += 1
            if head >= 64, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return element
        }
    }

    /// Carries a value across a `@Sendable` boundary where the cache's lock or queue already
    /// orders every access to it.
    internal struct Unchecked<Value>: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// The request of an `image(for:)` call, for a cancellation that may come before it is made.
    internal final class TaskBox: @unchecked Sendable {
        private let lock = NSLock()
        private var task: FetchTask?
        private var cancelled = false

        func set(_ task: FetchTask) {
            let cancelled = lock.withLock {
                self.task = task
                return self.cancelled
            }
            if cancelled { task.cancel() }
        }

        func cancel() {
            lock.withLock {
                cancelled = true
                return task
            }?.cancel()
        }
    }
}
