// A store's decode: bytes `store(_:for:)` was given, decoded on a decode worker while their key's
// entry is this job, which fetches of the key join (and the callers of the downloads it stopped
// wait for). The job (`StoreDecode`), its steps, and what they do to the ledger, beside them.

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
    /// The decode of bytes a store gave, and the fetches waiting for it. It stays while no one
    /// waits (a store is not cancelled with a fetch), holds no place in a lane, and is never
    /// looked up, sent, or told of as an event. A cancelled fetch stays among its waiters, answered
    /// no more, until it ends.
    internal final class StoreDecode: @unchecked Sendable {  // guarded by the cache's lock
        let key: Key
        let decoder: Decoder
        let storedAt: TimeInterval  // when the bytes were given: the entry's download date
        let limits: DecodeLimits  // the settings' when it was made
        private(set) var waiters = Waiters()
        private(set) var written = false  // the bytes are on disk (see `bytesAreOnDisk`)

        init(_ key: Key, _ decoder: Decoder, at storedAt: TimeInterval, limits: DecodeLimits) {
            (self.key, self.decoder, self.storedAt, self.limits) = (key, decoder, storedAt, limits)
        }

        /// Adds `task` to those waiting for it.
        func add(_ task: FetchTask) { waiters.add(task) }

        /// Its waiters, who all leave it: it ended, or was stopped.
        func takeWaiters() -> [FetchTask] { waiters.takeAll() }

        /// Notes that its bytes are on disk.
        func noteWritten() { written = true }
    }

    /// Stores `data` to be decoded on a decode worker: the key's entry is a ``StoreDecode``
    /// meanwhile, which fetches of the key join (and the callers of the downloads it stops wait
    /// for), and the bytes' file is queued now, before any later look-up of the key on disk.
    internal func decodeStored(_ data: Data, under key: Key, _ decoder: Decoder) throws {
        let now = currentTime()
        let item = DiskStore.Item(url: key.string, data: data, size: data.count, downloadedAt: now, receivedAt: now)
        let (store, stopped): (StoreDecode, [Stopped]) = try locked { ledger in
            let replaced = try ledger.replace(key, size: data.count)
            let store = StoreDecode(key, decoder, at: now, limits: ledger.decodeLimits)
            let write = DiskWork.write(item, key: key, usedAt: now)
            return (store, ledger.begin(store, taking: replaced, write: write))
        }
        finishStopped(stopped)  // their transfers stop; their callers wait for this decode
        decodes.async { self.decoded(store, decoder.decode(data, store.limits), data) }
    }

    /// Ends a store's decode, unless its key was removed or stored again meanwhile: the entry goes to
    /// memory (an image if the bytes are one, else the bytes themselves), and the fetches that
    /// joined it get it: an image fetch the decode's error if the bytes are not an image.
    private func decoded(_ store: StoreDecode, _ result: Result<Payload, Error>, _ data: Data) {
        let now = currentTime()
        // The bytes are what the file holds, for the waiters that read them.
        let payload = ((try? result.get()) ?? Payload(value: Box(data))).with(bytes: data)
        var failed: (type: ObjectIdentifier?, error: Error)?
        if case .failure(let error) = result { failed = (store.decoder.type, error) }
        guard let settled = locked({ $0.end(store, payload, size: data.count, now: now) }) else { return }
        let delivery = Delivery(payload: payload, source: .memory, failed: failed, limits: store.limits)
        deliver(entryOf: store.key, to: settled.waiters, .success(delivery))
        startNetwork(settled.started)
    }
}

nonisolated extension ImageCache.Ledger {
    typealias StoreDecode = ImageCache.StoreDecode

    /// Makes `store` the entry of its key while its bytes decode: the waiters of the downloads
    /// `stopped` wait for it instead (their transfers still stop), and `write` is queued now, before
    /// any later look-up of the key on disk. It counts as a body waiting for a decode
    /// (`Lanes.decoding`): past the workers' number, it holds a lane slot.
    mutating func begin(_ store: StoreDecode, taking stopped: [ImageCache.Stopped],
                        write: ImageCache.DiskWork) -> [ImageCache.Stopped] {
        let stopped = stopped.map { stopped in
            for task in stopped.waiters { store.add(task) }
            return ImageCache.Stopped(waiters: [], task: stopped.task, original: stopped.original)
        }
        lanes.storeDecode(+1)
        entries[store.key] = .decodingStore(store)
        queueOnDisk(write)
        return stopped
    }

    /// True while `store` is the entry of its key: not removed or stored again meanwhile.
    func isCurrent(_ store: StoreDecode) -> Bool {
        if case .decodingStore(let entry)? = entries[store.key] { return entry === store }
        return false
    }

    /// Ends a store's decode, unless its key was removed or stored again meanwhile (nil): the entry
    /// goes to memory, and its waiters are returned.
    mutating func end(_ store: StoreDecode, _ payload: Payload, size: Int,
                      now: TimeInterval) -> (waiters: [FetchTask], started: [Download])? {
        guard isCurrent(store) else { return nil }
        lanes.storeDecode(-1)
        let kept = store.written ? payload.with(bytes: nil) : payload  // on disk already
        keepOnDisk(insert(store.key, kept, size: size, downloadedAt: store.storedAt), usedAt: now)
        return (store.takeWaiters(), startReady())
    }

    /// `task` waits for `store` too (whatever its options: the bytes are in hand).
    mutating func join(_ task: FetchTask, _ store: StoreDecode) -> [Download] {
        store.add(task)
        counts.add(.deduplicated)
        return []
    }
}
