import Foundation
@_spi(Testing) import ImageCache
import LoopbackServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Disk hit

/// `fetch` of a 50 KB image that is on disk but not in memory, to its callback, against a POSIX
/// read of the same file and one hop to the callback queue.
func diskHitToCallback(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("diskhit")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let count = config.pick(quick: 60, full: 200)
    let urls = (0..<count).map { server.url("/disk/\($0).png") }

    // Download once, write everything, and start again with a new instance on the same folder.
    do {
        let writer = makeCache("disk", in: scratch, memoryCap: count)
        try writer.fetchAll(urls)
        writer.persistCacheToDisk()
    }
    let cache = makeCache("disk", in: scratch, memoryCap: count)
    try cache.fetchOne(urls[0])  // warms up: the first fetch after launch is another figure
    let measured = Array(urls.dropFirst())
    let files = try imageFiles(in: cache.folder).filter { (try? posixRead($0).count) == TestImages.photo.count }
    guard files.count == count else { throw BenchmarkError("expected \(count) image files on disk, found \(files.count)") }

    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var misses = 0  // written by callbacks, read after the semaphore says they ran
    // The floor keeps the bytes it read until the round ends, as the cache keeps them in memory:
    // both sides pay for fresh memory alike.
    nonisolated(unsafe) var kept: [Data] = []  // written on `reader`, read after the semaphore
    let reader = DispatchQueue(label: "floor.reader")  // the cache's disk queue, in the floor
    func measure() throws -> (ours: Stats, floor: Stats) {
        compareLatencies(rounds: config.rounds, count: measured.count) { i in
            cache.fetch(measured[i]) { _, image in
                if image == nil { misses += 1 }
                semaphore.signal()
            }
            semaphore.wait()
        } floor: { i in
            reader.async {
                let data = try! posixRead(files[i + 1])
                kept.append(data)
                callbacks.async {
                    blackHole(data)
                    semaphore.signal()
                }
            }
            semaphore.wait()
        } betweenRounds: {
            // Empty memory again so that the next round reads the disk.
            cache.purgeMemory()
            cache.drainDisk()
            kept = []
        }
    }
    let result = try onOneCPU(measure)
    let unpinned = try measure()
    guard misses == 0 else { throw BenchmarkError("\(misses) disk fetches came back without an image") }
    return [Row(figure: "disk hit (not in memory), 50 KB, to the callback", unit: "us", ours: result.ours,
                floorName: "hop to a serial queue, POSIX open/fstat/read/close of the same files there, hop to the "
                    + "callback queue (issue 9's floor), keeping the bytes until the round ends",
                floor: result.floor, goal: "<= 1.3x floor",
                pass: { $0! <= 1.3 },
                notes: ["\(measured.count) images per round, fetched one after the other, alternating with the floor; "
                        + "a round's value is the median of its fetches; files in the page cache for both",
                        oneCPUNote(unpinned)])]
}

// MARK: - Disk write

