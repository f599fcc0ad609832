import Foundation
@_spi(Testing) import ImageCache

// MARK: - Scrolling back

/// Issue 53: a list scrolled back 50 rows past the window its prefetcher keeps in memory finds their
/// images on disk; each should show within one frame (16.7 ms at 60 Hz) of its request. The worst
/// case is measured: all 50 requested at once (a fling back), so the last waits behind the other 49
/// on the disk queue. A round's value is its slowest row's time from request to callback; the floor
/// reads the same 50 files with POSIX calls on one serial queue and hops each to the callback queue.
func scrollBackFromDisk(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("scrollback")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let rows = 50
    let urls = (0..<rows).map { server.url("/row/\($0).png") }
    do {
        let writer = makeCache("rows", in: scratch, memoryCap: rows)
        try writer.fetchAll(urls)
        writer.persistCacheToDisk()
    }
    let cache = makeCache("rows", in: scratch, memoryCap: rows)
    let files = try imageFiles(in: cache.folder).filter { (try? posixRead($0).count) == TestImages.photo.count }
    guard files.count == rows else { throw BenchmarkError("expected \(rows) image files on disk, found \(files.count)") }
    let reader = DispatchQueue(label: "floor.reader")  // the cache's disk queue, in the floor

    /// The slowest of `rows` requests made at once, in milliseconds, each timed to its callback.
    func slowest(_ request: (Int, @escaping @Sendable () -> Void) -> Void) throws -> Double {
        let group = DispatchGroup()
        let times = Locked([Double](repeating: 0, count: rows))
        for row in 0..<rows {
            group.enter()
            let start = now()
            request(row) {
                let elapsed = (now() - start) * 1e3
                times.mutate { $0[row] = elapsed }
                group.leave()
            }
        }
        guard group.wait(timeout: .now() + 60) == .success else { throw BenchmarkError("scroll back timed out") }
        return times.value.max() ?? .nan
    }
    func measure() throws -> (ours: Stats, floor: Stats, misses: Int) {
        let misses = Locked(0)
        var ours: [Double] = [], floor: [Double] = []
        for round in 0...config.rounds {
            cache.purgeMemory()  // the rows beyond the window were let go: their files stay
            cache.drainDisk()
            let a = try slowest { row, done in
                cache.fetch(urls[row]) { _, image in
                    if image == nil { misses.mutate { $0 += 1 } }
                    done()
                }
            }
            let b = try slowest { row, done in
                reader.async {
                    let data = try? posixRead(files[row])
                    callbacks.async { blackHole(data); done() }
                }
            }
            guard round > 0 else { continue }  // the warm-up
            ours.append(a)
            floor.append(b)
        }
        return (Stats(ours), Stats(floor), misses.value)
    }
    let pinned = try onOneCPU(measure)
    let unpinned = try measure()
    guard pinned.misses + unpinned.misses == 0 else { throw BenchmarkError("a row scrolled back came without its image") }
    let frame = 1_000.0 / 60
    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
        .joined(separator: " ") ?? "unknown"
    return [Row(figure: "scroll back 50 rows from disk, slowest row to its callback", unit: "ms", ours: pinned.ours,
                floorName: "50 POSIX open/fstat/read/close of the same files queued on one serial queue, each "
                    + "hopped to the callback queue",
                floor: pinned.floor, goal: "slowest <= one frame (16.7 ms)",
                pass: { _ in pinned.ours.max <= frame && unpinned.ours.max <= frame },
                notes: ["50 rows requested at once (a fling back), after `purgeMemory`: each round's value is "
                        + "its slowest row; files in the page cache for both; on Linux an image is its bytes "
                        + "(no decode: a phone adds its decode on the decode workers)",
                        "measured with the process on one CPU (see `onOneCPU`); on both CPUs the same run gave "
                        + "ours \(Report.format(unpinned.ours.median)) ms (max \(Report.format(unpinned.ours.max))), "
                        + "floor \(Report.format(unpinned.floor.median)) ms",
                        "load average at the end (1, 5, 15 min): \(load)"])]
}

// MARK: - A visible row behind a prefetch burst

/// A list's prefetcher asks for 1,000 images that are on disk, then a row appears whose image is on
/// disk too: the time from that row's fetch to its callback, against the same fetch with nothing
/// prefetched. The prefetches' look-ups are queued first; the visible one waits behind at most
/// `LookUpQueue.window` of them (before it, behind all 1,000). Memory is emptied before each.
func visibleBehindPrefetchBurst(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("burst")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let (burst, rounds) = (1_000, config.pick(quick: 3, full: 9))
    let prefetched = (0..<burst).map { server.url("/burst/\($0).png") }
    let visible = (0...rounds * 2 + 1).map { server.url("/visible/\($0).png") }
    do {
        let writer = makeCache("burst", in: scratch, memoryCap: 100)
        try writer.fetchAll(prefetched + visible)
        writer.persistCacheToDisk()
    }
    let cache = makeCache("burst", in: scratch, memoryCap: burst * 2)
    var readBefore: [Double] = []  // prefetched images in memory when the visible one came
    func visibleFetch(_ index: Int, behindBurst: Bool) throws -> Double {
        cache.purgeMemory()
        cache.drainDisk()
        if behindBurst { cache.prefetch(prefetched) }
        let time = try seconds { try cache.fetchOne(visible[index]) } * 1e3
        if behindBurst {
            readBefore.append(Double(prefetched.count { cache.peek($0) != nil }))
            cache.cancelPrefetching(prefetched)
            cache.drainDisk()
        }
        return time
    }
    let result = try compare(rounds: rounds) { round in
        try visibleFetch(round * 2, behindBurst: true)
    } floor: { round in
        try visibleFetch(round * 2 + 1, behindBurst: false)
    }
    return [Row(figure: "a visible fetch from disk right after 1,000 prefetches from disk, to its callback", unit: "ms",
                ours: result.ours, floorName: "the same fetch with nothing prefetched", floor: result.floor,
                goal: "<= floor + 5 ms: it waits behind a few prefetches' look-ups, not the burst",
                pass: { _ in result.ours.median <= result.floor.median + 5 },
                notes: ["prefetched images already in memory when the visible one came (median): "
                        + "\(Report.format(Stats(readBefore).median)) of \(burst); files in the page cache; "
                        + "memory emptied before each fetch"])]
}
