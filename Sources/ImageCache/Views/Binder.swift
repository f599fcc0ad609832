// The binder: `Binder` shows the image of one URL in one `ImageTarget` (ImageTarget.swift; an image
// view's is ViewTarget.swift), owns its state and request, and the decisions every target shares.
// What the SwiftUI views (SwiftUIViews.swift) decide from a binder lives in ViewLoads.swift.

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

nonisolated extension ImageCache {
    /// Shows the image of one URL in one ``ImageTarget``, and owns the target's state and request: a
    /// new binding replaces the request, and no callback of an earlier one touches the target; an
    /// image in memory is set at once, inside `bind`, without the placeholder; a failure leaves the
    /// failure image (else the placeholder) and ``state`` says why; on `purgeMemory()`, a target not
    /// displayed lets its image go until it is bound again.
    ///
    /// **Thread safety.** A binder belongs to the serial queue it is made with (the main queue for
    /// views): call it there; it sets the target there, and its requests' callbacks run there.
    public final class Binder: @unchecked Sendable {
        /// What the target shows: `idle`, nothing bound or the load cancelled; `placeholder`, no URL or
        /// a memory warning; `loading`, the placeholder; the `image`; `failed`, the failure image.
        public enum State: Sendable, Equatable {
            /// Nothing is bound, or the load was cancelled.
            case idle
            /// The placeholder, for a binding without a URL or after a memory warning.
            case placeholder
            /// The placeholder, while the image loads, or a preview of it (a progressive JPEG's scans so
            /// far: see ``ImageCache/Request/Options-swift.struct/withoutPreviews``).
            case loading
            /// The image, from where it came.
            case image(Source)
            /// The failure image (or the placeholder), with why the load failed.
            case failed(Error)
        }

        /// What the target shows now.
        public private(set) var state = State.idle
        internal let queue: DispatchQueue
        private weak var target: ImageTarget?
        internal private(set) var binding: (load: Load?, placeholder: Image?, failureImage: Image?, cache: ImageCache,
                              memoryKey: Key?, transition: Transition, size: (width: Int, height: Int)?,
                              scale: Double)?
        private var task: FetchTask?
        internal private(set) var generation = 0  // of the binding: a callback of an earlier one is ignored
        #if IMAGECACHE_TESTING
        internal private(set) var ignoredCallbacks = 0  // so ignored; the tests report it (not shipped)
        #endif
        /// The load under way replaces the image the target shows with the same one (a new size, a
        /// reload): it comes with no transition (see ``ImageCache/animatesArrival(_:replaces:)``).
        internal private(set) var replaces = false
        private var observer: NSObjectProtocol?
        private var shownKey: Key?  // the entry whose image the binder showed last; nil: none, or not an image
        /// What a SwiftUI view hears beside what its target shows: set before it binds (`hear`).
        internal private(set) var hooks = ViewHooks()
        /// The progress last told to `hooks.progress`; nil while nothing downloads for the binding.
        internal private(set) var progress: DownloadProgress?
        /// Whether the load under way was let go on behind others when its view disappeared.
        internal private(set) var isLowered = false
        /// The animation it plays in the target, if any (ViewAnimation.swift).
        internal private(set) var animation: ViewAnimation
        /// Whether what it tells the target now is a frame of the animation it plays.
        internal private(set) var showsFrame = false
        /// The scans of the preview it shows for the binding under way (ViewPreviews.swift); 0: none.
        internal private(set) var previewScans = 0

        /// A binder for `target`, which it holds weakly, used on `queue`: on Apple platforms, where
        /// targets are main-actor isolated, the main queue (another queue stops the program here).
        public init(_ target: ImageTarget, queue: DispatchQueue = .main) {
            #if canImport(UIKit) || canImport(AppKit)
            precondition(queue === DispatchQueue.main, "a binder's target is main-actor isolated: use the main queue")
            #endif
            (self.target, self.queue) = (target, queue)
            animation = ViewAnimation(.platform, queue: queue)
            observer = NotificationCenter.default.addObserver(forName: ImageCache.memoryPurged, object: nil,
                                                              queue: nil) { [weak self] note in
                guard let self, let cache = note.object as? ImageCache else { return }
                queue.async { self.purged(cache) }
            }
        }

        /// A binder whose animations are made of `animation` (the tests' fakes).
        internal convenience init(_ target: ImageTarget, queue: DispatchQueue, animation: AnimationEnvironment) {
            self.init(target, queue: queue)
            self.animation = ViewAnimation(animation, queue: queue)
        }

        deinit {
            task?.cancel()
            observer.map(NotificationCenter.default.removeObserver)
        }

        /// Tells `hooks` from now on what it does (a SwiftUI view's), in place of those it had.
        internal func hear(_ hooks: ViewHooks) { self.hooks = hooks }

        /// Looks at the target's size with `sizeNow` when a binding made to its bounds gets its
        /// image (an image view's; see ``ViewHooks/sizeNow``); nil: a binding given its size.
        internal func lookAtSize(_ sizeNow: (() -> (pixels: CGSize, scale: Double)?)?) { hooks.lookAtSize(sizeNow) }

        /// Shows the image at `url` (nil: the placeholder), cached under `key` (the URL by default):
        /// at once if it is in memory, else the placeholder until it comes, shown with `transition`
        /// (none by default; see ``Transition``). Given `pixelSize`, Apple platforms decode it to
        /// fill that, as an entry of its own in memory, at the main screen's scale (read here, on
        /// the main thread, if it was not yet: its `size` is in points). Returns the request.
        @discardableResult
        public func bind(_ url: URL?, key: String? = nil, placeholder: Image? = nil, failureImage: Image? = nil,
                         pixelSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: Transition = .none) -> FetchTask? {
            bind(url.map { Load($0, key: key) }, placeholder, failureImage, pixelSize, cache, transition, scale: nil)
        }

        /// Shows the image that `request` loads, as `bind(_:key:...)` shows a URL's; the request is
        /// sent as `fetch(_ request: URLRequest, ...)` sends it, and its headers are not part of the
        /// key. (Not optional, so that `bind(nil)` stays the URL form's: the placeholder.)
        @discardableResult
        public func bind(_ request: URLRequest, key: String? = nil, placeholder: Image? = nil,
                         failureImage: Image? = nil, pixelSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: Transition = .none) -> FetchTask? {
            bind(Load(request, key: key), placeholder, failureImage, pixelSize, cache, transition, scale: nil)
        }

        /// Shows what `request` describes (see ``ImageCache/Request``), as `bind(_:key:...)` shows a
        /// URL's: its variant, made by its processors, decoded to fill its size (points at the main
        /// screen's scale) or, when it has none, `pixelSize`.
        @discardableResult
        public func bind(_ request: ImageCache.Request, placeholder: Image? = nil, failureImage: Image? = nil,
                         pixelSize: CGSize? = nil, cache: ImageCache = .shared,
                         transition: Transition = .none) -> FetchTask? {
            let scale = ImageCache.Sizing.displayScale(request.scale, screen: ImageCache.screenScale)
            let pixels = request.size.map { ImageCache.pixelSize(points: $0, scale: scale) } ?? pixelSize
            return bind(Load(request), placeholder, failureImage, pixels, cache, transition, scale: request.scale)
        }

        /// `scale`: the display scale of the target's screen (a view's), which the image carries;
        /// nil for the main screen's (see ``ImageCache/Sizing/displayScale(_:screen:)``).
        /// `keepsShowing`: the image shown stays until this binding's comes (a new size of the same
        /// image).
        @discardableResult
        internal func bind(_ load: Load?, _ placeholder: Image?, _ failureImage: Image?, _ pixelSize: CGSize?,
                           _ cache: ImageCache, _ transition: Transition, scale: Double?,
                           keepsShowing: Bool = false) -> FetchTask? {
            dispatchPrecondition(condition: .onQueue(queue))
            let size = ImageCache.pixels(pixelSize)
            let scale = ImageCache.Sizing.displayScale(scale, screen: ImageCache.screenScale)
            let animation = self.animation.decode(load)  // a view's decode of an animation (ViewAnimation.swift)
            let memoryKey = load.map {
                ImageCache.memoryKey($0.key.string, filling: size, scale: scale, processors: $0.key.processors,
                                     animation: animation)
            }
            let sameKey = memoryKey != nil && memoryKey == binding?.memoryKey && cache === binding?.cache
            let previous = task
            defer { previous?.cancel() }  // after the new request, which may share its download
            generation += 1
            let generation = generation  // before `show`: a target that binds again from its setter wins
            (task, replaces, previewScans) = (nil, false, 0)
            isLowered = false
            tell(nil)
            binding = (load, placeholder, failureImage, cache, memoryKey, transition, size, scale)
            guard let load, let memoryKey else { show(placeholder, .placeholder); return nil }
            // In memory at this size: set at once.
            if let image = cache.peek(memoryKey) {
                show(image, .image(.memory), key: memoryKey)
                return completed(generation, .success(Fetched(value: image, source: .memory, isStale: false)))
            }
            let meanwhile: Bool
            switch showMeanwhile(load, memoryKey, size: size, keepsShowing: keepsShowing, cache) {
            case .final(let whole):
                return completed(generation, .success(Fetched(value: whole, source: .memory, isStale: false)))
            case .shown: meanwhile = true
            case .nothing: meanwhile = false
            }
            // A new size of what it shows, a reload of the image it shows, or a smaller one showing:
            // no placeholder meanwhile.
            replaces = keepsShowing || state.isImage && (sameKey || meanwhile)
            if replaces {
                state = .loading
                hooks.loading?()
            } else {
                show(placeholder, .loading)
                showBlurHash(of: load, size: size, cache: cache, binding: generation)  // Placeholders.swift
            }
            task = request(load, memoryKey, size: size, scale: scale, animation: animation, cache, binding: generation)
            return task
        }

        /// What a binding not in memory at its size shows while it loads (`showMeanwhile`).
        private enum Meanwhile {
            case final(Image)  // the whole image, good enough at this size: the binding is done
            case shown  // an image of it, until the load's comes
            case nothing
        }

        /// Shows what memory has of `load` while its decode at `size` loads, if anything: the whole
        /// image (ready to draw; final unless this size is asked for itself or it is much larger, or
        /// was made smaller by a bounded decode), else the best image of it memory holds
        /// (StandIn.swift) unless the target shows one as good, else its alternative's, which it may
        /// well come to again (Alternatives.swift).
        private func showMeanwhile(_ load: Load, _ memoryKey: Key, size: (width: Int, height: Int)?,
                                   keepsShowing: Bool, _ cache: ImageCache) -> Meanwhile {
            let wholeKey = Key(string: load.key.string, processors: load.key.processors)  // its variant, if any
            if let size, !keepsShowing, let whole = cache.peek(wholeKey) {
                show(whole, .image(.memory), key: wholeKey)
                let replaced = ImageCache.Rebinding.replacesWhole(ImageCache.Sizing.pixelSize(of: whole), for: size,
                                                                  decodeBound: cache.wholeDecodeBound)
                return replaced ? .shown : .final(whole)
            }
            if let standIn = cache.standIn(for: memoryKey, processors: load.processors, shown: shownPixels(of: memoryKey)) {
                show(standIn.image, .image(.memory), key: standIn.key)
                return .shown
            }
            if let key = load.alternativeKey(of: memoryKey), let image = cache.peek(key) {
                show(image, .image(.memory), key: key)
                return .shown
            }
            return .nothing
        }

        /// Requests `load` decoded for the binding `generation` (at `size` and `scale`, an
        /// animation as `animation` says), its previews and progress hooked to the target, its
        /// result shown on `queue`.
        private func request(_ load: Load, _ memoryKey: Key, size: (width: Int, height: Int)?, scale: Double,
                             animation: ImageCache.AnimationDecode, _ cache: ImageCache,
                             binding generation: Int) -> FetchTask {
            let decoder = Decoder.image(filling: size, scale: scale, animation: animation)
            var load = load.sized(memoryKey, decoder, scale: scale)
            if !load.options.contains(.withoutPreviews), load.processors.isEmpty {  // runs on `queue`, the task's
                load = load.previewing { [weak self] preview in self?.previewed(generation, preview) }
            }
            if hooks.progress != nil {  // runs on `queue`, the task's
                load = load.hooked(onProgress: { [weak self] received, expected in
                    self?.progressed(generation, DownloadProgress(received: received, expected: expected))
                })
            }
            return cache.request(load, queue: queue, completion: { [weak self] result in
                self?.finished(generation, result.flatMap { ImageCache.resolve($0, decoder) })
            }, onCancel: { [weak self] in self?.finished(generation, nil) })
        }

        /// The target's size is now `pixelSize` at `scale` (a view laid out after it was bound): if
        /// the binding `generation` is still the latest, loading or shown, and was made for a size
        /// or scale that ``ImageCache/Rebinding/rebinds(bound:now:decodeBound:)`` says is wrong for it, it
        /// binds again at this size, its own decode (not a whole image), keeping what the target
        /// shows until it comes. Bounds still empty change nothing.
        /// `afterResize`: its bounds changed after it was laid out (ViewBounds.swift), so
        /// ``ImageCache/rebindsAfterResize(bound:now:decodeBound:)`` decides.
        internal func resized(to pixelSize: CGSize?, scale: Double?, binding generation: Int, afterResize: Bool = false) {
            dispatchPrecondition(condition: .onQueue(queue))
            guard generation == self.generation, ImageCache.pixels(pixelSize) != nil else { return }
            rebind(at: pixelSize, scale: scale, afterResize: afterResize)
        }

        /// A SwiftUI view's binding, made when it appears and when its size or display scale changes
        /// (its target stays): of the image it is bound to, loading or shown, at a new size or
        /// scale, it binds again only as ``ImageCache/Rebinding/rebinds(bound:now:decodeBound:)`` says, keeping
        /// what the target shows until the new one comes; at the same ones, it lets a load under way
        /// go on. Any other binds anew, as `bind` does.
        internal func bindView(_ load: Load?, _ placeholder: Image?, _ failureImage: Image?, _ pixelSize: CGSize?,
                               _ cache: ImageCache, scale: Double?) {
            dispatchPrecondition(condition: .onQueue(queue))
            animation.setVisible(true)
            guard let binding, let load, let bound = binding.load, bound.key == load.key, bound.url == load.url,
                  bound.request == load.request, binding.cache === cache, ImageCache.same(binding.placeholder, placeholder),
                  ImageCache.same(binding.failureImage, failureImage) else {
                bind(load, placeholder, failureImage, pixelSize, cache, .none, scale: scale)
                return
            }
            let same = ImageCache.pixels(pixelSize).map { [$0.width, $0.height] } == binding.size.map { [$0.width, $0.height] }
                && ImageCache.Sizing.displayScale(scale, screen: ImageCache.screenScale) == binding.scale
            switch state {
            case .loading:
                lower(false)  // it appears again, at its size or another
                if !same { rebind(at: pixelSize, scale: scale) }
                return
            case .image: if !same { return rebind(at: pixelSize, scale: scale) }
            case .idle, .placeholder, .failed: break
            }
            bind(load, placeholder, failureImage, pixelSize, cache, .none, scale: scale)
        }

        /// Binds again at `pixelSize` and `scale`, keeping what the target shows, if the binding is
        /// loading or shown and ``ImageCache/Rebinding/rebinds(bound:now:decodeBound:)`` says so.
        private func rebind(at pixelSize: CGSize?, scale: Double?, afterResize: Bool = false) {
            let decides = afterResize ? ImageCache.rebindsAfterResize : ImageCache.Rebinding.rebinds
            guard let binding, let load = binding.load,
                  decides((binding.size, binding.scale),
                          (ImageCache.pixels(pixelSize), ImageCache.Sizing.displayScale(scale, screen: ImageCache.screenScale)),
                          binding.cache.wholeDecodeBound ?? .max) else { return }
            switch state {
            case .loading, .image: break
            case .idle, .placeholder, .failed: return
            }
            bind(load, binding.placeholder, binding.failureImage, pixelSize, binding.cache, binding.transition,
                 scale: scale, keepsShowing: true)
        }

        /// Cancels the load under way, if any; what the target shows stays (`loading` becomes `idle`).
        public func cancel() {
            dispatchPrecondition(condition: .onQueue(queue))
            generation += 1
            task?.cancel()
            task = nil
            if case .loading = state { state = .idle }
            tell(nil)
        }

        /// Its view disappeared: `policy` says whether the load under way is cancelled, or lowered
        /// (``DisappearPolicy/lowerPriority``) and goes on, to be shown when it comes.
        internal func disappeared(_ policy: DisappearPolicy) {
            dispatchPrecondition(condition: .onQueue(queue))
            animation.setVisible(false)
            guard policy.keepsLoading else { return cancel() }
            lower(true)
        }

        /// Lowers the load under way (`lowered`), or raises it again: see `ImageCache.lower(_:_:)`.
        private func lower(_ lowered: Bool) {
            guard let task, isLowered != lowered, let cache = binding?.cache else { return }
            isLowered = lowered
            cache.lower(task, lowered)
        }

        /// A callback of the binding `generation`: the image, why not, or nil if its task was cancelled.
        private func finished(_ generation: Int, _ result: Result<Fetched<Image>, Error>?) {
            guard generation == self.generation else {
                #if IMAGECACHE_TESTING
                ignoredCallbacks += 1
                #endif
                return
            }
            (task, isLowered) = (nil, false)
            tell(nil)
            switch result {
            case .success(let fetched)?:
                // One from memory is there at once: a fade would only flash.
                let transition: Transition = fetched.source == .memory || replaces ? .none : binding?.transition ?? .none
                show(fetched.value, .image(fetched.source), transition: transition, key: binding?.memoryKey)
                // A binding to the target's bounds looks at them again: laid out since, they may want
                // another size (a cell prefetched before layout).
                if let sizeNow = hooks.sizeNow, let now = sizeNow() { resized(to: now.pixels, scale: now.scale, binding: generation) }
            case .failure(.cancelled)?, nil: state = .idle  // cancelled, or stopped by store, remove or removeAll
            case .failure(let error)?: show(binding?.failureImage ?? binding?.placeholder, .failed(error))
            }
            switch result {
            case .failure(.cancelled)?, nil: break  // stopped: not an end the view hears of
            case let result?: _ = completed(generation, result)
            }
        }

        /// Tells the view that the binding `generation` ended in `result` (shown), unless the target,
        /// told of it, bound again meanwhile. Returns nil: no request.
        private func completed(_ generation: Int, _ result: Result<Fetched<Image>, Error>) -> FetchTask? {
            if generation == self.generation { hooks.completion?(result) }
            return nil
        }

        /// A progress of the binding `generation`'s download: told to the view if it is still the
        /// latest and ``DownloadProgress/tells(_:after:)`` says so.
        private func progressed(_ generation: Int, _ progress: DownloadProgress) {
            guard generation == self.generation, task != nil,
                  DownloadProgress.tells(progress, after: self.progress) else { return }
            tell(progress)
        }

        /// A preview of the binding `generation`'s download: shown if it is still the latest and
        /// ``ImageCache/showsPreview(scans:shown:state:replaces:)`` says so; the state stays `loading`.
        private func previewed(_ generation: Int, _ preview: Preview) {
            guard generation == self.generation, task != nil,
                  ImageCache.showsPreview(scans: preview.scans, shown: previewScans, state: state, replaces: replaces)
            else { return }
            previewScans = preview.scans
            show(preview.image, .loading)
        }

        /// Sets ``progress`` and tells the view, if that changes it.
        private func tell(_ progress: DownloadProgress?) {
            guard progress != self.progress else { return }
            self.progress = progress
            hooks.progress?(progress)
        }

        private func purged(_ cache: ImageCache) {
            if binding?.cache === cache { animation.purge() }
            guard case .image = state, binding?.cache === cache, let target else { return }
            guard !ImageCache.onTargetActor(target, { $0.isDisplayed }) else { return }
            show(binding?.placeholder, .placeholder)
        }

        /// A list's prefetcher let the row go (see ``ListPrefetcher``): a target not displayed lets
        /// its image go until it is bound again, as on a memory warning, and a load still under way
        /// (lowered) stops: it would come to no view. Returns whether an image was let go.
        internal func letGo(of cache: ImageCache) -> Bool {
            dispatchPrecondition(condition: .onQueue(queue))
            guard binding?.cache === cache, let target, !ImageCache.onTargetActor(target, { $0.isDisplayed }) else {
                return false
            }
            if case .loading = state { cancel() }
            guard case .image = state else { return false }
            purged(cache)
            return true
        }

        /// The pixels of the image the target shows if the binder showed it as an image of `key`'s
        /// (another size or variant of it, or its original); else nil.
        private func shownPixels(of key: Key) -> (width: Int, height: Int)? {
            guard let target, shownKey?.string == key.string else { return nil }
            return ImageCache.onTargetActor(target) { $0.image.map(ImageCache.Sizing.pixelSize(of:)) }
        }

        /// Tells the target to show `image`, the entry of `key` (nil: the placeholder or failure
        /// image), unless it shows it already: the image of the same entry that the binder showed
        /// last, still the target's (see ``ImageCache/showsAlready(_:_:transition:)``).
        internal func show(_ image: Image?, _ state: State, transition: Transition = .none, key: Key? = nil) {
            self.state = state
            let again = key != nil && key == shownKey
            if again && animation.plays(key) { return }  // the animation it plays goes on (a reload of a cell)
            shownKey = key
            let image = animated(image, state, key: key)  // ViewAnimation.swift
            guard let target else { return }
            ImageCache.onTargetActor((target, image)) { pair in
                guard !(again && ImageCache.showsAlready(pair.0.image, pair.1, transition: transition)) else { return }
                pair.0.show(pair.1, transition: transition)
            }
        }

        /// Tells the target to show `frame`, the next frame of the animation it plays
        /// (ViewAnimation.swift): at once, its state unchanged, ``showsFrame`` true meanwhile.
        internal func showFrame(_ frame: Image) {
            guard let target else { return }
            showsFrame = true
            defer { showsFrame = false }
            ImageCache.onTargetActor((target, frame)) { pair in pair.0.show(pair.1, transition: .none) }
        }
    }

    internal static let memoryPurged = Notification.Name("ImageCache.memoryPurged")

    #if canImport(UIKit) || canImport(AppKit)
    /// Runs `body` on the main actor, where targets are isolated; a binder runs on the main queue.
    internal static func onTargetActor<Value, Result: Sendable>(_ value: Value,
                                                               _ body: @MainActor (Value) -> Result) -> Result {
        let value = Unchecked(value)
        return MainActor.assumeIsolated { body(value.value) }
    }
    #else
    internal static func onTargetActor<Value, Result>(_ value: Value, _ body: (Value) -> Result) -> Result {
        body(value)
    }
    #endif

    /// A target size in whole pixels; nil for none, or one that is empty or absurd.
    internal static func pixels(_ size: CGSize?) -> (width: Int, height: Int)? {
        guard let size, (1...100_000).contains(size.width), (1...100_000).contains(size.height) else { return nil }
        return (Int(size.width.rounded(.up)), Int(size.height.rounded(.up)))
    }

    /// `key` at `size` (a size from `pixels`) for a screen of `scale` (from `displayScale`): memory
    /// keeps an entry per size and scale, since an image's `size` is in its screen's points, and per
    /// `animation` decode (a view's first frame beside `fetch`'s every frame); the disk keeps one
    /// file, the key's.
    internal static func memoryKey(_ key: String, filling size: (width: Int, height: Int)?,
                                      scale: Double = 1, processors: String = "",
                                      animation: AnimationDecode = .everyFrame) -> Key {
        guard let size else { return Key(string: key, processors: processors, animation: animation) }
        let hundredths = scale == 1 ? 0 : UInt64((scale * 100).rounded())  // 0 for 1x; 16x is 1,600
        return Key(string: key, size: hundredths << 48 | UInt64(size.width) << 24 | UInt64(size.height),
                   processors: processors, animation: animation)
    }

    /// Whether showing `image` with `transition` where a target shows `shown` changes nothing on
    /// screen: it is the image shown (the same object where images are objects, the same bytes on
    /// Linux), with no transition. Then the target is not told: a reload of a cell showing an
    /// animation would restart it (a view stops its animations before it sets an image).
    internal static func showsAlready(_ shown: Image?, _ image: Image?, transition: Transition) -> Bool {
        transition == .none && shown != nil && same(shown, image)
    }

    /// Whether `a` and `b` are the same image: the same object where images are objects, the same
    /// bytes on Linux; two nils are.
    internal static func same(_ a: Image?, _ b: Image?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        #if canImport(UIKit) || canImport(AppKit)
        return a === b
        #else
        return a == b
        #endif
    }
}
