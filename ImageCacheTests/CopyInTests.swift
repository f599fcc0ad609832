import Foundation
import XCTest
import LoopbackServer

/// ImageCache.swift copied into an app whose own top-level names (`open`, `read`, `Entry`, ...)
/// would break or take over the library's calls. `CopyInHost` is that app: building the package
/// already proves the copy compiles there; this test proves it works there.
final class CopyInTests: CacheTestCase {
    private var host: URL {
        // The test bundle and the host are built side by side.
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("CopyInHost")
    }

    func testCopiedFileFetchesAnImageInAHostWithClashingNames() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: host.path), "build CopyInHost first: \(host.path)")
        // Given a 37 x 23 PNG on the server
        var generator = SplitMix(seed: 37)
        let png = PNGEncoder.rgb(width: 37, height: 23, pixels: (0..<37 * 23 * 3).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        server.set("/copied.png", .ok(png))

        // When the host fetches it with its copy of the cache, once from the server and once
        // from disk
        let process = Process()
        process.executableURL = host
        process.arguments = [directory.path, server.url("/copied.png").absoluteString]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        // Then it prints the image, with the served size, and exits 0
        XCTAssertEqual(text, "image \(png.count) 37x23\n")
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0, "output: \(text)")
        XCTAssertEqual(server.requestCount("/copied.png"), 1, "the second fetch reads the image from disk")
    }

    /// ImageCache.swift copied into a target made from Xcode 26's app template, whose default actor
    /// isolation is the main actor: `MainActorHost/App.swift` compiled with it, as that target compiles
    /// them, in the Swift 6 and Swift 5 language modes (by `swiftc`, or `$SWIFTC`), then run.
    func testCopiedFileWorksInAMainActorByDefaultTargetInBothLanguageModes() throws {
        // Given a 29 x 31 PNG on the server, and the host compiled both ways, side by side
        var generator = SplitMix(seed: 29)
        let png = PNGEncoder.rgb(width: 29, height: 31, pixels: (0..<29 * 31 * 3).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        server.set("/main-actor.png", .ok(png))
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let builds = try ["6", "5"].map { mode -> (mode: String, binary: URL, process: Process, log: Pipe) in
            let binary = directory.appendingPathComponent("MainActorHost-swift\(mode)")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [ProcessInfo.processInfo.environment["SWIFTC"] ?? "swiftc",
                                 "-default-isolation", "MainActor", "-parse-as-library", "-swift-version", mode,
                                 repository.appendingPathComponent("ImageCache.swift").path,
                                 repository.appendingPathComponent("ImageCacheTests/MainActorHost/App.swift").path,
                                 "-module-name", "MainActorHost", "-o", binary.path]
            let log = Pipe()
            (process.standardOutput, process.standardError) = (log, log)
            try process.run()
            return (mode, binary, process, log)
        }
        for build in builds {
            let log = String(decoding: build.log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            build.process.waitUntilExit()
            XCTAssertEqual(build.process.terminationStatus, 0, "Swift \(build.mode), main actor by default, does not compile:\n\(log)")
        }

        for build in builds where build.process.terminationStatus == 0 {
            // When each fetches the image twice, from its own folder, while its main thread is blocked
            let folder = directory.appendingPathComponent("swift\(build.mode)")
            let path = "/main-actor.png"
            let before = server.requestCount(path)
            let process = Process()
            process.executableURL = build.binary
            process.arguments = [folder.path, server.url(path).absoluteString]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()

            // Then the first comes from the network and the second from disk, both peeked after,
            // with no hop to the main actor on the way
            XCTAssertEqual(text, "network \(png.count) 29x31 peeked\ndisk \(png.count) 29x31 peeked\n", "Swift \(build.mode)")
            XCTAssertEqual(process.terminationStatus, 0, "Swift \(build.mode): \(text)")
            XCTAssertEqual(server.requestCount(path) - before, 1, "Swift \(build.mode): the second fetch reads the image from disk")
        }
    }
}
