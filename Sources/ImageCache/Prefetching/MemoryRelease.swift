// Prefetching: memory that follows a list's scroll. The step that takes the images of rows beyond a
// list's window (see `ListWindow`) out of memory before its limits would, leaving their files.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

nonisolated extension ImageCache {
    /// Takes the images of `keys` out of memory (the second chance included) now, ahead of the
    /// limits: the rows a ``ListPrefetcher`` let go. Their files stay on disk (written if missing),
    /// and a load under way for one goes on. Returns how many left memory.
    @discardableResult
    internal func release(_ keys: [Key]) -> Int {
        guard !keys.isEmpty else { return 0 }
        let now = currentTime()
        return locked { $0.release(keys, now: now) }
    }
}

nonisolated extension ImageCache.Ledger {
    /// Evicts each of `keys` in memory, as the limits would (its file is queued if missing), and
    /// forgets its second chance; counted as no eviction: the app asked for it.
    mutating func release(_ keys: [Key], now: TimeInterval) -> Int {
        var gone: [MemoryList.Slot] = []
        for key in keys {
            if case .loaded(let slot)? = entries[key] {
                gone.append(evict(slot))
            } else if key.isWhole, memory.secondChanceCount > 0 {
                shelf.removeObject(forKey: key)  // its record leaves the count when it reaches the front
            }
        }
        keepOnDisk(gone, usedAt: now)
        return gone.count
    }
}
