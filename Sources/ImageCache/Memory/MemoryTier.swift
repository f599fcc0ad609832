// The memory tier: the CLOCK list, its limits, and the second chance.

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
    internal final class SecondChance {
        let slot: MemoryList.Slot
        let serial: UInt64
        init(_ slot: MemoryList.Slot, serial: UInt64) {
            self.slot = slot
            self.serial = serial
        }
    }

    /// Where evicted images wait for their second chance. On Apple platforms an `NSCache`, so that
    /// the system may take the images back under memory pressure. Elsewhere a dictionary: no system
    /// takes memory back there, and corelibs' `NSCache` keeps a cost-sorted list (an insert slows
    /// as it grows) and evicts the newest entry first.
    internal final class SecondChanceShelf {
        #if canImport(UIKit) || canImport(AppKit)
        private let cache = NSCache<NSString, SecondChance>()  // NSString keys compare code units, as `Key` does bytes
        func object(forKey key: Key) -> SecondChance? { cache.object(forKey: key.string as NSString) }
        func setObject(_ object: SecondChance, forKey key: Key) {
            cache.setObject(object, forKey: key.string as NSString)
        }
        func removeObject(forKey key: Key) { cache.removeObject(forKey: key.string as NSString) }
        func removeAllObjects() { cache.removeAllObjects() }
        #else
        private var items: [Key: SecondChance] = [:]
        func object(forKey key: Key) -> SecondChance? { items[key] }
        func setObject(_ object: SecondChance, forKey key: Key) { items[key] = object }
        func removeObject(forKey key: Key) { items[key] = nil }
        func removeAllObjects() { items = [:] }
        #endif
    }

    /// Memory entries in CLOCK order: a doubly linked list threaded through an array, newest insert
    /// first, and a reference bit per entry. A use only sets the bit; eviction takes the oldest
    /// entry whose bit is clear, and an older one whose bit is set gets a second pass (bit cleared,
    /// moved to the front). A hit writes one byte at most; an insert or an eviction is O(1)
    /// amortized, with no allocation and no reference counting.
    internal struct MemoryList {
        struct Slot {
            var key: Key
            var image: Image?
            var value: Box?  // what a decoder other than the image's made
            var type: ObjectIdentifier? { value?.type }  // nil for an image, as `Decoder.type`
            var data: Data?  // the downloaded bytes, until they are known to be on disk
            var size: Int  // of the downloaded bytes
            var cost: Int  // what the image costs in memory, in bytes
            var downloadedAt: TimeInterval
            var receivedAt: TimeInterval  // `downloadedAt` less a max-age's shift: later than the clock, not trusted
            var referenced = false  // used since eviction last passed it
            var diskless = false  // never written (a load asked `notWrittenToDisk`)
            var previous = -1
            var next = -1

            var payload: Payload { Payload(bytes: data, image: image, value: value) }

            /// What the disk needs to keep this entry: the downloaded bytes if memory still has them.
            var item: DiskStore.Item {
                DiskStore.Item(url: key.string, data: data ?? image.flatMap(ImageCache.PlatformDecoder.downloadedBytes(of:)),
                               size: size, downloadedAt: downloadedAt, receivedAt: receivedAt)
            }
        }
        private var slots: [Slot] = []
        private var free: [Int] = []
        private var head = -1
        private var last = -1
        private(set) var bytes = 0  // the sum of the costs
        // The second chance's records, oldest first: each counts against memory's limits until it
        // is popped (a record whose image left early still counts: the bound errs low).
        private var secondChances = FIFO<(key: Key, serial: UInt64, cost: Int)>()
        private(set) var secondChanceBytes = 0  // the costs in `secondChances`
        private var serial: UInt64 = 0  // of the second chances, to tell live records from old ones
        // The slots of each variant's sizes (keyed by the variant's key without a size), for stand-ins
        // (StandIn.swift): only sized entries, so that a whole image's insert costs nothing more.
        private var sizedSlots: [Key: [Int]] = [:]

        var count: Int { slots.count - free.count }
        var secondChanceCount: Int { secondChances.count }

        /// Records a second chance for `key` at `cost`; returns its serial, which the shelf keeps.
        mutating func recordSecondChance(_ key: Key, cost: Int) -> UInt64 {
            serial += 1
            secondChances.append((key, serial, cost))
            secondChanceBytes += cost
            return serial
        }

        /// The oldest second chance's record, taken out of the count.
        mutating func popSecondChance() -> (key: Key, serial: UInt64)? {
            guard let (key, serial, cost) = secondChances.popFirst() else { return nil }
            secondChanceBytes -= cost
            return (key, serial)
        }

        mutating func forgetSecondChances() {
            (secondChances, secondChanceBytes) = (FIFO(), 0)
        }

        subscript(index: Int) -> Slot {
            _read { yield slots[index] }  // no copy of the slot (and its references) per field read
            _modify { yield &slots[index] }
        }

        mutating func insert(_ slot: Slot) -> Int {
            let index: Int
            if let reused = free.popLast() {
                index = reused
                slots[index] = slot
            } else {
                index = slots.count
                slots.append(slot)
            }
            link(index)
            bytes += slot.cost
            if slot.key.size != 0 { sizedSlots[slot.key.withoutSize, default: []].append(index) }
            return index
        }

        /// The slots that hold sizes of the variant `whole` (a key without a size) in memory.
        func sizedSlots(of whole: Key) -> [Int] { sizedSlots[whole] ?? [] }

        /// Moves the slot out (no copy, so no reference counting), leaving an empty one.
        @discardableResult
        mutating func remove(_ index: Int) -> Slot {
            unlink(index)
            var slot = Slot(key: Key(string: ""), size: 0, cost: 0, downloadedAt: 0, receivedAt: 0)
            swap(&slot, &slots[index])
            free.append(index)
            bytes -= slot.cost
            if slot.key.size != 0 { forgetSized(index, of: slot.key.withoutSize) }
            return slot
        }

        private mutating func forgetSized(_ index: Int, of whole: Key) {
            guard var indices = sizedSlots[whole], let at = indices.firstIndex(of: index) else { return }
            indices.remove(at: at)
            sizedSlots[whole] = indices.isEmpty ? nil : indices
        }

        /// The entry holding `image` (the same object; on Linux, where an image is a value, an equal
        /// one), if memory has one.
        ///
        /// - Complexity: O(n) in the slots.
        func slot(holding image: Image) -> Int? {
            #if canImport(UIKit) || canImport(AppKit)
            return slots.indices.first { slots[$0].image === image }
            #else
            return slots.indices.first { slots[$0].image == image }
            #endif
        }

        /// Counts as a use: sets the reference bit, written only when it is clear (a hit on a hot
        /// entry writes nothing).
        mutating func markUsed(_ index: Int) {
            if !slots[index].referenced { slots[index].referenced = true }
        }

        /// The entry eviction takes next, nil when empty: the oldest whose bit is clear, after the
        /// older ones with a set bit have had it cleared and gone to the front.
        ///
        /// - Complexity: O(1) amortized: a pass clears each bit once.
        mutating func victim() -> Int? {
            while last >= 0, slots[last].referenced {
                let index = last
                slots[index].referenced = false
                unlink(index)
                link(index)
            }
            return last < 0 ? nil : last
        }

        /// Every entry in the order eviction would take them (without changing anything): oldest
        /// first those not used since eviction last passed them, then oldest first those used.
        ///
        /// - Complexity: O(count).
        func indicesFromLeastRecent() -> [Int] {
            var unused: [Int] = [], used: [Int] = []
            unused.reserveCapacity(count)
            var index = last
            while index >= 0 {
                if slots[index].referenced { used.append(index) } else { unused.append(index) }
                index = slots[index].previous
            }
            return unused + used
        }

        private mutating func link(_ index: Int) {
            slots[index].previous = -1
            slots[index].next = head
            if head >= 0 { slots[head].previous = index }
            head = index
            if last < 0 { last = index }
        }

        private mutating func unlink(_ index: Int) {
            let (previous, next) = (slots[index].previous, slots[index].next)
            if previous >= 0 { slots[previous].next = next } else { head = next }
            if next >= 0 { slots[next].previous = previous } else { last = previous }
        }
    }

    /// At most this many failures are remembered for `error(for:)`, the oldest forgotten first.
    internal static let maxFailuresRemembered = 1_000

    /// How far ahead of the clock a download date may lie, in seconds, and still be trusted: the
    /// clocks of processes sharing a folder disagree by a little. An entry downloaded further in the
    /// future (a clock set back, a restored backup, a file dated 2100) has expired, in memory and on
    /// disk, and the sweep counts its file as the least recently used. (A server's max-age longer
    /// than the time to live moves the date ahead on purpose: that shift is kept and allowed for.)
    internal static let maxClockSkew: TimeInterval = 60

}

