// SwiftUI views: `AsyncImage`, in the shape of SwiftUI's own (a phase, or content and placeholder
// views; sizes in points), and `RemoteImage`, the first one (platform images, sizes in pixels). Both
// show what a `Binder` shows; its rules live in Binder.swift, and their decisions (`ViewPhase`,
// `pixelSize(points:scale:)`, `animatesArrival`, progress, completion, disappearing) in ViewLoads.swift,
// where the Linux tests reach them.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(SwiftUI)
import SwiftUI
#endif

#if canImport(SwiftUI) && (canImport(UIKit) || canImport(AppKit))
extension ImageCache {
    /// Where an ``AsyncImage`` is in its load, as SwiftUI's `AsyncImagePhase` says it.
    public enum AsyncImagePhase: Sendable {
        /// No image yet: no URL, the load under way, or the image let go on a memory warning.
        case empty
        /// The image, from memory, disk or the network.
        case success(SwiftUI.Image)
        /// The load failed, and why.
        case failure(Error)

        /// The image, if there is one.
        public var image: SwiftUI.Image? {
            if case .success(let image) = self { return image }
            return nil
        }

        /// Why the load failed, if it did.
        public var error: Error? {
            if case .failure(let error) = self { return error }
            return nil
        }
    }

    /// What an ``AsyncImage`` made with `init(request:cache:transaction:state:)` passes to its content:
    /// the phase, and beside it how far the download is. (The phase cannot carry it: a new case of
    /// ``AsyncImagePhase`` would break every `switch` over it.) Grows in 1.x by new properties only.
    public struct AsyncImageState: Sendable {
        /// The phase, as the other initializers pass it.
        public let phase: AsyncImagePhase
        /// How far the download is, while the image comes from the network (nil otherwise: no
        /// load, a look-up on disk, the image, a failure). Told at most once a whole percent when
        /// the length is known (see ``DownloadProgress``).
        public let progress: DownloadProgress?
        /// Whether a load is under way (on disk or the network); the phase may still show the last
        /// image meanwhile, as a reload or a new size does.
        public let isLoading: Bool

        /// The image, if there is one: `phase.image`.
        public var image: SwiftUI.Image? { phase.image }
        /// Why the load failed, if it did: `phase.error`.
        public var error: Error? { phase.error }
    }

    /// A SwiftUI view of the image at a URL, shaped as SwiftUI's `AsyncImage`: it passes each phase
    /// of the load to `content` (or the image to `content` and shows `placeholder` until then),
    /// through a ``Binder`` and so through the cache: an image in memory shows at once, an image
    /// that comes from disk or the network arrives in `transaction` (an animation, say). Given a
    /// `size` in points, the image is decoded to fill it at the environment's `displayScale`; with
    /// none, the whole image, bounded as every decode is. A change of URL, key or cache binds
    /// again; a change of size or scale (a rotation, a window moved to another display) keeps the
    /// image shown until the new one comes, and decodes again only when the one shown is too small,
    /// twice as large or more, or of another scale; the load is cancelled when the view disappears
    /// (or lowered and let go on: ``onDisappear(_:)``), and ``onCompletion(_:)`` hears how each ends. An animated GIF or APNG
    /// plays from the view's `onAppear` to its `onDisappear`: `content` gets each frame in turn, for
    /// its own delay, as many times as the file says, not in `transaction` (an `animation(_:value:)`
    /// of yours keyed on the image animates each change of frame). Main actor.
    ///
    /// ```swift
    /// ImageCache.AsyncImage(url: url, size: CGSize(width: 60, height: 60)) { image in
    ///     image.resizable().scaledToFill()
    /// } placeholder: {
    ///     Color.gray
    /// }
    /// ```
    ///
    /// Named as SwiftUI's, nested here: `AsyncImage` alone stays SwiftUI's.
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
    @MainActor public struct AsyncImage<Content: View>: View {
        private let load: Load?, size: CGSize?, cache: ImageCache, transaction: Transaction
        private let content: (AsyncImageState) -> Content
        private var hooks = Hooks()
        @Environment(\.displayScale) private var displayScale

