// The order new downloads are looked up on disk in (`LookUpQueue`): a look-up for the screen goes
// on the disk queue at once, the slow lane's (prefetches) a few at a time, so that a burst of
// prefetches never stands between the disk and a visible load.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// Feeds the disk queue the look-ups of new downloads (`DiskLookUp`). A fast lane's goes on the
    /// queue at once. The slow lane's go on it at most ``window`` at a time; the others wait here,
    /// in the order they came, and each goes on the queue when one of those has run. A visible
    /// load's look-up so waits behind at most `window` of a prefetch burst's (and the disk work
    /// queued before it), not behind thousands. One that waited here and whose download is no
    /// longer wanted (its prefetch cancelled) reads nothing. One whose download a visible load
    /// joined meanwhile goes on the queue at once (`hurry`). Nothing else on the disk queue is
    /// reordered: a look-up that waited runs later than it would have, which any look-up may (it
    /// reads what the folder holds when it runs; a file being stored is waited for, see `run`).
    ///
    /// **Thread safety.** Any thread. Its lock is its own, never taken with the cache's, and never
    /// held while it calls out.
    internal final class LookUpQueue: @unchecked Sendable {  // its state is guarded by `lock`
        /// The slow lane's look-ups on the disk queue at once, at most.
        static let window = 8

        private let queue: DispatchQueue
        private let lock = NSLock()
        private var waiting: [ObjectIdentifier: DiskLookUp] = [:]  // by download
        private var order = FIFO<ObjectIdentifier>()  // of `waiting`, the order they came; a hurried one's stays, stale
        private var slowOnQueue = 0  // the slow lane's look-ups on the queue, not yet run

        init(_ queue: DispatchQueue) { self.queue = queue }

        /// Puts `lookUp` on the disk queue, or, for the slow lane with `window` on it already,
        /// keeps it until one of those has run.
        func start(_ lookUp: DiskLookUp, fast: Bool) {
            guard !fast else { return queue.async { lookUp.run() } }
            let now: Bool = lock.withLock {
                guard slowOnQueue >= Self.window else {
                    slowOnQueue += 1
                    return true
                }
                waiting[ObjectIdentifier(lookUp.download)] = lookUp
                order.append(ObjectIdentifier(lookUp.download))
                return false
            }
            if now { return runSlow(lookUp) }
            // A fast load that joined its download after `Ledger.route` and before this found
            // nothing waiting to `hurry`: asked again now that it waits (the lane is the cache's).
            let download = lookUp.download
            if lookUp.cache.locked({ $0.isCheckingDisk(download) && download.lane == .fast }) { hurry(download) }
        }

        /// Puts the waiting look-up of `download`, if any, on the disk queue now: a visible load has
        /// joined its download. (One that `start` has not yet been given is hurried by `start`.)
        func hurry(_ download: Download) {
            let hurried: DiskLookUp? = lock.withLock {
                waiting.isEmpty ? nil : waiting.removeValue(forKey: ObjectIdentifier(download))
            }
            if let hurried { queue.async { hurried.run() } }
        }

        #if IMAGECACHE_TESTING
        /// The slow lane's look-ups waiting here, and those on the disk queue not yet run.
        var counts: (waiting: Int, onQueue: Int) { lock.withLock { (waiting.count, slowOnQueue) } }
        #endif

        private func runSlow(_ lookUp: DiskLookUp) {
            queue.async {
                lookUp.runIfWanted()
                self.next()
            }
        }

        /// One of the slow lane's look-ups has run: the oldest one waiting takes its place.
        private func next() {
            let next: DiskLookUp? = lock.withLock {
                while let id = order.popFirst() {
                    if let lookUp = waiting.removeValue(forKey: id) { return lookUp }
                }
                slowOnQueue -= 1
                return nil
            }
            if let next { runSlow(next) }
        }
    }
}
