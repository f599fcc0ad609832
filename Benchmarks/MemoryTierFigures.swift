import Foundation
@_spi(Testing) import ImageCache

/// The floor of the memory tier: a `[String: Value]` keyed by `url.absoluteString` behind an
/// `NSLock`, with first-in first-out eviction of 10% at the cap (the plainest batch eviction).
final class LockedDictionary<Value> {
    private let lock = NSLock()
    private var values: [String: Value] = [:]
    private var order: [String]  // a ring of keys in insertion order
    private var oldest = 0
    private let cap: Int

    init(cap: Int) {
        self.cap = cap
        order = Array(repeating: "", count: cap)
        values.reserveCapacity(cap)
    }

    func value(for url: URL) -> Value? {
        let key = url.absoluteString
        return lock.withLock { values[key] }
    }

    /// Inserts a key that is not present.
    func insert(_ value: Value, for url: URL) {
        let key = url.absoluteString
        lock.withLock {
            if values.count >= cap {
                for _ in 0..<max(1, cap / 10) {
                    values[order[oldest]] = nil
                    oldest = (oldest + 1) % cap
                }
            }
            order[(oldest + values.count) % cap] = key
            values[key] = value
        }
    }
}

/// The best peer's memory tier, written from its description (Nuke's `Cache`, which moved from LRU
/// to CLOCK): a `[String: Int]` from `url.absoluteString` to a slot of a ring, each slot with a
/// reference bit, behind an `NSLock`. A hit sets the bit (only if it is clear) and reorders
/// nothing; an insert at the cap sweeps the hand over the ring, clearing set bits (a second pass)
/// and evicting clear ones, 10% of the cap in one batch as ours does; new entries take the freed
/// slots, just behind the hand. No time to live (the peer reads no clock without one).
final class ClockCache<Value> {
    private struct Slot {
        var key: String
        var value: Value?
        var referenced = false
    }
    private let lock = NSLock()
    private var map: [String: Int] = [:]
    private var slots: [Slot] = []
    private var free: [Int] = []
    private var hand = 0
    private let cap: Int

    init(cap: Int) {
        self.cap = cap
        map.reserveCapacity(cap)
        slots.reserveCapacity(cap)
    }

    func value(for url: URL) -> Value? {
        let key = url.absoluteString
        return lock.withLock {
            guard let index = map[key] else { return nil }
            if !slots[index].referenced { slots[index].referenced = true }
            return slots[index].value
        }
    }

    /// Inserts a key that is not present.
    func insert(_ value: Value, for url: URL) {
        let key = url.absoluteString
        lock.withLock {
            if map.count >= cap {
                var evicted = 0
                while evicted < max(1, cap / 10) {
                    if slots[hand].referenced {
                        slots[hand].referenced = false
                    } else if slots[hand].value != nil {
                        map[slots[hand].key] = nil
                        slots[hand] = Slot(key: "", value: nil)
                        free.append(hand)
                        evicted += 1
                    }
                    hand = (hand + 1) % slots.count
                }
            }
            let slot = Slot(key: key, value: value)
            if let index = free.popLast() {
                slots[index] = slot
                map[key] = index
            } else {
                map[key] = slots.count
                slots.append(slot)
            }
        }
    }
}

private let photo = ImageCache.Image(data: TestImages.photo)!

/// A cache, its floor and the CLOCK peer holding the same images under the same URLs.
private func filledMemory(count: Int, in scratch: Scratch)
    -> (ImageCache, LockedDictionary<ImageCache.Image>, [URL], ClockCache<ImageCache.Image>) {
    let cache = makeCache("memory", in: scratch, memoryCap: count)
    let floor = LockedDictionary<ImageCache.Image>(cap: count)
    let clock = ClockCache<ImageCache.Image>(cap: count)
    let urls = (0..<count).map(cdnURL)
    for url in urls {
        cache.benchmarkInsert(url, image: photo, data: TestImages.photo)
        floor.insert(photo, for: url)
        clock.insert(photo, for: url)
    }
    cache.drainDisk()
    return (cache, floor, urls, clock)
}

// MARK: - peek

