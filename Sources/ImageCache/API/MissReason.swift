// Misses that explain themselves: why a tier did not answer a load (`MissReason`), what each tier
// said of one load (`Misses`, in `Fetched.misses`), where the text goes (`MissLog`), and the
// ledger's record of them (evictions by limit, the counts `statistics()` sums up).

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
#if canImport(os)
import os
#endif

nonisolated extension ImageCache {
    /// Why a tier did not answer a load, or how the network answered a revalidation. A value that
    /// grows in 1.x: new reasons are new static members (compare with `==`, or read its
    /// `description`; a `switch` over it needs a `default`).
    public struct MissReason: Sendable, Hashable, CustomStringConvertible {
        internal let code: UInt8

        /// The tier had no entry for the key.
        public static let absent = MissReason(code: 0)
        /// The tier's entry had expired (``ImageCache/imageTimeToLive`` or the server's freshness).
        public static let expired = MissReason(code: 1)
        /// Memory had the entry, and evicted it earlier to stay within ``ImageCache/imageMemoryMaxCount``.
        public static let evictedByCountLimit = MissReason(code: 2)
        /// Memory had the entry, and evicted it earlier to stay within ``ImageCache/imageMemoryMaxBytes``.
        public static let evictedByByteLimit = MissReason(code: 3)
        /// Memory has the image at another size or as another variant (other processors), not this one.
        public static let otherVariantOnly = MissReason(code: 4)
        /// The tier was not read: the load asked not to (``Request/Options/reloadIgnoringCachedData``).
        public static let refusedByOption = MissReason(code: 5)
        /// Memory remembered that an earlier load of the key failed; this one tried again.
        public static let failedEarlier = MissReason(code: 6)
        /// The file on disk could not be read or decoded.
        public static let unreadable = MissReason(code: 7)
        /// The network, asked to revalidate an expired entry, said it had not changed (`304`).
        public static let notModified = MissReason(code: 8)
        /// The network, asked to revalidate an expired entry, sent a new body (`200`).
        public static let modified = MissReason(code: 9)

        private static let texts = [
            "not there", "expired", "evicted earlier by the count limit", "evicted earlier by the byte limit",
            "present at another size or variant only", "not read: the load asked to reload",
            "an earlier load failed", "unreadable", "revalidated: 304 Not Modified", "revalidated: 200, changed",
        ]

        /// The reason in words, as ``MissLog`` writes it.
        public var description: String { Self.texts[Int(code)] }
    }

    /// What each tier said of one load that memory did not answer at once; see ``Fetched/misses``.
    /// Nil for a tier not asked, or one that answered (``Fetched/source`` says which). Grows in 1.x
    /// by new properties.
    public struct Misses: Sendable, Equatable, CustomStringConvertible {
        /// Why memory did not answer; nil if it did.
        public fileprivate(set) var memory: MissReason?
        /// Why the disk did not answer; nil if it did, or was not asked.
        public fileprivate(set) var disk: MissReason?
        /// How the network answered a revalidation of the disk's expired entry: ``MissReason/notModified``
        /// or ``MissReason/modified``; nil for a plain download, or when it was not asked.
        public fileprivate(set) var network: MissReason?

        /// No tier missed.
        public init() {}

        /// Records what `tier` said.
        internal mutating func note(_ tier: WritableKeyPath<Misses, MissReason?>, _ said: MissReason) {
            self[keyPath: tier] = said
        }

        /// The tiers and what they said, as ``MissLog`` writes it: "memory: not there; disk: expired;
        /// network: revalidated: 304 Not Modified".
        public var description: String {
            [("memory", memory), ("disk", disk), ("network", network)]
                .compactMap { tier, said in said.map { "\(tier): \($0)" } }.joined(separator: "; ")
        }
    }

    /// Where the cache writes a line for each load that memory did not answer: its URL, where it
    /// came from, and ``Misses``; see ``ImageCache/missLog``.
    public struct MissLog: Sendable {
        internal let write: @Sendable (String) -> Void

        /// Writes each line with `write`, on ``ImageCache/callbackQueue``.
        public init(_ write: @escaping @Sendable (String) -> Void) { self.write = write }

        #if canImport(os)
        /// The unified log, subsystem "ImageCache", category "misses", at the debug level: Console
        /// shows it once debug messages are included; nothing is written while it is not.
        @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
        public static var unifiedLog: MissLog {
            MissLog { line in Logger(subsystem: "ImageCache", category: "misses").debug("\(line, privacy: .public)") }
        }
        #endif
    }

    /// Where a line is written for each load that memory did not answer, telling what each tier
    /// said (see ``Misses``): nil (nothing written) by default. On Linux give it a closure
    /// (`MissLog { print($0) }`); on Apple platforms `.unifiedLog` from iOS 14 and macOS 11. Runs on
    /// ``callbackQueue``. The same reasons come with each load (``Fetched/misses``) and as counts in
    /// ``statistics()`` (``Statistics/missReasons``) whether it is set or not.
    public var missLog: MissLog? {
        get { locked { $0.missBook.log } }
        set { locked { $0.setMissLog(newValue) } }
    }

    /// The ledger's record of misses: which keys memory evicted lately and by which limit (the
    /// last 1,024 at most), and the log. Guarded by the cache's lock, as the ledger is.
    internal struct MissBook {
        private var evicted: [Key: MissReason] = [:]
        private(set) var log: MissLog?

        mutating func setLog(_ log: MissLog?) { self.log = log }

        /// `keys` left memory by a limit: by the count limit if `byCount`, else by the byte limit.
        mutating func evicted(_ slots: [MemoryList.Slot], byCount: Bool) {
            if evicted.count + slots.count > 1_024 { evicted = [:] }
            for slot in slots { evicted[slot.key] = byCount ? .evictedByCountLimit : .evictedByByteLimit }
        }

        /// The limit that evicted `key` lately, if one did; forgotten once told.
        mutating func eviction(of key: Key) -> MissReason? {
            evicted.isEmpty ? nil : evicted.removeValue(forKey: key)
        }
    }
}

