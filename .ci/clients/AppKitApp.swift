// A client app's code on macOS (deployment target 10.15: NSImage is not Sendable), compiled by
// .ci/typecheck-apple against the AppKit shims in every mode an app may use: Swift 6 and Swift 5,
// default isolation nonisolated and MainActor, with ImageCache as a package and copied in,
// warnings as errors.
#if canImport(ImageCache)
import ImageCache
#endif
import AppKit

// The class's own example (the card's usage), with an NSImageView.
final class PhotoCell: NSView {
    let photo = NSImageView(frame: .zero)
    var title = ""

    func show(_ url: URL) {
        photo.image = ImageCache.shared.peek(url)
        ImageCache.shared.fetch(url) { url, image in
            self.photo.image = image
            self.title = url.lastPathComponent
        }
    }
}

// An app's own view as a binder's target.
final class AvatarView: NSView, ImageCache.ImageTarget {
    var image: NSImage?
    var isDisplayed: Bool { window != nil }
    private lazy var binder = ImageCache.Binder(self)

    func load(_ url: URL) {
        binder.bind(url, placeholder: NSImage(), transition: .fade(0.2))
    }
}

// A subclass of NSImageView with members of its own named as a binder's target's are.
final class PhotoView: NSImageView {
    var isDisplayed = false
    func show(_ image: NSImage?, transition: Bool) { self.image = image }

    func load(_ url: URL) {
        setImage(with: url, transition: .fade(0.25))
        imageBinder.cancel()
    }
}

// Every other callback of the API updates UI state directly.
@MainActor final class Status {
    var text = ""
    var image: NSImage?

    func load(_ url: URL) {
        ImageCache.shared.fetch(url, onProgress: { received, _ in self.text = "\(received)" },
                                completion: { result in
            self.image = try? result.get().value
        })
        ImageCache.shared.persistCacheToDisk { self.text = "saved" }
        ImageCache.shared.statistics { self.text = "\($0.memoryCount) in memory" }
    }
}

// SwiftUI: AsyncImage's shape, sizes in points, the phase form and a custom cache.
import SwiftUI

@available(macOS 11.0, *)
struct Thumbnail: View {
    let url: URL
    let cache: ImageCache
    var body: some View {
        ImageCache.AsyncImage(url: url, size: CGSize(width: 128, height: 96), cache: cache) { phase in
            switch phase {
            case .success(let image): image.resizable()
            case .empty, .failure: SwiftUI.Image(nsImage: NSImage()).resizable()
            }
        }
    }
}

// One description of a load, with processors (issue 39).
@available(macOS 11.0, *)
struct RoundThumbnail: View {
    let url: URL
    var body: some View {
        ImageCache.RemoteImage(ImageCache.Request(url: url, size: CGSize(width: 64, height: 64),
                                                  processors: [.resize(toFill: CGSize(width: 64, height: 64)), .circle]))
    }
}

// A completion hook and the disappear policy on RemoteImage; the state form's flags (issue 40).
@available(macOS 11.0, *)
struct LoggedThumbnail: View {
    let url: URL
    var body: some View {
        ImageCache.RemoteImage(ImageCache.Request(url: url))
            .onCompletion { result in
                if case .failure(let error) = result { print("thumbnail failed: \(error)") }
            }
            .onDisappear(.lowerPriority)
    }
}

@available(macOS 11.0, *)
struct LoadingThumbnail: View {
    let url: URL
    var body: some View {
        ImageCache.AsyncImage(request: ImageCache.Request(url: url)) { state in
            if state.isLoading || state.error != nil {
                ProgressView(value: state.progress?.fraction)
            } else {
                (state.image ?? SwiftUI.Image(nsImage: NSImage())).resizable()
            }
        }
    }
}

@MainActor
func showRounded(_ url: URL, in imageView: NSImageView) {
    imageView.setImage(with: ImageCache.Request(url: url, processors: [.roundedCorners(radius: 6)]))
}
