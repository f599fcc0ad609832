import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Testing) import ImageCache
import LoopbackServer

/// The floor of the network figures: a `URLSession` configured as the cache configures its own
/// (no `URLCache`, 16 connections per host), loading data tasks a fixed number at a time.
final class RawLoader: @unchecked Sendable {
    let session: URLSession

    init() {
        session = URLSession(configuration: Self.configuration())
    }

    /// The cache's own settings: no `URLCache`, 16 connections per host.
    static func configuration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 30
        configuration.httpMaximumConnectionsPerHost = 16
        return configuration
    }

    deinit {
        // The last reference may go away in one of the session's callbacks, where invalidating
        // synchronously would wait for the queue it runs on.
        let session = self.session
        DispatchQueue.global().async { session.invalidateAndCancel() }
    }

    /// Downloads every URL, `inFlight` at a time (a new task starts as one finishes), and waits;
    /// `received` gets each body, on `queue` if given (as a cache hands an image to its callback
    /// queue), else on the session's queue.
    func load(_ urls: [URL], inFlight: Int, queue: DispatchQueue? = nil,
              received: @escaping @Sendable (Data) -> Void = { _ in }) throws {
        let countdown = Countdown(urls.count)
        let session = self.session
        startWindowed(urls.count, inFlight: inFlight) { index, next in
            session.dataTask(with: urls[index]) { data, response, error in
                let ok = error == nil && (response as? HTTPURLResponse)?.statusCode == 200 && data?.count ?? 0 > 0
                next()
                guard let queue else {
                    if let data { received(data) }
                    return countdown.done(ok: ok)
                }
                queue.async {
                    if let data { received(data) }
                    countdown.done(ok: ok)
                }
            }.resume()
        }
        try countdown.wait("raw URLSession, \(urls.count) requests")
    }
}