nonisolated extension ImageCache.Ledger {
    /// Sets the miss log (see ``ImageCache/missLog``).
    mutating func setMissLog(_ log: ImageCache.MissLog?) { missBook.setLog(log) }

    typealias MissReason = ImageCache.MissReason

    /// Notes what memory said of `download`'s first load, `said` as `route` saw it: a key it did
    /// not have is refined here (evicted by a limit, or there at another size or variant).
    mutating func missedInMemory(_ download: Download, _ said: MissReason) {
        var said = said
        if said == .absent {
            if let limit = missBook.eviction(of: download.key) {
                said = limit
            } else if otherVariantInMemory(download.key) {
                said = .otherVariantOnly
            }
        }
        download.noteMiss(\.memory, said)
        count(said)
    }

    /// Whether memory has the image `key` names under another of its keys (size, processors).
    private func otherVariantInMemory(_ key: Key) -> Bool {
        let variants = entries.variants(of: key.string)
        guard !key.isWhole || !variants.isEmpty else { return false }
        for other in [Key(string: key.string)] + variants where other != key {
            if case .loaded? = entries[other] { return true }
        }
        return false
    }

    /// Notes what the disk said of `download`, whose look-up found `found` (nil: nothing, or not
    /// read).
    mutating func missedOnDisk(_ download: Download, _ found: ImageCache.FoundOnDisk?) {
        let said: MissReason
        switch found {
        case _ where download.ignoresCache: said = .refusedByOption
        case .stale?: said = .expired
        case .unusable?: said = .unreadable
        case .fresh?, nil: said = .absent
        }
        download.noteMiss(\.disk, said)
        count(said)
    }

    /// What the tiers said of `download`, now answered by the network (`notModified`: with a `304`
    /// for its expired entry), logged if the log is on.
    mutating func explained(_ download: Download, notModified: Bool) -> ImageCache.Misses {
        if notModified {
            download.noteMiss(\.network, .notModified)
        } else if download.stale != nil {
            download.noteMiss(\.network, .modified)
        }
        if let said = download.misses.network { count(said) }
        log(download, from: .network)
        return download.misses
    }

    /// Writes `download`'s line, answered by `source`, to the log if it is on.
    mutating func log(_ download: Download, from source: ImageCache.Source) {
        guard let log = missBook.log, download.misses.memory != nil else { return }  // not a store's
        let line = "\(download.key.string) from \(source.rawValue): \(download.misses)"
        settings.callbackQueue.async { log.write(line) }
    }

    private mutating func count(_ reason: MissReason) {
        counts.add(reason)
    }
}
