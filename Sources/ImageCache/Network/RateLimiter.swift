// The rate limit on starts: how many slow-lane downloads may start in any second
// (``ImageCache/maxSlowStartsPerSecond``), and the timer that starts the next when it allows.

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
    /// The bound on the slow lane's starts: of any `perSecond + 1` consecutive starts, the last
    /// comes at least one second after the first one's transfer ended (or was stopped). A start
    /// counts from when it is sent until one second after its transfer ends, not after it is
    /// sent: a request reaches the server after it is sent and before its transfer ends, so the
    /// server too sees no more than `perSecond` requests in any second, whatever the network's
    /// delays. `Lanes` asks it before each slow-lane start and tells it of each end; the fast lane
    /// never asks it. Guarded by the cache's lock, like the lanes that hold it.
    internal final class StartLimit: @unchecked Sendable {
        let perSecond: Int
        private var slots: [Slot]  // the last `perSecond` starts, in a ring
        private var next = 0  // the slot the next start takes: the oldest of the ring
        private var holders: [ObjectIdentifier: Int] = [:]  // the running starts' slots, by download
        private var wakeAt: UInt64?  // when the timer is set for, in uptime nanoseconds
        private let wake: @Sendable () -> Void  // takes the cache's lock and starts what is ready

        private enum Slot { case free, running, ended(at: UInt64) }

        init(perSecond: Int, wake: @escaping @Sendable () -> Void) {
            self.perSecond = perSecond
            slots = Array(repeating: .free, count: perSecond)
            self.wake = wake
        }

        /// Whether a slow-lane download may start now. When not, the timer is set for when the
        /// oldest start's second has passed (or that start's end sets it, if it is still running).
        func admits() -> Bool {
            switch slots[next] {
            case .free:
                return true
            case .running:
                return false
            case .ended(let at):
                let due = at + 1_000_000_000
                if DispatchTime.now().uptimeNanoseconds >= due { return true }
                schedule(due)
                return false
            }
        }

        /// Takes the oldest slot for `download`, which `admits` allowed and which starts now.
        func started(_ download: Download) {
            slots[next] = .running
            holders[ObjectIdentifier(download)] = next
            next = (next + 1) % perSecond
        }

        /// The transfer of `download` ended (or its download left the running phase): its second
        /// starts now. Nothing for a download it did not start.
        func ended(_ download: Download) {
            guard !holders.isEmpty, let slot = holders.removeValue(forKey: ObjectIdentifier(download)) else { return }
            let now = DispatchTime.now().uptimeNanoseconds
            slots[slot] = .ended(at: now)
            if slot == next { schedule(now + 1_000_000_000) }  // the start it held back
        }

        /// The timer fired: another may be set.
        func woke() {
            if let wakeAt, DispatchTime.now().uptimeNanoseconds >= wakeAt { self.wakeAt = nil }
        }

        private func schedule(_ due: UInt64) {
            if let wakeAt, wakeAt <= due { return }
            wakeAt = due
            DispatchQueue.global().asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due), execute: wake)
        }
    }

    /// Sets or removes the start limit of the slow lane (see ``maxSlowStartsPerSecond``), and starts
    /// what it lets start now.
    internal func setStartLimit(_ perSecond: Int?) {
        let limit = perSecond.map { perSecond in
            StartLimit(perSecond: perSecond) { [weak self] in
                guard let self else { return }
                self.startNetwork(self.locked { ledger in
                    ledger.lanes.startLimit?.woke()
                    return ledger.startReady()
                })
            }
        }
        startNetwork(locked { ledger in
            ledger.setStartLimit(limit)
            return ledger.startReady()
        })
    }
}

nonisolated extension ImageCache.Ledger {
    /// Sets the start limit of the slow lane (see ``ImageCache/maxSlowStartsPerSecond``).
    mutating func setStartLimit(_ limit: ImageCache.StartLimit?) { lanes.limitStarts(limit) }
}