/// `peek` hits from one thread against `floor`'s lookups of the same URLs, in alternating rounds:
/// nanoseconds per lookup. Throws if a lookup misses.
private func comparePeeks(_ config: Config, _ cache: ImageCache, _ urls: [URL], floor: @escaping (URL) -> Bool) throws
    -> (ours: Stats, floor: Stats) {
    let passes = config.pick(quick: 20, full: 200)
    let operations = passes * urls.count
    var hits = 0
    func lookups(_ lookup: (URL) -> Bool) -> Double {
        nanoseconds(perOperation: operations) {
            for _ in 0..<passes { for url in urls where lookup(url) { hits += 1 } }
        }
    }
    let result = compare(rounds: config.rounds) { _ in lookups { cache.peek($0) != nil } } floor: { _ in lookups(floor) }
    let expected = 2 * (config.rounds + 1) * operations
    guard hits == expected else { throw BenchmarkError("peek missed \(expected - hits) of \(expected) lookups") }
    return result
}

/// `peek` hits from one thread, against a locked dictionary lookup.
func peekOneThread(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("peek")
    defer { scratch.remove() }
    let (cache, floor, urls, _) = filledMemory(count: 1_000, in: scratch)
    let result = try comparePeeks(config, cache, urls) { floor.value(for: $0) != nil }
    return [Row(figure: "`peek` hit, 1 thread", unit: "ns", ours: result.ours,
                floorName: "`url.absoluteString` + `[String: Image]` lookup under an NSLock",
                floor: result.floor, goal: "<= 1.3x floor", pass: { $0! <= 1.3 },
                notes: ["1,000 images in memory, \(Report.format(Double(config.pick(quick: 20, full: 200) * urls.count))) lookups per round"])]
}

/// `peek` hits from one thread against the CLOCK peer's hit, pinned to one CPU and not.
func peekAgainstClock(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("peekclock")
    defer { scratch.remove() }
    let (cache, _, urls, clock) = filledMemory(count: 1_000, in: scratch)
    let pinned = try onOneCPU { try comparePeeks(config, cache, urls) { clock.value(for: $0) != nil } }
    let unpinned = try comparePeeks(config, cache, urls) { clock.value(for: $0) != nil }
    let operations = config.pick(quick: 20, full: 200) * urls.count
    return [(pinned, "pinned to one CPU"), (unpinned, "unpinned")].map { result, how in
        Row(figure: "`peek` hit against the CLOCK peer, 1 thread, \(how)", unit: "ns", ours: result.ours,
            floorName: "`ClockCache`: Nuke's CLOCK memory cache written from its description, under an NSLock",
            floor: result.floor, goal: "<= 0.95x floor", pass: { $0! <= 0.95 },
            notes: ["1,000 images in memory, the same URLs, \(Report.format(Double(operations))) lookups per round"])
    }
}

/// `peek` hits from two threads at once on the same cache, against the floor under the same contention.
func peekTwoThreads(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("peek2")
    defer { scratch.remove() }
    let (cache, floor, urls, _) = filledMemory(count: 1_000, in: scratch)
    let passes = config.pick(quick: 10, full: 100)
    let operations = passes * urls.count  // per thread
    let hits = Locked(0)
    /// Nanoseconds per lookup as the two threads see it: both start at once, each times its own
    /// loop, and the figure is the mean of the two.
    func contended(_ lookup: @escaping (URL) -> Bool) -> Double {
        let start = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        let times = Locked<[Double]>([])
        for thread in 0..<2 {
            finished.enter()
            Thread {
                // The threads walk the URLs in opposite orders so that they do not move in lockstep.
                let order = thread == 0 ? urls : urls.reversed()
                var found = 0
                start.wait()
                let time = seconds { for _ in 0..<passes { for url in order where lookup(url) { found += 1 } } }
                times.mutate { $0.append(time) }
                hits.mutate { $0 += found }
                finished.leave()
            }.start()
        }
        start.signal()
        start.signal()
        finished.wait()
        return times.value.reduce(0, +) / 2 * 1e9 / Double(operations)
    }
    let result = compare(rounds: config.rounds) { _ in
        contended { cache.peek($0) != nil }
    } floor: { _ in
        contended { floor.value(for: $0) != nil }
    }
    let expected = 2 * 2 * (config.rounds + 1) * operations
    guard hits.value == expected else { throw BenchmarkError("peek missed \(expected - hits.value) of \(expected) lookups") }
    return [Row(figure: "`peek` hit, 2 threads contending", unit: "ns", ours: result.ours,
                floorName: "the 1-thread floor, from 2 threads at once on one dictionary and lock",
                floor: result.floor, goal: "<= 1.3x floor", pass: { $0! <= 1.3 },
                notes: ["two threads started together, each timing its own \(Report.format(Double(operations))) lookups; "
                        + "a round's value is the mean of the two"])]
}