/// `RawLoader` as the cache must load on Linux to stop a response at a size limit: through a
/// delegate that gets each chunk of the body (a completion handler gets the body only once it is
/// all in memory), with the session's own serial delegate queue. It checks nothing; given a
/// folder, it writes each body there as the plainest durable cache would (POSIX open, write and
/// close of a temporary file, then rename, on the delegate queue), else stores nothing. Given a
/// `decode`, it runs it on each body on the delegate queue, as the cache did before it had a
/// decode queue of its own.
final class StreamingLoader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private var session: URLSession!
    private let lock = NSLock()
    private var bodies: [Int: Data] = [:]  // by task identifier
    private var finished: [Int: @Sendable (Bool) -> Void] = [:]
    private let folder: String?
    private let decode: (@Sendable (Data) -> Void)?

    init(writingTo folder: URL? = nil, decode: (@Sendable (Data) -> Void)? = nil) {
        self.folder = folder?.path
        self.decode = decode
        super.init()
        session = URLSession(configuration: RawLoader.configuration(), delegate: self, delegateQueue: nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        completionHandler((response as? HTTPURLResponse)?.statusCode == 200 ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { bodies[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Swift.Error?) {
        let (body, done) = lock.withLock { (bodies.removeValue(forKey: task.taskIdentifier), finished.removeValue(forKey: task.taskIdentifier)) }
        var ok = error == nil && body?.isEmpty == false
        if ok, let folder, let body { ok = write(body, to: "\(folder)/\(task.taskIdentifier)") }
        if ok, let decode, let body { decode(body) }
        done?(ok)
    }

    private func write(_ body: Data, to path: String) -> Bool {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let written = body.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return written == body.count && rename(temporary, path) == 0
    }

    /// Lets the session go (it holds this loader, its delegate, until then).
    func invalidate() {
        session.finishTasksAndInvalidate()
    }

    /// As `RawLoader.load`, with each result handed to `queue`.
    func load(_ urls: [URL], inFlight: Int, queue: DispatchQueue) throws {
        let countdown = Countdown(urls.count)
        startWindowed(urls.count, inFlight: inFlight) { index, next in
            let task = self.session.dataTask(with: urls[index])
            self.lock.withLock { self.finished[task.taskIdentifier] = { ok in next(); queue.async { countdown.done(ok: ok) } } }
            task.resume()
        }
        try countdown.wait("streaming URLSession, \(urls.count) requests")
    }
}

/// The route an image takes in Nuke's pipeline, written from its description (Nuke 12's
/// `ImagePipeline`, `TaskFetchOriginalData`, `DataLoader`): the request starts on the pipeline's
/// serial queue; the data loader is a session delegate on a serial delegate queue, and each chunk
/// and the completion hop from there to the pipeline's queue; the body is decoded on a decoding
/// queue of its own (an `OperationQueue` of width 1), back to the pipeline's queue, then delivered on
/// the callback queue. Here the decode is a no-op, as Linux's check is nearly one: the figure is
/// the hops. No cache of either kind.
final class PipelineRouteLoader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private var session: URLSession!
    private let pipeline = DispatchQueue(label: "ImageCacheBenchmarks.peer.pipeline")
    private let decoding: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()
    private let lock = NSLock()
    private var handlers: [Int: (chunk: (Data) -> Void, done: (Bool) -> Void)] = [:]  // by task identifier

    override init() {
        super.init()
        let delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: RawLoader.configuration(), delegate: self, delegateQueue: delegateQueue)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        completionHandler((response as? HTTPURLResponse)?.statusCode == 200 ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { handlers[dataTask.taskIdentifier] }?.chunk(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Swift.Error?) {
        lock.withLock { handlers.removeValue(forKey: task.taskIdentifier) }?.done(error == nil)
    }

    func invalidate() {
        session.finishTasksAndInvalidate()
    }

    private final class Body: @unchecked Sendable {
        var data = Data()
    }

    /// As `RawLoader.load`: each image on `queue` when its route ends.
    func load(_ urls: [URL], inFlight: Int, queue: DispatchQueue) throws {
        let countdown = Countdown(urls.count)
        startWindowed(urls.count, inFlight: inFlight) { index, next in
            self.pipeline.async {
                let body = Body()  // the pipeline's, touched on its queue only
                let task = self.session.dataTask(with: urls[index])
                let chunk: (Data) -> Void = { data in self.pipeline.async { body.data.append(data) } }
                let done: (Bool) -> Void = { ok in
                    self.pipeline.async {
                        let bytes = body.data
                        self.decoding.addOperation {
                            let decoded = ok && !bytes.isEmpty
                            self.pipeline.async {
                                next()
                                queue.async { countdown.done(ok: decoded) }
                            }
                        }
                    }
                }
                self.lock.withLock { self.handlers[task.taskIdentifier] = (chunk, done) }
                task.resume()
            }
        }
        try countdown.wait("the peer's pipeline route, \(urls.count) requests")
    }
}

/// Starts `start(0)`, `start(1)`... `inFlight` at a time: each start gets a `next` to call when
/// it is done, which starts the following index.
private func startWindowed(_ count: Int, inFlight: Int, _ start: @escaping (Int, @escaping () -> Void) -> Void) {
    let lock = NSLock()
    var nextIndex = 0
    func startNext() {
        let index: Int? = lock.withLock {
            guard nextIndex < count else { return nil }
            nextIndex += 1
            return nextIndex - 1
        }
        if let index { start(index, startNext) }
    }
    for _ in 0..<min(inFlight, count) { startNext() }
}

extension ImageCache {
    /// Fetches every URL at once with the Result form and an `onProgress` (as an app showing a
    /// progress ring does), and waits; returns how many progress calls there were.
    func fetchAllWithProgress(_ urls: [URL]) throws -> Int {
        let countdown = Countdown(urls.count)
        let calls = Locked(0)
        for url in urls {
            fetch(url, onProgress: { _, _ in calls.mutate { $0 += 1 } }) { result in
                countdown.done(ok: (try? result.get()) != nil)
            }
        }
        try countdown.wait("fetching \(urls.count) images with progress")
        return calls.value
    }

    /// Fetches every URL, `inFlight` at a time (the next fetch starts in a callback), and waits.
    func fetchWindowed(_ urls: [URL], inFlight: Int) throws {
        let countdown = Countdown(urls.count)
        startWindowed(urls.count, inFlight: inFlight) { index, next in
            self.fetch(urls[index]) { _, image in
                countdown.done(ok: image != nil)
                next()
            }
        }
        try countdown.wait("fetching \(urls.count) images")
    }
}

// MARK: - Network miss

/// Runs each of `sides` once per round, in an order that rotates every round so that none always
/// follows another, after one untimed warm-up round of each; a side returns its round's value.
func compareSides(rounds: Int, _ sides: [(Int) throws -> Double]) throws -> [[Double]] {
    for side in sides { _ = try side(0) }
    var values = [[Double]](repeating: [], count: sides.count)
    for round in 1...rounds {
        for offset in 0..<sides.count {
            let index = (round + offset) % sides.count
            values[index].append(try sides[index](round))
        }
    }
    return values
}

/// 200 distinct 50 KB images fetched at once, 8 downloads at a time: ours writing each to disk, ours
/// with `Cache-Control: no-store` responses (no file), and the bare streaming delegate on the same
/// kind of responses, in the same rounds; with the whole process's CPU time per image of each. Run
/// as the machine schedules it, then with every thread on one CPU (where a hop between threads is a
/// plain switch, not a wake-up of the other CPU: see `onOneCPU`).
func networkMissThroughput(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("network")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let noStore = LoopbackServer.Response(status: 200, headers: ["Content-Type": "image/png", "Cache-Control": "no-store"],
                                          body: TestImages.photo)
    server.handler = { path in path.hasPrefix("/no-store/") ? noStore : nil }
    let cache = makeCache("network", in: scratch, memoryCap: 1_000)
    cache.maxConcurrentDownloads = 8
    let streaming = StreamingLoader()
    defer { streaming.invalidate() }
    let floorFiles = scratch.url.appendingPathComponent("delegate-files")
    try FileManager.default.createDirectory(at: floorFiles, withIntermediateDirectories: true)
    let writing = StreamingLoader(writingTo: floorFiles)
    defer { writing.invalidate() }
    let peer = PipelineRouteLoader()
    defer { peer.invalidate() }
    let loaders = (bare: streaming, writing: writing, peer: peer)
    let unpinned = try againstTheDelegate(config, server: server, cache: cache, loaders, pinned: false)
    let pinned = try onOneCPU {
        try againstTheDelegate(config, server: server, cache: cache, loaders, pinned: true, separately: pairedInChildren(config))
    }
    return unpinned + pinned
        + (try networkWithProgress(config, server: server, cache: cache, streaming: streaming, scratch: scratch))
}

/// The pinned `no-store` CPU row varies more from run to run than its goal's margin (ours less the
/// delegate round by round, +32 and +107 us in two runs of one binary): repeated in separate
/// processes (`profilePair`), each with four times the rounds and pinned as this thread is; a note.
private func pairedInChildren(_ config: Config) throws -> String {
    let rounds = config.pick(quick: 3, full: 40)
    let above = try (0..<config.pick(quick: 1, full: 3)).map { _ in
        try runChild(["--child", "profile-pair", String(rounds)], printing: ["above"])["above", default: 0]
    }
    return (above.count == 1 ? "in a separate process" : "in \(above.count) separate processes") + ", each pinned to one CPU (`--child profile-pair \(rounds)`: "
        + "\(rounds) rounds of 200 images), ours less the delegate round by round (the median of each): "
        + above.map { Report.format($0) + " us" }.joined(separator: ", ")
}

/// The rows of `networkMissThroughput` for one way of scheduling; `separately`: a note for the
/// `no-store` CPU row, of the same figure measured in other processes.
private func againstTheDelegate(_ config: Config, server: LoopbackServer, cache: ImageCache,
                                _ loaders: (bare: StreamingLoader, writing: StreamingLoader, peer: PipelineRouteLoader),
                                pinned: Bool, separately: String? = nil) throws -> [Row] {
    let count = 200
    // Images per second, and CPU microseconds and voluntary context switches (each a thread that
    // waited and was woken: a hand-off) per image of the whole process (server included).
    func measure(_ body: () throws -> Void) throws -> (rate: Double, cpu: Double, switches: Double) {
        let usage = processUsage()
        let time = try seconds(body)
        let after = processUsage()
        return (Double(count) / time, (after.cpuSeconds - usage.cpuSeconds) / Double(count) * 1e6,
                Double(after.switches - usage.switches) / Double(count))
    }
    var cpu: [[Double]] = [[], [], [], [], [], []]
    var switches: [[Double]] = [[], [], [], [], [], []]
    func side(_ index: Int, _ body: @escaping (Int) throws -> Void) -> (Int) throws -> Double {
        { round in
            let (rate, perImage, switched) = try measure { try body(round) }
            if round > 0 { (cpu[index], switches[index]) = (cpu[index] + [perImage], switches[index] + [switched]) }
            return rate
        }
    }
    let tag = pinned ? "pinned" : "unpinned"
    func urls(_ prefix: String, _ round: Int) -> [URL] {
        (0..<count).map { server.url("/\(prefix)/\(tag)/\(round)/\($0).png") }
    }
    let rates = try compareSides(rounds: config.pick(quick: 3, full: 9), [
        side(0) { round in
            try cache.fetchAll(urls("files", round))
            cache.persistCacheToDisk()  // its writes finish within its own round
        },
        side(1) { round in try loaders.bare.load(urls("bare", round), inFlight: 8, queue: callbacks) },
        side(2) { round in try cache.fetchAll(urls("no-store", round)) },
        side(3) { round in try loaders.bare.load(urls("no-store/bare", round), inFlight: 8, queue: callbacks) },
        side(4) { round in try loaders.writing.load(urls("bare-files", round), inFlight: 8, queue: callbacks) },
        side(5) { round in try loaders.peer.load(urls("no-store/peer", round), inFlight: 8, queue: callbacks) },
    ])
    let stats = rates.map(Stats.init), cpuStats = cpu.map(Stats.init), switchStats = switches.map(Stats.init)
    let setting = "all 200 fetches issued at once, `maxConcurrentDownloads = 8`; the delegate 8 in flight"
    let floorName = "`StreamingLoader`: a delegate that keeps each chunk, no checks, no disk, same responses"
    let scheduling = pinned ? ", pinned to one CPU" : ", unpinned"
    func cpuNote(_ ours: Int, _ floor: Int, first: String = "ours") -> String {
        "CPU per image, whole process with the server (median): \(first) \(Report.format(cpuStats[ours].median)) us, "
            + "the delegate \(Report.format(cpuStats[floor].median)) us"
    }
    let cpuSource = "whole process (server included), from `getrusage`, per image"
    let switchSource = "voluntary context switches (a thread that waited, then was woken) of the whole process "
        + "(server included), from `getrusage`, per image (median of rounds)"
    return [Row(figure: "network miss, 200 distinct 50 KB images, each written to disk, against a bare streaming delegate"
                    + scheduling,
                unit: "images/s", ours: stats[0], floorName: floorName, floor: stats[1], goal: ">= 0.90x floor",
                pass: { $0! >= 0.90 },
                notes: [setting + "; ours writes each image (on its disk queue, within the timing)", cpuNote(0, 1)]),
            Row(figure: "network miss, the floor's own writes: the delegate writing each body, against it writing none"
                    + scheduling,
                unit: "images/s", ours: stats[4], floorName: floorName + " (same rounds)", floor: stats[1],
                goal: "none: what a file per body costs the plainest writer, the most any writer of files can reach",
                pass: { _ in true },
                notes: ["`StreamingLoader(writingTo:)`: open, write, close and rename per body on the delegate queue",
                        cpuNote(4, 1, first: "the delegate writing")]),
            Row(figure: "network miss with files, against the delegate writing each body" + scheduling,
                unit: "images/s", ours: stats[0], floorName: "`StreamingLoader(writingTo:)`, same rounds", floor: stats[4],
                goal: ">= 0.90x floor: the files goal of issue 32 against a floor that writes too",
                pass: { $0! >= 0.90 }, notes: [setting]),
            Row(figure: "network miss, the same with `Cache-Control: no-store` (no file), against the delegate" + scheduling,
                unit: "images/s", ours: stats[2], floorName: floorName, floor: stats[3], goal: ">= 0.95x floor",
                pass: { $0! >= 0.95 }, notes: [setting, cpuNote(2, 3)]),
            Row(figure: "network miss, CPU per image writing each to disk, against the delegate's" + scheduling, unit: "us",
                ours: cpuStats[0], floorName: "the bare streaming delegate's, same rounds", floor: cpuStats[1],
                goal: "<= floor + 50 us", pass: { _ in cpuStats[0].median <= cpuStats[1].median + 50 },
                notes: [cpuSource]),
            Row(figure: "network miss, CPU per image with `no-store`, against the delegate's" + scheduling, unit: "us",
                ours: cpuStats[2], floorName: "the bare streaming delegate's, same rounds and responses", floor: cpuStats[3],
                goal: "<= floor + 50 us", pass: { _ in cpuStats[2].median <= cpuStats[3].median + 50 },
                notes: [cpuSource, "round by round, ours less the delegate in the same round (median of "
                            + "\(cpu[2].count)): \(Report.format(Stats(zip(cpu[2], cpu[3]).map { $0 - $1 }).median)) us",
                        "the peer's route (Nuke's pipeline written from its description, same responses, "
                            + "no cache): \(Report.format(cpuStats[5].median)) us"] + (separately.map { [$0] } ?? [])),
            Row(figure: "network miss, context switches per image with `no-store`, against the delegate's" + scheduling,
                unit: "switches", ours: switchStats[2], floorName: "the bare streaming delegate's, same rounds and responses",
                floor: switchStats[3], goal: "none: the hands an image passes through, counted",
                pass: { _ in true },
                notes: [switchSource,
                        "the peer's route (Nuke's pipeline written from its description, same responses): "
                            + "\(Report.format(switchStats[5].median)) per image at "
                            + "\(Report.format(stats[5].median)) images/s, "
                            + "the delegate's \(Report.format(stats[3].median)) images/s"]),
            Row(figure: "network miss, context switches per image writing each to disk, against the delegate writing"
                    + scheduling,
                unit: "switches", ours: switchStats[0], floorName: "`StreamingLoader(writingTo:)`, same rounds",
                floor: switchStats[4], goal: "none: the hands an image passes through, counted", pass: { _ in true },
                notes: [switchSource, "the bare delegate's, writing nothing: \(Report.format(switchStats[1].median))"])]
}

/// Ours as an app with a progress ring uses it, against the bare streaming loader and against a
/// streaming loader that also writes each body to a file, in the same run; and what streaming
/// through a delegate costs against a completion handler.
private func networkWithProgress(_ config: Config, server: LoopbackServer, cache: ImageCache,
                                 streaming: StreamingLoader, scratch: Scratch) throws -> [Row] {
    let count = 200
    let loader = RawLoader()
    let bare = try compare(rounds: config.pick(quick: 3, full: 9)) { round in
        let urls = (0..<count).map { server.url("/stream/\(round)/\($0).png") }
        return Double(count) / (try seconds { try streaming.load(urls, inFlight: 8, queue: callbacks) })
    } floor: { round in
        let urls = (0..<count).map { server.url("/raw2/\(round)/\($0).png") }
        return Double(count) / (try seconds { try loader.load(urls, inFlight: 8, queue: callbacks) })
    }
    let writingFolder = scratch.url.appendingPathComponent("floor-files")
    try FileManager.default.createDirectory(at: writingFolder, withIntermediateDirectories: true)
    let writing = StreamingLoader(writingTo: writingFolder)
    defer { writing.invalidate() }
    var progressCalls = 0
    let againstStreaming = try compare(rounds: config.pick(quick: 3, full: 9)) { round in
        let urls = (0..<count).map { server.url("/progress/\(round)/\($0).png") }
        let time = try seconds { progressCalls += try cache.fetchAllWithProgress(urls) }
        cache.persistCacheToDisk()
        return Double(count) / time
    } floor: { round in
        let urls = (0..<count).map { server.url("/stream2/\(round)/\($0).png") }
        return Double(count) / (try seconds { try streaming.load(urls, inFlight: 8, queue: callbacks) })
    }
    guard progressCalls > 0 else { throw BenchmarkError("no progress was reported") }
    let againstWriting = try compare(rounds: config.pick(quick: 3, full: 9)) { round in
        let urls = (0..<count).map { server.url("/progress2/\(round)/\($0).png") }
        let time = try seconds { _ = try cache.fetchAllWithProgress(urls) }
        cache.persistCacheToDisk()
        return Double(count) / time
    } floor: { round in
        let urls = (0..<count).map { server.url("/write/\(round)/\($0).png") }
        return Double(count) / (try seconds { try writing.load(urls, inFlight: 8, queue: callbacks) })
    }
    let progressNote = "ours with an `onProgress` on every fetch (\(progressCalls) calls in all) and each image written to disk"
    return [Row(figure: "network miss with progress, against a bare streaming loader", unit: "images/s",
                ours: againstStreaming.ours, floorName: "`StreamingLoader`: a delegate that keeps each chunk, no checks, no disk",
                floor: againstStreaming.floor, goal: ">= 0.95x floor", pass: { $0! >= 0.95 },
                notes: [progressNote, "200 fetches issued at once, `maxConcurrentDownloads = 8`; the loader 8 in flight"]),
            Row(figure: "network miss with progress, against a streaming loader that writes each body", unit: "images/s",
                ours: againstWriting.ours,
                floorName: "`StreamingLoader(writingTo:)`: the same, plus POSIX write of a temporary file and rename per body",
                floor: againstWriting.floor, goal: ">= 0.95x floor", pass: { $0! >= 0.95 },
                notes: [progressNote]),
            Row(figure: "network miss, the platform's share: a bare streaming loader, same 200 images", unit: "images/s",
                ours: bare.ours, floorName: "raw `URLSession` data tasks with a completion handler, 8 in flight, same "
                    + "server and session settings, each body handed to the callback queue with one `async`",
                floor: bare.floor, goal: "none: what streaming through a delegate costs on this platform",
                pass: { _ in true },
                notes: ["a delegate that gets each chunk and keeps it, as a size limit needs (`StreamingLoader`); no checks, "
                        + "no disk"])]
}

// MARK: - Transfers while decodes run

/// 40 images of about 1 MB fetched at once, 8 downloads at a time, each decoded by a decoder that
/// takes 10 ms (a sleep: the time ImageIO takes for a large photo, without taking a CPU from the
/// transfers on a 2-core machine). Against the same transfers with the same decode run on
/// URLSession's serial delegate queue, where the cache decoded before it had a decode queue: there
/// a decode holds back every transfer's data.
func transfersWhileDecoding(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("decodepace")
    defer { scratch.remove() }
    let body = TestImages.png(width: 580, height: 580, seed: 3)
    let server = try makeServer(body: body)
    defer { server.stop() }
    let count = 40, decodeSeconds = 0.01
    let cache = makeCache("decodepace", in: scratch)
    cache.maxConcurrentDownloads = 8
    @Sendable func decode(_ data: Data) -> Int {
        Thread.sleep(forTimeInterval: decodeSeconds)
        return data.count
    }
    let onDelegateQueue = StreamingLoader(decode: { _ = decode($0) })
    defer { onDelegateQueue.invalidate() }
    let alone = StreamingLoader()
    defer { alone.invalidate() }
    var transfersAlone: [Double] = []
    let result = try compare(rounds: config.pick(quick: 3, full: 9)) { round in
        let countdown = Countdown(count)
        let time = try seconds {
            for index in 0..<count {
                cache.fetch(server.url("/decoded/\(round)/\(index).png"), decode: decode) { result in
                    countdown.done(ok: (try? result.get().value) == body.count)
                }
            }
            try countdown.wait("fetching \(count) images with a 10 ms decoder")
        }
        cache.persistCacheToDisk()  // the disk writes it queued finish before the floor's round
        transfersAlone.append(try seconds {
            try alone.load((0..<count).map { server.url("/alone/\(round)/\($0).png") }, inFlight: 8, queue: callbacks)
        })
        return time * 1e3
    } floor: { round in
        let urls = (0..<count).map { server.url("/delegate/\(round)/\($0).png") }
        return try seconds { try onDelegateQueue.load(urls, inFlight: 8, queue: callbacks) } * 1e3
    }
    let transfers = Stats(transfersAlone).median * 1e3
    let decodes = Double(count) * decodeSeconds / 2 * 1e3
    let size = String(format: "%.1f MB", Double(body.count) / 1e6)
    return [Row(figure: "40 images of \(size), each decoded in 10 ms, 8 in flight: time to the last one",
                unit: "ms", ours: result.ours,
                floorName: "a streaming delegate that runs the same decode on URLSession's delegate queue (the cache before "
                    + "its decode queue)",
                floor: result.floor, goal: "<= 0.75x floor: transfers go on while decodes run", pass: { $0! <= 0.75 },
                notes: ["the bound for ours: the longer of the transfers alone (\(Report.format(transfers)) ms, a streaming "
                        + "loader measured in the same rounds) and the decodes two at a time (\(Report.format(decodes)) ms)",
                        "ours also writes each image to disk; the floor writes nothing"])]
}

// MARK: - Urgent fetches under a backlog

/// The p95 latency of urgent fetches issued one after the other while 1,000 `slowFetch` URLs are
/// queued, against the same urgent fetches with nothing queued; the server takes 5 ms a request.
func urgentUnderBacklog(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("urgent")
    defer { scratch.remove() }
    let server = try makeServer(delay: 0.005)
    defer { server.stop() }
    let cache = makeCache("urgent", in: scratch, memoryCap: 2_000)
    let urgentCount = config.pick(quick: 20, full: 40)
    let backlogCount = 1_000
    var backlogDone: [Int] = []

    /// p95 in milliseconds of `urgentCount` fetches, one after the other, each to its callback.
    func urgentP95(_ label: String, _ round: Int) throws -> Double {
        let latencies: [Double] = try (0..<urgentCount).map { i in
            try seconds { try cache.fetchOne(server.url("/urgent/\(label)/\(round)/\(i).png")) } * 1e3
        }
        return percentile(latencies, 0.95)
    }
    let result = try compare(rounds: config.slowRounds) { round in
        let before = server.totalRequests
        let backlog = (0..<backlogCount).map { cache.slowFetch(server.url("/backlog/\(round)/\($0).png")) }
        let p95 = try urgentP95("busy", round)
        backlogDone.append(server.totalRequests - before - urgentCount)
        backlog.forEach { $0.cancel() }
        cache.drainDisk()
        return p95
    } floor: { round in
        try urgentP95("calm", round)
    }
    return [Row(figure: "urgent fetch p95 under a 1,000-image slowFetch backlog (server adds 5 ms)", unit: "ms",
                ours: result.ours, floorName: "p95 of the same urgent fetches with no backlog",
                floor: result.floor, goal: "<= 1.25x floor", pass: { $0! <= 1.25 },
                notes: ["\(urgentCount) urgent fetches one after the other per round, issued right after queuing the backlog; "
                        + "the slow lane downloaded \(Report.format(Stats(backlogDone.map(Double.init)).median)) backlog "
                        + "images meanwhile (median); the rest was cancelled"])]
}

// MARK: - Urgent fetch behind drip-fed responses

/// How long an urgent fetch waits while six drip-fed responses (one byte every 200 ms) hold every
/// fast-lane slot, against the time limit per download, whose first expiry frees a slot.
func urgentBehindDripFed(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("drip")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let limit: TimeInterval = 1
    let cache = makeCache("drip", in: scratch)
    cache.downloadTimeLimit = limit
    cache.retryPolicy = .never
    var drip = LoopbackServer.Response.ok(TestImages.photo)
    drip.behavior = .slowBody(chunkSize: 1, interval: 0.2)
    try cache.fetchOne(server.url("/warm-up.png"))  // the first fetch after launch is another figure
    var delays: [Double] = []
    for round in 0..<config.pick(quick: 2, full: 5) {
        let urls = (0..<6).map { server.url("/drip/\(round)/\($0).png") }
        urls.forEach { server.set($0.path, drip) }
        let drips = Countdown(urls.count)
        for url in urls { cache.fetch(url) { _, image in drips.done(ok: image == nil) } }
        for url in urls where !server.waitForRequests(url.path, count: 1, timeout: 60) {
            throw BenchmarkError("the drip-fed request \(url.path) did not arrive")
        }
        // Every fast-lane slot is held now.
        delays.append(try seconds { try cache.fetchOne(server.url("/urgent/\(round).png")) })
        try drips.wait("six drip-fed fetches (expected to fail)")
        for url in urls {
            guard case .network(.timedOut, _)? = cache.error(for: url) else {
                throw BenchmarkError("\(url.path): expected a timeout, got \(String(describing: cache.error(for: url)))")
            }
        }
    }
    let hours = Double(TestImages.photo.count) * 0.2 / 3600
    return [Row(figure: "six drip-fed responses hold every fast-lane slot: delay of an urgent fetch", unit: "s",
                ours: Stats(delays), floorName: "`downloadTimeLimit`, the time limit per download attempt",
                floor: Stats([limit]), goal: "<= the limit", pass: { $0! <= 1 },
                notes: ["the urgent fetch is issued once the server has all six drip-fed requests (one byte every 200 ms "
                        + "of a \(Report.format(Double(TestImages.photo.count) / 1000)) KB image, about \(Report.format(hours)) "
                        + "hours each); `maxConcurrentDownloads` 6, no retries; every drip-fed fetch ends in `.timedOut`",
                        "delay minus the limit, per round: " + delays.map { Report.format(($0 - limit) * 1e3) + " ms" }
                            .joined(separator: ", ") + " (the deadlines start as the drip-fed requests are made, "
                            + "before the urgent fetch is issued)"])]
}

// MARK: - One URL, many fetches

/// 1,000 fetches of one URL issued at once: one request, and all callbacks about as soon as a
/// single fetch's; the server takes 5 ms a request.
func manyFetchesOfOneURL(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("dedup")
    defer { scratch.remove() }
    let server = try makeServer(delay: 0.005)
    defer { server.stop() }
    let cache = makeCache("dedup", in: scratch)
    let fetches = 1_000
    var requests: [Int] = []
    var issuing: [Double] = []
    let result = try compare(rounds: config.rounds) { round in
        let path = "/many/\(round).png"
        let url = server.url(path)
        let countdown = Countdown(fetches)
        let ms = try seconds {
            issuing.append(seconds {
                for _ in 0..<fetches { cache.fetch(url) { _, image in countdown.done(ok: image != nil) } }
            } * 1e3)
            try countdown.wait("\(fetches) fetches of one URL")
        } * 1e3
        requests.append(server.requestCount(path))
        return ms
    } floor: { round in
        try seconds { try cache.fetchOne(server.url("/one/\(round).png")) } * 1e3
    }
    let oneRequestEach = requests.allSatisfy { $0 == 1 }
    return [Row(figure: "1,000 concurrent fetches of one URL (server adds 5 ms)", unit: "ms", ours: result.ours,
                floorName: "one fetch of a new URL, to its callback",
                floor: result.floor, goal: "exactly 1 request; <= 1.1x floor",
                pass: { oneRequestEach && $0! <= 1.1 },
                notes: ["requests per round: " + (oneRequestEach ? "1 in every round" : requests.map(String.init).joined(separator: ", ")),
                        "the \(fetches) `fetch` calls themselves took \(Report.format(Stats(issuing).median)) ms (median)"])]
}

// MARK: - Resident memory

/// Resident growth while 10,000 distinct 50 KB images are fetched through a cache whose memory
/// budget is 5 MB (100 images); each side runs in a child process of its own, so that neither
/// inherits the other's heap.
func residentGrowth(_ config: Config) throws -> [Row] {
    let count = config.pick(quick: 1_000, full: 10_000)
    let cap = 100  // images of 50 KB in the 5 MB budget
    var ours: [Double] = [], floor: [Double] = []
    for _ in 0..<config.pick(quick: 1, full: 3) {
        ours.append(try runChild(["--child", "resident-ours", String(count)], printing: ["growth"])["growth", default: 0] / 1e6)
        floor.append(try runChild(["--child", "resident-floor", String(count)], printing: ["growth"])["growth", default: 0] / 1e6)
    }
    let budget = Double(cap * TestImages.photo.count) * 1.5 / 1e6
    let result = (ours: Stats(ours), floor: Stats(floor))
    return [Row(figure: "memory: \(Report.format(Double(count))) fetched 50 KB images, 5 MB byte budget, resident growth",
                unit: "MB", ours: result.ours,
                floorName: "raw `URLSession`, 8 in flight, keeping the last 100 images in an array",
                floor: result.floor, goal: "<= budget x 1.5 = \(Report.format(budget)) MB",
                pass: { _ in result.ours.median <= budget },
                notes: ["VmRSS after minus VmRSS before the first 50 KB image (after a warm-up with thumbnails), in a fresh "
                        + "child process for each round and side; fetches 8 at a time; imageMemoryMaxBytes = 100 images' "
                        + "bytes, the count cap out of the way; the second chance is inside the budget. The floor keeps the same 100 "
                        + "images and grows more than the goal too: Linux URLSession and glibc's per-thread arenas keep "
                        + "buffers of their own (with MALLOC_ARENA_MAX=2 both sides grow ~10.5 MB)"])]
}

/// Runs this program again with `arguments` and returns the numbers it prints, one "NAME NUMBER"
/// line each (the last line of a name counts); throws unless it exits with 0 and printed `names`.
func runChild(_ arguments: [String], printing names: [String]) throws -> [String: Double] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executablePath())
    process.arguments = ["--directory", scratchParent.path] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: output, as: UTF8.self)
    var values: [String: Double] = [:]
    for line in text.split(separator: "\n") {
        let parts = line.split(separator: " ")
        if parts.count == 2, let number = Double(parts[1]) { values[String(parts[0])] = number }
    }
    guard process.terminationStatus == 0, names.allSatisfy({ values[$0] != nil }) else {
        throw BenchmarkError("child \(arguments.joined(separator: " ")) failed (status \(process.terminationStatus)): \(text)")
    }
    return values
}

