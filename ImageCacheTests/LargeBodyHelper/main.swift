// A child process for the large-body tests: fetches a small image (which also brings URLSession
// and the cache up to speed), says its peak resident memory, fetches the large bodies all at once,
// and says its peak again and what each fetch came to. Run alone, its memory is its own: the test
// process, which serves the bodies, would hide the figure in its own heap.
//
// Usage: LargeBodyHelper <parent folder> <small image URL> <large URL>...
// Prints: "peak-before <kB>", then "fetched <bytes> <source>" or "failed <error>" per large URL (in
// the order they end), then "peak-after <kB>".
import Dispatch
import Foundation
import ImageCache

/// The process's peak resident memory so far, in kB (`VmHWM` in /proc/self/status; on a system
/// without it, `getrusage`'s `ru_maxrss`).
func peakResidentKilobytes() -> Int {
    if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
       let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
       let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") {
        return kilobytes
    }
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Int(usage.ru_maxrss)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let small = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: LargeBodyHelper <parent folder> <small URL> <large URL>...\n".utf8))
    exit(2)
}
let large = arguments.dropFirst(3).compactMap(URL.init(string:))
let cache = ImageCache(uniqueName: "large", directory: URL(fileURLWithPath: arguments[1]))
cache.callbackQueue = DispatchQueue(label: "large.callbacks")
cache.maxDiskImageBytes = 1 << 30
cache.diskMaxBytes = 8 << 30
cache.retryPolicy = .never

let warmUp = DispatchSemaphore(value: 0)
cache.fetch(small) { _, _ in warmUp.signal() }
warmUp.wait()
say("peak-before \(peakResidentKilobytes())")

let group = DispatchGroup()
for url in large {
    group.enter()
    cache.fetch(url) { (result: Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>) in
        switch result {
        case .success(let fetched):
            #if canImport(UIKit) || canImport(AppKit)
            say("fetched 0 \(fetched.source)")
            #else
            say("fetched \(fetched.value.data.count) \(fetched.source)")  // the count touches no page
            #endif
        case .failure(let error):
            say("failed \(error)")
        }
        group.leave()
    }
}
group.wait()
say("peak-after \(peakResidentKilobytes())")
if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
    for line in status.split(separator: "\n") where line.hasPrefix("Rss") || line.hasPrefix("VmRSS") { say(String(line)) }
}
cache.persistCacheToDisk()
exit(0)