/// A value behind a lock, for results that threads hand back.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    func mutate(_ body: (inout Value) -> Void) {
        lock.withLock { body(&stored) }
    }
}

// MARK: - Insert at the cap

/// Inserts into a full memory tier (each insert past the cap evicts 10% in a batch), caps 1k,
/// 10k and 100k, against the CLOCK peer doing the same, pinned to one CPU and not; the goal is an
/// amortized cost at or below the peer's, and a cost that does not grow with the cap.
func insertAtCap(_ config: Config) throws -> [Row] {
    var rows: [Row] = []
    var medians: [Int: (ours: Double, floor: Double)] = [:]
    for cap in [1_000, 10_000, 100_000] {
        let scratch = try Scratch("insert")
        defer { scratch.remove() }
        let cache = makeCache("insert", in: scratch, memoryCap: cap)
        let clock = ClockCache<ImageCache.Image>(cap: cap)
        // Inserts cycle through 2 x cap URLs: each one was evicted long before it comes again.
        let urls = (0..<2 * cap).map(cdnURL)
        for url in urls[0..<cap] {
            cache.benchmarkInsert(url, image: photo, data: TestImages.photo)
            clock.insert(photo, for: url)
        }
        cache.drainDisk()
        let perRound = config.pick(quick: max(cap / 2, 5_000), full: max(2 * cap, 20_000))
        var oursNext = cap, floorNext = cap
        var drains: [Double] = []
        func measure() -> (ours: Stats, floor: Stats) {
            compare(rounds: config.rounds) { _ in
                // The evictions queue work on the disk queue (marking the evicted files as used):
                // held while the inserts are timed, so that it cannot take their CPU (pinned), then
                // let go and timed on its own.
                let gate = DispatchSemaphore(value: 0)
                cache.holdDiskQueue(until: gate)
                let ns = nanoseconds(perOperation: perRound) {
                    for _ in 0..<perRound {
                        cache.benchmarkInsert(urls[oursNext % urls.count], image: photo, data: TestImages.photo)
                        oursNext += 1
                    }
                }
                gate.signal()
                drains.append(seconds { cache.drainDisk() } * 1e3)
                return ns
            } floor: { _ in
                nanoseconds(perOperation: perRound) {
                    for _ in 0..<perRound {
                        clock.insert(photo, for: urls[floorNext % urls.count])
                        floorNext += 1
                    }
                }
            }
        }
        let pinned = onOneCPU(measure)
        let unpinned = measure()
        medians[cap] = (pinned.ours.median, pinned.floor.median)
        for (result, how) in [(pinned, "pinned to one CPU"), (unpinned, "unpinned")] {
            rows.append(Row(figure: "insert at the count cap, cap \(Report.format(Double(cap))), \(how)", unit: "ns",
                            ours: result.ours,
                            floorName: "`ClockCache` insert: a CLOCK sweep evicting 10% at the cap",
                            floor: result.floor, goal: "<= 1.0x floor", pass: { $0! <= 1.0 },
                            notes: ["\(Report.format(Double(perRound))) inserts per round; the disk queue then needed "
                                    + "\(Report.format(Stats(drains).median)) ms (median) to catch up with the evictions"]))
        }
    }
    let growth = Stats([medians[100_000]!.ours / medians[1_000]!.ours])
    let floorGrowth = Stats([medians[100_000]!.floor / medians[1_000]!.floor])
    rows.append(Row(figure: "insert flatness: cap 100k over cap 1k, pinned", unit: "x", ours: growth,
                    floorName: "the same quotient for the floor", floor: floorGrowth,
                    goal: "<= 1.5x", pass: { _ in growth.median <= 1.5 },
                    notes: ["quotient of the medians above"]))
    return rows
}

// MARK: - Memory hit to the callback