        /// Shows the image at `url` (nil: `.empty`) in the phases `content` draws, cached under `key`
        /// (the URL by default) in `cache`, decoded to fill `size` (points; nil: the whole image);
        /// an image not in memory arrives in `transaction` (none by default: at once).
        public init(url: URL?, key: String? = nil, size: CGSize? = nil, cache: ImageCache = .shared,
                    transaction: Transaction = Transaction(),
                    @ViewBuilder content: @escaping (AsyncImagePhase) -> Content) {
            self.init(url.map { Load($0, key: key) }, size, cache, transaction, content)
        }

        /// Shows the image that `request` loads, as `init(url:...)` shows a URL's; the request is sent
        /// as ``Binder`` sends it, and its headers are not part of the key.
        public init(request: URLRequest, key: String? = nil, size: CGSize? = nil, cache: ImageCache = .shared,
                    transaction: Transaction = Transaction(),
                    @ViewBuilder content: @escaping (AsyncImagePhase) -> Content) {
            self.init(Load(request, key: key), size, cache, transaction, content)
        }

        /// Shows `content` of the image at `url` once there is one, and `placeholder` until then and
        /// when it cannot be had; the other arguments as in `init(url:key:size:cache:transaction:content:)`.
        public init<I: View, P: View>(url: URL?, key: String? = nil, size: CGSize? = nil,
                                      cache: ImageCache = .shared, transaction: Transaction = Transaction(),
                                      @ViewBuilder content: @escaping (SwiftUI.Image) -> I,
                                      @ViewBuilder placeholder: @escaping () -> P)
            where Content == _ConditionalContent<I, P> {
            self.init(url.map { Load($0, key: key) }, size, cache, transaction, Self.either(content, placeholder))
        }

        /// Shows `content` of the image that `request` loads, and `placeholder` until then, as
        /// `init(url:key:size:cache:transaction:content:placeholder:)` shows a URL's.
        public init<I: View, P: View>(request: URLRequest, key: String? = nil, size: CGSize? = nil,
                                      cache: ImageCache = .shared, transaction: Transaction = Transaction(),
                                      @ViewBuilder content: @escaping (SwiftUI.Image) -> I,
                                      @ViewBuilder placeholder: @escaping () -> P)
            where Content == _ConditionalContent<I, P> {
            self.init(Load(request, key: key), size, cache, transaction, Self.either(content, placeholder))
        }

        /// Shows what `request` describes (see ``ImageCache/Request``) in the phases `content` draws:
        /// its variant, made by its processors, decoded to fill its size (points; nil: the whole
        /// image), as `init(url:key:size:cache:transaction:content:)` shows a URL's.
        public init(request: ImageCache.Request, cache: ImageCache = .shared, transaction: Transaction = Transaction(),
                    @ViewBuilder content: @escaping (AsyncImagePhase) -> Content) {
            self.init(Load(request), request.size, cache, transaction, content)
        }

        /// Shows `content` of what `request` describes, and `placeholder` until then, as
        /// `init(url:key:size:cache:transaction:content:placeholder:)` shows a URL's.
        public init<I: View, P: View>(request: ImageCache.Request, cache: ImageCache = .shared,
                                      transaction: Transaction = Transaction(),
                                      @ViewBuilder content: @escaping (SwiftUI.Image) -> I,
                                      @ViewBuilder placeholder: @escaping () -> P)
            where Content == _ConditionalContent<I, P> {
            self.init(Load(request), request.size, cache, transaction, Self.either(content, placeholder))
        }

