import Foundation
@_spi(Testing) import ImageCache
import LoopbackServer

/// A child for a profiler (`perf record`): the `no-store` network miss of `networkMissThroughput`,
/// `rounds` rounds of 200 images, one way only ("profile-ours": the cache; "profile-bare": the bare
/// streaming delegate), after one warm-up round (and 200 images written to disk first, by either: the
/// cache's folder exists); prints "cpu US" (CPU per image, whole process).
/// Pin it with `taskset -c 0` for the pinned figure.
func profileChild(_ kind: String, rounds: Int) throws {
    let scratch = try Scratch("profile")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let noStore = LoopbackServer.Response(status: 200, headers: ["Content-Type": "image/png", "Cache-Control": "no-store"],
                                          body: TestImages.photo)
    server.handler = { path in path.hasPrefix("/no-store/") ? noStore : nil }
    let cache = makeCache("profile", in: scratch, memoryCap: 1_000)
    cache.maxConcurrentDownloads = 8
    let streaming = StreamingLoader()
    defer { streaming.invalidate() }
    let count = 200
    func round(_ index: Int) throws {
        let urls = (0..<count).map { server.url("/no-store/\(kind)/\(index)/\($0).png") }
        switch kind {
        case "profile-ours": try cache.fetchAll(urls)
        case "profile-bare": try streaming.load(urls, inFlight: 8, queue: callbacks)
        default: throw BenchmarkError("unknown child \(kind)")
        }
    }
    // As in `networkMissThroughput`, where the cache's first round writes files: its folder is there.
    try cache.fetchAll((0..<count).map { server.url("/files/\(kind)/\($0).png") })
    cache.persistCacheToDisk()
    try round(0)
    let before = processUsage()
    for index in 1...rounds { try round(index) }
    let after = processUsage()
    print("cpu \((after.cpuSeconds - before.cpuSeconds) / Double(count * rounds) * 1e6)")
}

/// The two sides of `profileChild` in one process, alternating round by round as the figure does:
/// prints the median CPU per image of each, and of ours minus the delegate's in the same round.
func profilePair(rounds: Int) throws {
    let scratch = try Scratch("profile")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let noStore = LoopbackServer.Response(status: 200, headers: ["Content-Type": "image/png", "Cache-Control": "no-store"],
                                          body: TestImages.photo)
    server.handler = { path in path.hasPrefix("/no-store/") ? noStore : nil }
    let cache = makeCache("profile", in: scratch, memoryCap: 1_000)
    cache.maxConcurrentDownloads = 8
    let streaming = StreamingLoader()
    defer { streaming.invalidate() }
    let count = 200
    try cache.fetchAll((0..<count).map { server.url("/files/\($0).png") })
    cache.persistCacheToDisk()
    func cpu(_ body: () throws -> Void) rethrows -> Double {
        let before = processUsage()
        try body()
        return (processUsage().cpuSeconds - before.cpuSeconds) / Double(count) * 1e6
    }
    var (ours, bare, above): ([Double], [Double], [Double]) = ([], [], [])
    for index in 0...rounds {
        let urls = { (side: String) in (0..<count).map { server.url("/no-store/\(side)/\(index)/\($0).png") } }
        let first = index % 2 == 0
        var pair = (0.0, 0.0)
        for side in first ? [0, 1] : [1, 0] {
            if side == 0 { pair.0 = try cpu { try cache.fetchAll(urls("ours")) } }
            else { pair.1 = try cpu { try streaming.load(urls("bare"), inFlight: 8, queue: callbacks) } }
        }
        guard index > 0 else { continue }
        (ours, bare, above) = (ours + [pair.0], bare + [pair.1], above + [pair.0 - pair.1])
    }
    print("ours \(Stats(ours).median) bare \(Stats(bare).median) above \(Stats(above).median)")
}
