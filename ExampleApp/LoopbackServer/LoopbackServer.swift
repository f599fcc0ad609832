import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real HTTP/1.1 server on 127.0.0.1 (ephemeral port), built on POSIX sockets: the tests, the
/// benchmarks and the example app serve images with it.
///
/// - One thread accepts connections; every accepted connection gets its own thread.
/// - Connections are kept alive (HTTP/1.1) until the client closes them or sends `Connection: close`.
/// - All shared state lives in `State` and is protected by one `NSLock`.
/// - Worker threads only reference `State`, never the `LoopbackServer`, so `deinit` runs and calls `stop()`.
public final class LoopbackServer: @unchecked Sendable {

    /// What the server does for a path.
    public struct Response: Sendable {
        public var status: Int = 200
        /// Sent as given. `Content-Length` is added automatically (from `declaredLength` or `body.count`)
        /// unless present here; `Content-Type: application/octet-stream` is added unless present here.
        public var headers: [String: String] = [:]
        public var body: Data = Data()
        /// Wait this long before sending anything (interruptible; a client leaving counts as a disconnect).
        public var delay: TimeInterval = 0
        /// Send this Content-Length instead of `body.count`. When it differs from `body.count`
        /// the connection is closed after the body has been sent (truncated body).
        public var declaredLength: Int? = nil
        /// False: no `Content-Length` at all, and the connection closes after the body (its end).
        public var sendsLength = true
        public var behavior: Behavior = .normal

