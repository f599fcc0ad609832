// What the SwiftUI views (SwiftUIViews.swift) decide from a binder, plain so that the Linux tests
// reach it: the phase, the pixels of a size in points, which arrivals animate; and what a view hears
// of its load beside what it shows: the download's progress, the completion, and what disappearing
// does to the load (`DownloadProgress`, `DisappearPolicy`, `ViewHooks`).

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
    /// How far a download is: the bytes received, and the length the server announced, if it did.
    /// A view hears it only while its image comes from the network (a memory or disk hit has
    /// none). Grows in 1.x by new properties only.
    public struct DownloadProgress: Sendable, Hashable {
        /// The bytes of the body received so far.
        public let received: Int
        /// The length the server announced (`Content-Length`); nil when it announced none.
        public let expected: Int?

        /// A progress of `received` bytes out of `expected` (nil: not announced).
        public init(received: Int, expected: Int?) {
            (self.received, self.expected) = (max(0, received), expected.map { max(0, $0) })
        }

        /// `received` out of `expected`, from 0 to 1; nil when no length was announced (or it was 0).
        /// A body longer than it announced stays at 1.
        public var fraction: Double? {
            guard let expected, expected > 0 else { return nil }
            return min(1, Double(received) / Double(expected))
        }

        /// Whether a view is told `next` after it was told `last` (nil: nothing yet). The transport
        /// reports a download at most 20 times a second; of those, a view is told the first, each
        /// one that moves the whole percent shown (when the length is known), and the last (all
        /// the bytes announced): a large image in a list redraws its row a hundred times at most.
        /// With no length, every report (a count of bytes has no percent to wait for).
        internal static func tells(_ next: DownloadProgress, after last: DownloadProgress?) -> Bool {
            guard let last else { return true }
            guard next.received > last.received else { return false }
            guard let fraction = next.fraction, next.expected == last.expected else { return true }
            return fraction == 1 || Self.percent(fraction) != last.fraction.map(Self.percent)
        }

        private static func percent(_ fraction: Double) -> Int { Int((fraction * 100).rounded(.down)) }
    }

    /// What a SwiftUI view does to its load when it disappears (scrolled out of a list, say):
    /// ``cancel`` it (the default), or ``lowerPriority``, let it go on behind the visible views'
    /// loads so that a row scrolled back shows at once. A set of choices that may grow in 1.x: a
    /// struct with static members, so that no `switch` over it can break.
    public struct DisappearPolicy: Sendable, Hashable {
        private enum Kind: Sendable, Hashable { case cancel, lowerPriority }
        private let kind: Kind

        /// Cancels the load: the download stops unless another request wants it, and nothing is
        /// cached from a stopped one. What the view shows stays; it binds again when it appears.
        /// The default, as in 1.0.
        public static let cancel = DisappearPolicy(kind: .cancel)

        /// Keeps the load going, behind the loads of visible views: a download not yet started
        /// (queued, or being looked up on disk) moves to the slow lane, where it starts only when no
        /// fast-lane download waits, unless another request still wants it fast; a transfer under
        /// way goes on in its slot (its bytes are coming). The image is shown when it comes, and a
        /// view that appears again before then takes the load back to the fast lane. As Nuke's
        /// `onDisappear(.lowerPriority)` and Kingfisher's `reducePriorityOnDisappear`.
        public static let lowerPriority = DisappearPolicy(kind: .lowerPriority)

        /// Whether a view that disappears keeps its load.
        internal var keepsLoading: Bool { kind == .lowerPriority }
    }

    /// What a binder tells a SwiftUI view beside what its target shows, on the binder's queue.
    /// Nil hooks cost nothing: a binding with no `progress` asks the cache for none.
    internal struct ViewHooks {
        /// The download's progress, as ``DownloadProgress/tells(_:after:)`` thins it; nil when the
        /// binding no longer downloads (its image came, it failed, or it was cancelled or replaced).
        fileprivate(set) var progress: ((DownloadProgress?) -> Void)?
        /// Once for each binding that ends in an image or a failure (see ``Binder/completed``);
        /// never for one cancelled or replaced.
        fileprivate(set) var completion: ((Result<Fetched<Image>, Error>) -> Void)?
        /// When the binder starts a load while its target keeps what it shows (a new size of the
        /// image it shows, a reload): the binder's state is `loading` meanwhile, which a SwiftUI
        /// view says with `isLoading`.
        fileprivate(set) var loading: (() -> Void)?
        /// The target's size in pixels and its display scale now, for a binding made to its bounds
        /// (a UIKit or AppKit view's): looked at again when its image comes, since a view bound
        /// before layout (a prefetched cell) may have been laid out only since (see `Binder.resized`).
        fileprivate(set) var sizeNow: (() -> (pixels: CGSize, scale: Double)?)?

        /// Looks at the target's size with `sizeNow` from now on (nil: a binding given its size).
        mutating func lookAtSize(_ sizeNow: (() -> (pixels: CGSize, scale: Double)?)?) { self.sizeNow = sizeNow }
    }

    // MARK: The SwiftUI views' decisions, plain so that the Linux tests reach them

    /// What a SwiftUI view of a binder shows, as SwiftUI's `AsyncImagePhase` says it; `Picture` is
    /// the platform image here, SwiftUI's `Image` in ``AsyncImagePhase``.
    internal enum ViewPhase<Picture> {
        case empty, success(Picture), failure(Error)

        /// The phase of a binder in `state` whose target shows `image`: the failure (the view's binder
        /// has no failure image), else the image shown (a reload keeps the last one while it loads, a
        /// cancelled load the one it showed), else empty (no URL, loading, or let go on a memory warning).
        internal init(_ state: Binder.State, showing image: Picture?) {
            if case .failed(let error) = state { self = .failure(error); return }
            self = image.map(ViewPhase.success) ?? .empty
        }
    }

    /// The size in pixels to decode for a view of `points` on a screen of `scale`; nil (the whole
    /// image, bounded as every decode is) for none.
    internal static func pixelSize(points: CGSize?, scale: Double) -> CGSize? {
        points.map { CGSize(width: $0.width * scale, height: $0.height * scale) }
    }

    /// Whether a SwiftUI view animates what its binder just showed in `state`: an image that came from
    /// disk or the network does; one from memory shows at once (a fade would only flash), as do the
    /// placeholder, a failure, and an image that `replaces` the same one shown (a decode at a new
    /// size, a reload: not an arrival, and not to be animated by the app's transaction).
    internal static func animatesArrival(_ state: Binder.State, replaces: Bool = false) -> Bool {
        guard case .image(let source) = state, !replaces else { return false }
        return source != .memory
    }
}

nonisolated extension ImageCache.Binder.State {
    /// Whether it shows an image.
    internal var isImage: Bool {
        if case .image = self { return true }
        return false
    }
}

nonisolated extension ImageCache {
    /// The key of the one animation a view's binder adds to its layer: the fade between two images.
    internal static let fadeAnimationKey = "ImageCache.fade"

    /// The animations a view's binder removes from its layer before it shows an image: its own fade
    /// only, so that the app's animations of the view go on.
    internal static let animationsRemovedByBinder = [fadeAnimationKey]

    /// How long a view's fade to a new image lasts, in seconds; nil for none.
    internal static func fadeSeconds(_ transition: Transition) -> Double? {
        guard case .fade(let seconds) = transition, seconds > 0, seconds.isFinite else { return nil }
        return seconds
    }
}
