// Downloads and the lanes that schedule them: a download is one key being looked up on disk, queued,
// downloaded, decoded or waiting to retry, with everyone waiting for it; the lanes say which may
// start (a fast and a slow lane, slots shared fairly between hosts, stalled transfers that yield
// their slot) and are the one mutator of a download's phase, lane and stall (`fileprivate(set)`:
// the compiler keeps it so), each change checked against the lifecycle (`Phase.mayBecome`).

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
    internal enum Lane { case fast, slow }

    /// One key being looked up on disk, queued, downloaded, or waiting to retry, and everyone
    /// waiting for it (a variant's job is a ``VariantJob``). Its lane and phase change only through
    /// ``Lanes/move(_:to:lane:)``.
    internal final class Download: @unchecked Sendable {  // guarded by the cache's lock
        let load: Load  // the first requester's; the others' decoders decode the bytes themselves
        fileprivate(set) var lane: Lane
        fileprivate(set) var phase = Phase.new
        private(set) var stale: (payload: Payload, found: DiskStore.Found)?  // an expired entry on disk, to revalidate
        private(set) var waiters = Waiters()  // cancelled ones leave; all leave when it is delivered
        fileprivate(set) var attempts = 0
        private(set) var credentials: UInt64 = 0  // the refreshes ended before its request was made (see `Authorizer`)
        private(set) var reauthorized = false  // it waited for a refresh once: refused again, it fails
        private(set) var misses = Misses()  // what each tier said of it (MissReason.swift)
        private(set) var claimsPart = true  // its next attempt looks for a kept part (`PartialBody.claim`)
        // What its loads chose (see `Request.Options`): any of them asks a reload, or not to write to
        // disk; all of them ask not to keep it in memory.
        private(set) var ignoresCache = false
        private(set) var writesToDisk = true
        private(set) var keepsInMemory = true
        fileprivate(set) var ticket: UInt64 = 0  // its place in its lane's queue (see `Lanes`)
        fileprivate(set) var stalled = false  // its transfer has received nothing for a while (see `Lanes`)
        /// The server it is downloaded from, as `Lanes` shares slots between them: read when it is
        /// queued for the network (a disk hit never reads it), under the cache's lock.
        lazy var host: String = load.url.map(Self.host(of:)) ?? ""
        /// The lifecycle: new -> checkingDisk -> queued | done; queued -> running (its task set once
        /// sent); running -> decoding | done | waitingToRetry (done at once when a cheap decoder ran
        /// where the bytes came); decoding -> done; waitingToRetry -> queued; and any -> done
        /// (forgotten). A phase may also stay as it is while the download changes lane. A decoding download's bytes
        /// are in: the next one may start (see `startReady`). `mayBecome` writes it as code, and the
        /// package's tests check every change `Lanes.move` makes against it.
        enum Phase {
            case new, checkingDisk, queued, running(URLSessionDataTask?), decoding, waitingToRetry, done

            var isRunning: Bool {
                if case .running = self { return true } else { return false }
            }

            #if IMAGECACHE_TESTING
            func mayBecome(_ next: Phase) -> Bool {
                switch (self, next) {
                case (_, .done), (.new, .checkingDisk), (.checkingDisk, .queued),
                     (.queued, .running(nil)),
                     (.running(nil), .running), (.running, .decoding), (.running, .waitingToRetry),
                     (.waitingToRetry, .queued):
                    return true
                case (.checkingDisk, .checkingDisk), (.queued, .queued), (.decoding, .decoding),
                     (.waitingToRetry, .waitingToRetry):
                    return true  // a change of lane
                case (.running(let task?), .running(let same)):
                    return task === same  // a change of lane
                default:
                    return false
                }
            }
            #endif
        }

        let limits: DecodeLimits  // the settings' when it was made
        /// What loads its bytes instead of HTTP(S), if a plugged source (or `data:`) loads its URL.
        let source: (any ImageSource)?

        var key: Key { load.key }
        /// The URL it downloads: `Load.refusal(of:)` checked it before the download was made.
        var url: URL { load.url! }
        var decoder: Decoder { load.decoder }

        init(_ load: Load, limits: DecodeLimits, source: (any ImageSource)? = nil) {
            self.load = load
            lane = load.lane
            self.limits = limits
            self.source = source
            ignoresCache = load.options.contains(.reloadIgnoringCachedData)
            writesToDisk = !load.options.contains(.notWrittenToDisk) && source?.writesToDisk != false
            keepsInMemory = !load.options.contains(.notKeptInMemory)
        }

        /// Adds `task` to those waiting for it: the task waits for it now.
        func add(_ task: FetchTask) {
            waiters.add(task)
            task.waits(for: self)
        }

        /// Takes `task` out of those waiting for it (a cancellation).
        func remove(_ task: FetchTask) { waiters.remove(task) }

        /// Its waiters, who all leave it: it was delivered, or stopped.
        func takeWaiters() -> [FetchTask] { waiters.takeAll() }

        /// Keeps the expired entry that disk had, to revalidate (unless a load asked a reload).
        func revalidate(_ payload: Payload, _ found: DiskStore.Found) {
            if !ignoresCache { stale = (payload, found) }
        }

        /// Notes what a tier said of it (see `Misses`).
        func noteMiss(_ tier: WritableKeyPath<Misses, MissReason?>, _ said: MissReason) {
            misses.note(tier, said)
        }

        /// Notes the credentials its request was sent with (see `Authorizer`).
        /// A later attempt looks for a part again: this one may keep one.
        func sent(withCredentials credentials: UInt64) {
            self.credentials = credentials
            claimsPart = true
        }

        /// Notes that its look-up on disk found no folder of kept parts: its first attempt claims none.
        func foundNoParts() { claimsPart = false }

        /// Notes a refusal that sent it to wait for a refresh: refused again, it fails, and the
        /// attempt after the refresh is not a retry.
        func waitForReauthorization() {
            reauthorized = true
            attempts -= 1
        }

        /// Takes the choices of a load that joins it (see `ignoresCache`).
        func join(_ options: Request.Options) {
            if options.contains(.reloadIgnoringCachedData) {
                ignoresCache = true
                if case .running = phase {} else { stale = nil }  // no conditional request, if not sent
            }
            if options.contains(.notWrittenToDisk) { writesToDisk = false }
            if !options.contains(.notKeptInMemory) { keepsInMemory = true }
        }

        /// The server of `url`: its host, and its port if it names one.
        static func host(of url: URL) -> String {
            let host = url.host?.lowercased() ?? ""
            return url.port.map { "\(host):\($0)" } ?? host
        }
    }

    /// The two lanes: which downloads wait for a slot, and how many hold one. Every change of a
    /// download's lane, phase or stall goes through `move` or `stall`, so the counts cannot drift
    /// from the downloads.
    ///
    /// A transfer that stalls (see ``ImageCache/stallTime``) holds no slot of its lane, fast or slow,
    /// while at most `maxStalled` are stalled; those beyond that hold a fast-lane slot each (and keep
    /// the slow lane waiting), so that the transfers under way stay within both limits together.
    /// When a slot frees, it goes to the host with the fewest transfers under way (stalled ones
    /// included), its oldest download first: a host alone gets every slot, and one with a stalled or
    /// slow server cannot take them all while others wait.
    internal struct Lanes {
        private var fastQueue = Waiting()
        private var slowQueue = Waiting()
        private var tickets: UInt64 = 0
        private var checkingFast = 0  // fast lookups on disk hold the slow lane back too
        private(set) var runningFast = 0  // not stalled
        private(set) var runningSlow = 0  // not stalled
        private(set) var stalled = 0  // transfers under way that stalled, of either lane
        private var underWay: [String: Int] = [:]  // transfers under way by host, stalled ones included
        private(set) var decoding = 0  // bodies in, waiting for a decode or in one (a store's too)
        private(set) var startLimit: StartLimit?  // the slow lane's starts per second (see `StartLimit`); nil: none
        #if IMAGECACHE_TESTING
        private(set) var wrongMoves: [String] = []  // changes the lifecycle does not allow: the first few
        #endif

        mutating func move(_ download: Download, to phase: Download.Phase, lane: Lane? = nil) {
            #if IMAGECACHE_TESTING
            if !download.phase.mayBecome(phase), wrongMoves.count < 10 {
                wrongMoves.append("\(download.key.string): \(download.phase) -> \(phase)")
            }
            #endif
            if let startLimit, case .running = download.phase, !phase.isRunning { startLimit.ended(download) }
            count(download, -1)
            download.phase = phase
            download.lane = lane ?? download.lane
            if case .running = phase {} else { download.stalled = false }  // the next attempt starts afresh
            count(download, +1)
        }

        /// Counts a store's decode beginning (`+1`) or ending (`-1`): a body waiting for a decode, as
        /// a decoding download's is.
        /// Limits the slow lane's starts to `limit` (nil: no limit).
        mutating func limitStarts(_ limit: StartLimit?) { startLimit = limit }

        mutating func storeDecode(_ sign: Int) {
            decoding += sign
        }

        /// Marks a running download's transfer as stalled or not; false if that changes nothing.
        mutating func stall(_ download: Download, _ stalled: Bool) -> Bool {
            guard case .running = download.phase, download.stalled != stalled else { return false }
            count(download, -1)
            download.stalled = stalled
            count(download, +1)
            return true
        }

        /// Takes downloads off the queues as far as the limits allow and marks them running. A
        /// decoding download holds no slot while a decode worker is free for it; those beyond the
        /// workers hold one each, so that bodies waiting to be decoded stay within the lanes' limits.
        /// So do stalled transfers beyond `maxStalled`.
        mutating func startReady(maxFast: Int, maxStalled: Int, maxSlow: Int = 1) -> [Download] {
            var started: [Download] = []
            let held = max(0, decoding - DecodeWorkers.width) + max(0, stalled - maxStalled)
            while runningFast + held < maxFast, let download = fastQueue.pop(underWay) {
                start(download)
                started.append(download)
            }
            while checkingFast == 0, fastQueue.live == 0, runningFast == 0, runningSlow < maxSlow, held == 0,
                  slowQueue.live > 0, startLimit?.admits() ?? true, let download = slowQueue.pop(underWay) {
                startLimit?.started(download)
                start(download)
                started.append(download)
            }
            return started
        }

        private mutating func start(_ download: Download) {
            move(download, to: .running(nil))
            download.attempts += 1
        }

        /// Adds (`+1`) or takes away (`-1`) a download's share of the queues and counts.
        private mutating func count(_ download: Download, _ sign: Int) {
            let fast = download.lane == .fast
            switch download.phase {
            case .checkingDisk where fast:
                checkingFast += sign
            case .queued:
                if sign > 0 {
                    tickets += 1
                    download.ticket = tickets
                }
                fast ? fastQueue.count(download, sign) : slowQueue.count(download, sign)
            case .running:
                if download.stalled {
                    stalled += sign
                } else if fast {
                    runningFast += sign
                } else {
                    runningSlow += sign
                }
                let host = underWay[download.host, default: 0] + sign
                underWay[download.host] = host == 0 ? nil : host
            case .decoding:
                decoding += sign
            case .new, .checkingDisk, .waitingToRetry, .done:
                break
            }
        }

        /// The downloads queued on one lane, by host, each host's in the order they were queued. A
        /// download that leaves the queue stays in it, stale, until it reaches its host's front (a
        /// ticket tells a live place from a stale one): leaving costs O(1), so cancelling n queued
        /// downloads is O(n). Taking one costs O(hosts with downloads queued).
        private struct Waiting {
            private var hosts: [String: FIFO<(download: Download, ticket: UInt64)>] = [:]
            private(set) var live = 0  // live places

            /// Adds (`+1`, at the back of its host's queue) or takes away (`-1`) a queued download.
            mutating func count(_ download: Download, _ sign: Int) {
                live += sign
                if sign > 0 { hosts[download.host, default: FIFO()].append((download, download.ticket)) }
            }

            /// The oldest download of the host with the fewest transfers `underWay`, past the stale
            /// places before it.
            mutating func pop(_ underWay: [String: Int]) -> Download? {
                guard live > 0 else {
                    if !hosts.isEmpty { hosts = [:] }  // stale places only
                    return nil
                }
                var best: (index: Dictionary<String, FIFO<(download: Download, ticket: UInt64)>>.Index,
                           underWay: Int, ticket: UInt64)?
                var emptied = false  // a host whose places were all stale
                var index = hosts.startIndex
                while index != hosts.endIndex {
                    while let (download, ticket) = hosts.values[index].first, !Self.isLive(download, ticket) {
                        _ = hosts.values[index].popFirst()
                    }
                    if let (_, ticket) = hosts.values[index].first {
                        let load = underWay[hosts.keys[index]] ?? 0
                        if best.map({ (load, ticket) < ($0.underWay, $0.ticket) }) ?? true {
                            best = (index, load, ticket)
                        }
                    } else {
                        emptied = true
                    }
                    hosts.formIndex(after: &index)
                }
                guard let best else { return nil }
                let download = hosts.values[best.index].popFirst()?.download
                if emptied { hosts = hosts.filter { $0.value.count > 0 } }
                return download
            }

            private static func isLive(_ download: Download, _ ticket: UInt64) -> Bool {
                if case .queued = download.phase { return download.ticket == ticket }
                return false
            }
        }
    }
}
