import Foundation
import ImageCache

/// The live screen: the feed's rows around the simulated phone screen, each with its state and
/// where its image came from, then a progress bar and the cache's numbers. Drawn in the terminal's
/// alternate screen, which `leave()` gives back as it was. Used only on the feed's queue.
final class Screen: @unchecked Sendable {
    private let color: Bool
    private let unicode: Bool
    private var active = false

    init() {
        let environment = ProcessInfo.processInfo.environment
        color = environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        let locale = environment["LC_ALL"] ?? environment["LC_CTYPE"] ?? environment["LANG"] ?? ""
        unicode = locale.uppercased().contains("UTF-8") || locale.uppercased().contains("UTF8")
    }

    /// Switches to the alternate screen and hides the cursor.
    func enter() {
        active = true
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")
    }

    /// Shows the cursor and returns to the normal screen, as it was before `enter()`.
    func leave() {
        guard active else { return }
        active = false
        write("\u{1B}[?25h\u{1B}[?1049l")
    }

    func draw(_ feed: Feed) {
        guard active else { return }
        let (width, height) = Self.terminalSize()
        var lines: [Line] = []

        var title = Line()
        let text = " ImageCache feed\(dot)\(feed.rows.count) rows\(dot)\(feed.settings.source)"
        // Reverse video to the right edge; a longer title is cut by `render`, with an ellipsis.
        title.add(text.count >= width ? text : text.padding(toLength: max(0, width), withPad: " ", startingAt: 0), "7")
        lines.append(title)
        var heading = Line()
        heading.add("     row  " + pad("image", nameWidth(width)) + "  from      details", "2")
        lines.append(heading)

        let footer = footerLines(feed, width: width)
        for index in shownRows(feed, count: height - lines.count - footer.count) {
            lines.append(rowLine(feed, index, width: width))
        }
        while lines.count < height - footer.count { lines.append(Line()) }
        lines += footer

        // Home, then each line followed by "erase to end of line", then "erase below": no flicker.
        let rendered = lines.prefix(height).map { $0.render(width: width, color: color, ellipsis: unicode ? "…" : "~") }
        write("\u{1B}[H" + rendered.joined(separator: "\u{1B}[K\r\n") + "\u{1B}[K\u{1B}[J")
    }

    // MARK: Rows

    /// The rows on the phone screen with some on either side, more on the side it scrolls to.
    private func shownRows(_ feed: Feed, count: Int) -> Range<Int> {
        guard count > 0, !feed.rows.isEmpty else { return 0..<0 }
        let extra = max(0, count - feed.visible.count)
        let ahead = feed.goingDown ? (extra * 3 + 1) / 5 : extra * 2 / 5
        var first = max(0, feed.visible.lowerBound - (extra - ahead))
        first = min(first, max(0, feed.rows.count - count))
        return first..<min(feed.rows.count, first + count)
    }

    private var dot: String { unicode ? " · " : " - " }

    private func nameWidth(_ width: Int) -> Int {
        width >= 120 ? 36 : 21
    }

    private func rowLine(_ feed: Feed, _ index: Int, width: Int) -> Line {
        let row = feed.rows[index]
        var line = Line()
        let onScreen = feed.visible.contains(index)
        line.add(onScreen ? (unicode ? " ┃" : " |") : "  ", "1")
        line.add(String(format: "%6d", index), onScreen ? "1" : "2")
        line.add("  " + pad(row.name, nameWidth(width)) + "  ")
        switch row.state {
        case .blank:
            line.add(pad("-", 8) + "  not asked for yet", "2")
        case .prefetching:
            line.add(pad("waiting", 8), "2")
            line.add("  prefetch on the slow lane", "2")
        case .loading:
            line.add(pad("loading", 8), "1")
            line.add("  fetch on the fast lane " + spinner(), "2")
        case .retrying(let error, let attempt):
            line.add(pad("retrying", 8), "33")
            line.add("  attempt \(attempt): \(error)", "2")
        case .scrolledAway:
            line.add(pad("waiting", 8), "2")
            line.add("  scrolled away: moved to the slow lane", "2")
        case .cancelled:
            line.add(pad("-", 8), "2")
            line.add("  cancelled: far off screen", "2")
        case .image(let source, let description, let prefetched):
            line.add(pad(source.rawValue, 8), Self.style(of: source))
            line.add("  " + description + (prefetched ? "  (prefetch)" : ""))
        case .failed(let error):
            line.add(pad("failed", 8), "31")
            line.add("  \(error)" + (error.isFatal ? "" : " (tried again when shown)"), "31")
        case .released:
            line.add(pad("released", 8), "35")
            line.add("  memory warning: let go off screen, back from disk when shown", "2")
        }
        return line
    }

