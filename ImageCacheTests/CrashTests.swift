import Foundation
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Kills a process that fills the cache with SIGKILL at random moments, many times, and checks
/// that the cache it leaves behind never serves a corrupt image and heals on the first sweep.
final class CrashTests: CacheTestCase {
    private var helper: URL {
        // The test bundle and the helper are built side by side.
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("CrashHelper")
    }

    /// A distinct, valid PNG of ~50 KB for image `i` (`i` < 256): every pixel's bytes are `i`.
    /// (Not bytes after IEND: the cache drops those.)
    private func body(_ i: Int) -> Data {
        PNGEncoder.rgb(width: 120, height: 140, pixels: [UInt8](repeating: UInt8(i), count: 120 * 140 * 3))
    }

    func testSIGKILLWhileWritingNeverLeavesACorruptImage() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: helper.path), "build CrashHelper first: \(helper.path)")
        let count = 60
        for i in 0..<count { server.set("/image\(i).png", .ok(body(i))) }
        let kills = Int(ProcessInfo.processInfo.environment["IMAGECACHE_CRASH_KILLS"] ?? "") ?? 25
        var generator = SplitMix(seed: 11)
        var reopenings = 0, served = 0, corrupt = 0

        for round in 1...kills {
            let process = Process()
            process.executableURL = helper
            process.arguments = [directory.path, server.url("/").absoluteString, String(count)]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            _ = output.fileHandleForReading.availableData  // "ready": the cache is open
            Thread.sleep(forTimeInterval: Double(generator.next() % 300) / 1000)
            XCTAssertEqual(kill(process.processIdentifier, SIGKILL), 0)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal)

            // Every fifth kill, and after the last, open the cache here and read everything.
            guard round % 5 == 0 || round == kills else { continue }
            reopenings += 1
            let cache = ImageCache(uniqueName: "crash", directory: directory)
            cache.callbackQueue = callbacks
            XCTAssertEqual(cache.checkInvariants(), [], "kill \(round)")
            // A killed writer's temporary files are deleted by the next sweep (its process is gone).
            cache.reduceDiskCache(maxImageCount: count)
            let files = try FileManager.default.contentsOfDirectory(atPath: cache.folder.path)
            XCTAssertLessThanOrEqual(files.count, count, "left-overs grow: \(files.count) files")
            XCTAssertFalse(files.contains { $0.hasSuffix(".tmp") }, "temporary files survived the sweep")
            let requests = server.totalRequests
            for i in 0..<count {
                let url = server.url("/image\(i).png")
                guard let image = fetchAndWait(cache, url) else { continue }
                served += 1
                if image.data != body(i) { corrupt += 1 }
            }
            XCTAssertEqual(served % count, 0, "every image was served")
            print("crash: kill \(round), reopened: \(server.totalRequests - requests) of \(count) fetched again, \(files.count) files")
            cache.persistCacheToDisk()
        }
        XCTAssertEqual(corrupt, 0)
        print("crash: \(kills) kills, \(reopenings) reopenings, \(served) images served, \(corrupt) corrupt")
    }
}