        /// Shows what `request` describes, as `init(request:cache:transaction:content:)` does, passing
        /// `state` the phase and, while the image downloads, its progress:
        ///
        /// ```swift
        /// ImageCache.AsyncImage(request: ImageCache.Request(url: url)) { state in
        ///     if let image = state.image {
        ///         image.resizable().scaledToFill()
        ///     } else {
        ///         ProgressView(value: state.progress?.fraction ?? 0)
        ///     }
        /// }
        /// ```
        ///
        /// A closure that reads only what the phase has too (`image`, `error`) is given the phase, by
        /// `init(request:cache:transaction:content:)`, and asks for no progress.
        @_disfavoredOverload
        public init(request: ImageCache.Request, cache: ImageCache = .shared, transaction: Transaction = Transaction(),
                    @ViewBuilder state content: @escaping (AsyncImageState) -> Content) {
            (self.load, self.size, self.cache, self.transaction, self.content) =
                (Load(request), request.size, cache, transaction, content)
            hooks.progress = true
        }

        private init(_ load: Load?, _ size: CGSize?, _ cache: ImageCache, _ transaction: Transaction,
                     _ content: @escaping (AsyncImagePhase) -> Content) {
            (self.load, self.size, self.cache) = (load, size, cache)
            (self.transaction, self.content) = (transaction, { content($0.phase) })
        }

        /// Calls `completion` on the main actor each time a load of the view ends in an image or a
        /// failure, with where the image came from (`Fetched.source`: memory when it was there at
        /// once, as on each appearance of an image still in memory) or why it failed: to log, or to
        /// retry (a new `id` for the view binds it again). Never for a load cancelled, by
        /// disappearing or by a new URL. A view gives its image to `content` before this is called.
        public func onCompletion(_ completion: @escaping @MainActor (Result<Fetched<Image>, Error>) -> Void) -> Self {
            var copy = self
            copy.hooks.completion = completion
            return copy
        }

        /// What the view does to its load when it disappears: ``DisappearPolicy/cancel`` it (the
        /// default), or let it go on behind the visible views' loads (``DisappearPolicy/lowerPriority``).
        public func onDisappear(_ policy: DisappearPolicy) -> Self {
            var copy = self
            copy.hooks.disappear = policy
            return copy
        }

        /// Gives the view the image's aspect ratio (as shown, the original's) with `contentMode`
        /// before the image comes, when the cache knows its size (``ImageCache/peekSize(_:)``:
        /// decoded or read before, in this launch), so that a row of a list does not jump when its
        /// image arrives. Unknown, the view reads the size from the file's header on disk when it
        /// appears (no decode) and takes it then; an image never cached takes it when it comes.
        ///
        /// ```swift
        /// ImageCache.AsyncImage(url: url) { image in
        ///     image.resizable()
        /// } placeholder: {
        ///     Color.gray
        /// }
        /// .reservesAspectRatio(.fit)
        /// ```
        public func reservesAspectRatio(_ contentMode: SwiftUI.ContentMode = .fit) -> Self {
            var copy = self
            copy.hooks.reserve = contentMode
            return copy
        }

        private static func either<I, P>(_ content: @escaping (SwiftUI.Image) -> I,
                                         _ placeholder: @escaping () -> P) -> (AsyncImagePhase) -> Content
            where Content == _ConditionalContent<I, P> {
            { phase in
                guard let image = phase.image else { return ViewBuilder.buildEither(second: placeholder()) }
                return ViewBuilder.buildEither(first: content(image))
            }
        }

        /// The view's content: see the type's description.
        public var body: some View {
            let scale = Double(displayScale)
            let pixels = ImageCache.pixelSize(points: size, scale: scale)
            let binding = Bound<Content>(load: load, placeholder: nil, failureImage: nil, pixelSize: pixels,
                                         cache: cache, transaction: transaction, scale: scale,
                                         hooks: hooks) { image, state, progress, _ in
                let phase: AsyncImagePhase
                switch ViewPhase(state, showing: image) {
                case .empty: phase = .empty
                case .success(let image): phase = .success(ImageCache.swiftUIImage(image))
                case .failure(let error): phase = .failure(error)
                }
                var loading = false
                if case .loading = state { loading = true }
                return content(AsyncImageState(phase: phase, progress: progress, isLoading: loading))
            }
            // A new binding is a new identity: its own target, bound when it appears; a new size or
            // scale is not (see `Bound`).
            return binding.id(binding.arguments)
        }
    }

