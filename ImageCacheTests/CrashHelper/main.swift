// A child process for the crash test: fills a cache from a server and keeps it busy writing,
// until the test kills it with SIGKILL.
//
// Usage: CrashHelper <parent folder> <base URL> <image count>
import Dispatch
import Foundation
import ImageCache

let arguments = CommandLine.arguments
guard arguments.count == 4, let base = URL(string: arguments[2]), let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: CrashHelper <parent folder> <base URL> <image count>\n".utf8))
    exit(2)
}
let cache = ImageCache(uniqueName: "crash", directory: URL(fileURLWithPath: arguments[1]))
cache.callbackQueue = DispatchQueue(label: "crash.callbacks")
cache.imageMemoryMaxCount = 20
let urls = (0..<count).map { base.appendingPathComponent("image\($0).png") }

FileHandle.standardOutput.write(Data("ready\n".utf8))
var round = 0
while true {
    let group = DispatchGroup()
    for url in urls.shuffled() {
        group.enter()
        cache.fetch(url) { _, _ in group.leave() }
    }
    group.wait()
    // Keep the disk busy with every kind of change: evictions, deletes, compaction, rewrites.
    switch round % 4 {
    case 0: cache.purgeMemory()
    case 1: cache.reduceDiskCache(maxImageCount: count / 2)
    case 2: for url in urls.prefix(count / 4) { cache.remove(url) }
    default: cache.persistCacheToDisk()
    }
    round += 1
}