    private static func style(of source: ImageCache.Source) -> String {
        switch source {
        case .memory: return "32"
        case .disk: return "36"
        case .network: return "33"
        }
    }

    private func spinner() -> String {
        let frames = unicode ? ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] : ["|", "/", "-", "\\"]
        return frames[Int(Date().timeIntervalSince1970 * 10) % frames.count]
    }

    // MARK: Footer

    private func footerLines(_ feed: Feed, width: Int) -> [Line] {
        let stats = feed.stats
        let elapsed = min(feed.elapsed, feed.settings.seconds)
        let fraction = elapsed / feed.settings.seconds

        var progress = Line()
        let barWidth = max(10, min(60, width - 48))
        let filled = Int(Double(barWidth) * fraction)
        let (full, empty) = unicode ? ("█", "░") : ("#", ".")
        progress.add(" " + String(repeating: full, count: filled), "32")
        progress.add(String(repeating: empty, count: barWidth - filled), "2")
        let arrow = feed.goingDown ? (unicode ? "↓" : "v") : (unicode ? "↑" : "^")
        let screenRows = feed.visible.isEmpty ? "-" : "\(feed.visible.lowerBound)-\(feed.visible.upperBound - 1)"
        progress.add(String(format: " %3d%%  %.1f/%.0f s  ", Int(fraction * 100), elapsed, feed.settings.seconds))
        progress.add("screen: rows \(screenRows) \(arrow)", "1")

        // Five lines that fit in 80 columns with four-digit counts.
        var tiers = Line()
        tiers.add(" memory \(stats.memory)", "32")
        tiers.add("  ")
        tiers.add("disk \(stats.disk)", "36")
        tiers.add("  ")
        tiers.add("network \(stats.network)", "33")
        tiers.add("  ")
        tiers.add("failed \(stats.failed)", "31")
        tiers.add("   requests \(feed.requests)" + (feed.server.map { " (\($0.activeRequests) now)" } ?? ""), "1")

        var saved = Line()
        saved.add(" saved: dedup \(stats.dedup), prefetch \(stats.prefetched), 304s \(stats.revalidated)" + dot)
        saved.add("moved \(stats.moved)" + dot + "cancelled \(stats.cancelled)" + dot, "2")
        saved.add(Feed.formatBytes(stats.downloadedBytes) + " downloaded")

        var expiry = Line()
        if let p50 = stats.bindPercentile(0.5), let p99 = stats.bindPercentile(0.99) {
            let number = { (value: Double) in String(format: value < 10 ? "%.1f" : "%.0f", value) }
            expiry.add(" bind p50 \(number(p50)) p99 \(number(p99)) \(unicode ? "µs" : "us")" + dot)
        } else {
            expiry.add(" ")
        }
        if let note = feed.expiredNote {
            expiry.add(note, "33")
        } else {
            expiry.add("images kept \(Feed.formatDuration(feed.cache.imageTimeToLive)): a rerun finds them on disk", "2")
        }

        var hint = Line()
        if let problem = stats.diskProblems.last {
            hint.add(" disk problem: \(problem)", "31")
        } else {
            hint.add(" Ctrl-C stops\(dot)cache: \(Feed.shortPath(feed.cache.folder.path))", "2")
        }
        return [progress, tiers, saved, expiry, hint]
    }

    // MARK: Terminal

    /// A line of text in styled parts (SGR codes such as "1" bold, "2" dim, "32" green), cut to
    /// the terminal's width by characters, not by the bytes of escape codes.
    struct Line {
        private var parts: [(text: String, style: String?)] = []

        mutating func add(_ text: String, _ style: String? = nil) {
            parts.append((text, style))
        }

        /// A line longer than `width` ends in "…" (or "~" when `ellipsis` says so), so that a cut
        /// shows.
        func render(width: Int, color: Bool, ellipsis: String = "…") -> String {
            let total = parts.reduce(0) { $0 + $1.text.count }
            let room = total > width ? width - 1 : width
            var out = "", used = 0
            for part in parts where used < room {
                var text = String(part.text.prefix(room - used))
                used += text.count
                if used == room, total > width { text += ellipsis }
                if color, let style = part.style, !text.isEmpty {
                    out += "\u{1B}[\(style)m\(text)\u{1B}[0m"
                } else {
                    out += text
                }
            }
            return out
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count > width
            ? String(text.prefix(width - 1)) + (unicode ? "…" : "~")
            : text.padding(toLength: width, withPad: " ", startingAt: 0)
    }

    static func terminalSize() -> (width: Int, height: Int) {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), $0) }
        guard result == 0, size.ws_col > 0, size.ws_row > 0 else { return (80, 24) }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    private func write(_ text: String) {
        output(text, newline: false)
    }
}