// Memory's steps in the ledger: they change the list and the entries that point into it together.
nonisolated extension ImageCache.Ledger {
    /// Puts an entry in memory, then evicts while memory is over a limit; returns what it evicted,
    /// for `keepOnDisk`. An entry that costs more than a quarter of the byte budget is not kept, nor
    /// an image whose scale stood in for the screen's, not read yet (see `decodeScale`): the next
    /// request decodes it again, at the screen's.
    mutating func insert(_ key: Key, _ payload: Payload, size: Int? = nil, downloadedAt: TimeInterval,
                         receivedAt: TimeInterval? = nil, diskless: Bool = false) -> [MemoryList.Slot] {
        let size = size ?? payload.bytes?.count ?? 0
        let cost = payload.image.map(ImageCache.memoryCost(of:)) ?? size
        guard cost <= settings.memoryMaxBytes / 4, !payload.scaleStandsIn else {
            if case .loaded(let old)? = entries.removeValue(forKey: key) { memory.remove(old) }
            return []
        }
        // Insert first and evict after, so that the key is hashed once. The new entry's bit is set
        // meanwhile, so that its own eviction passes it (a second pass) instead of taking it when
        // every older entry was used; then it is clear, as for any entry not used since.
        let slot = memory.insert(.init(key: key, image: payload.image, value: payload.value,
                                       data: payload.bytes, size: size, cost: cost,
                                       downloadedAt: downloadedAt, receivedAt: receivedAt ?? downloadedAt,
                                       referenced: true, diskless: diskless))
        if case .loaded(let old)? = entries.updateValue(.loaded(slot), forKey: key) { memory.remove(old) }
        defer { memory[slot].referenced = false }
        return evictOverLimits()
    }

    /// When memory is over its count or byte limit, evicts the least recently used images (in
    /// CLOCK order, see `MemoryList`) in one batch: a tenth of the count cap over the cap, down to
    /// 90% of the byte budget over that. The batch's 8 most recent go to the second chance, which
    /// shares both limits with memory.
    mutating func evictOverLimits() -> [MemoryList.Slot] {
        let (cap, budget) = (settings.memoryMaxCount, settings.memoryMaxBytes)
        var evicted: [MemoryList.Slot] = []
        let (overCount, overBytes) = (memory.count > cap, memory.bytes > budget)
        if overCount || overBytes {
            let batch = max(1, cap / 10)
            while memory.count > cap || (overCount && evicted.count < batch)
                    || (overBytes && memory.bytes > budget - budget / 10), let victim = memory.victim() {
                evicted.append(evict(victim))
            }
            counts.add(.evictions, evicted.count)
            missBook.evicted(evicted, byCount: overCount)
            // Only the most recent few: the second chance is for what was just evicted, and an
            // NSCache insert is not cheap.
            for slot in evicted.suffix(8) where slot.image != nil { keepSecondChance(slot) }
        }
        // Everything `peek` can return stays within the limits: memory first, the second chance after.
        while memory.secondChanceCount > min(64, max(1, cap / 5))
                || memory.count + memory.secondChanceCount > cap
                || memory.secondChanceBytes > budget - memory.bytes,
              let (oldKey, serial) = memory.popSecondChance() {
            if shelf.object(forKey: oldKey)?.serial == serial { shelf.removeObject(forKey: oldKey) }
        }
        return evicted
    }

    /// Changes a memory limit; what no longer fits leaves memory at once.
    mutating func changeMemoryLimit(_ limit: WritableKeyPath<Settings, Int>, to value: Int, now: TimeInterval) {
        settings.set(limit, to: value)
        keepOnDisk(evictOverLimits(), usedAt: now)
    }

    /// Takes an entry out of memory; returns it, for `keepOnDisk`.
    @discardableResult
    mutating func evict(_ slot: Int) -> MemoryList.Slot {
        let gone = memory.remove(slot)
        entries[gone.key] = nil
        return gone
    }

    /// Takes `key`'s entry out of memory (not to the second chance) if it still holds `image`: a
    /// download's own decode that no request still wants (see `deliver(entryOf:)`). Its file is
    /// written if it is missing, as an eviction's would be.
    mutating func release(_ key: Key, holding image: Image?, now: TimeInterval) {
        guard case .loaded(let slot)? = entries[key], let image, memory[slot].image == image else { return }
        keepOnDisk([evict(slot)], usedAt: now)
    }

    /// Queues memory's entries for the disk: each is written unless its file is there already, in
    /// which case it is marked as used (least recent first, so that the order of use is kept).
    mutating func keepOnDisk(_ slots: [MemoryList.Slot], usedAt now: TimeInterval) {
        // A variant's image is not the key's bytes (on Linux, where an image is its bytes, its own);
        // a diskless entry was asked never to be written.
        let items = slots.filter { $0.key.processors.isEmpty && !$0.diskless }.map(\.item)
        guard !items.isEmpty else { return }
        queueOnDisk(.keep(items, usedAt: now))
    }

    /// Keeps an evicted entry's image for a second chance; its record counts against memory's limits.
    private mutating func keepSecondChance(_ slot: MemoryList.Slot) {
        guard slot.key.isWhole else { return }  // no variants: the shelf is keyed by the string
        let serial = memory.recordSecondChance(slot.key, cost: slot.cost)
        shelf.setObject(SecondChance(slot, serial: serial), forKey: slot.key)
    }

    mutating func forgetSecondChances() {
        shelf.removeAllObjects()
        memory.forgetSecondChances()
    }

    /// The second chance: an image evicted lately comes back into memory.
    mutating func secondChance(_ key: Key, now: TimeInterval) -> (image: Image, bytes: Int)? {
        guard key.isWhole, let found = shelf.object(forKey: key)?.slot, let image = found.image else { return nil }
        shelf.removeObject(forKey: key)
        guard isFresh(downloadedAt: found.downloadedAt, receivedAt: found.receivedAt, now: now) else { return nil }
        // If its file is gone meanwhile, the next eviction, purge or persist writes it again.
        keepOnDisk(insert(key, found.payload, size: found.size, downloadedAt: found.downloadedAt,
                          receivedAt: found.receivedAt, diskless: found.diskless), usedAt: now)
        return (image, found.size)
    }

    /// Drops the downloaded bytes of `key`'s memory slot once they are on disk, where the image
    /// does not hold them itself (it does on Linux); or notes it for the store still decoding them.
    mutating func bytesAreOnDisk(_ key: Key, downloadedAt: TimeInterval) {
        switch entries[key] {
        case .loaded(let slot)? where memory[slot].downloadedAt == downloadedAt:
            memory[slot].data = nil
        case .decodingStore(let store)? where store.storedAt == downloadedAt:
            store.noteWritten()
        default:
            break
        }
    }

    /// `purgeMemory`: every entry leaves memory (its file is written if it is missing).
    mutating func purge(now: TimeInterval) {
        let evicted = memory.indicesFromLeastRecent().map { evict($0) }
        forgetSecondChances()
        keepOnDisk(evicted, usedAt: now)
    }

    /// `persistCacheToDisk`: every entry in memory is queued for the disk, least recent first.
    mutating func persist(now: TimeInterval) {
        keepOnDisk(memory.indicesFromLeastRecent().map { memory[$0] }, usedAt: now)
    }

    /// The keys in memory, least recently used first.
    var recency: [String] { memory.indicesFromLeastRecent().map { memory[$0].key.string } }

    /// The entry in memory that holds `image`, if one does.
    func slot(holding image: Image) -> MemoryList.Slot? {
        memory.slot(holding: image).map { memory[$0] }
    }
}