        public enum Behavior: Sendable {
            /// Send status line, headers, body.
            case normal
            /// Read the request, then close the connection without any reply.
            case hangUp
            /// Read the request, then hold the connection open and send nothing
            /// until the client goes away or the server stops.
            case neverAnswer
            /// Send headers, then the body in chunks with a pause between them.
            case slowBody(chunkSize: Int, interval: TimeInterval)
            /// Send headers, then a body of `length` bytes made as it is sent, `chunk(offset, count)`
            /// giving the bytes from `offset` (at most 256 KiB at a time): a body of any size without
            /// holding it. `chunk` may block (to hold the body at a point until a test says). `body`
            /// is ignored; `declaredLength`, if set, is announced instead of `length`.
            case generated(length: Int, chunk: @Sendable (_ offset: Int, _ count: Int) -> Data)
        }

        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), delay: TimeInterval = 0,
                    declaredLength: Int? = nil, behavior: Behavior = .normal) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
            self.declaredLength = declaredLength
            self.behavior = behavior
        }

        public static func ok(_ body: Data, contentType: String = "image/png") -> Response {
            Response(status: 200, headers: ["Content-Type": contentType], body: body)
        }

        public static func status(_ code: Int, body: Data = Data("error".utf8)) -> Response {
            Response(status: code, headers: ["Content-Type": "text/plain"], body: body)
        }
    }

    public struct ServerError: Error, CustomStringConvertible {
        public let operation: String
        public let code: Int32
        public var description: String { "LoopbackServer: \(operation) failed: \(String(cString: strerror(code))) (errno \(code))" }
    }

    public let port: Int
    private let state: State

    /// Binds 127.0.0.1 and starts the accept thread. `port` 0 (the default) picks an ephemeral port;
    /// another port fails with `ServerError` (operation "bind") when it is taken.
    public init(port: Int = 0) throws {
        let fd = socket(AF_INET, State.streamType, 0)
        guard fd >= 0 else { throw ServerError(operation: "socket", code: errno) }

        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))

        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian  // 127.0.0.1
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw ServerError(operation: "bind", code: code)
        }
        guard listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw ServerError(operation: "listen", code: code)
        }

        var boundAddress = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &boundAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(fd, $0, &length)
            }
        }
        guard named == 0 else {
            let code = errno
            close(fd)
            throw ServerError(operation: "getsockname", code: code)
        }
        // Non-blocking listener: accept() never blocks after poll() said "readable" but the peer reset.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)

        self.port = Int(UInt16(bigEndian: boundAddress.sin_port))
        state = State(listenFD: fd)
        state.startAcceptThread()
    }

    deinit {
        stop()
    }

    /// "http://127.0.0.1:<port><path>"; `path` starts with "/".
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Route for an exact request path (query string included as sent, e.g. "/a.png?x=1").
    public func set(_ path: String, _ response: Response) {
        set(path, sequence: [response])
    }

    /// Successive requests for `path` get successive responses; the last one repeats.
    public func set(_ path: String, sequence: [Response]) {
        state.lock.withLock {
            if sequence.isEmpty {
                state.routes[path] = nil
            } else {
                state.routes[path] = sequence
            }
            state.sequencePositions[path] = 0
        }
    }

    /// Answers paths that have no route set: called on the connection's thread, outside the
    /// server's lock, for each such request; nil (or no handler) answers with `fallback`.
    /// The requests it answers are counted like any other. Nil by default.
    public var handler: (@Sendable (_ path: String) -> Response?)? {
        get { state.lock.withLock { state.handler } }
        set { state.lock.withLock { state.handler = newValue } }
    }

    /// Answers any request by its path and headers (names lowercased) before the routes and
    /// `handler` do (a route's sequence moves on all the same): nil passes it on to them. Called on the connection's thread, outside the
    /// server's lock. Nil by default.
    public var headersHandler: (@Sendable (_ path: String, _ headers: [String: String]) -> Response?)? {
        get { state.lock.withLock { state.headersHandler } }
        set { state.lock.withLock { state.headersHandler = newValue } }
    }

    /// When each request arrived (its head read), in seconds of the monotonic clock, in order;
    /// `resetCounters` clears them.
    public var arrivals: [TimeInterval] {
        state.lock.withLock { state.arrivals }
    }

    /// Used for unknown paths; default `.status(404)`.
    public var fallback: Response {
        get { state.lock.withLock { state.fallback } }
        set { state.lock.withLock { state.fallback = newValue } }
    }

    /// Completed requests (request line + headers) received for this path.
    public func requestCount(_ path: String) -> Int {
        state.lock.withLock { state.requestCounts[path, default: 0] }
    }

    /// Whether `lastRequestHeaders` is kept (true by default). A benchmark that measures the memory
    /// of its process turns it off: with 10,000 paths the headers alone take megabytes.
    public var recordsRequestHeaders: Bool {
        get { state.lock.withLock { state.recordsHeaders } }
        set { state.lock.withLock { state.recordsHeaders = newValue } }
    }

    /// The headers of the last request received for this path, names lowercased; nil before the first.
    public func lastRequestHeaders(_ path: String) -> [String: String]? {
        state.lock.withLock { state.lastHeaders[path] }
    }

    /// How many requests for this path carried `If-None-Match` or `If-Modified-Since`, and how many
    /// of those were answered `304 Not Modified` (a response whose `ETag` or `Last-Modified` header
    /// matches is answered so, without its body).
    public func conditionalCount(_ path: String) -> (asked: Int, notModified: Int) {
        state.lock.withLock { (state.conditionalCounts[path, default: 0], state.notModifiedCounts[path, default: 0]) }
    }

    public var totalRequests: Int {
        state.lock.withLock { state.totalRequests }
    }

    /// Requests being handled right now (from request received to response finished).
    public var activeRequests: Int {
        state.lock.withLock { state.active }
    }

    /// Times the client closed the connection before the full response was sent.
    public func disconnectCount(_ path: String) -> Int {
        state.lock.withLock { state.disconnectCounts[path, default: 0] }
    }

    /// Blocks until `requestCount(path) >= count`; returns false on timeout.
    public func waitForRequests(_ path: String, count: Int, timeout: TimeInterval) -> Bool {
        waitUntil(timeout: timeout) { $0.requestCounts[path, default: 0] >= count }
    }

    /// Blocks until `disconnectCount(path) >= count`; returns false on timeout.
    public func waitForDisconnects(_ path: String, count: Int, timeout: TimeInterval) -> Bool {
        waitUntil(timeout: timeout) { $0.disconnectCounts[path, default: 0] >= count }
    }

    /// Highest number of requests being handled at the same moment
    /// (from request received to response finished).
    public var maxConcurrentRequests: Int {
        state.lock.withLock { state.maxActive }
    }

    /// The most connections open at once, counted as each is accepted: one whose client has closed
    /// its end already counts no more, even before its thread has noticed.
    public var maxOpenConnections: Int {
        state.lock.withLock { state.maxOpen }
    }

    /// Resets request/disconnect counters and `maxConcurrentRequests` (to the number of requests
    /// in flight right now). Routes and sequence positions are kept.
    public func resetCounters() {
        state.lock.withLock {
            state.requestCounts.removeAll()
            state.disconnectCounts.removeAll()
            state.conditionalCounts.removeAll()
            state.notModifiedCounts.removeAll()
            state.totalRequests = 0
            state.arrivals.removeAll()
            state.maxActive = state.active
            state.maxOpen = state.clientFDs.filter { !state.clientHasGone($0) }.count
        }
    }

    /// Stops accepting, shuts down all client connections, wakes delayed handlers and waits
    /// (up to 2 s) for every server thread to finish. Idempotent; also called from `deinit`.
    public func stop() {
        state.lock.withLock {
            guard !state.stopped else { return }
            state.stopped = true
            if state.listenFD >= 0 {
                _ = shutdown(state.listenFD, Int32(SHUT_RDWR))
            }
            for fd in state.clientFDs {
                _ = shutdown(fd, Int32(SHUT_RDWR))
            }
        }
        _ = waitUntil(timeout: 2) { $0.runningThreads == 0 }
    }

    private func waitUntil(timeout: TimeInterval, _ condition: (State) -> Bool) -> Bool {
        let deadline = State.now() + timeout
        while true {
            if state.lock.withLock({ condition(state) }) { return true }
            if State.now() >= deadline { return false }
            usleep(2_000)
        }
    }

    // MARK: - Implementation

    private struct Request {
        var method: String
        var path: String
        var closeAfter: Bool
        var headers: [String: String]
    }

    private enum WaitOutcome {
        case elapsed, clientGone, stopped
    }

    private final class State: @unchecked Sendable {
        let lock = NSLock()
        // Everything below is guarded by `lock`.
        var listenFD: Int32
        var stopped = false
        var clientFDs = Set<Int32>()
        var runningThreads = 0
        var routes: [String: [Response]] = [:]
        var sequencePositions: [String: Int] = [:]
        var fallback: Response = .status(404)
        var handler: (@Sendable (String) -> Response?)?
        var headersHandler: (@Sendable (String, [String: String]) -> Response?)?
        var arrivals: [TimeInterval] = []
        var requestCounts: [String: Int] = [:]
        var lastHeaders: [String: [String: String]] = [:]
        var recordsHeaders = true
        var conditionalCounts: [String: Int] = [:]
        var notModifiedCounts: [String: Int] = [:]
        var disconnectCounts: [String: Int] = [:]
        var totalRequests = 0
        var active = 0
        var maxActive = 0
        var maxOpen = 0

        init(listenFD: Int32) {
            self.listenFD = listenFD
        }

        #if canImport(Glibc)
        static let streamType = Int32(SOCK_STREAM.rawValue)
        static let sendFlags = Int32(MSG_NOSIGNAL)  // a client that went away must not raise SIGPIPE
        #else
        static let streamType = SOCK_STREAM
        static let sendFlags: Int32 = 0  // Darwin: SO_NOSIGPIPE is set on each accepted socket instead
        #endif

        static func now() -> TimeInterval {
            var ts = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ts)
            return TimeInterval(ts.tv_sec) + TimeInterval(ts.tv_nsec) / 1_000_000_000
        }

        var isStopped: Bool { lock.withLock { stopped } }

        // MARK: Threads

        func startAcceptThread() {
            let fd = lock.withLock { () -> Int32 in
                runningThreads += 1
                return listenFD
            }
            let thread = Thread { [self] in
                acceptLoop(listenFD: fd)
                lock.withLock { runningThreads -= 1 }
            }
            thread.name = "LoopbackServer.accept"
            thread.start()
        }

        private func acceptLoop(listenFD fd: Int32) {
            while !isStopped {
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, 50)
                if ready <= 0 { continue }  // timeout or EINTR: re-check `stopped`
                let clientFD = accept(fd, nil, nil)
                if clientFD < 0 {
                    let code = errno
                    if code != EAGAIN && code != EWOULDBLOCK && code != EINTR && code != ECONNABORTED {
                        usleep(1_000)  // e.g. EMFILE or shut down: avoid spinning; loop re-checks `stopped`
                    }
                    continue
                }
                let registered = lock.withLock { () -> Bool in
                    guard !stopped else { return false }
                    clientFDs.insert(clientFD)
                    maxOpen = max(maxOpen, clientFDs.filter { !clientHasGone($0) }.count)
                    runningThreads += 1
                    return true
                }
                guard registered else {
                    close(clientFD)
                    break
                }
                var yes: Int32 = 1
                _ = setsockopt(clientFD, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
                #if canImport(Darwin)
                _ = setsockopt(clientFD, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
                #endif
                let thread = Thread { [self] in
                    serveConnection(clientFD)
                    lock.withLock {
                        clientFDs.remove(clientFD)
                        close(clientFD)  // under the lock, so stop() never shuts down a reused descriptor
                        runningThreads -= 1
                    }
                }
                thread.name = "LoopbackServer.connection"
                thread.start()
            }
            lock.withLock {
                close(listenFD)
                listenFD = -1
            }
        }

        // MARK: Connection

        private func serveConnection(_ fd: Int32) {
            var buffer: [UInt8] = []
            while !isStopped {
                guard let request = readRequest(fd, &buffer) else { return }
                let response = beginRequest(path: request.path, headers: request.headers)
                let keepOpen = respond(fd, request: request, response: response)
                lock.withLock { active -= 1 }
                if !keepOpen { return }
            }
        }

        private func beginRequest(path: String, headers: [String: String]) -> Response {
            let arrived = Self.now()
            var byHeaders: (@Sendable (String, [String: String]) -> Response?)?
            let (routed, handler, fallback) = lock.withLock { () -> (Response?, (@Sendable (String) -> Response?)?, Response) in
                arrivals.append(arrived)
                byHeaders = headersHandler
                requestCounts[path, default: 0] += 1
                if recordsHeaders { lastHeaders[path] = headers }
                totalRequests += 1
                active += 1
                maxActive = max(maxActive, active)
                guard let sequence = routes[path], !sequence.isEmpty else { return (nil, self.handler, self.fallback) }
                let position = sequencePositions[path, default: 0]
                sequencePositions[path] = position + 1
                return (sequence[min(position, sequence.count - 1)], nil, self.fallback)
            }
            let response = byHeaders?(path, headers) ?? routed ?? handler?(path) ?? fallback
            // A conditional request whose validator matches the response's gets 304 and no body.
            let etag = response.headers.first { $0.key.lowercased() == "etag" }?.value
            let modified = response.headers.first { $0.key.lowercased() == "last-modified" }?.value
            let asked = headers["if-none-match"] != nil || headers["if-modified-since"] != nil
            let current = headers["if-none-match"].map { $0 == etag } ?? (headers["if-modified-since"].map { $0 == modified } ?? false)
            lock.withLock {
                if asked { conditionalCounts[path, default: 0] += 1 }
                if asked && current { notModifiedCounts[path, default: 0] += 1 }
            }
            guard asked, current, response.status == 200 else { return response }
            return Response(status: 304, headers: response.headers.filter { $0.key.lowercased() != "content-type" })
        }

        private func countDisconnect(_ path: String) {
            lock.withLock {
                guard !stopped else { return }  // our own shutdown is not a client disconnect
                disconnectCounts[path, default: 0] += 1
            }
        }

        /// Returns whether the connection stays open for another request.
        private func respond(_ fd: Int32, request: Request, response: Response) -> Bool {
            let path = request.path
            if response.delay > 0 {
                switch wait(fd, duration: response.delay) {
                case .elapsed: break
                case .clientGone: countDisconnect(path); return false
                case .stopped: return false
                }
            }

            switch response.behavior {
            case .hangUp:
                return false
            case .neverAnswer:
                if wait(fd, duration: .infinity) == .clientGone { countDisconnect(path) }
                return false
            case .normal, .slowBody, .generated:
                break
            }

            let body = request.method == "HEAD" ? Data() : response.body
            var length = response.body.count
            if case .generated(let generated, _) = response.behavior { length = generated }
            let declared = response.declaredLength ?? length
            var closeAfter = request.closeAfter || (response.declaredLength != nil && declared != length)
                || !response.sendsLength

            var head = "HTTP/1.1 \(response.status) \(Self.reasonPhrase(response.status))\r\n"
            var hasContentType = false
            var hasContentLength = false
            var hasConnection = false
            for (name, value) in response.headers {
                switch name.lowercased() {
                case "content-type": hasContentType = true
                case "content-length": hasContentLength = true
                case "connection":
                    hasConnection = true
                    if value.lowercased().contains("close") { closeAfter = true }
                default: break
                }
                head += "\(name): \(value)\r\n"
            }
            if !hasContentType { head += "Content-Type: application/octet-stream\r\n" }
            if !hasContentLength, response.sendsLength { head += "Content-Length: \(declared)\r\n" }
            if !hasConnection { head += closeAfter ? "Connection: close\r\n" : "Connection: keep-alive\r\n" }
            head += "\r\n"

            switch response.behavior {
            case .generated(let length, let chunk):
                guard sendAll(fd, Data(head.utf8)) else {
                    countDisconnect(path)
                    return false
                }
                var offset = 0
                while offset < length, request.method != "HEAD" {
                    let bytes = chunk(offset, min(256 * 1024, length - offset))
                    guard !bytes.isEmpty, sendAll(fd, bytes) else {
                        countDisconnect(path)
                        return false
                    }
                    offset += bytes.count
                }
            case .slowBody(let chunkSize, let interval):
                guard sendAll(fd, Data(head.utf8)) else {
                    countDisconnect(path)
                    return false
                }
                let step = max(1, chunkSize)
                var offset = 0
                while offset < body.count {
                    if offset > 0 {
                        switch wait(fd, duration: interval) {
                        case .elapsed: break
                        case .clientGone: countDisconnect(path); return false
                        case .stopped: return false
                        }
                    }
                    let end = min(body.count, offset + step)
                    guard sendAll(fd, body.subdata(in: offset..<end)) else {
                        countDisconnect(path)
                        return false
                    }
                    offset = end
                }
            default:
                var packet = Data(head.utf8)
                packet.append(body)
                guard sendAll(fd, packet) else {
                    countDisconnect(path)
                    return false
                }
            }
            return !closeAfter
        }

        // MARK: Socket helpers

        /// Reads one request (request line + headers, discarding any Content-Length body).
        /// Returns nil when the client closed, on error, or when the server stops.
        private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> Request? {
            while true {
                if let end = Self.headerEnd(buffer) {
                    let headText = String(decoding: buffer[0..<end], as: UTF8.self)
                    buffer.removeFirst(end + 4)
                    guard let parsed = Self.parse(headText) else { return nil }
                    // Read and discard a request body, if any.
                    while buffer.count < parsed.bodyLength {
                        guard receive(fd, &buffer) else { return nil }
                    }
                    buffer.removeFirst(parsed.bodyLength)
                    return Request(method: parsed.method, path: parsed.path, closeAfter: parsed.closeAfter,
                                   headers: parsed.headers)
                }
                if buffer.count > 1 << 20 { return nil }  // absurd header size
                guard receive(fd, &buffer) else { return nil }
            }
        }

        /// Appends received bytes to `buffer`; false on EOF, error or stop.
        private func receive(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
            var chunk = [UInt8](repeating: 0, count: 16_384)
            while true {
                if isStopped { return false }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, 100)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                if ready == 0 { continue }
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    buffer.append(contentsOf: chunk[0..<count])
                    return true
                }
                if count == 0 { return false }
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                return false
            }
        }

        private func sendAll(_ fd: Int32, _ data: Data) -> Bool {
            data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Bool in
                guard let base = raw.baseAddress else { return true }
                var offset = 0
                while offset < raw.count {
                    let sent = send(fd, base + offset, raw.count - offset, Self.sendFlags)
                    if sent > 0 {
                        offset += sent
                    } else if sent < 0 && errno == EINTR {
                        continue
                    } else {
                        return false
                    }
                }
                return true
            }
        }

        /// True when the peer has closed (EOF) or reset the connection. Does not consume data.
        func clientHasGone(_ fd: Int32) -> Bool {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 0)
            if ready <= 0 { return false }
            var byte: UInt8 = 0
            let count = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
            if count == 0 { return true }
            if count < 0 {
                let code = errno
                return code != EAGAIN && code != EWOULDBLOCK && code != EINTR
            }
            return false  // the client sent more data (e.g. a pipelined request): still there
        }

        /// Sleeps in small slices, watching for the client leaving and the server stopping.
        private func wait(_ fd: Int32, duration: TimeInterval) -> WaitOutcome {
            let deadline = Self.now() + duration
            while true {
                if isStopped { return .stopped }
                if clientHasGone(fd) { return .clientGone }
                let remaining = deadline - Self.now()
                if remaining <= 0 { return .elapsed }
                usleep(UInt32(min(remaining, 0.005) * 1_000_000) + 1)
            }
        }

        // MARK: Parsing

        private struct ParsedHead {
            var method: String
            var path: String
            var closeAfter: Bool
            var bodyLength: Int
            var headers: [String: String]
        }

        private static func headerEnd(_ buffer: [UInt8]) -> Int? {
            guard buffer.count >= 4 else { return nil }
            for i in 0...(buffer.count - 4)
            where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                return i
            }
            return nil
        }

        private static func parse(_ head: String) -> ParsedHead? {
            var lines = head.components(separatedBy: "\r\n")
            // Tolerate stray empty lines before the request line (RFC 9112 §2.2).
            while let first = lines.first, first.isEmpty { lines.removeFirst() }
            guard let requestLine = lines.first else { return nil }
            let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2 else { return nil }
            let method = String(parts[0]).uppercased()
            var target = String(parts[1])
            let version = parts.count >= 3 ? String(parts[2]).uppercased() : "HTTP/1.0"
            // Absolute-form target ("http://host:port/path"): keep only the path part.
            if let schemeRange = target.range(of: "://") {
                let afterScheme = target[schemeRange.upperBound...]
                if let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                    target = String(afterScheme[slash...])
                    if target.hasPrefix("?") { target = "/" + target }
                } else {
                    target = "/"
                }
            }

            var connection = ""
            var bodyLength = 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = headers[name].map { "\($0), \(value)" } ?? value  // repeated fields join (RFC 9110 §5.3)
                switch name {
                case "connection": connection = value.lowercased()
                case "content-length": bodyLength = max(0, Int(value) ?? 0)
                default: break
                }
            }
            let closeAfter: Bool
            if connection.contains("close") {
                closeAfter = true
            } else if version == "HTTP/1.0" {
                closeAfter = !connection.contains("keep-alive")
            } else {
                closeAfter = false
            }
            return ParsedHead(method: method, path: target, closeAfter: closeAfter, bodyLength: bodyLength, headers: headers)
        }

        private static func reasonPhrase(_ status: Int) -> String {
            switch status {
            case 100: return "Continue"
            case 200: return "OK"
            case 201: return "Created"
            case 202: return "Accepted"
            case 204: return "No Content"
            case 206: return "Partial Content"
            case 301: return "Moved Permanently"
            case 302: return "Found"
            case 303: return "See Other"
            case 304: return "Not Modified"
            case 307: return "Temporary Redirect"
            case 308: return "Permanent Redirect"
            case 400: return "Bad Request"
            case 401: return "Unauthorized"
            case 403: return "Forbidden"
            case 404: return "Not Found"
            case 405: return "Method Not Allowed"
            case 408: return "Request Timeout"
            case 410: return "Gone"
            case 416: return "Range Not Satisfiable"
            case 429: return "Too Many Requests"
            case 500: return "Internal Server Error"
            case 501: return "Not Implemented"
            case 502: return "Bad Gateway"
            case 503: return "Service Unavailable"
            case 504: return "Gateway Timeout"
            default: return "Status"
            }
        }
    }
}
