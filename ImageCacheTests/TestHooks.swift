// The tests' hooks into the cache: internal members reached through `@testable import`, so that
// none of them is in the library (the release-built benchmarks' few are, as SPI:
// Sources/ImageCache/Support/BenchmarkHooks.swift).

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable @_spi(Testing) import ImageCache

extension ImageCache {
    /// The clock, in seconds since 1970; set it before the first call that uses the instance.
    var clock: @Sendable () -> TimeInterval {
        get { testClock ?? { Date().timeIntervalSince1970 } }
        set { testClock = newValue }
    }

    /// The most transfers the cache had under way at once (sent and not yet completed).
    var mostTransfersAtOnce: Int { transport.mostTransfersAtOnce }

    /// What the images in memory cost now, in bytes (see ``imageMemoryMaxBytes``).
    var memoryBytes: Int { locked { $0.memory.bytes } }

    /// The URLs in memory, least recently used first.
    var memoryURLs: [String] {
        locked { ledger in ledger.memory.indicesFromLeastRecent().map { ledger.memory[$0].key.description } }
    }

    /// Downloads on the network now that hold a lane slot (a stalled one holds none), and those whose
    /// bytes are in, waiting for a decode or in one.
    var downloadCounts: (running: Int, decoding: Int) {
        locked { ($0.lanes.runningFast + $0.lanes.runningSlow, $0.lanes.decoding) }
    }

    /// The bounds a decode for a request made now works within (see `DecodeLimits`).
    var decodeLimits: (maxPixels: Int, maxAnimatedFrames: Int, memoryMaxBytes: Int) {
        let limits = locked { $0.decodeLimits }
        return (limits.maxPixels, limits.maxAnimatedFrames, limits.memoryMaxBytes)
    }

    /// How many image files the folder holds, after the disk work queued so far (counted: O(files)).
    var diskCount: Int { diskQueue.sync { disk.sizes().files } }

    /// Makes every disk write fail with `code` (nil: work again).
    func injectDiskWriteError(_ code: POSIXErrorCode?) {
        diskQueue.sync { disk.injectedWriteError = code }
    }

    /// Every broken invariant, described; empty when all hold. Checks the memory list against the
    /// dictionary, memory against its cap, the downloads listed, that every download's phase
    /// changed as its lifecycle allows (`Download.Phase.mayBecome`), and that the folder holds
    /// nothing but image files and temporary files (after queued disk work). The lanes' counts need
    /// no check: `Lanes.move` is the only way to change them.
    func checkInvariants() -> [String] {
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
                    if download.waiters.isEmpty {
                        problems.append("download without waiters: \(key.string)")
                    }
                case .decodingStore:
                    break  // it stays while no one waits
                case .processing(let job):
                    if job.waiters.isEmpty { problems.append("variant's job without waiters: \(key.string)") }
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

    /// True when no decode (or encode) runs or waits for a worker.
    var decodesIdle: Bool { decodes.isIdle }

    /// How many stored images' encodings have come back to the disk queue so far, written or not.
    var encodesEnded: Int { diskQueue.sync { disk.encodesEnded } }

    /// Sets the main screen's scale as if it had been read (nil: not read yet), for every instance in
    /// the process; a test sets Linux's back (1) when it is done.
    static func setScreenScale(_ scale: Double?) {
        screen.lock.withLock { screen.scale = scale }
    }

    /// The image a ``Binder`` decoded to `size` under `key`, as `peek(key:)` finds images.
    func peek(key: String, filling size: (width: Int, height: Int)) -> Image? {
        peek(Self.memoryKey(key, filling: size))
    }

    /// How the memory entry of `key` at `size` is described (see `Key.description`).
    static func memoryKeyDescription(_ key: String, filling size: (width: Int, height: Int)?,
                                                           scale: Double = 1) -> String {
        memoryKey(key, filling: size, scale: scale).description
    }

    /// Waits for the sweep that the first disk lookup schedules (see `DiskStore.read`), if it has.
    func waitForSweep() {
        diskQueue.sync { disk.sweep }?.wait()
    }
}
