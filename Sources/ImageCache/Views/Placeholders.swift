// Placeholders: a request's BlurHash decoded (BlurHash.swift) off the binder's queue, cached, and
// shown by its binder in place of the placeholder until the image comes.

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

nonisolated extension ImageCache {
    /// The images of decoded BlurHashes, shared by every binder of the process: a hash is decoded
    /// once per size, on a queue of its own (never a binder's, so never the main thread), and kept
    /// while it is among the last ``capacity`` decoded (a hash that does not parse is kept too, as
    /// its reason, so it is parsed once).
    ///
    /// **Thread safety.** Every method may be called from any thread; `cached` takes one lock.
    internal final class Placeholders: @unchecked Sendable {
        static let shared = Placeholders()
        /// How many decodes are kept: a screen's worth of rows, 32 x 32 pixels each (a few KiB).
        static let capacity = 256

        typealias Outcome = Result<Unchecked<Image>, BlurHash.Malformed>
        private let lock = NSLock()
        private var outcomes: [String: Outcome] = [:]  // by `name(hash, size)`
        private var order: [String] = []  // oldest first
        private let queue = DispatchQueue(label: "ImageCache.placeholders", qos: .userInitiated)
        /// DecodeWorkers made, for the tests.
        private(set) var decodes = 0

        /// The outcome of `hash` at `size` if it was decoded; never waits.
        func cached(_ hash: String, _ size: (width: Int, height: Int)) -> Outcome? {
            lock.withLock { outcomes[Self.name(hash, size)] }
        }

        /// DecodeWorkers `hash` at `size` on the placeholders' queue (or finds it decoded), keeps the
        /// outcome, and hands it to `done` there.
        func decode(_ hash: String, _ size: (width: Int, height: Int), done: @escaping @Sendable (Outcome) -> Void) {
            queue.async {
                if let outcome = self.cached(hash, size) { return done(outcome) }
                let outcome = Self.image(hash, size)
                self.lock.withLock {
                    self.decodes += 1
                    let name = Self.name(hash, size)
                    if self.outcomes.updateValue(outcome, forKey: name) == nil { self.order.append(name) }
                    if self.order.count > Self.capacity { self.outcomes[self.order.removeFirst()] = nil }
                }
                done(outcome)
            }
        }

        /// `hash` decoded to `size`, as an image of the platform (a PNG of the pixels on Linux).
        static func image(_ hash: String, _ size: (width: Int, height: Int)) -> Outcome {
            BlurHash.parse(hash).flatMap { blurHash in
                let decoded = blurHash.pixels(width: size.width, height: size.height)
                let png = ImageCache.PNGWriter.png(decoded.rgb, channels: 3, width: decoded.width, height: decoded.height)
                guard let image = Image(data: png) else { return .failure(BlurHash.Malformed(reason: "no image of its pixels")) }
                return .success(Unchecked(image))
            }
        }

        private static func name(_ hash: String, _ size: (width: Int, height: Int)) -> String {
            "\(size.width)x\(size.height) \(hash)"
        }
    }
}

nonisolated extension ImageCache.Binder {
    /// Shows `load`'s BlurHash, if it has one, in place of the placeholder while the binding
    /// `generation` loads: at once if it was decoded at this aspect already, else when its decode
    /// (off this queue) is done, if the binding is still the latest and still loading, so it never
    /// replaces the image or another binding's placeholder. One that does not parse is ignored, and
    /// `cache.onNotice` hears of it.
    internal func showBlurHash(of load: ImageCache.Load, size: (width: Int, height: Int)?, cache: ImageCache,
                               binding generation: Int) {
        guard let hash = load.blurHash else { return }
        let pixels = ImageCache.BlurHash.decodeSize(aspect: size.map { Double($0.width) / Double($0.height) })
        let url = load.url
        let shown: @Sendable (ImageCache.Placeholders.Outcome) -> Void = { [weak self] outcome in
            guard let self, generation == self.generation, case .loading = self.state else { return }
            switch outcome {
            case .success(let image): self.show(image.value, .loading)
            case .failure(let malformed):
                cache.notify(ImageCache.Notice(.placeholderIgnored, url: url, detail: malformed.description))
            }
        }
        if let outcome = ImageCache.Placeholders.shared.cached(hash, pixels) { return shown(outcome) }
        let queue = self.queue
        ImageCache.Placeholders.shared.decode(hash, pixels) { outcome in queue.async { shown(outcome) } }
    }
}
