// Views: a UIKit or AppKit view bound to its bounds decodes again when they change enough after it
// was laid out (a rotation, Split View, a window resized), as the SwiftUI views do on a new size.
// The decision (`rebindsAfterResize`) and the binder's step (`boundsChanged`) are shared, where the
// Linux tests reach them; the signal is key-value observation of the view's layer's bounds (UIKit)
// or of its frame (AppKit), which works for any image view the binder binds.

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
    /// How much larger a side of a view must grow, as a fraction of the size its image was decoded
    /// for, before it decodes again after a resize: below it, the image is at most this much softer,
    /// which no one sees, and a live resize (a window dragged, Stage Manager) does not decode at
    /// every step.
    internal static let resizeGrowth = 0.1

    /// Whether a view bound to its bounds, its binding made for `bound` (its size in pixels, nil for
    /// the whole image, and its display scale), binds again now that its bounds changed to `now`
    /// after it was laid out: when ``ImageCache/Rebinding/rebinds(bound:now:decodeBound:)`` says so and, for a binding
    /// already made at a size on this scale, a side grew by more than ``resizeGrowth`` of it
    /// (blurry), or both sides shrank to half or less (four times the memory it needs). A first
    /// layout (no size yet), another scale or bounds now empty are as `rebinds` says.
    internal static func rebindsAfterResize(bound: (size: (width: Int, height: Int)?, scale: Double),
                                            now: (size: (width: Int, height: Int)?, scale: Double),
                                            decodeBound: Int) -> Bool {
        guard Rebinding.rebinds(bound: bound, now: now, decodeBound: decodeBound) else { return false }
        guard let was = bound.size, let size = now.size, bound.scale == now.scale else { return true }
        let limit = 1 + resizeGrowth
        let grew = Double(size.width) > Double(was.width) * limit || Double(size.height) > Double(was.height) * limit
        let oversized = was.width / 2 >= size.width && was.height / 2 >= size.height
        return grew || oversized
    }
}

nonisolated extension ImageCache.Binder {
    /// Its target's bounds changed (a rotation, Split View, a window resized): a binding made to
    /// the bounds (``ViewHooks/sizeNow`` set: not a size given) binds again at their size now, if
    /// ``ImageCache/rebindsAfterResize(bound:now:decodeBound:)`` says so, keeping what the target
    /// shows until the new decode comes. Any other binding is left alone.
    internal func boundsChanged() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let now = hooks.sizeNow?() else { return }
        resized(to: now.pixels, scale: now.scale, binding: generation, afterResize: true)
    }
}

#if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
extension ImageCache.ImageView {
    /// Observes the view's bounds, once per view, for as long as it lives: each change tells its
    /// binder on the main queue's next turn (after the layout pass that made it; several in one
    /// pass are looked at each, and all but a real change decide nothing).
    internal func watchBounds() {
        guard objc_getAssociatedObject(self, Self.boundsKey) == nil else { return }
        let changed: @Sendable (ImageCache.ImageView) -> Void = { view in
            DispatchQueue.main.async { MainActor.assumeIsolated { view.imageBinder.boundsChanged() } }
        }
        #if canImport(UIKit)
        // The layer's, which UIKit sets on every layout (a view's own `bounds` is not documented as
        // observable); its handler is told on the thread that set them, the main one.
        let observation = layer.observe(\.bounds, options: [.new]) { [weak self] _, _ in self.map(changed) }
        #else
        let observation = observe(\.frame, options: [.new]) { [weak self] _, _ in self.map(changed) }
        #endif
        objc_setAssociatedObject(self, Self.boundsKey, observation, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
    }

    private static let boundsKey = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))
}
#endif
