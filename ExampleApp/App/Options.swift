import Foundation

/// The command line: what to run, and the messages and exit codes for what cannot be run.
struct Options {
    var rows: Int?
    var seconds = 40.0
    var speed = 1.0
    var cacheDirectory: URL?
    var urlsFile: String?
    var plain = false
    var clear = false
    var help = false

    static let defaultRows = 300

    /// How long the feed's images stay valid, in seconds: a week, so that a run on another day
    /// still finds them on disk (the cache's own default is 10 minutes).
    static let imageTimeToLive: TimeInterval = 7 * 24 * 60 * 60

    // Every line fits in 80 columns.
    static let usage = """
        Usage: swift run ExampleApp [options]

        Plays a feed of remote images in the terminal, scrolling by itself, and shows
        what ImageCache does: which rows wait, which images come from memory, disk or
        the network, what prefetching and deduplication save, what failed and why.
        Without --urls it serves generated JPEG, PNG and GIF images, and a few broken
        URLs, from a server inside the process on 127.0.0.1.

        Run it again: the second run finds the images in the cache folder and takes
        them from disk. They are kept \(Feed.formatDuration(imageTimeToLive)) (imageTimeToLive).

        Options:
          --rows N          rows in the feed (default \(defaultRows); with --urls, one per URL)
          --seconds N       how long the run lasts, in seconds (default 40)
          --speed X         scrolling speed: 1 scrolls to the bottom and back once
                            in the run, 2 twice, 0.5 half way down (default 1)
          --cache-dir PATH  the folder the cache keeps its files in, under PATH/feed
                            (default \(Self.defaultCacheDirectory.path))
          --urls FILE       one http(s) URL per line, to use real servers instead of
                            the embedded one; blank lines and # comments are ignored
          --plain           no screen control: one line per event, for pipes and CI
          --clear           delete the cache folder and exit
          -h, --help        show this help

        Exit status: 0 done, 64 bad option, 65 no usable URL in --urls, 66 --urls
        file unreadable, 70 the embedded server could not start, 73 cache folder
        not writable, 130 stopped (Ctrl-C).
        """

    static var defaultCacheDirectory: URL {
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent("ImageCacheExample", isDirectory: true)
    }

    /// Why the program stops early: the message for stderr and the exit code (from sysexits.h).
    struct Failure: Error {
        let message: String
        let code: Int32

        static func usage(_ message: String) -> Failure { Failure(message: message, code: 64) }
    }

    /// Parses `--name value` and `--name=value`.
    static func parse(_ arguments: [String]) throws(Failure) -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            func value() throws(Failure) -> String {
                if let inlineValue { return inlineValue }
                guard let next = remaining.popFirst() else { throw Failure.usage("\(name) needs a value") }
                return next
            }
            func number(in range: ClosedRange<Double>) throws(Failure) -> Double {
                let text = try value()
                guard let number = Double(text), range.contains(number) else {
                    throw Failure.usage("\(name) wants a number from \(format(range.lowerBound)) to \(format(range.upperBound)), not '\(text)'")
                }
                return number
            }
            switch name {
            case "--rows":
                let text = try value()
                guard let rows = Int(text), (1...100_000).contains(rows) else {
                    throw Failure.usage("--rows wants a whole number from 1 to 100000, not '\(text)'")
                }
                options.rows = rows
            case "--seconds": options.seconds = try number(in: 1...86_400)
            case "--speed": options.speed = try number(in: 0.01...100)
            case "--cache-dir":
                let path = try value()
                guard !path.isEmpty else { throw Failure.usage("--cache-dir wants a path") }
                options.cacheDirectory = URL(fileURLWithPath: (path as NSString).expandingTildeInPath, isDirectory: true)
            case "--urls": options.urlsFile = try value()
            case "--plain": options.plain = true
            case "--clear": options.clear = true
            case "-h", "--help": options.help = true
            default: throw Failure.usage("unknown option '\(argument)'")
            }
            if inlineValue != nil, ["--plain", "--clear", "--help"].contains(name) {
                throw Failure.usage("\(name) takes no value")
            }
        }
        return options
    }

    /// `mkdir -p`, then a test file: nil when `directory` can be written to, else why not, in the
    /// system's words ("/tmp/ro/cache: Permission denied").
    static func writeProblem(_ directory: URL) -> String? {
        var path = ""
        for component in directory.path.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0, errno != EEXIST { return "\(path): \(String(cString: strerror(errno)))" }
        }
        let probe = directory.appendingPathComponent(".write-test-\(getpid())").path
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { return "\(directory.path): \(String(cString: strerror(errno)))" }
        close(fd)
        unlink(probe)
        return nil
    }

    /// `text` as one shell word, for the commands the app prints.
    static func shellQuoted(_ text: String) -> String {
        if text.allSatisfy({ $0.isLetter || $0.isNumber || "/._-~+".contains($0) }) { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static func format(_ number: Double) -> String {
        number == number.rounded() ? String(Int(number)) : String(number)
    }

    /// Reads `--urls FILE`: one URL per line; a line that is not an absolute http(s) URL is
    /// skipped with a warning on stderr.
    static func readURLs(_ file: String) throws(Failure) -> [URL] {
        func unreadable(_ reason: String) -> Failure {
            Failure(message: "cannot read the --urls file '\(file)': \(reason)", code: 66)
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), isDirectory.boolValue {
            throw unreadable("it is a directory")
        }
        let fd = open(file, O_RDONLY)
        guard fd >= 0 else { throw unreadable(String(cString: strerror(errno))) }
        let data: Data
        do {
            data = try FileHandle(fileDescriptor: fd, closeOnDealloc: true).readToEnd() ?? Data()
        } catch {
            throw unreadable(error.localizedDescription)
        }
        guard let text = String(data: data, encoding: .utf8) else { throw unreadable("it is not UTF-8 text") }
        var urls: [URL] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let url = URL(string: line), let scheme = url.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", url.host?.isEmpty == false else {
                warn("\(file):\(index + 1): not an http(s) URL, skipped: \(line.prefix(100))")
                continue
            }
            urls.append(url)
        }
        guard !urls.isEmpty else {
            throw Failure(message: "no usable URL in '\(file)' (one http or https URL per line)", code: 65)
        }
        return urls
    }
}

/// Stops the program with the failure's message on stderr and its exit code.
func fail(_ failure: Options.Failure) -> Never {
    var message = "error: \(failure.message)\n"
    if failure.code == 64 { message += "Run 'swift run ExampleApp --help' for the options.\n" }
    FileHandle.standardError.write(Data(message.utf8))
    exit(failure.code)
}

/// A warning on stderr, which stays readable whatever the screen does with stdout.
func warn(_ message: String) {
    FileHandle.standardError.write(Data("warning: \(message)\n".utf8))
}

/// Writes to stdout at once, unbuffered, so that a pipe (`| tee`) sees each line as it happens
/// and lines never interleave with the screen's escape codes out of order.
func output(_ text: String, newline: Bool = true) {
    FileHandle.standardOutput.write(Data((newline ? text + "\n" : text).utf8))
}
