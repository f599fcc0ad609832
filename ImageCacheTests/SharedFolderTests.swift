import Foundation
import XCTest
import LoopbackServer

/// Several real processes open `ImageCache(uniqueName: "shared")` on one folder at once, as an app
/// and its extensions do, and a last process checks what they left: no image lost or corrupt.
/// The children are `SharedFolderHelper` (ImageCacheTests/SharedFolderHelper/main.swift).
final class SharedFolderTests: CacheTestCase {
    private let imageCount = 40

    private var helper: URL {
        // The test bundle and the helper are built side by side.
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("SharedFolderHelper")
    }

    /// What the server sends for image `i`: a valid PNG of its own size and pixels, ~20 KB.
    private lazy var bodies: [Data] = (0..<imageCount).map { i in
        var generator = SplitMix(seed: UInt64(i) + 1)
        let width = 100 + i, height = 60
        let pixels = (0..<width * height * 3).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        return PNGEncoder.rgb(width: width, height: height, pixels: pixels)
    }

    private func serveImages() {
        for i in 0..<imageCount { server.set("/image\(i).png", .ok(bodies[i])) }
    }

    /// The line the helper's `check` mode prints for image `i` when it has exactly the served bytes.
    private func expectedLine(_ i: Int) -> String {
        "\(i) \(bodies[i].count) \(String(Self.fnv1a(bodies[i]), radix: 16))"
    }

    /// FNV-1a, 64 bits, as the helper computes it.
    private static func fnv1a(_ data: Data) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    /// Arguments for one helper run over images `first..<first + count`.
    private func arguments(_ mode: String, first: Int = 0, count: Int? = nil, rounds: Int = 0, seed: UInt64 = 0) -> [String] {
        [mode, directory.path, server.url("/").absoluteString, String(first), String(count ?? imageCount), String(rounds), String(seed)]
    }

    /// Starts one helper per argument list, lets them all begin their work at the same moment,
    /// waits until every one has exited, and returns their standard outputs after "ready". Fails
    /// the test for a helper that does not exit 0 after printing "done". Every wait is on an event
    /// (a line, the end of output, the exit), never on a sleep; the deadline only turns a hung
    /// child into a failure instead of a hung test.
    private func runHelpers(_ argumentLists: [[String]], file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: helper.path), "build SharedFolderHelper first: \(helper.path)",
                      file: file, line: line)
        let started = try argumentLists.map { arguments -> (process: Process, output: Pipe, input: Pipe) in
            let process = Process()
            process.executableURL = helper
            process.arguments = arguments
            let (output, input) = (Pipe(), Pipe())
            process.standardOutput = output
            process.standardInput = input
            try process.run()
            return (process, output, input)
        }
        // Every child has its cache open before any of them fetches: their work overlaps as much
        // as it can, whatever the machine's load.
        for child in started {
            var ready = Data()
            while !ready.contains(UInt8(ascii: "\n")) {
                let chunk = child.output.fileHandleForReading.availableData
                if chunk.isEmpty { break }  // it exited early: the checks below report it
                ready.append(chunk)
            }
        }
        for child in started { child.input.fileHandleForWriting.write(Data("go\n".utf8)) }
        let children = started.map { child -> (process: Process, output: Locked<Data>, finished: DispatchSemaphore) in
            // Read on another thread: the main thread must be free to give up on a hung child.
            let output = Locked(Data())
            let finished = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                output.value = child.output.fileHandleForReading.readDataToEndOfFile()
                finished.signal()
            }
            return (child.process, output, finished)
        }
        let deadline = DispatchTime.now() + 120
        return children.enumerated().map { number, child in
            if child.finished.wait(timeout: deadline) == .timedOut {
                XCTFail("helper \(number) (\(argumentLists[number].joined(separator: " "))) still runs after 120 s: killed",
                        file: file, line: line)
                kill(child.process.processIdentifier, SIGKILL)
                child.finished.wait()
            }
            child.process.waitUntilExit()
            let text = String(decoding: child.output.value, as: UTF8.self)
            XCTAssertEqual(child.process.terminationReason, .exit, "helper \(number) was killed by a signal", file: file, line: line)
            XCTAssertEqual(child.process.terminationStatus, 0, "helper \(number) failed; its output:\n\(text)", file: file, line: line)
            XCTAssertTrue(text.hasSuffix("done\n"), "helper \(number) did not finish; its output:\n\(text)", file: file, line: line)
            return text
        }
    }

    /// Runs a `check` helper over every image and fails for each one it did not get with exactly
    /// the bytes the server sends for it.
    private func checkEveryImage(file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try runHelpers([arguments("check")], file: file, line: line)[0]
        var lines: [Int: String] = [:]
        for text in output.split(separator: "\n") where text != "done" {
            if let index = text.split(separator: " ").first.flatMap({ Int($0) }) { lines[index] = String(text) }
        }
        let wrong = (0..<imageCount).filter { lines[$0] != expectedLine($0) }
            .map { "image \($0): got \"\(lines[$0] ?? "no line")\", expected \"\(expectedLine($0))\"" }
        XCTAssertEqual(wrong, [], "\(wrong.count) of \(imageCount) images missing or wrong", file: file, line: line)
    }

    func testSeveralProcessesMixingEveryCallNeverLoseOrCorruptAnImage() throws {
        // Given a server with 40 distinct images
        serveImages()

        // When three processes fetch, purge, trim, remove and persist on one folder at once
        _ = try runHelpers((1...3).map { arguments("mix", rounds: 15, seed: UInt64($0)) })

        // Then a fresh process gets every image with exactly the served bytes, from disk or again
        // from the network,
        try checkEveryImage()
        // and the folder holds images and temporary files only: every file that is not a
        // temporary one holds one of the served images whole (the bytes alone, or with a header
        // or trailer around them).
        let bodySet = Set(bodies)
        var strays: [String] = []
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = files?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            if url.lastPathComponent.hasSuffix(".tmp") { continue }
            let data = try Data(contentsOf: url)
            if bodySet.contains(data) || bodies.contains(where: { data.count >= $0.count && data.range(of: $0) != nil }) { continue }
            strays.append("\(url.path.dropFirst(directory.path.count + 1)) (\(data.count) bytes)")
        }
        XCTAssertEqual(strays, [], "files that are neither an image nor a temporary file")
    }

    func testSeveralProcessesFillingOneFolderLeaveEveryImageOnDisk() throws {
        // Given a server with 40 distinct images
        serveImages()

        // When three processes fill one folder at once with overlapping sets of images (0-23,
        // 8-31, 16-39), twice each: the second round reads the first one's images back
        _ = try runHelpers((0..<3).map { arguments("fill", first: 8 * $0, count: 24, rounds: 2, seed: UInt64($0 + 1)) })

        // Then a fresh process gets every image with exactly the served bytes,
        let requests = (0..<imageCount).map { server.requestCount("/image\($0).png") }
        let total = server.totalRequests
        try checkEveryImage()
        // all from disk: not one request.
        let refetched = (0..<imageCount).filter { server.requestCount("/image\($0).png") > requests[$0] }
        XCTAssertEqual(server.totalRequests - total, 0, "images fetched again instead of read from disk: \(refetched)")
    }
}
