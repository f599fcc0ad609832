// A client app's code on iOS, compiled by .ci/typecheck-apple against the UIKit shims in every mode
// an app may use: Swift 6 and Swift 5, default isolation nonisolated and MainActor, with ImageCache
// as a package (`import ImageCache`) and copied in (one module), warnings as errors.
#if canImport(ImageCache)
import ImageCache
#endif
import UIKit

// The class's own example (the card's usage): a callback that sets a cell's image.
final class PhotosViewController: UITableViewController {
    var urls: [URL] = []
    let placeholder = UIImage()

    override func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
        let cell = tableView.dequeueReusableCell(withIdentifier: "cell", for: indexPath)
        let url = urls[indexPath.row]
        cell.imageView?.image = ImageCache.shared.peek(url) ?? placeholder
        ImageCache.shared.fetch(url) { url, image in
            cell.imageView?.image = image
            cell.textLabel?.text = url.lastPathComponent
        }
        return cell
    }
}

// An app's own view as a binder's target.
final class AvatarView: UIView, ImageCache.ImageTarget {
    var image: UIImage?
    var isDisplayed: Bool { window != nil }
    private lazy var binder = ImageCache.Binder(self)

    func load(_ url: URL) {
        binder.bind(url, placeholder: UIImage(), transition: .fade(0.2))
    }

    func show(_ image: UIImage?, transition: ImageCache.Transition) {
        self.image = image
    }
}

// A subclass of UIImageView with members of its own named as a binder's target's are.
final class PhotoView: UIImageView {
    var isDisplayed = false
    func show(_ image: UIImage?, transition: Bool) { self.image = image }
    func cancelImageLoad() {}

    func load(_ url: URL) {
        setImage(with: url, placeholder: UIImage(), transition: .fade(0.25))
        if case .failed(let error) = imageBinder.state { print(error) }
        imageBinder.cancel()
    }
}

// Every other callback of the API updates UI state directly. `decode` runs off the main actor, so
// in a target whose default isolation is the main actor the decoded type says `nonisolated`.
nonisolated struct Feed: Decodable, Sendable {
    let titles: [String]
}

final class FeedController: UIViewController {
    let status = UILabel()
    var feed: Feed?

    func load(_ url: URL, _ feedURL: URL) {
        ImageCache.shared.slowFetch(url) { _, image in self.status.text = image == nil ? "failed" : "ready" }
        ImageCache.shared.fetch(url, onProgress: { received, expected in
            self.status.text = "\(received) of \(expected ?? 0)"
        }, onRetry: { error, attempt in
            self.status.text = "attempt \(attempt): \(error)"
        }, completion: { result in
            if case .success(let fetched) = result { self.status.text = "\(fetched.value.size) from \(fetched.source)" }
        })
        ImageCache.shared.fetch(feedURL, decode: { try JSONDecoder().decode(Feed.self, from: $0) }) { result in
            self.feed = try? result.get().value
        }
        ImageCache.shared.statistics { statistics in self.status.text = "\(statistics.diskFiles) files" }
        ImageCache.shared.removeAll { self.status.text = "emptied" }
        Task {
            let image = try? await ImageCache.shared.image(for: url)
            self.status.text = image == nil ? "failed" : "ready"
        }
    }
}

// SwiftUI: AsyncImage's shape, sizes in points, any view as placeholder, and the phase form.
import SwiftUI
#if canImport(FoundationNetworking)
import FoundationNetworking  // URLRequest, on Linux where this is checked
#endif

@available(iOS 14.0, *)
struct AvatarRow: View {
    let url: URL
    var body: some View {
        ImageCache.AsyncImage(url: url, size: CGSize(width: 44, height: 44),
                              transaction: Transaction(animation: .easeIn(duration: 0.25))) { image in
            image.resizable()
        } placeholder: {
            ZStack { SwiftUI.Image(uiImage: UIImage()) }
        }
    }
}

@available(iOS 14.0, *)
struct Banner: View {
    let request: URLRequest
    var body: some View {
        ImageCache.AsyncImage(request: request, key: "banner") { phase in
            (phase.image ?? SwiftUI.Image(uiImage: UIImage())).resizable()
        }
    }
}

// One description of a load: a size and processors, in a view, a binder's image view, a fetch and
// a peek (issue 39).
@available(iOS 14.0, *)
struct RoundAvatar: View {
    let url: URL
    var body: some View {
        let request = ImageCache.Request(url: url, size: CGSize(width: 40, height: 40),
                                         processors: [.resize(toFill: CGSize(width: 40, height: 40)), .circle])
        ImageCache.AsyncImage(request: request) { image in
            image.resizable()
        } placeholder: {
            Color.gray
        }
    }
}

// SwiftUI as its users write it (issue 40): the download's progress beside the phase, a completion
// that logs where the image came from, and a row that keeps loading when scrolled away.
@available(iOS 14.0, *)
struct PhotoRow: View {
    let url: URL
    var body: some View {
        ImageCache.AsyncImage(request: ImageCache.Request(url: url, size: CGSize(width: 80, height: 80))) { state in
            if let image = state.image {
                image.resizable()
            } else {
                ProgressView(value: state.progress?.fraction ?? 0)
            }
        }
        .onCompletion { result in
            switch result {
            case .success(let fetched): print("from \(fetched.source), \(fetched.value.size)")
            case .failure(let error): print("failed: \(error)")
            }
        }
        .onDisappear(.lowerPriority)
    }
}

@available(iOS 14.0, *)
struct PlainRow: View {
    let url: URL
    var body: some View {
        // The phase form, chosen for a closure that reads only what the phase has.
        ImageCache.AsyncImage(request: ImageCache.Request(url: url)) { phase in
            if let image = phase.image { image.resizable() } else { Color.gray }
        }
        .onDisappear(.cancel)
    }
}

@MainActor
func showBackdrop(_ url: URL, in imageView: UIImageView) {
    let backdrop = ImageCache.Request(url: url, processors: [.blur(radius: 8), .roundedCorners(radius: 12),
                                                             .crop(to: CGRect(x: 0, y: 0, width: 100, height: 50)),
                                                             .resize(toFit: CGSize(width: 300, height: 300))])
    if let image = ImageCache.shared.peek(backdrop) {
        imageView.image = image
    } else {
        imageView.setImage(with: backdrop, transition: .fade(0.2))
    }
    let custom = ImageCache.Processor("identity") { image in image }
    ImageCache.shared.fetch(ImageCache.Request(url: url, processors: [custom])) { result in
        if case .success(let fetched) = result { imageView.image = fetched.value }
    }
}

// 1.0's forms with an implicit member still mean what they meant (a `URLRequest`), though
// `ImageCache.Request` has an `init(url:)` too.
@available(iOS 14.0, *)
struct LegacyImplicitRequest: View {
    let url: URL
    var body: some View {
        ImageCache.AsyncImage(request: .init(url: url)) { phase in
            (phase.image ?? SwiftUI.Image(uiImage: UIImage())).resizable()
        }
    }
}

@MainActor
func legacyImplicitFetch(_ url: URL, into imageView: UIImageView) {
    ImageCache.shared.fetch(.init(url: url)) { result in
        if case .success(let fetched) = result { imageView.image = fetched.value }
    }
    imageView.setImage(with: .init(url: url))
}