/// Writing 1,000 images of 50 KB (`persistCacheToDisk` of images memory holds but the disk does
/// not), against POSIX write + rename without fsync; and a check that the writes are not done on
/// the caller's thread (`purgeMemory` hands them to the disk queue).
func diskWriteThroughput(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("diskwrite")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let count = config.pick(quick: 200, full: 1_000)
    let urls = (0..<count).map { server.url("/write/\($0).png") }
    let cache = makeCache("write", in: scratch, memoryCap: count)
    try cache.fetchAll(urls)
    cache.persistCacheToDisk()

    let floorFolder = scratch.url.appendingPathComponent("floor", isDirectory: true)
    try FileManager.default.createDirectory(at: floorFolder, withIntermediateDirectories: true)
    let floorPaths = (0..<count).map { floorFolder.appendingPathComponent(String(format: "%016x", $0)).path }
    // The floor writes as many buffers as the cache does, each its own copy of the image: one
    // buffer written 1,000 times stays in the processor's cache, which the cache's images do not.
    let floorImages = (0..<count).map { _ in TestImages.photo.withUnsafeBytes { Data($0) } }
    var hotSamples: [Double] = []

    let result = try compare(rounds: config.slowRounds) { _ in
        // Deletes every file and row, so that memory holds `count` images the disk does not.
        cache.reduceDiskCache(maxImageCount: 0)
        return seconds { cache.persistCacheToDisk() } * 1e6 / Double(count)
    } floor: { _ in
        for path in floorPaths { unlink(path) }
        hotSamples.append(try seconds {
            for path in floorPaths { try posixWriteAndRename(path, TestImages.photo) }
        } * 1e6 / Double(count))
        for path in floorPaths { unlink(path) }
        return try seconds {
            for (path, image) in zip(floorPaths, floorImages) { try posixWriteAndRename(path, image) }
        } * 1e6 / Double(count)
    }
    let hot = hotSamples.sorted()[hotSamples.count / 2]
    let written = try imageFiles(in: cache.folder).count
    guard written == count else { throw BenchmarkError("persistCacheToDisk left \(written) of \(count) files") }

    // Not on the caller's thread: purgeMemory hands the unwritten images over and returns.
    cache.reduceDiskCache(maxImageCount: 0)
    let callerTime = seconds { cache.purgeMemory() }
    let diskTime = callerTime + seconds { cache.drainDisk() }
    let offCaller = callerTime < 0.1 * diskTime
    let megabytesPerSecond = Double(TestImages.photo.count) / result.ours.median  // bytes per microsecond
    return [Row(figure: "disk write, \(Report.format(Double(count))) x 50 KB, per image", unit: "us", ours: result.ours,
                floorName: "POSIX open/write/close to a temporary name + rename, no fsync, of \(count) copies of the image",
                floor: result.floor, goal: "<= 1.5x floor; not on the caller's thread",
                pass: { $0! <= 1.5 && offCaller },
                notes: ["`persistCacheToDisk()` after `reduceDiskCache(maxImageCount: 0)` emptied the disk; "
                        + "\(Report.format(megabytesPerSecond)) MB/s",
                        "`purgeMemory()` with \(count) unwritten images returned in \(Report.format(callerTime * 1e3)) ms; "
                        + "the disk queue then wrote them in \(Report.format(diskTime * 1e3)) ms"
                        + (offCaller ? "" : " (too much of the work on the caller's thread)"),
                        "the floor writing one buffer \(count) times (it stays in the processor's cache): "
                        + "\(Report.format(hot)) us per image, ours \(Report.format(result.ours.median / hot))x of that"])]
}

// MARK: - 10,000 entries on disk

/// A cache folder with 10,000 small images written once through a cache and
/// cloned for each round that changes it.
private struct BigDisk {
    let scratch: Scratch
    let urls: [URL]
    let folder: URL  // the cache's own folder inside `scratch`
    static let name = "big"

    init(count: Int) throws {
        scratch = try Scratch("bigdisk")
        let server = try makeServer(body: TestImages.thumbnail)
        defer { server.stop() }
        urls = (0..<count).map { server.url("/big/\($0).png") }
        let writer = makeCache(Self.name, in: scratch, memoryCap: count)
        writer.maxConcurrentDownloads = 16
        try writer.fetchAll(urls)
        writer.persistCacheToDisk()
        folder = writer.folder
        let files = try imageFiles(in: folder).count
        guard files == count else { throw BenchmarkError("populated \(files) of \(count) files") }
    }

    /// A clone of the cache folder, in a new scratch folder, for a cache named `BigDisk.name`.
    func clone() throws -> Scratch {
        let clone = try Scratch("bigdisk-clone")
        try cloneCacheFolder(folder, to: clone.url.appendingPathComponent(folder.lastPathComponent, isDirectory: true))
        return clone
    }
}

/// The first fetch after `init` with 10,000 entries on disk, and `reduceDiskCache(maxImageCount: 1000)`
/// of those 10,000 entries (2,000 and 200 with `--quick`).
func tenThousandOnDisk(_ config: Config) throws -> [Row] {
    let count = config.pick(quick: 2_000, full: 10_000)
    let populating = now()
    let big = try BigDisk(count: count)
    defer { big.scratch.remove() }
    let populateTime = now() - populating
    return [try firstFetchAfterInit(config, big, populateTime: populateTime), try reduceDiskCache(config, big)]
}

