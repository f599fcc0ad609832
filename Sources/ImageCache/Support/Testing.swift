// For tests and benchmarks: compiled only where the package defines IMAGECACHE_TESTING for its own
// tests and benchmarks (Package.swift); a copied file has none of this.

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

#if IMAGECACHE_TESTING
nonisolated extension ImageCache {
    /// The clock, in seconds since 1970; set it before the first call that uses the instance.
    @_spi(Testing) public var clock: @Sendable () -> TimeInterval {
        get { testClock ?? { Date().timeIntervalSince1970 } }
        set { testClock = newValue }
    }

    /// How many images memory holds now.
    @_spi(Testing) public var memoryCount: Int { locked { $0.memory.count } }

    /// The most transfers the cache had under way at once (sent and not yet completed).
    @_spi(Testing) public var mostTransfersAtOnce: Int { transport.mostTransfersAtOnce }

    /// What the images in memory cost now, in bytes (see ``imageMemoryMaxBytes``).
    @_spi(Testing) public var memoryBytes: Int { locked { $0.memory.bytes } }

    /// The URLs in memory, least recently used first.
    @_spi(Testing) public var memoryURLs: [String] {
        locked { ledger in ledger.memory.indicesFromLeastRecent().map { ledger.memory[$0].key.description } }
    }

    /// Downloads on the network now that hold a lane slot (a stalled one holds none), and those whose
    /// bytes are in, waiting for a decode or in one.
    @_spi(Testing) public var downloadCounts: (running: Int, decoding: Int) {
        locked { ($0.lanes.runningFast + $0.lanes.runningSlow, $0.lanes.decoding) }
    }

    /// The bounds a decode for a request made now works within (see `DecodeLimits`).
    @_spi(Testing) public var decodeLimits: (maxPixels: Int, maxAnimatedFrames: Int, memoryMaxBytes: Int) {
        let limits = locked { $0.decodeLimits }
        return (limits.maxPixels, limits.maxAnimatedFrames, limits.memoryMaxBytes)
    }

    /// How many image files the folder holds, after the disk work queued so far (counted: O(files)).
    @_spi(Testing) public var diskCount: Int { diskQueue.sync { disk.sizes().files } }

    /// Makes every disk write fail with `code` (nil: work again).
    @_spi(Testing) public func injectDiskWriteError(_ code: POSIXErrorCode?) {
        diskQueue.sync { disk.injectedWriteError = code }
    }

    /// The file name the disk tier uses for `url`.
    @_spi(Testing) public static func diskFileName(for url: URL) -> String {
        DiskStore.fileName(for: url.absoluteString)
    }

    /// Every broken invariant, described; empty when all hold. Checks the memory list against the
    /// dictionary, memory against its cap, the downloads listed, that every download's phase
    /// changed as its lifecycle allows (`Download.Phase.mayBecome`), and that the folder holds
    /// nothing but image files and temporary files (after queued disk work). The lanes' counts need
    /// no check: `Lanes.move` is the only way to change them.
    @_spi(Testing) public func checkInvariants() -> [String] {
        var problems: [String] = locked { ledger in
            var problems: [String] = []
            let order = ledger.memory.indicesFromLeastRecent()
            if order.count != ledger.memory.count {
                problems.append("memory list has \(order.count) slots, count says \(ledger.memory.count)")
            }
            if ledger.memory.count + ledger.memory.secondChanceCount > ledger.settings.memoryMaxCount {
                let (held, chances) = (ledger.memory.count, ledger.memory.secondChanceCount)
                problems.append("memory and second chance hold \(held)+\(chances)"
                                + " > cap \(ledger.settings.memoryMaxCount)")
            }
            if ledger.memory.bytes + ledger.memory.secondChanceBytes > ledger.settings.memoryMaxBytes {
                let (cost, chances) = (ledger.memory.bytes, ledger.memory.secondChanceBytes)
                problems.append("memory and second chance cost \(cost)+\(chances)"
                                + " > budget \(ledger.settings.memoryMaxBytes)")
            }
            var loaded = 0
            for (key, entry) in ledger.entries.all {
                switch entry {
                case .loaded(let slot):
                    loaded += 1
                    if ledger.memory[slot].key != key {
                        problems.append("slot of \(key.string) holds \(ledger.memory[slot].key.string)")
                    }
                case .loading(let download):
                    if case .done = download.phase { problems.append("finished download still listed: \(key.string)") }
                    if download.waiters.isEmpty, !download.load.isStore {
                        problems.append("download without waiters: \(key.string)")
                    }
                case .failed:
                    break
                }
            }
            if loaded != ledger.memory.count {
                problems.append("\(loaded) loaded entries, memory count \(ledger.memory.count)")
            }
            problems += ledger.lanes.wrongMoves.map { "download phase changed against its lifecycle: \($0)" }
            return problems
        }
        problems += diskQueue.sync {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            let known = Set(disk.list().map(\.name))
            return names.filter { !known.contains($0) && !DiskStore.isTemporaryName($0) }
                .map { "unexpected file in the folder: \($0)" }
        }
        return problems
    }

    /// Puts `image` in memory as if it had just been read from disk, with the count cap and batch
    /// eviction: the memory tier alone. Evicted images are marked as used on disk, as they are
    /// when their files exist (here they do not, and are not written).
    @_spi(Testing) public func benchmarkInsert(_ url: URL, image: Image, data: Data) {
        let key = Key(url)
        let now = currentTime()
        locked { ledger in
            let evicted = ledger.insert(key, Payload(image: image), size: data.count, downloadedAt: now).map(\.item)
            if !evicted.isEmpty { ledger.queueOnDisk(.touch(evicted.map(\.url), at: now)) }
        }
    }

    /// Makes `store(_ data:for:)` decode on a decode worker, as it does where ImageIO decodes, and
    /// runs `before` there first, before each decode (a test holds the decode with it).
    @_spi(Testing) public func decodeStores(after before: @escaping @Sendable () -> Void) {
        storeDecoder = Decoder(type: nil, decode: { data, limits in
            before()
            return Decoder.image.decode(data, limits)
        }, offThread: true)
    }

    /// Makes `store(_ image:for:)` treat images as Apple platforms do, where an image has no bytes of
    /// its own: it keeps those of the entry memory holds it in, else has `encode` make some, on a
    /// decode worker.
    @_spi(Testing) public func encodeStoredImages(with encode: @escaping @Sendable (Image) -> Data?) {
        imageEncoder = encode
    }

    /// True when no decode (or encode) runs or waits for a worker.
    @_spi(Testing) public var decodesIdle: Bool { decodes.isIdle }

    /// How many stored images' encodings have come back to the disk queue so far, written or not.
    @_spi(Testing) public var encodesEnded: Int { diskQueue.sync { disk.encodesEnded } }

    /// Sets the main screen's scale as if it had been read (nil: not read yet), for every instance in
    /// the process; a test sets Linux's back (1) when it is done.
    @_spi(Testing) public static func setScreenScale(_ scale: Double?) {
        screen.lock.withLock { screen.scale = scale }
    }

    /// Holds the disk queue (after the work queued so far) until `gate` is signalled.
    @_spi(Testing) public func holdDiskQueue(until gate: DispatchSemaphore) {
        diskQueue.async { gate.wait() }
    }

    /// The image a ``Binder`` decoded to `size` under `key`, as `peek(key:)` finds images.
    @_spi(Testing) public func peek(key: String, filling size: (width: Int, height: Int)) -> Image? {
        peek(Self.memoryKey(key, filling: size))
    }

    /// How the memory entry of `key` at `size` is described (see `Key.description`).
    @_spi(Testing) public static func memoryKeyDescription(_ key: String, filling size: (width: Int, height: Int)?,
                                                           scale: Double = 1) -> String {
        memoryKey(key, filling: size, scale: scale).description
    }

    /// Binds `binder` to `url` at `pixelSize` for a screen of `scale`, as a view on that screen does.
    @_spi(Testing) public static func bind(_ binder: Binder, _ url: URL, pixelSize: CGSize, scale: Double,
                                           cache: ImageCache) {
        binder.bind(Load(url, key: nil), nil, nil, pixelSize, cache, .none, scale: scale)
    }

    /// Waits until every disk operation queued so far has run.
    @_spi(Testing) public func drainDisk() {
        diskQueue.sync {}
    }

    /// Waits for the sweep that the first disk lookup schedules (see `DiskStore.read`), if it has.
    @_spi(Testing) public func waitForSweep() {
        diskQueue.sync { disk.sweep }?.wait()
    }
}
#endif
