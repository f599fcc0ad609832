import Foundation
@_spi(Testing) import ImageCache
import LoopbackServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Configuration

/// How long the figures run: `--quick` for CI (short, just proves that everything runs), full for
/// the numbers that go in the Performance article.
struct Config {
    let quick: Bool

    func pick<T>(quick: T, full: T) -> T { self.quick ? quick : full }

    /// Rounds of the figures whose round takes milliseconds.
    var rounds: Int { pick(quick: 3, full: 11) }
    /// Rounds of the figures whose round takes a second or so.
    var slowRounds: Int { pick(quick: 2, full: 5) }
}

// MARK: - Time and rounds

/// Seconds on a monotonic clock.
func now() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}

/// Seconds that `body` takes.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}

/// Nanoseconds per operation of `body`, which performs `operations` operations.
func nanoseconds(perOperation operations: Int, _ body: () throws -> Void) rethrows -> Double {
    try seconds(body) * 1e9 / Double(operations)
}

/// Minimum, median and maximum of the values of repeated rounds.
struct Stats: Codable {
    let min: Double
    let median: Double
    let max: Double
    let rounds: Int

    init(_ values: [Double]) {
        let sorted = values.sorted()
        let n = sorted.count
        min = sorted.first ?? .nan
        max = sorted.last ?? .nan
        median = n == 0 ? .nan : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
        rounds = n
    }
}

/// Runs `ours` and `floor` alternately, one untimed warm-up round each (round 0) and then
/// `rounds` timed rounds (1...rounds), so that both see the same noise on a busy machine; which
/// one goes first alternates too, so that neither always inherits the other's leftovers. Each
/// closure returns the value of its round; the round number lets it use fresh URLs.
func compare(rounds: Int, ours: (Int) throws -> Double, floor: (Int) throws -> Double) rethrows -> (ours: Stats, floor: Stats) {
    _ = try ours(0)
    _ = try floor(0)
    var oursValues: [Double] = [], floorValues: [Double] = []
    for round in 1...rounds {
        if round % 2 == 1 {
            oursValues.append(try ours(round))
            floorValues.append(try floor(round))
        } else {
            floorValues.append(try floor(round))
            oursValues.append(try ours(round))
        }
    }
    return (Stats(oursValues), Stats(floorValues))
}

/// For latencies: times `ours(i)` and `floor(i)` one by one, alternating operation by operation,
/// `count` of each per round, after one untimed warm-up round; a round's value is the median of
/// its operations, in microseconds. `betweenRounds` runs untimed after each round.
///
/// Alternating by operation, not by round, makes both sides see the same moment of a busy
/// machine; a median per round ignores the operation that a preemption blew up.
func compareLatencies(rounds: Int, count: Int, ours: (Int) throws -> Void, floor: (Int) throws -> Void,
                      betweenRounds: () -> Void = {}) rethrows -> (ours: Stats, floor: Stats) {
    var oursMedians: [Double] = [], floorMedians: [Double] = []
    for round in 0...rounds {
        var oursSamples: [Double] = [], floorSamples: [Double] = []
        for i in 0..<count {
            // Alternate which goes first as well, so that neither always follows the other.
            let order: [Bool] = i % 2 == 0 ? [true, false] : [false, true]
            for isOurs in order {
                let start = now()
                try isOurs ? ours(i) : floor(i)
                (isOurs ? { oursSamples.append($0) } : { floorSamples.append($0) })((now() - start) * 1e6)
            }
        }
        betweenRounds()
        guard round > 0 else { continue }  // the warm-up
        oursMedians.append(Stats(oursSamples).median)
        floorMedians.append(Stats(floorSamples).median)
    }
    return (Stats(oursMedians), Stats(floorMedians))
}

/// The `p`-th percentile (0...1) of `values`, nearest rank.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
}

/// Keeps the optimizer from deleting work whose result is otherwise unused.
@inline(never)
func blackHole<T>(_ value: T) {}