    /// A SwiftUI view of the image at `url`, resizable, through a ``Binder``: it cancels its load when
    /// it disappears (or lowers it and lets it go on: ``onDisappear(_:)``), and binds again when it
    /// appears (a memory warning may have taken its image).
    /// The image carries the environment's `displayScale`: its `size` is in points; an animated one
    /// plays as in ``AsyncImage``. See also
    /// ``AsyncImage``, which takes any view as placeholder and a size in points.
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
    @MainActor public struct RemoteImage: View {
        private let load: Load?, placeholder: Image?, failureImage: Image?, pixelSize: CGSize?,
                    size: CGSize?, cache: ImageCache, transition: Transition
        private var hooks = Hooks()
        @Environment(\.displayScale) private var displayScale

        /// The arguments are those of
        /// ``Binder/bind(_:key:placeholder:failureImage:pixelSize:cache:transition:)-(URL?,_,_,_,_,_,_)``:
        /// with `.fade(seconds)`, an image that was not in memory fades in (an opacity transition).
        public init(_ url: URL?, key: String? = nil, placeholder: Image? = nil, failureImage: Image? = nil,
                    pixelSize: CGSize? = nil, cache: ImageCache = .shared, transition: Transition = .none) {
            (load, size) = (url.map { Load($0, key: key) }, nil)
            (self.placeholder, self.failureImage, self.pixelSize, self.cache, self.transition) =
                (placeholder, failureImage, pixelSize, cache, transition)
        }

        /// Shows what `request` describes (see ``ImageCache/Request``): its variant, made by its
        /// processors, decoded to fill its size (points at the environment's display scale) or, when
        /// it has none, the whole image; the other arguments as in `init(_:key:placeholder:...)`.
        public init(_ request: ImageCache.Request, placeholder: Image? = nil, failureImage: Image? = nil,
                    cache: ImageCache = .shared, transition: Transition = .none) {
            (load, size, pixelSize) = (Load(request), request.size, nil)
            (self.placeholder, self.failureImage, self.cache, self.transition) = (placeholder, failureImage, cache, transition)
        }

        /// Calls `completion` when a load of the view ends, as ``AsyncImage/onCompletion(_:)`` does.
        public func onCompletion(_ completion: @escaping @MainActor (Result<Fetched<Image>, Error>) -> Void) -> Self {
            var copy = self
            copy.hooks.completion = completion
            return copy
        }

        /// What the view does to its load when it disappears, as ``AsyncImage/onDisappear(_:)`` says.
        public func onDisappear(_ policy: DisappearPolicy) -> Self {
            var copy = self
            copy.hooks.disappear = policy
            return copy
        }

        /// Gives the view the image's aspect ratio before the image comes, as
        /// ``AsyncImage/reservesAspectRatio(_:)`` says.
        public func reservesAspectRatio(_ contentMode: SwiftUI.ContentMode = .fit) -> Self {
            var copy = self
            copy.hooks.reserve = contentMode
            return copy
        }

        /// The view's content: see the type's description.
        public var body: some View {
            var animation: Animation?
            if case .fade(let seconds) = transition, seconds > 0 { animation = .easeIn(duration: seconds) }
            let pixels = size.map { ImageCache.pixelSize(points: $0, scale: Double(displayScale)) } ?? pixelSize
            let binding = Bound(load: load, placeholder: placeholder,
                                failureImage: failureImage, pixelSize: pixels, cache: cache,
                                transaction: Transaction(animation: animation),
                                scale: Double(displayScale), hooks: hooks) { image, _, _, identity in
                // A new identity per image (not per frame), so that a fade's transition takes the old
                // one out and the new in.
                ZStack {
                    ImageCache.swiftUIImage(image ?? Self.empty).resizable()
                        .id(identity).transition(AnyTransition.opacity)
                }
            }
            // The placeholder and failure image by identity: one made anew in each `body` binds again.
            return binding.id([binding.arguments, placeholder.map(ObjectIdentifier.init),
                               failureImage.map(ObjectIdentifier.init), transition] as [AnyHashable?])
        }

