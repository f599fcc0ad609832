// The iOS sample: a table of remote images that uses ImageCache the way README shows. Copy it
// into an app that has ImageCache (as a Swift package, or with ImageCache.swift copied in) and
// show it with `FeedViewController(urls: yourImageURLs)`.
//
// - init(urls:animatedGIF:): the animated GIF, if given, is the first row, and animates in its cell:
//   every frame is decoded at the cell's size. A GIF of more than `maxAnimatedFrames` frames (200), or
//   whose frames would cost more than a quarter of `imageMemoryMaxBytes`, shows its first frame.
// - cellForRowAt: `setImage(with:)` on the cell's image view. Its binder never shows the wrong image
//   in a reused cell (the new binding replaces the old request), sets an image that is in memory at
//   once (no placeholder flash), shows the broken image if the image cannot be had, and decodes
//   off the main thread to fill the image view (80 points square: its bounds).
// - didSelectRowAt: a row whose image failed says why (the binder's state).
// - prefetchRowsAt: `slowFetch`, which waits while the rows on screen download, and leaves the file
//   on disk for the row to decode at its size.
// - cancelPrefetchingForRowsAt: rows that may still come back go to the slow lane
//   (`moveToSlowQueue`); rows far from the screen are cancelled.
// - didEndDisplaying: a row that scrolled away stops loading (`imageBinder.cancel()`).
#if canImport(UIKit)
import UIKit
#if canImport(ImageCache)
import ImageCache  // as a Swift package; with ImageCache.swift copied into the app there is nothing to import
#endif

final class FeedViewController: UITableViewController, UITableViewDataSourcePrefetching {
    private let urls: [URL]
    private let placeholder = UIImage(systemName: "photo")
    private let brokenImage = UIImage(systemName: "exclamationmark.triangle")
    private var prefetches: [IndexPath: ImageCache.FetchTask] = [:]
    /// Rows further than this from the screen have their prefetches cancelled.
    private let cancelDistance = 30

    init(urls: [URL], animatedGIF: URL? = nil) {
        self.urls = (animatedGIF.map { [$0] } ?? []) + urls
        super.init(style: .plain)
    }

    required init?(coder: NSCoder) {
        fatalError("FeedViewController is made in code")
    }

    override func viewDidLoad() {
        super.viewDidLoad()
        tableView.register(PhotoCell.self, forCellReuseIdentifier: "cell")
        tableView.prefetchDataSource = self
        tableView.rowHeight = 88
    }

    override func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
        urls.count
    }

    override func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
        let cell = tableView.dequeueReusableCell(withIdentifier: "cell", for: indexPath) as! PhotoCell
        let url = urls[indexPath.row]
        cell.textLabel?.text = url.lastPathComponent
        cell.photo.setImage(with: url, placeholder: placeholder, failureImage: brokenImage, transition: .fade(0.25))
        return cell
    }

    override func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath) {
        tableView.deselectRow(at: indexPath, animated: true)
        guard let cell = tableView.cellForRow(at: indexPath) as? PhotoCell,
              case .failed(let error) = cell.photo.imageBinder.state else { return }
        cell.textLabel?.text = "\(urls[indexPath.row].lastPathComponent): \(error)"
    }

    override func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        // Scrolled off screen while its image was still coming: let the rows on screen go first.
        (cell as? PhotoCell)?.photo.imageBinder.cancel()
    }

    func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath]) {
        for indexPath in indexPaths where prefetches[indexPath] == nil {
            prefetches[indexPath] = ImageCache.shared.slowFetch(urls[indexPath.row]) { [weak self] _, _ in
                self?.prefetches[indexPath] = nil  // callbacks run on the main actor
            }
        }
    }

    func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {
        let visible = tableView.indexPathsForVisibleRows?.map(\.row) ?? []
        for indexPath in indexPaths {
            let distance = visible.map { abs($0 - indexPath.row) }.min() ?? .max
            if distance > cancelDistance {
                prefetches.removeValue(forKey: indexPath)?.cancel()
            } else {
                ImageCache.shared.moveToSlowQueue(urls[indexPath.row])
            }
        }
    }
}

/// A row with an 80-point square photo (its frame is set at once, so that `setImage` knows the size
/// to decode at from the first binding) and the text beside it.
final class PhotoCell: UITableViewCell {
    let photo = UIImageView(frame: CGRect(x: 4, y: 4, width: 80, height: 80))

    override init(style: UITableViewCell.CellStyle, reuseIdentifier: String?) {
        super.init(style: style, reuseIdentifier: reuseIdentifier)
        photo.contentMode = .scaleAspectFill
        photo.clipsToBounds = true
        contentView.addSubview(photo)
    }

    required init?(coder: NSCoder) {
        fatalError("PhotoCell is made in code")
    }

    override func prepareForReuse() {
        super.prepareForReuse()
        photo.setImage(with: nil)  // nothing while the cell waits to be bound again
    }

    override func layoutSubviews() {
        super.layoutSubviews()
        let bounds = contentView.bounds
        textLabel?.frame = CGRect(x: 96, y: 0, width: max(0, bounds.width - 104), height: bounds.height)
    }
}
#endif