// MARK: - Waiting for callbacks

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Waits for `count` calls of `done(ok:)`, which may come from any thread.
final class Countdown: @unchecked Sendable {
    private let lock = NSLock()
    private var remaining: Int
    private var failures = 0
    private let semaphore = DispatchSemaphore(value: 0)

    init(_ count: Int) {
        remaining = count
        if count == 0 { semaphore.signal() }
    }

    func done(ok: Bool = true) {
        let finished: Bool = lock.withLock {
            if !ok { failures += 1 }
            remaining -= 1
            return remaining == 0
        }
        if finished { semaphore.signal() }
    }

    /// Throws when the calls do not all come within `timeout` seconds, or when one was not ok.
    func wait(_ what: String, timeout: TimeInterval = 120) throws {
        guard semaphore.wait(timeout: .now() + timeout) == .success else {
            throw BenchmarkError("\(what): timed out after \(Int(timeout)) s")
        }
        let failed = lock.withLock { failures }
        if failed > 0 { throw BenchmarkError("\(what): \(failed) callbacks without an image") }
    }
}

// MARK: - Fixtures

/// The queue every benchmark cache calls back on: the main queue does not run in this program.
let callbacks = DispatchQueue(label: "ImageCacheBenchmarks.callbacks")

/// Where the scratch folders go: the temporary directory, or `--directory PATH`.
nonisolated(unsafe) var scratchParent = FileManager.default.temporaryDirectory

/// A fresh folder under `scratchParent`; `remove()` deletes it.
final class Scratch {
    let url: URL

    init(_ name: String) throws {
        url = scratchParent
            .appendingPathComponent("ImageCacheBenchmarks-\(name)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A cache in `folder` that calls back on `callbacks`.
func makeCache(_ name: String, in folder: Scratch, memoryCap: Int? = nil) -> ImageCache {
    let cache = ImageCache(uniqueName: name, directory: folder.url)
    cache.callbackQueue = callbacks
    if let memoryCap { cache.imageMemoryMaxCount = memoryCap }
    return cache
}

/// A loopback server that answers every path with `body`, after `delay` seconds.
func makeServer(body: Data = TestImages.photo, delay: TimeInterval = 0) throws -> LoopbackServer {
    let server = try LoopbackServer()
    server.recordsRequestHeaders = false  // in this process: it would count in the memory figures
    var response = LoopbackServer.Response.ok(body)
    response.delay = delay
    server.fallback = response
    return server
}

/// A URL shaped like a CDN's, for the memory-tier figures (nothing is downloaded from it).
func cdnURL(_ index: Int) -> URL {
    URL(string: "https://images.example.com/photos/\(index / 1_000)/\(index)-640w.png")!
}

extension ImageCache {
    /// Fetches every URL on the fast lane at once and waits for every callback; throws if one
    /// comes without an image.
    func fetchAll(_ urls: [URL], timeout: TimeInterval = 300) throws {
        let countdown = Countdown(urls.count)
        for url in urls {
            fetch(url) { _, image in countdown.done(ok: image != nil) }
        }
        try countdown.wait("fetching \(urls.count) images", timeout: timeout)
    }

    /// Fetches one URL and waits for its callback; throws if it comes without an image.
    func fetchOne(_ url: URL, timeout: TimeInterval = 60) throws {
        try fetchAll([url], timeout: timeout)
    }
}

// MARK: - Files

/// Reads a whole file with open, fstat, read and close: the plainest disk read.
func posixRead(_ path: String) throws -> Data {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchmarkError("open \(path): errno \(errno)") }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw BenchmarkError("fstat \(path): errno \(errno)") }
    let size = Int(info.st_size)
    let buffer = malloc(Swift.max(size, 1))!
    var done = 0
    while done < size {
        let n = read(fd, buffer + done, size - done)
        guard n > 0 else { break }
        done += n
    }
    guard done == size else {
        free(buffer)
        throw BenchmarkError("short read of \(path)")
    }
    return Data(bytesNoCopy: buffer, count: size, deallocator: .free)
}

/// Writes `data` to a temporary name and renames it to `path`, without fsync: the plainest safe write.
func posixWriteAndRename(_ path: String, _ data: Data) throws {
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw BenchmarkError("open \(temporary): errno \(errno)") }
    let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard written == data.count, rename(temporary, path) == 0 else { throw BenchmarkError("write \(path) failed") }
}

