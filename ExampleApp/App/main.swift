import Dispatch
import Foundation
import ImageCache
import LoopbackServer

// A short demo: serve a few generated images (and one broken URL) on 127.0.0.1, fetch them
// through a cache, fetch again from a second instance, and say where each image came from.

let server = try LoopbackServer()
server.fallback = .status(404)
for i in 0..<8 {
    var response = LoopbackServer.Response.ok(PNGMaker.picture(width: 40 + i * 8, height: 30 + i * 4, seed: i))
    response.delay = 0.02
    server.set("/image\(i).png", response)
}
server.set("/page.png", .ok(Data("<!DOCTYPE html><p>not here</p>".utf8), contentType: "text/html"))
let urls = (0..<8).map { server.url("/image\($0).png") } + [server.url("/missing.png"), server.url("/page.png")]

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ImageCacheExample-\(getpid())")
defer { try? FileManager.default.removeItem(at: folder) }

func run(_ title: String) {
    let cache = ImageCache(uniqueName: "demo", directory: folder)
    cache.callbackQueue = DispatchQueue(label: "demo.callbacks")
    let before = server.totalRequests
    let group = DispatchGroup()
    print("== \(title)")
    for url in urls {
        group.enter()
        cache.fetch(url) { url, image in
            if let image {
                print("  \(url.lastPathComponent): \(image.format) \(image.width)x\(image.height), \(image.data.count) bytes")
            } else {
                print("  \(url.lastPathComponent): failed: \(cache.error(for: url).map(String.init(describing:)) ?? "?")")
            }
            group.leave()
        }
    }
    group.wait()
    print("  peek(image0) now: \(cache.peek(urls[0]) != nil ? "in memory" : "not in memory")")
    print("  requests made: \(server.totalRequests - before)")
    cache.persistCacheToDisk()
}

run("first run: from the network")
run("second run, a new instance on the same folder: from disk (only the failures are asked again)")
server.stop()
