import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Testing) import ImageCache
import LoopbackServer

// MARK: - Gzip bomb

/// The tests' gzip bomb: 150 MiB of zeros gzipped at level 9, 152,907 bytes. Read from the
/// source tree, as the benchmarks run from a checkout.
private let bombPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../ImageCacheTests/Fixtures/gzip-bomb-150MiB.gz").standardized.path
private let bombInflatedBytes = 150 * 1024 * 1024

/// Peak resident growth while a server that ignores `Accept-Encoding: identity` sends the gzip
/// bomb with `Content-Encoding: gzip`, under the default limit and under a 1 MB one. Each
/// measurement runs in a fresh child process whose peak (VmHWM) is reset just before the fetch.
func gzipBombPeak(_ config: Config) throws -> [Row] {
    var rows: [Row] = []
    for (limit, limitText) in [(20 * 1024 * 1024, "20 MiB (default)"), (1_000_000, "1 MB")] {
        var ours: [Double] = [], floor: [Double] = [], milliseconds: [Double] = [], floorMilliseconds: [Double] = []
        for _ in 0..<config.pick(quick: 1, full: 5) {
            let measured = try runBombChild("gzip-ours", limit: limit)
            ours.append(measured.growth)
            milliseconds.append(measured.milliseconds)
            let bare = try runBombChild("gzip-floor", limit: limit)
            floor.append(bare.growth)
            floorMilliseconds.append(bare.milliseconds)
        }
        let allowed = Double(limit) / 1e6 + 16
        let result = (ours: Stats(ours), floor: Stats(floor))
        rows.append(Row(figure: "gzip bomb: peak resident growth, maxImageBytes \(limitText)", unit: "MB",
                        ours: result.ours,
                        floorName: "a bare `URLSession` delegate that keeps the bytes up to the same limit, then calls "
                            + "`task.cancel()` in `didReceive data` (as the cache did before)",
                        floor: result.floor, goal: "<= limit + 16 MB = \(Report.format(allowed)) MB",
                        pass: { _ in result.ours.median <= allowed },
                        notes: ["152,907 bytes on the wire with `Content-Encoding: gzip`, \(bombInflatedBytes / 1_048_576) MiB "
                                + "inflated; fails with `.tooLarge` after \(Report.format(Stats(milliseconds).median)) ms "
                                + "(floor: \(Report.format(Stats(floorMilliseconds).median)) ms): libcurl inflates what has "
                                + "arrived before the cancel can land",
                                "VmHWM after the callback minus VmRSS before the fetch, peak reset through "
                                + "/proc/self/clear_refs; a fresh child process for each round and side, warmed up with "
                                + "8 thumbnails"]))
    }
    return rows
}

/// Runs this program again as a gzip-bomb child; returns what it prints ("growth BYTES", "ms N").
private func runBombChild(_ kind: String, limit: Int) throws -> (growth: Double, milliseconds: Double) {
    let values = try runChild(["--child", kind, String(limit)], printing: ["growth", "ms"])
    return (values["growth", default: 0] / 1e6, values["ms", default: 0])
}

/// The child process of `gzipBombPeak`: fetches the bomb one way with `limit` and prints
/// "growth BYTES" (peak resident growth) and "ms N" (time to the failure).
func gzipBombChild(_ kind: String, limit: Int) throws {
    let bomb = try Data(contentsOf: URL(fileURLWithPath: bombPath))
    let server = try makeServer(body: TestImages.thumbnail)
    defer { server.stop() }
    server.set("/bomb.png", LoopbackServer.Response(headers: ["Content-Type": "image/png", "Content-Encoding": "gzip"],
                                                    body: bomb))
    let scratch = try Scratch("gzip")
    defer { scratch.remove() }
    let warmUp = (0..<8).map { server.url("/warm/\($0).png") }
    let url = server.url("/bomb.png")
    var before = 0, started = 0.0
    switch kind {
    case "gzip-ours":
        let cache = makeCache("gzip", in: scratch)
        cache.maxImageBytes = limit
        // 1.0's single limit, the floor's: a body past 4 MiB would otherwise stream to disk up to
        // `maxDiskImageBytes` (this figure is memory's bound; LargeBodyTests measure the disk's).
        cache.maxDiskImageBytes = 0
        cache.retryPolicy = .never
        try cache.fetchAll(warmUp)
        cache.drainDisk()
        before = try startPeakMeasurement()
        started = now()
        let countdown = Countdown(1)
        cache.fetch(url) { _, image in countdown.done(ok: image == nil) }
        try countdown.wait("the gzip bomb")
        guard cache.error(for: url) == .tooLarge(limit: limit) else {
            throw BenchmarkError("the gzip bomb failed with \(String(describing: cache.error(for: url))), not tooLarge")
        }
    case "gzip-floor":
        try RawLoader().load(warmUp, inFlight: 8)
        let loader = BareLimitedLoader(limit: limit)
        before = try startPeakMeasurement()
        started = now()
        try loader.load(url)
    default:
        throw BenchmarkError("unknown child \(kind)")
    }
    let milliseconds = (now() - started) * 1e3
    guard let peak = procStatusBytes("VmHWM") else { throw BenchmarkError("no VmHWM in /proc/self/status") }
    print("growth \(peak - before)")
    print("ms \(milliseconds)")
}

/// The floor: the plainest delegate that stops a body at a limit.
private final class BareLimitedLoader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let limit: Int
    private var received = Data()  // on the session's serial delegate queue only
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(limit: Int) { self.limit = limit }

    func load(_ url: URL) throws {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: url)
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        session.dataTask(with: request).resume()
        guard done.wait(timeout: .now() + 120) == .success else { throw BenchmarkError("bare delegate: timed out") }
        guard stopped else { throw BenchmarkError("bare delegate: the bomb was not stopped at \(limit) bytes") }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !stopped else { return }
        guard received.count + data.count <= limit else {
            stopped = true
            dataTask.cancel()
            return
        }
        received.append(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        done.signal()
    }
}

/// Resets this process's peak resident size (VmHWM) to its current one and returns the current
/// one (VmRSS), in bytes.
func startPeakMeasurement() throws -> Int {
    // Writing 5 to clear_refs resets the peak (Linux 4.0 and later).
    guard (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil else {
        throw BenchmarkError("cannot reset the peak resident size through /proc/self/clear_refs")
    }
    guard let current = procStatusBytes("VmRSS") else { throw BenchmarkError("no VmRSS in /proc/self/status") }
    return current
}

/// A "kB" field of /proc/self/status, in bytes.
func procStatusBytes(_ field: String) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1_024 }
    }
    return nil
}
