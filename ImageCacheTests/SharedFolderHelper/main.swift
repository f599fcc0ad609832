// A child process for the shared-folder tests: several of these open one cache folder at once,
// as several processes of one app (or an app and its extension) would.
//
// Usage: SharedFolderHelper <mode> <parent folder> <base URL> <first> <count> <rounds> <seed>
//   mix    every round fetches images first..<first+count (shuffled), then purges memory, trims
//          the disk, removes a few, persists, or fetches everything again
//   fill   every round fetches, persists and purges memory: the disk only ever gains images
//   check  a fresh instance fetches every image once and prints, per image,
//          "<index> <byte count> <FNV-1a 64 of the bytes, hex>" or "<index> nil <error>"
// Image i is <base URL>/image<i>.png. Prints "ready" once the cache is open and waits for a line
// on standard input, so that the test can start every process's work at the same moment; prints
// "done" and exits 0 when every round is over.
import Dispatch
import Foundation
import ImageCache

/// SplitMix64: the same shuffles for the same seed, so that a failing run can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a, 64 bits: the test computes the same over the bytes it serves.
func fnv1a(_ data: Data) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in data { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    return hash
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("SharedFolderHelper: \(message)\n".utf8))
    exit(1)
}

/// Results written by callbacks on the cache's queue and read by the main thread.
final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [Int: String] = [:]
    func set(_ index: Int, _ line: String) { lock.withLock { lines[index] = line } }
    func line(_ index: Int) -> String? { lock.withLock { lines[index] } }
}

/// Fetches every URL at once and waits for every callback. A callback that never comes is a bug
/// the tests must see, so the wait is bounded and fails loudly instead of hanging the test.
func fetchAll(_ cache: ImageCache, _ urls: [(index: Int, url: URL)], results: Results? = nil) {
    let group = DispatchGroup()
    for (index, url) in urls {
        group.enter()
        cache.fetch(url) { _, image in
            if let results {
                if let image {
                    results.set(index, "\(index) \(image.data.count) \(String(fnv1a(image.data), radix: 16))")
                } else {
                    let reason = cache.error(for: url).map { "\($0)" } ?? "no error recorded"
                    results.set(index, "\(index) nil \(reason)")
                }
            }
            group.leave()
        }
    }
    if group.wait(timeout: .now() + 60) == .timedOut { fail("callbacks missing after 60 s") }
}

func run() {
    let arguments = CommandLine.arguments
    guard arguments.count == 8, ["mix", "fill", "check"].contains(arguments[1]),
          let base = URL(string: arguments[3]), let first = Int(arguments[4]), let count = Int(arguments[5]),
          let rounds = Int(arguments[6]), let seed = UInt64(arguments[7]), count > 0, rounds >= 0 else {
        fail("usage: SharedFolderHelper mix|fill|check <parent folder> <base URL> <first> <count> <rounds> <seed>")
    }
    let mode = arguments[1]
    let urls = (first..<first + count).map { (index: $0, url: base.appendingPathComponent("image\($0).png")) }
    let cache = ImageCache(uniqueName: "shared", directory: URL(fileURLWithPath: arguments[2]))
    // Never the main queue: this program does not run it.
    cache.callbackQueue = DispatchQueue(label: "SharedFolderHelper.callbacks")
    var generator = SplitMix(state: seed)
    FileHandle.standardOutput.write(Data("ready\n".utf8))  // unbuffered, unlike print
    _ = readLine()

    switch mode {
    case "check":
        let results = Results()
        fetchAll(cache, urls, results: results)
        for (index, _) in urls { print(results.line(index) ?? "\(index) nil no callback") }
    case "fill":
        for _ in 0..<rounds {
            fetchAll(cache, urls.shuffled(using: &generator))
            cache.persistCacheToDisk()
            cache.purgeMemory()
        }
    default:  // mix
        // Small, so that memory evicts to disk all the time.
        cache.imageMemoryMaxCount = 8
        for round in 0..<rounds {
            fetchAll(cache, urls.shuffled(using: &generator))
            // The seed shifts the cycle, so that the processes do different things at once.
            switch (round + Int(seed % 5)) % 5 {
            case 0: cache.purgeMemory()
            case 1: cache.reduceDiskCache(maxImageCount: count / 2)
            case 2: for _ in 0..<3 { cache.remove(urls[Int(generator.next() % UInt64(count))].url) }
            case 3: cache.persistCacheToDisk()
            default: fetchAll(cache, urls.shuffled(using: &generator))
            }
        }
        // As an app does when it goes to the background.
        cache.persistCacheToDisk()
    }
    print("done")
}

run()
exit(0)