// What an image costs memory, by platform.
nonisolated extension ImageCache {
    /// What an image costs in memory, in bytes: its decoded size where the platform decodes (every
    /// frame of an animation, each by ``ImageCache/Sizing/bitmapBytes(width:height:bytesPerRow:)``, and the bytes
    /// a view's first frame keeps for its player: ``ImageCache/keptSourceBytes(of:)``), its bytes on Linux.
    internal static func memoryCost(of image: Image) -> Int {
        #if canImport(UIKit)
        // Frames, not the references to them: a frame shown for several units is repeated.
        let frames = image.images.map { runs($0).map(\.frame) } ?? [image]
        let bytes = frames.reduce(0.0) { bytes, frame in
            let size = Sizing.pixelSize(of: frame)
            return bytes + Sizing.bitmapBytes(width: size.width, height: size.height, bytesPerRow: frame.cgImage?.bytesPerRow)
        }
        #elseif canImport(AppKit)
        // An animated GIF's NSImage counts one frame (its bitmap representation holds the frame it
        // shows), and each frame kept with it for the SwiftUI views: their bitmaps' rows
        // (BitmapCost.swift).
        let bytes = ([image] + (PlatformDecoder.frames(of: image)?.images ?? [])).reduce(0.0) { bytes, image in
            bytes + bitmapCost(of: bitmaps(of: image))
        }
        #else
        let bytes = Double(image.data.count)
        #endif
        return Int(min(bytes + Double(keptSourceBytes(of: image)), Double(Int.max / 2)))
    }
}
