// The iOS sample: a table of remote images that uses ImageCache the way README shows. Copy it
// into an app that has ImageCache (as a Swift package, or with ImageCache.swift copied in) and
// show it with `FeedViewController(urls: yourImageURLs)`.
//
// - cellForRowAt: `peek` first (memory only, never waits); on a miss show a placeholder, or the
//   broken image if the last fetch failed, and `fetch`; the callback reloads the row.
// - prefetchRowsAt: `slowFetch`, which waits while the rows on screen download.
// - cancelPrefetchingForRowsAt: rows that may still come back go to the slow lane
//   (`moveToSlowQueue`); rows far from the screen are cancelled.
#if canImport(UIKit)
import UIKit
#if canImport(ImageCache)
import ImageCache  // as a Swift package; with ImageCache.swift copied into the app there is nothing to import
#endif

final class FeedViewController: UITableViewController, UITableViewDataSourcePrefetching {
    private let urls: [URL]
    private let placeholder = UIImage(systemName: "photo")
    private let brokenImage = UIImage(systemName: "exclamationmark.triangle")
    /// Requests made for rows, so that rows far from the screen can be cancelled.
    private var fetches: [IndexPath: ImageCache.FetchTask] = [:]
    private var prefetches: [IndexPath: ImageCache.FetchTask] = [:]
    /// Rows further than this from the screen have their requests cancelled.
    private let cancelDistance = 30

    init(urls: [URL]) {
        self.urls = urls
        super.init(style: .plain)
    }

    required init?(coder: NSCoder) {
        fatalError("FeedViewController is made in code")
    }

    override func viewDidLoad() {
        super.viewDidLoad()
        tableView.register(UITableViewCell.self, forCellReuseIdentifier: "cell")
        tableView.prefetchDataSource = self
        tableView.rowHeight = 88
    }

    override func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
        urls.count
    }

    override func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
        let cell = tableView.dequeueReusableCell(withIdentifier: "cell", for: indexPath)
        let url = urls[indexPath.row]
        cell.textLabel?.text = url.lastPathComponent
        if let image = ImageCache.shared.peek(url) {
            cell.imageView?.image = image
        } else {
            if let error = ImageCache.shared.error(for: url) {
                cell.imageView?.image = brokenImage
                cell.textLabel?.text = "\(url.lastPathComponent): \(error)"
            } else {
                cell.imageView?.image = placeholder
            }
            let previous = fetches[indexPath]
            fetches[indexPath] = ImageCache.shared.fetch(url) { [weak self] _, image in
                // Callbacks are @Sendable; this one runs on the main queue (the default callbackQueue).
                MainActor.assumeIsolated {
                    self?.fetches[indexPath] = nil
                    guard image != nil else { return }
                    self?.tableView.reloadRows(at: [indexPath], with: .none)
                }
            }
            previous?.cancel()  // after the new fetch, which shares the same download
        }
        return cell
    }

    func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath]) {
        for indexPath in indexPaths where prefetches[indexPath] == nil {
            prefetches[indexPath] = ImageCache.shared.slowFetch(urls[indexPath.row]) { [weak self] _, _ in
                MainActor.assumeIsolated { self?.prefetches[indexPath] = nil }
            }
        }
    }

    func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {
        let visible = tableView.indexPathsForVisibleRows?.map(\.row) ?? []
        for indexPath in indexPaths {
            let distance = visible.map { abs($0 - indexPath.row) }.min() ?? .max
            if distance > cancelDistance {
                fetches.removeValue(forKey: indexPath)?.cancel()
                prefetches.removeValue(forKey: indexPath)?.cancel()
            } else {
                ImageCache.shared.moveToSlowQueue(urls[indexPath.row])
            }
        }
    }

    override func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        // Scrolled off screen while its image was still coming: let the rows on screen go first.
        if fetches[indexPath] != nil { ImageCache.shared.moveToSlowQueue(urls[indexPath.row]) }
    }
}
#endif
