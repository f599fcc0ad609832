import Foundation
@_spi(Testing) import ImageCache
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - 100,000 files on disk (issue 24)

/// A cache folder of `count` small image files made with POSIX writes (a download of each would
/// take minutes): named as the cache names `url(i)`, downloaded now, used in the order of `i`.
private struct BigFolder {
    let scratch: Scratch
    let folder: URL
    let count: Int
    static let name = "bigfolder"

    static func url(_ index: Int) -> URL { URL(string: "http://127.0.0.1:9/big/\(index).png")! }

    init(count: Int) throws {
        self.count = count
        scratch = try Scratch("bigfolder")
        folder = scratch.url.appendingPathComponent(Self.name, isDirectory: true)
        guard mkdir(folder.path, 0o700) == 0 else { throw BenchmarkError("mkdir \(folder.path): errno \(errno)") }
        let directory = open(folder.path, O_RDONLY | O_DIRECTORY)
        defer { close(directory) }
        let start = Date().timeIntervalSince1970 - Double(count)
        let bytes = [UInt8](TestImages.thumbnail)
        for i in 0..<count {
            let fd = openat(directory, ImageCache.diskFileName(for: Self.url(i)), O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard fd >= 0 else { throw BenchmarkError("create file \(i): errno \(errno)") }
            let written = write(fd, bytes, bytes.count)
            let used = start + Double(i)
            var dates = [timespec(tv_sec: Int(used), tv_nsec: 0), timespec(tv_sec: Int(start + Double(count)), tv_nsec: 0)]
            futimens(fd, &dates)
            close(fd)
            guard written == bytes.count else { throw BenchmarkError("short write of file \(i)") }
        }
    }

    func makeCache() -> ImageCache {
        let cache = ImageCache(uniqueName: Self.name, directory: scratch.url)
        cache.callbackQueue = callbacks
        return cache
    }
}

/// The floor of a scan: list the folder with `readdir` and `fstatat` every entry, keeping nothing.
private func listAndStat(_ folder: URL) -> Int {
    guard let stream = opendir(folder.path) else { return 0 }
    defer { closedir(stream) }
    let directory = dirfd(stream)
    var (files, info) = (0, stat())
    while let entry = readdir(stream) {
        let ok = withUnsafePointer(to: entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { fstatat(directory, $0, &info, AT_SYMLINK_NOFOLLOW) == 0 }
        }
        if ok, info.st_mode & S_IFMT == S_IFREG { files += 1 }
    }
    return files
}

/// The first fetch after `init` when the app sets `diskMaxBytes` first, the sweep's scan
/// (`reduceDiskCache()` with nothing to delete) in time and in peak resident growth, and
/// `statistics()`, at 100,000 files (10,000 with `--quick`).
func bigFolder(_ config: Config) throws -> [Row] {
    let count = config.pick(quick: 10_000, full: 100_000)
    let making = now()
    let big = try BigFolder(count: count)
    defer { big.scratch.remove() }
    let makeTime = now() - making
    let files = Report.format(Double(count))
    setenv("IMAGECACHE_BIGFOLDER", big.scratch.url.path, 1)

    // The first fetch after init, the app having set diskMaxBytes (above what the folder holds).
    let first = try compareFirstFetches(config) { _ in
        {
            let cache = big.makeCache()
            cache.diskMaxBytes = 200 * 1024 * 1024
            return cache
        }
    } url: { round in
        BigFolder.url((round * 997) % count)
    } floorPath: { round in
        big.folder.appendingPathComponent(ImageCache.diskFileName(for: BigFolder.url((round * 997) % count))).path
    }

    // The sweep's scan: nothing expires or passes a limit, so every round sees the same folder.
    var listed = 0
    let sweep = compare(rounds: config.slowRounds) { _ in
        let cache = big.makeCache()
        return seconds { cache.reduceDiskCache() } * 1e3
    } floor: { _ in
        seconds { listed = listAndStat(big.folder) } * 1e3
    }
    guard listed == count else { throw BenchmarkError("the floor listed \(listed) files, not \(count)") }
    // statistics() over the folder the sweeps counted: O(1), however many files.
    let statsCache = big.makeCache()
    statsCache.reduceDiskCache()
    let lock = NSLock()
    nonisolated(unsafe) var value = statsCache.statistics()
    let calls = 100_000
    var seen = 0
    let stats = compare(rounds: config.rounds) { _ in
        nanoseconds(perOperation: calls) { for _ in 0..<calls { seen = statsCache.statistics().diskFiles } }
    } floor: { _ in
        nanoseconds(perOperation: calls) { for _ in 0..<calls { blackHole(lock.withLock { value }) } }
    }
    guard seen == count else { throw BenchmarkError("statistics() said \(seen) files, not \(count)") }
    value.requests = seen
    var (ours, floor): ([Double], [Double]) = ([], [])
    for _ in 0..<config.slowRounds {
        ours.append(try runChild(["--child", "bigfolder-sweep", String(count)], printing: ["growth"])["growth", default: 0] / 1e6)
        floor.append(try runChild(["--child", "bigfolder-floor", String(count)], printing: ["growth"])["growth", default: 0] / 1e6)
    }
    let peak = (ours: Stats(ours), floor: Stats(floor))
    return [
        Row(figure: "first fetch after init, \(files) files on disk, diskMaxBytes set first", unit: "ms", ours: first.ours,
            floorName: "POSIX read of one image file of the folder + one hop to the callback queue",
            floor: first.floor, goal: "<= 2 ms", pass: { _ in first.ours.median <= 2 },
            notes: ["`init`, `diskMaxBytes = 200 MiB` (more than the folder holds), `fetch` to the callback; a new instance "
                    + "each round on the same folder", "making the \(files) files (POSIX writes) took \(Report.format(makeTime)) s"]),
        Row(figure: "sweep of \(files) files (`reduceDiskCache()`, nothing to delete)", unit: "ms", ours: sweep.ours,
            floorName: "`readdir` and `fstatat` of every entry, keeping nothing", floor: sweep.floor,
            goal: "none: reported", pass: { _ in true },
            notes: ["a new instance each round; the scan a sweep, `reduceDiskCache` and the disk limit make"]),
        Row(figure: "sweep of \(files) files: peak resident growth", unit: "MB", ours: peak.ours,
            floorName: "`readdir` and `fstatat` of every entry, keeping nothing", floor: peak.floor,
            goal: "<= 10 MB", pass: { _ in peak.ours.median <= 10 },
            notes: ["VmHWM after `reduceDiskCache()` minus VmRSS before it, peak reset through /proc/self/clear_refs; "
                    + "a fresh child process for each round and side"]),
        Row(figure: "`statistics()` with \(files) files on disk", unit: "ns", ours: stats.ours,
            floorName: "an `NSLock` taken around a copy of a `Statistics` value", floor: stats.floor,
            goal: "O(1): <= 1 us", pass: { _ in stats.ours.median <= 1_000 },
            notes: ["\(Report.format(Double(calls))) calls a round, after a sweep counted the folder"]),
    ]
}

/// The child process of `bigFolder`'s peak figure: prints "growth BYTES" of one scan.
func bigFolderChild(_ kind: String, count: Int) throws {
    guard let path = ProcessInfo.processInfo.environment["IMAGECACHE_BIGFOLDER"] else { throw BenchmarkError("no IMAGECACHE_BIGFOLDER") }
    let parent = URL(fileURLWithPath: path, isDirectory: true)
    let cache = ImageCache(uniqueName: BigFolder.name, directory: parent)
    cache.callbackQueue = callbacks
    cache.drainDisk()
    let before = try startPeakMeasurement()
    switch kind {
    case "bigfolder-sweep": cache.reduceDiskCache()
    case "bigfolder-floor":
        let listed = listAndStat(parent.appendingPathComponent(BigFolder.name, isDirectory: true))
        guard listed == count else { throw BenchmarkError("listed \(listed) files, not \(count)") }
    default: throw BenchmarkError("unknown child \(kind)")
    }
    guard let peak = procStatusBytes("VmHWM") else { throw BenchmarkError("no VmHWM in /proc/self/status") }
    print("growth \(peak - before)")
}

// MARK: - store with many entries in memory (issue 24)

/// `store` of a 270-byte image under a new key with 1,000 and 10,000 entries in memory: it used
/// to scan every entry for the key's sizes (a binder's), so its cost grew with the entries.
func storeWithManyEntries(_ config: Config) throws -> [Row] {
    var rows: [Row] = []
    let perRound = 200
    for entries in [1_000, 10_000] {
        let scratch = try Scratch("store")
        defer { scratch.remove() }
        let cache = makeCache("store", in: scratch, memoryCap: entries + perRound * (config.rounds + 2))
        for i in 0..<entries { try cache.store(TestImages.thumbnail, for: "key-\(i)") }
        cache.drainDisk()
        let lock = NSLock()
        var dictionary: [String: Data] = [:]
        for i in 0..<entries { dictionary["key-\(i)"] = TestImages.thumbnail }
        let result = try compare(rounds: config.rounds) { round in
            let keys = (0..<perRound).map { "new-\(round)-\($0)" }
            let us = try seconds { for key in keys { try cache.store(TestImages.thumbnail, for: key) } } * 1e6 / Double(perRound)
            cache.drainDisk()  // the writes, queued to the disk, are not part of the figure
            return us
        } floor: { round in
            let keys = (0..<perRound).map { "new-\(round)-\($0)" }
            return seconds { for key in keys { lock.withLock { dictionary[key] = TestImages.thumbnail } } } * 1e6 / Double(perRound)
        }
        rows.append(Row(figure: "`store` under a new key, \(Report.format(Double(entries))) entries in memory", unit: "us",
                        ours: result.ours, floorName: "an `NSLock` around a `[String: Data]` insert", floor: result.floor,
                        goal: "none: reported (flat in the entries)", pass: { _ in true },
                        notes: ["\(perRound) stores of a 270-byte PNG a round (checked as an image, put in memory, its write "
                                + "queued to the disk queue, which is drained between rounds)"]))
    }
    return rows
}