/// The image files of a cache folder, by path: temporary files have
/// hidden names (`.name.pid.N.tmp`) and are left out.
func imageFiles(in folder: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder.path)
        .filter { !$0.hasPrefix(".") }
        .sorted()
        .map { folder.appendingPathComponent($0).path }
}

/// A copy of the cache folder `source` at `destination` (created): the index and the journal are
/// copied, the image files hard-linked. The cache only ever replaces image files (write to a
/// temporary name, rename) or unlinks them, so the copy never changes the source; and linking is
/// what keeps a round of 10,000 entries from taking seconds on this machine, where creating a
/// file costs up to a millisecond.
func cloneCacheFolder(_ source: URL, to destination: URL) throws {
    try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
    for name in try FileManager.default.contentsOfDirectory(atPath: source.path) {
        let from = source.appendingPathComponent(name).path
        let to = destination.appendingPathComponent(name).path
        guard name.hasPrefix(".") else {
            guard link(from, to) == 0 else { throw BenchmarkError("link \(to): errno \(errno)") }
            continue
        }
        let data = try posixRead(from)
        let fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchmarkError("open \(to): errno \(errno)") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == data.count else { throw BenchmarkError("short write of \(to)") }
    }
}

// MARK: - Process

/// Resident memory of this process in bytes (VmRSS in /proc/self/status), or nil where there is none.
func residentBytes() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        return kilobytes.map { $0 * 1_024 }
    }
    return nil
}

/// CPU seconds used so far by every thread of this process (user and system), and how many
/// times its threads were switched out: a hop to a parked thread costs a switch or two.
func processUsage() -> (cpuSeconds: Double, switches: Int) {  // switches: voluntary ones, a thread that waited
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return (user + system, usage.ru_nvcsw)
}

/// Runs `body` with every thread of this process (and every thread they start) on one CPU, then
/// gives the threads back their CPUs. For the figures that are one hop between threads after
/// another: on this machine (2 vCPUs under a hypervisor) waking a thread on the other, idle vCPU
/// costs about 30 us more than a switch on the same one, and which of the two a given hop gets
/// depends on the scheduler's wake-up placement, so it can land on ours and not on the floor. On
/// one CPU every hop is a plain switch, and the ratio measures the code. Elsewhere it just runs `body`.
func onOneCPU<T>(_ body: () throws -> T) rethrows -> T {
    #if os(Linux)
    var original = [UInt64](repeating: 0, count: 16)  // a cpu_set_t: 1,024 bits
    guard sched_getaffinity(0, original.count * 8, &original) == 0 else { return try body() }
    var one = [UInt64](repeating: 0, count: 16)
    one[0] = 1  // CPU 0
    func setEveryThread(_ set: [UInt64]) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks.compactMap({ Int32($0) }) { _ = sched_setaffinity(task, set.count * 8, set) }
    }
    setEveryThread(one)
    defer { setEveryThread(original) }
    #endif
    return try body()
}

#if os(Linux)
// Glibc declares these only under _GNU_SOURCE, which Swift's Glibc module does not define.
@_silgen_name("sched_getaffinity")
private func sched_getaffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeMutableRawPointer) -> Int32
@_silgen_name("sched_setaffinity")
private func sched_setaffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeRawPointer) -> Int32
#endif

/// The path of this program, to run it again as a child process.
func executablePath() -> String {
    if let resolved = realpath("/proc/self/exe", nil) {
        defer { free(resolved) }
        return String(cString: resolved)
    }
    return Bundle.main.executablePath ?? CommandLine.arguments[0]
}
