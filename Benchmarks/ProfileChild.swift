import Foundation
@_spi(Testing) import ImageCache
import LoopbackServer

/// What both profiler children measure against: the loopback server answering `/no-store/...` with
/// `Cache-Control: no-store`, the cache (8 downloads at once) whose first 200 images are written to
/// disk first, as in `networkMissThroughput` (its folder exists), and the bare streaming delegate.
private final class NoStoreSides {
    let count = 200
    let scratch: Scratch, server: LoopbackServer, cache: ImageCache, streaming = StreamingLoader()

    init(_ name: String) throws {
        scratch = try Scratch("profile")
        server = try makeServer()
        let noStore = LoopbackServer.Response(status: 200, headers: ["Content-Type": "image/png", "Cache-Control": "no-store"],
                                              body: TestImages.photo)
        server.handler = { path in path.hasPrefix("/no-store/") ? noStore : nil }
        cache = makeCache("profile", in: scratch, memoryCap: 1_000)
        cache.maxConcurrentDownloads = 8
        try cache.fetchAll((0..<count).map { server.url("/files/\(name)/\($0).png") })
        cache.persistCacheToDisk()
    }

    /// Round `index` of 200 images by the cache (`ours`) or by the delegate, under `side` in the path.
    func round(_ index: Int, side: String, ours: Bool) throws {
        let urls = (0..<count).map { server.url("/no-store/\(side)/\(index)/\($0).png") }
        if ours { try cache.fetchAll(urls) } else { try streaming.load(urls, inFlight: 8, queue: callbacks) }
    }

    func stop() {
        streaming.invalidate()
        server.stop()
        scratch.remove()
    }
}

/// A child for a profiler (`perf record`): the `no-store` network miss of `networkMissThroughput`,
/// `rounds` rounds of 200 images, one way only ("profile-ours": the cache; "profile-bare": the bare
/// streaming delegate), after one warm-up round; prints "cpu US" (CPU per image, whole process).
/// Pin it with `taskset -c 0` for the pinned figure.
func profileChild(_ kind: String, rounds: Int) throws {
    guard kind == "profile-ours" || kind == "profile-bare" else { throw BenchmarkError("unknown child \(kind)") }
    let sides = try NoStoreSides(kind)
    defer { sides.stop() }
    try sides.round(0, side: kind, ours: kind == "profile-ours")
    let before = processUsage()
    for index in 1...rounds { try sides.round(index, side: kind, ours: kind == "profile-ours") }
    let after = processUsage()
    print("cpu \((after.cpuSeconds - before.cpuSeconds) / Double(sides.count * rounds) * 1e6)")
}

/// The two sides of `profileChild` in one process, alternating round by round as the figure does:
/// prints the median CPU per image of each ("ours US", "bare US"), and of ours minus the delegate's
/// in the same round ("above US"), a line each (as `runChild` reads them).
func profilePair(rounds: Int) throws {
    let sides = try NoStoreSides("pair")
    defer { sides.stop() }
    func cpu(_ index: Int, ours: Bool) throws -> Double {
        let before = processUsage()
        try sides.round(index, side: ours ? "ours" : "bare", ours: ours)
        return (processUsage().cpuSeconds - before.cpuSeconds) / Double(sides.count) * 1e6
    }
    var (ours, bare, above): ([Double], [Double], [Double]) = ([], [], [])
    for index in 0...rounds {
        let first = index % 2 == 0
        var pair = (0.0, 0.0)
        for side in first ? [true, false] : [false, true] {
            if side { pair.0 = try cpu(index, ours: true) } else { pair.1 = try cpu(index, ours: false) }
        }
        guard index > 0 else { continue }
        (ours, bare, above) = (ours + [pair.0], bare + [pair.1], above + [pair.0 - pair.1])
    }
    print("ours \(Stats(ours).median)\nbare \(Stats(bare).median)\nabove \(Stats(above).median)")
}