        /// Shown while there is no image: one for every view, not one per evaluation of `body`.
        private static let empty = Image()
    }

    /// One binding of a SwiftUI view: its binder's target, bound when it appears and cancelled (or
    /// lowered, as the view's policy says) when it disappears; `content` draws what the target shows. The views give it a new identity when its
    /// arguments change, so a binding never changes, but for its size and scale: a change of those
    /// binds the same target again (`Binder.bindView`), which keeps its image meanwhile.
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
    @MainActor private struct Bound<Content: View>: View {
        let load: Load?, placeholder: Image?, failureImage: Image?, pixelSize: CGSize?, cache: ImageCache,
            transaction: Transaction, scale: Double, hooks: Hooks
        /// Draws the image or frame shown (nil: none), in the binder's state, with the download's
        /// progress (when `hooks` asks for it); the fourth argument identifies the image shown (the
        /// whole animation, not its frame).
        let content: (Image?, Binder.State, DownloadProgress?, ObjectIdentifier?) -> Content
        @StateObject private var target = Target()
        @Environment(\.imageCacheListRow) private var listRow  // a prefetcher's (`prefetchingImages(row:with:)`)

        /// What the binding is made of, for the view's identity: not its size and scale.
        var arguments: [AnyHashable?] {
            [load?.key.string, load?.key.processors, load?.url, load?.request, ObjectIdentifier(cache)]
        }

        var body: some View {
            if let mode = hooks.reserve {
                bound().aspectRatio(reservedRatio, contentMode: mode)
            } else {
                bound()
            }
        }

        /// The aspect ratio the view reserves: the image's, once the cache knows its size (nil:
        /// SwiftUI's, of the content's ideal size).
        private var reservedRatio: CGFloat? {
            (target.ratio ?? load.flatMap { cache.knownAspectRatio(ofKey: $0.key.string) }).map { CGFloat($0) }
        }

        private func bound() -> some View {
            drawn()
                // A new size or scale gives this empty background a new identity: it appears, and
                // binds again. (Not `onChange(of:perform:)`, deprecated in iOS 17, whose successor
                // needs iOS 17.)
                // It appears with the view too: one handler, so that an appearance binds once, after
                // the hooks are set (two handlers ran in either order: two completions, or a first
                // load with no progress).
                .background(Color.clear.onAppear(perform: appear).id([pixelSize.map { [$0.width, $0.height] }, scale] as [AnyHashable?]))
                .onDisappear { target.isDisplayed = false; target.binder.disappeared(hooks.disappear) }
        }

        private func appear() {
            (target.isDisplayed, target.transaction) = (true, transaction)
            target.hear(hooks)
            target.binder.bindView(load, placeholder, failureImage, pixelSize, cache, scale: scale)
            if let listRow { listRow.prefetcher.register(target.binder, row: listRow.index) }
            // A ratio to reserve, not known: the file's header on disk may say it before the image comes.
            if hooks.reserve != nil, let key = load?.key.string, cache.knownAspectRatio(ofKey: key) == nil {
                let model = target
                cache.size(ofKey: key) { [weak model] size in model?.ratio = size?.aspectRatio }
            }
        }

        /// What `content` draws: the target's image, or of an animated one the frame that shows now.
        private func drawn() -> Content {
            content(target.shown, target.state, target.progress, target.image.map(ObjectIdentifier.init))
        }

