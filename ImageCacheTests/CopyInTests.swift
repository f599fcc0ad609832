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
}
