// Stand-ins: while a load's own image is not in memory, the best image of it that memory holds
// (another size of its variant, or its original when its processors only resize), which the views
// show at once and replace with the load's own; which images a load allows, and which is best
// (`StandIn`); the ledger's look-up; and `peekStandIn(for:)`, the same look-up for apps.

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

nonisolated extension ImageCache {
    /// The rules of a stand-in: an image memory holds that a view shows at once, scaled, while it
    /// waits for its load's own. Only an image of the same picture: another size of the load's own
    /// variant (the whole image is one), or the original's sizes when every processor of the load
    /// only resizes (``Processor/resizesOnly``); never another variant (a square photo where a
    /// circle was asked for). The best is the one that fills the load's size with the least
    /// scaling up, then the one with the fewest pixels; and none is shown over a picture that
    /// shows as well or better already, so a view never goes from a sharper image to a blurrier one.
    internal enum StandIn {
        /// The variants (keys without a size) whose images may stand in for `key`'s: its own, and
        /// its original when it has processors that all only resize.
        static func variants(for key: Key, resizesOnly: Bool) -> [Key] {
            let own = key.withoutSize
            guard resizesOnly, !key.processors.isEmpty else { return [own] }
            return [own, Key(string: key.string)]
        }

        /// How well an image of `pixels` shows at `target` pixels: 1 when it fills the target (it
        /// is scaled down, or not at all), else the inverse of the factor it is scaled up by; with
        /// no target (a whole image asked for), its pixel count.
        static func quality(_ pixels: (width: Int, height: Int), for target: (width: Int, height: Int)?) -> Double {
            guard pixels.width > 0, pixels.height > 0 else { return 0 }
            guard let target, target.width > 0, target.height > 0 else { return Double(pixels.width * pixels.height) }
            return min(1, Double(pixels.width) / Double(target.width), Double(pixels.height) / Double(target.height))
        }

        /// Which of `candidates` (their pixels) is best at `target`: the highest ``quality(_:for:)``,
        /// then the fewest pixels. Nil if there is none, or if it shows no better than `shown` (the
        /// pixels of the picture the view shows now; nil: it shows none).
        static func best(of candidates: [(width: Int, height: Int)], for target: (width: Int, height: Int)?,
                         shown: (width: Int, height: Int)?) -> Int? {
            let scored = candidates.indices.map { (index: $0, quality: quality(candidates[$0], for: target)) }
            guard let best = scored.filter({ $0.quality > 0 }).max(by: { a, b in
                a.quality != b.quality ? a.quality < b.quality
                    : candidates[a.index].width * candidates[a.index].height
                        > candidates[b.index].width * candidates[b.index].height
            }) else { return nil }
            if let shown, quality(shown, for: target) >= best.quality { return nil }
            return best.index
        }

        /// The pixels a key's size asks to fill (see ``ImageCache/memoryKey(_:filling:scale:processors:)``);
        /// nil for a key without a size.
        static func target(of key: Key) -> (width: Int, height: Int)? {
            guard key.size != 0 else { return nil }
            return (Int(key.size >> 24 & 0xFF_FFFF), Int(key.size & 0xFF_FFFF))
        }
    }

    /// The image memory holds for `key`, else the best stand-in for it (see ``StandIn``) that shows
    /// better than `shown` (the pixels of the picture a view shows now), with the key of its entry.
    /// `processors` are the load's, which say whether its original may stand in.
    internal func standIn(for key: Key, processors: [Processor], shown: (width: Int, height: Int)?)
        -> (key: Key, image: Image)? {
        let now = currentTime()
        let resizesOnly = processors.allSatisfy(\.resizesOnly)
        return locked { $0.standIn(for: key, resizesOnly: resizesOnly, shown: shown, now: now) }
    }

    /// An image that may stand in for what `request` describes until it comes: its own if memory
    /// has it (as ``peek(_:)-(Request)`` finds it), else the best other image of it that memory
    /// holds: another size of its variant, or its original when its processors only resize
    /// (``Processor/resizesOnly``), never another variant; the one that fills the request's size
    /// with the least scaling up, then the smallest. Nil when memory has none. It is what
    /// ``Binder``, `setImage(with:)` and the SwiftUI views show at once while the request's own
    /// loads; show it scaled to the view's size. Never touches the disk or waits for it.
    ///
    /// - Complexity: O(k) in the sizes of the image memory holds, under one lock.
    public func peekStandIn(for request: Request) -> Image? {
        let key = request.cacheKey
        return peek(key) ?? standIn(for: key, processors: request.processors, shown: nil)?.image
    }
}

nonisolated extension ImageCache.Key {
    /// The key of the same variant without a size (the whole image's, or the whole variant's),
    /// decoded with every frame (`fetch`'s, which a view's decode may stand in for, and back).
    var withoutSize: ImageCache.Key {
        size == 0 && animation == .everyFrame ? self : ImageCache.Key(string: string, processors: processors)
    }
}

nonisolated extension ImageCache.Ledger {
    /// The best stand-in for `key` in memory (see ``ImageCache/StandIn``), fresh, not `key`'s own
    /// entry, and better than `shown`; it counts as a use. Not the second chance's: a stand-in is
    /// worth no insert.
    mutating func standIn(for key: Key, resizesOnly: Bool, shown: (width: Int, height: Int)?,
                          now: TimeInterval) -> (key: Key, image: Image)? {
        var found: [(slot: Int, image: Image)] = []
        for variant in ImageCache.StandIn.variants(for: key, resizesOnly: resizesOnly) {
            var slots = memory.sizedSlots(of: variant)
            if case .loaded(let whole)? = entries[variant] { slots.append(whole) }
            for slot in slots where memory[slot].key != key {
                guard let image = memory[slot].image, memory[slot].value == nil,
                      isFresh(downloadedAt: memory[slot].downloadedAt, receivedAt: memory[slot].receivedAt,
                              now: now) else { continue }
                found.append((slot, image))
            }
        }
        guard !found.isEmpty, let best = ImageCache.StandIn.best(
            of: found.map { ImageCache.Sizing.pixelSize(of: $0.image) }, for: ImageCache.StandIn.target(of: key),
            shown: shown) else { return nil }
        memory.markUsed(found[best].slot)
        return (memory[found[best].slot].key, found[best].image)
    }
}