/// `fetch` of an image in memory, to its callback on a private queue, against one
/// `DispatchQueue.async` round trip to a private queue.
func memoryHitToCallback(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("memoryhit")
    defer { scratch.remove() }
    let (cache, _, urls, _) = filledMemory(count: 100, in: scratch)
    let operations = config.pick(quick: 2_000, full: 20_000)
    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var misses = 0  // written by callbacks, read after the semaphore says they ran
    func measure() -> (ours: Stats, floor: Stats) {
        compareLatencies(rounds: config.rounds, count: operations) { i in
            cache.fetch(urls[i % urls.count]) { _, image in
                if image == nil { misses += 1 }
                semaphore.signal()
            }
            semaphore.wait()
        } floor: { _ in
            callbacks.async { semaphore.signal() }
            semaphore.wait()
        }
    }
    let result = onOneCPU(measure)
    let unpinned = measure()
    guard misses == 0 else { throw BenchmarkError("\(misses) memory fetches came back without an image") }
    return [Row(figure: "fetch of a memory hit to its callback", unit: "us", ours: result.ours,
                floorName: "one `DispatchQueue.async` round trip to a private queue (semaphore back)",
                floor: result.floor, goal: "<= 1.3x floor", pass: { $0! <= 1.3 },
                notes: ["sequential: fetch, wait for the callback, repeat, alternating with the floor; "
                        + "\(Report.format(Double(operations))) per round; a round's value is the median of its fetches",
                        oneCPUNote(unpinned)])]
}

// MARK: - A processed image's memory hit

/// A variant made by a processor, in memory: its `fetch` to the callback against a plain image's
/// (issue 39: a processed memory hit costs about what a plain one costs), and its `peek` with a
/// request against `peek` of the URL, in the same run. Throws if a lookup misses.
func processedMemoryHit(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("processedhit")
    defer { scratch.remove() }
    let (cache, _, urls, _) = filledMemory(count: 100, in: scratch)
    // Room for the variants beside the originals.
    cache.imageMemoryMaxCount = 1_000
    let mirrored = ImageCache.Processor("mirrored") { $0 }
    let requests = urls.map { ImageCache.Request(url: $0, processors: [mirrored]) }
    let semaphore = DispatchSemaphore(value: 0)
    for request in requests {  // each variant made once
        cache.fetch(request) { _, _ in semaphore.signal() }
        semaphore.wait()
    }
    guard requests.allSatisfy({ cache.peek($0) != nil }) else { throw BenchmarkError("a variant is not in memory") }
    let operations = config.pick(quick: 2_000, full: 20_000)
    nonisolated(unsafe) var misses = 0  // written by callbacks, read after the semaphore says they ran
    func measure() -> (ours: Stats, floor: Stats) {
        compareLatencies(rounds: config.rounds, count: operations) { i in
            cache.fetch(requests[i % requests.count]) { _, image in
                if image == nil { misses += 1 }
                semaphore.signal()
            }
            semaphore.wait()
        } floor: { i in
            cache.fetch(urls[i % urls.count]) { _, image in
                if image == nil { misses += 1 }
                semaphore.signal()
            }
            semaphore.wait()
        }
    }
    let pinned = onOneCPU(measure)
    let unpinned = measure()
    let passes = config.pick(quick: 20, full: 200)
    var hits = 0
    let peeks = compare(rounds: config.rounds) { _ in
        nanoseconds(perOperation: passes * requests.count) {
            for _ in 0..<passes { for request in requests where cache.peek(request) != nil { hits += 1 } }
        }
    } floor: { _ in
        nanoseconds(perOperation: passes * urls.count) {
            for _ in 0..<passes { for url in urls where cache.peek(url) != nil { hits += 1 } }
        }
    }
    guard misses == 0 else { throw BenchmarkError("\(misses) fetches of variants in memory came back without an image") }
    return [
        Row(figure: "fetch of a processed memory hit to its callback", unit: "us", ours: pinned.ours,
            floorName: "fetch of a plain memory hit to its callback (the URL form), same run",
            floor: pinned.floor, goal: "<= 1.1x floor", pass: { $0! <= 1.1 },
            notes: ["a `Request` with one processor, its variant in memory; sequential, alternating with the floor; "
                    + "\(Report.format(Double(operations))) per round", oneCPUNote(unpinned)]),
        Row(figure: "`peek` of a processed image (a `Request`), 1 thread", unit: "ns", ours: peeks.ours,
            floorName: "`peek(url)` of a plain image, same run", floor: peeks.floor,
            goal: "<= 1.3x floor", pass: { $0! <= 1.3 },
            notes: ["the request made once, as a cell keeps it; its key (string, size, processors) is made per call"]),
    ]
}

/// The note of a latency figure measured on one CPU: what it gave on every CPU.
func oneCPUNote(_ unpinned: (ours: Stats, floor: Stats)) -> String {
    "measured with the process on one CPU (see `onOneCPU`); on both CPUs the same run gave ours "
        + "\(Report.format(unpinned.ours.median)) us, floor \(Report.format(unpinned.floor.median)) us "
        + "(\(Report.format(unpinned.ours.median / unpinned.floor.median))x)"
}