        /// What the binder shows, and what the view draws of it: an animation frame by frame from
        /// the view's `onAppear` to its `onDisappear`, from when it was set, each frame for its own
        /// delay and as many times as the file says (``ImageCache/FrameTiming/frame(at:durations:plays:)``),
        /// then its last frame.
        @MainActor private final class Target: ObservableObject, ImageTarget {
            /// What the binder shows; setting it starts an animated one from its first frame.
            var image: Image? {
                didSet { animation = image.flatMap(ImageCache.PlatformDecoder.frames(of:)).map { ($0, Self.now) }; restep() }
            }
            @Published private(set) var shown: Image?
            @Published private(set) var state = Binder.State.idle
            @Published private(set) var progress: DownloadProgress?
            /// Between the view's `onAppear` and `onDisappear`: an animation steps only then.
            var isDisplayed = false {
                didSet { restep() }
            }
            var transaction = Transaction()
            /// The image's aspect ratio, learned from its file's header (see `reservesAspectRatio`).
            @Published var ratio: Double?
            lazy var binder = Binder(self)
            private var animation: (frames: ImageCache.PlatformDecoder.Frames, start: TimeInterval)?
            private var ticks = 0  // bumped to drop a step scheduled before a new image or a disappearance

            /// Has the binder tell this target the progress, if `hooks` asks for it, and the view's
            /// completion: both on the main queue, the binder's.
            func hear(_ hooks: Hooks) {
                let progress: ((DownloadProgress?) -> Void)? = { [weak self] progress in
                    ImageCache.onTargetActor((self, progress)) { $0.0?.progress = $0.1 }
                }
                let completion = hooks.completion.map { completion in
                    { (result: Result<Fetched<Image>, Error>) in ImageCache.onTargetActor(result) { completion($0) } }
                }
                // A re-decode keeps the image shown: the view says it loads meanwhile.
                let loading: () -> Void = { [weak self] in ImageCache.onTargetActor(self) { $0?.state = .loading } }
                binder.hear(ViewHooks(progress: hooks.progress ? progress : nil, completion: completion, loading: loading))
            }

            func show(_ image: Image?, transition: Transition) {
                let state = binder.state  // set before the binder shows it
                // A frame of an animation the binder plays (ViewAnimation.swift) is no arrival.
                guard !binder.showsFrame, ImageCache.animatesArrival(state, replaces: binder.replaces) else {
                    return (self.image, self.state) = (image, state)
                }
                withTransaction(transaction) { (self.image, self.state) = (image, state) }
            }

            /// Drops the step scheduled, if any, and steps now.
            private func restep() {
                ticks += 1
                step()
            }

            /// Shows `image`, or the frame of its animation for now (at least `due`, the time the
            /// step was scheduled for, should the clocks differ by a hair), and schedules the next
            /// frame while the view is shown. A frame already shown is not set again.
            private func step(due: TimeInterval = 0) {
                guard let (frames, start) = animation else { return shown = image }
                let elapsed = max(Self.now - start, due)
                let now = ImageCache.FrameTiming.frame(at: elapsed, durations: frames.durations, plays: frames.plays)
                if shown !== frames.images[now.index] { shown = frames.images[now.index] }
                guard isDisplayed, let until = now.until else { return }
                let tick = ticks
                DispatchQueue.main.asyncAfter(deadline: .now() + max(0, until - elapsed)) { [weak self] in
                    guard let self, self.ticks == tick else { return }
                    var still = Transaction()  // not the load's; keeps the deprecated `animation(_:)` out
                    still.disablesAnimations = true
                    withTransaction(still) { self.step(due: until) }
                }
            }

            /// Seconds on a clock that only moves forward (the wall clock may be set back).
            private static var now: TimeInterval { ProcessInfo.processInfo.systemUptime }
        }
    }

    /// What a view's modifiers and initializer ask of its loads: the progress (the state
    /// initializer's), a completion, what disappearing does.
    private struct Hooks {
        var progress = false
        var completion: (@MainActor (Result<Fetched<Image>, Error>) -> Void)?
        var disappear = DisappearPolicy.cancel
        var reserve: SwiftUI.ContentMode?  // `reservesAspectRatio(_:)`'s
    }

    @MainActor private static func swiftUIImage(_ image: Image) -> SwiftUI.Image {
        #if canImport(UIKit)
        SwiftUI.Image(uiImage: image)
        #else
        SwiftUI.Image(nsImage: image)
        #endif
    }
}
#endif