/// The child process of `residentGrowth`: fetches `count` images one way and prints "growth BYTES".
///
/// The warm-up uses 270-byte thumbnails from a second server, so that the threads, libcurl, the
/// session and the disk folder exist before the first reading, but no 50 KB image does: the
/// growth then counts the images that stay in memory as well as what the churn costs.
func residentChild(_ kind: String, count: Int) throws {
    let server = try makeServer()
    defer { server.stop() }
    let thumbnails = try makeServer(body: TestImages.thumbnail)
    defer { thumbnails.stop() }
    let scratch = try Scratch("resident")
    defer { scratch.remove() }
    let warmUp = (0..<50).map { thumbnails.url("/warm/\($0).png") }
    let urls = (0..<count).map { server.url("/resident/\($0).png") }
    var before = 0, after = 0
    switch kind {
    case "resident-ours":
        try RawLoader().load(warmUp, inFlight: 8)
        let cache = makeCache("resident", in: scratch, memoryCap: 100_000)
        cache.imageMemoryMaxBytes = 100 * TestImages.photo.count
        cache.maxConcurrentDownloads = 8
        try cache.fetchWindowed(warmUp, inFlight: 8)
        cache.purgeMemory()
        cache.drainDisk()
        before = residentBytes() ?? 0
        try cache.fetchWindowed(urls, inFlight: 8)
        cache.drainDisk()
        after = residentBytes() ?? 0
    case "resident-floor":
        let loader = RawLoader()
        try loader.load(warmUp, inFlight: 8)
        let kept = LastImages(100)
        before = residentBytes() ?? 0
        try loader.load(urls, inFlight: 8, received: kept.keep)
        after = residentBytes() ?? 0
    default:
        throw BenchmarkError("unknown child \(kind)")
    }
    print("growth \(after - before)")
}

