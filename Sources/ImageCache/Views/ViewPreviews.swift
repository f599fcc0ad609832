// What a view shows of a download's previews (Pipeline/Previews.swift): the decision, shared code
// that the Linux tests reach through the binder. A preview shows only while the binding's own load
// is under way with the placeholder (or an earlier preview) in the target, each with more scans than
// the last; never over an image (a stand-in, the same image at another size, the final image).

import Foundation

nonisolated extension ImageCache {
    /// Whether a binder in `state` shows a preview of `scans` complete scans, having shown one of
    /// `shown` scans for this binding (0: none), while its load `replaces` an image the target
    /// keeps (a stand-in, a new size of the image shown): only while it loads, over the placeholder
    /// or a blurrier preview, never over an image and never after the final one (the state is then
    /// `image`, `failed` or `idle`).
    internal static func showsPreview(scans: Int, shown: Int, state: Binder.State, replaces: Bool) -> Bool {
        guard case .loading = state, !replaces else { return false }
        return scans > shown
    }
}
