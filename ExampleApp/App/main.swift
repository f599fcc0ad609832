import Dispatch
import Foundation
import ImageCache
import LoopbackServer

// `swift run ExampleApp`: a feed of remote images in the terminal, on an image server inside the
// process, that shows what the cache does. `swift run ExampleApp --help` for the options.

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail(error)
}
if options.help {
    output(Options.usage)
    exit(0)
}

// The cache keeps its files in directory/feed; beside it, the embedded server's port (below).
let directory = options.cacheDirectory ?? Options.defaultCacheDirectory
let folder = directory.appendingPathComponent("feed", isDirectory: true)  // ImageCache's folder for the name "feed"
let portFile = directory.appendingPathComponent("server-port")
let lastRunFile = directory.appendingPathComponent("last-run")  // when the last run ended, for expiry
let clearCommand = "swift run ExampleApp --clear"
    + (options.cacheDirectory.map { " --cache-dir " + Options.shellQuoted($0.path) } ?? "")

if options.clear {
    var removed: [String] = []
    for item in [folder, portFile, lastRunFile] where FileManager.default.fileExists(atPath: item.path) {
        do {
            try FileManager.default.removeItem(at: item)
            removed.append(item.path)
        } catch {
            fail(Options.Failure(message: "cannot delete \(item.path): \(error.localizedDescription)", code: 73))
        }
    }
    output(removed.isEmpty ? "Nothing to clear in \(directory.path)." : "Cleared \(removed.joined(separator: ", ")).")
    exit(0)
}

// A cache directory that cannot be written would turn every image into a disk problem: say so now.
if let problem = Options.writeProblem(directory) {
    fail(Options.Failure(message: "cannot write to the cache directory: \(problem)", code: 73))
}

var urls: [URL]
var server: LoopbackServer?
var source: String
if let file = options.urlsFile {
    do {
        urls = try Options.readURLs(file)
    } catch {
        fail(error)
    }
    source = "\(urls.count) URLs from \(file)"
} else {
    let embedded = startServer(portFile: portFile)
    urls = (0..<(options.rows ?? Options.defaultRows)).map { embedded.url(ServerContent.path(row: $0)) }
    source = "images from 127.0.0.1:\(embedded.port) (in this process)"
    server = embedded
}
if let rows = options.rows, rows != urls.count {
    urls = (0..<rows).map { urls[$0 % urls.count] }  // --urls: repeat or cut the list
}

var plain = options.plain
if !plain, isatty(STDOUT_FILENO) == 0 {
    warn("standard output is not a terminal: using --plain")
    plain = true
}
// The cache's default time to live is 10 minutes. The feed's story is "run it again: the images
// come from disk", so it keeps them a week, as an app showing photos would.
let timeToLive = Options.imageTimeToLive
let lastRun = (try? String(contentsOf: lastRunFile, encoding: .utf8))
    .flatMap { TimeInterval($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    .map { Date(timeIntervalSince1970: $0) }
if plain {
    output("ExampleApp: \(urls.count) rows, \(options.seconds) s, speed \(options.speed)")
    output("ExampleApp: \(source)")
    output("ExampleApp: cache folder \(folder.path)")
    output("ExampleApp: images kept \(Feed.formatDuration(timeToLive)) (imageTimeToLive)")
}

let cache = ImageCache(uniqueName: "feed", directory: directory)
cache.imageTimeToLive = timeToLive
cache.usesServerMaxAge = true  // row 3's server says max-age=2: the next run revalidates it (a 304)
let feed = Feed(urls: urls, cache: cache, server: server,
                settings: Feed.Settings(seconds: options.seconds, speed: options.speed, plain: plain,
                                        source: source, clearCommand: clearCommand,
                                        lastRun: lastRun, lastRunFile: lastRunFile))
feed.start(screen: plain ? nil : Screen())
dispatchMain()

/// The embedded image server. The cache's keys are URLs, port included: to find the previous
/// run's images on disk, it serves on the port that run used, if that port is still free.
func startServer(portFile: URL) -> LoopbackServer {
    let text = try? String(contentsOf: portFile, encoding: .utf8)
    let previousPort = text.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    let server: LoopbackServer
    do {
        if let previousPort, let reused = try? LoopbackServer(port: previousPort) {
            server = reused
        } else {
            server = try LoopbackServer()
            if let previousPort {
                // The images on disk have URLs with the old port.
                warn("port \(previousPort) of the last run is taken: images download again")
            }
        }
    } catch {
        fail(Options.Failure(message: "cannot start the embedded image server: \(error)", code: 70))
    }
    do {
        try Data("\(server.port)\n".utf8).write(to: portFile)
    } catch {
        warn("cannot save the server's port in \(portFile.path) (\(error.localizedDescription)): the next run will download again")
    }
    ServerContent().install(on: server)
    return server
}