/// The floor's memory tier: the last `count` images, in an array used as a ring.
final class LastImages: @unchecked Sendable {
    private let lock = NSLock()
    private var images: [Data] = []
    private var next = 0
    private let count: Int

    init(_ count: Int) { self.count = count }

    @Sendable func keep(_ data: Data) {
        lock.withLock {
            if images.count < count { images.append(data) } else { images[next % count] = data }
            next += 1
        }
    }
}

// MARK: - Disk limit

/// The image files' total size, sampled every 5 ms from another thread while 10,000 distinct
/// 50 KB images are downloaded with `diskMaxBytes` = 50 MB; the largest sample counts.
func diskLimitKept(_ config: Config) throws -> [Row] {
    let scratch = try Scratch("disklimit")
    defer { scratch.remove() }
    let server = try makeServer()
    defer { server.stop() }
    let count = config.pick(quick: 2_000, full: 10_000)
    let limit = config.pick(quick: 10_000_000, full: 50_000_000)
    let cache = makeCache("disklimit", in: scratch, memoryCap: 100)
    cache.diskMaxBytes = limit
    cache.maxConcurrentDownloads = 8
    let largest = Locked(0)
    let stop = Locked(false)
    let sampler = Thread {
        while !stop.value {
            let bytes = folderBytes(cache.folder)
            largest.mutate { $0 = max($0, bytes) }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
    sampler.start()
    try cache.fetchWindowed((0..<count).map { server.url("/disk/\($0).png") }, inFlight: 8)
    cache.drainDisk()
    stop.mutate { $0 = true }
    let final = folderBytes(cache.folder)
    let goal = Double(limit) * 1.1 / 1e6
    let seen = Stats([Double(max(largest.value, final)) / 1e6])
    return [Row(figure: "disk: \(Report.format(Double(count))) downloads of 50 KB, diskMaxBytes \(limit / 1_000_000) MB, largest folder",
                unit: "MB", ours: seen, floorName: "the limit", floor: Stats([Double(limit) / 1e6]),
                goal: "<= limit x 1.1 = \(Report.format(goal)) MB", pass: { _ in seen.median <= goal },
                notes: ["sampled every 5 ms from another thread during the run, and once after it: \(Report.format(Double(final) / 1e6)) MB at the end; "
                        + "the limit is kept on the disk queue, never on the fetching threads"])]
}

/// The bytes of the files in `folder`, temporary files included.
private func folderBytes(_ folder: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.reduce(0) { total, name in
        var info = stat()
        return total + (lstat(folder.appendingPathComponent(name).path, &info) == 0 ? Int(info.st_size) : 0)
    }
}
