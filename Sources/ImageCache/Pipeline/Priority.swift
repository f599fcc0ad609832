// A request's want of its download, lowered and raised again (a SwiftUI view that disappears with
// `DisappearPolicy.lowerPriority`, and appears again): its download goes to the slow lane only when
// no other request waiting for it wants it fast, as a new fast request joining it takes it back.

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
    /// Lowers `task`'s want of its download (`lowered`), or raises it again; then starts what that
    /// allows. See ``Ledger/lower(_:_:)``.
    internal func lower(_ task: FetchTask, _ lowered: Bool) {
        startNetwork(locked { $0.lower(task, lowered) })
    }
}

nonisolated extension ImageCache.Ledger {
    /// Marks `task`, still waiting, as lowered or not, and moves its download (for a variant, its
    /// original's) to match: lowered, a download that has not started moves to the slow lane when
    /// no waiter wants it fast (a transfer under way keeps its slot: its bytes are coming); raised,
    /// a fast request's download on the slow lane moves back to the fast lane, as a fast request
    /// that joins it moves it. Returns the downloads that may start now.
    mutating func lower(_ task: FetchTask, _ lowered: Bool) -> [Download] {
        guard task.answer == .waiting, task.lowered != lowered else { return [] }
        task.lowered = lowered
        guard var download = task.download, isCurrent(download) else { return [] }
        // A variant's job holds no place in a lane: its request for the original stands for all
        // its waiters, lowered when none of them wants it fast.
        if !download.key.processors.isEmpty {
            guard let original = download.original, let moved = original.download, isCurrent(moved) else { return [] }
            original.lowered = !download.waiters.contains(where: Self.wantsFast)
            download = moved
        }
        if lowered {
            guard download.lane == .fast, !download.waiters.contains(where: Self.wantsFast) else { return [] }
            let notStarted: (Download.Phase) -> Bool = { phase in
                switch phase {
                case .running, .decoding: return false
                default: return true
                }
            }
            return move(download, ifIn: notStarted, to: download.phase, lane: .slow) ?? []
        }
        guard download.lane == .slow, Self.wantsFast(task) else { return [] }
        return move(download, ifIn: { _ in true }, to: download.phase, lane: .fast) ?? []
    }

    /// Whether `task` wants its download on the fast lane: a request for the screen, or a variant
    /// job's request for its original (its lane is its first fetch's; `lower` marks it lowered only
    /// when none of the job's fetches wants it fast), not lowered.
    private static func wantsFast(_ task: FetchTask) -> Bool {
        task.answer == .waiting && (task.load.lane == .fast || task.load.isOriginal) && !task.lowered
    }
}