private func firstFetchAfterInit(_ config: Config, _ big: BigDisk, populateTime: Double) throws -> Row {
    let files = try imageFiles(in: big.folder)
    var clone: Scratch?
    let result = try compareFirstFetches(config) { _ in
        // A new instance on a fresh clone of the populated folder (what one launch does to the
        // files, say its sweep, must not help the next round); time from `init` to the callback.
        clone?.remove()
        let folder = try big.clone()
        clone = folder
        return {
            let cache = ImageCache(uniqueName: BigDisk.name, directory: folder.url)
            cache.callbackQueue = callbacks
            return cache
        }
    } url: { round in
        big.urls[(round * 997) % big.urls.count]
    } floorPath: { round in
        files[(round * 997) % files.count]
    }
    clone?.remove()
    return Row(figure: "first fetch after init, \(Report.format(Double(big.urls.count))) entries on disk", unit: "ms", ours: result.ours,
               floorName: "POSIX read of one image file of the folder + one hop to the callback queue",
               floor: result.floor, goal: "<= 2 ms", pass: { _ in result.ours.median <= 2 },
               notes: ["`init` + `fetch` to the callback, a new instance each round on a fresh clone of the folder",
                       "populating the \(Report.format(Double(big.urls.count))) entries (network, then disk, once) took "
                       + "\(Report.format(populateTime)) s"])
}

private func reduceDiskCache(_ config: Config, _ big: BigDisk) throws -> Row {
    let keep = big.urls.count / 10
    let result = try compare(rounds: config.slowRounds) { _ in
        let clone = try big.clone()
        defer { clone.remove() }
        let cache = ImageCache(uniqueName: BigDisk.name, directory: clone.url)
        cache.callbackQueue = callbacks
        let ms = seconds { cache.reduceDiskCache(maxImageCount: keep) } * 1e3
        let left = try imageFiles(in: cache.folder).count
        guard left == keep else { throw BenchmarkError("reduceDiskCache left \(left) files, not \(keep)") }
        return ms
    } floor: { _ in
        let clone = try big.clone()
        defer { clone.remove() }
        let files = try imageFiles(in: clone.url.appendingPathComponent(big.folder.lastPathComponent))
        return seconds {
            for path in files.prefix(files.count - keep) { unlink(path) }
        } * 1e3
    }
    let (entries, deleted) = (Report.format(Double(big.urls.count)), Report.format(Double(big.urls.count - keep)))
    return Row(figure: "`reduceDiskCache(maxImageCount: \(keep))` on \(entries) entries", unit: "ms", ours: result.ours,
               floorName: "`unlink` of the \(deleted) files it deletes",
               floor: result.floor, goal: "<= floor + 150 ms", pass: { _ in result.ours.median <= result.floor.median + 150 },
               notes: ["a new instance on a fresh clone of the folder each round (image files hard-linked, so that an "
                       + "unlink drops a link, for ours and the floor alike): the time includes the sweep of expired files"])
}

/// The first fetch after `init`, `init` included, to its callback, in milliseconds, against a POSIX
/// read of `floorPath` and one hop to the callback queue. `prepare` readies a round untimed and
/// returns what makes its instance, which is timed. Throws if a fetch misses.
func compareFirstFetches(_ config: Config, prepare: (Int) throws -> () -> ImageCache, url: (Int) -> URL,
                         floorPath: (Int) -> String) throws -> (ours: Stats, floor: Stats) {
    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var misses = 0  // written by callbacks, read after the semaphore says they ran
    let result = try compare(rounds: config.rounds) { round in
        var cache: ImageCache?
        let make = try prepare(round)
        let ms = seconds {
            cache = make()
            cache!.fetch(url(round)) { _, image in
                if image == nil { misses += 1 }
                semaphore.signal()
            }
            semaphore.wait()
        } * 1e3
        cache!.drainDisk()  // what it queued must not land on the next round
        return ms
    } floor: { round in
        try seconds {
            let data = try posixRead(floorPath(round))
            callbacks.async {
                blackHole(data)
                semaphore.signal()
            }
            semaphore.wait()
        } * 1e3
    }
    guard misses == 0 else { throw BenchmarkError("\(misses) first fetches came back without an image") }
    return result
}
