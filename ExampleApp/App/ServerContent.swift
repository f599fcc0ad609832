import Foundation
import LoopbackServer

/// What the embedded server serves: one generated image per feed row (JPEG, PNG or GIF, of varied
/// sizes), and on every 15th row a broken URL, with the latency and bandwidth of a mobile network.
///
/// Images are made on first request and kept, so a row's URL always serves the same bytes.
final class ServerContent: @unchecked Sendable {
    /// The ways a URL can be broken; rows 10, 25, 40, ... take them in turn.
    enum Broken: String, CaseIterable {
        case notFound = "not-found"        // 404
        case serverError = "server-error"  // 500, and again on every retry
        case htmlPage = "html-page"        // 200 with an HTML page instead of an image
        case cutShort = "cut-short"        // 200 with a JPEG cut short (its Content-Length matches)
    }

    /// Time to first byte: 30 ms plus an exponential tail (mean 90 ms), 1 request in 25 stalls
    /// for half a second or more, as on a phone network.
    static func latency() -> TimeInterval {
        if Int.random(in: 0..<25) == 0 { return Double.random(in: 0.5...1.2) }
        return 0.03 + min(0.8, -0.09 * log(Double.random(in: 0.000_1...1)))
    }

    /// Bodies are sent 16 KB every 10 ms: about 1.6 MB/s per connection.
    static let chunk: (size: Int, interval: TimeInterval) = (16_384, 0.01)

    /// The row whose image the server says to keep 2 seconds (`Cache-Control: max-age=2`; the
    /// feed's cache obeys it): a second run revalidates it.
    static let shortLivedRow = 3

    /// The path of row `row`'s image, e.g. "/photos/0042.jpg" or "/broken/0010-not-found.jpg".
    static func path(row: Int) -> String {
        let number = String(format: "%04d", row)
        if row % 15 == 10 {
            let broken = Broken.allCases[(row / 15) % Broken.allCases.count]
            return "/broken/\(number)-\(broken.rawValue).\(broken == .cutShort ? "jpg" : "png")"
        }
        var random = SplitMix(seed: UInt64(row))
        let format = ["jpg", "jpg", "jpg", "png", "png", "gif"][Int(random.next() % 6)]
        return "/photos/\(number).\(format)"
    }

    private let lock = NSLock()
    private var made: [String: Data] = [:]  // guarded by `lock`

    /// Answers every request of `server` that has no route of its own.
    func install(on server: LoopbackServer) {
        server.handler = { [self] path in response(for: path) }
    }

    private func response(for path: String) -> LoopbackServer.Response? {
        let name = (path as NSString).lastPathComponent
        guard let row = Int(name.prefix(4)) else { return nil }
        var response: LoopbackServer.Response
        switch Broken.allCases.first(where: { path.hasPrefix("/broken/") && name.contains($0.rawValue) }) {
        case .notFound?:
            response = .status(404, body: Data("<!DOCTYPE html><title>404 Not Found</title>".utf8))
            response.headers["Content-Type"] = "text/html"
        case .serverError?:
            response = .status(500, body: Data("upstream timed out".utf8))
        case .htmlPage?:
            let page = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please sign in to see this image.</body></html>\n"
            response = .ok(Data(page.utf8), contentType: "text/html; charset=utf-8")
        case .cutShort?:
            let whole = image(row: row, format: "jpg")
            response = .ok(whole.prefix(whole.count * 6 / 10), contentType: "image/jpeg")
        case nil:
            guard path.hasPrefix("/photos/") else { return nil }
            let format = (name as NSString).pathExtension
            guard ["jpg", "png", "gif"].contains(format) else { return nil }
            response = .ok(image(row: row, format: format), contentType: format == "jpg" ? "image/jpeg" : "image/\(format)")
            // Each image has a validator, so that an expired one is revalidated (a 304, no body);
            // one row's image expires within seconds, to show that on the second run.
            response.headers["ETag"] = "\"\(row)-\(format)\""
            if row == Self.shortLivedRow { response.headers["Cache-Control"] = "max-age=2" }
        }
        response.delay = Self.latency()
        response.behavior = .slowBody(chunkSize: Self.chunk.size, interval: Self.chunk.interval)
        return response
    }

    /// The bytes of row `row`'s image, made the first time they are asked for.
    private func image(row: Int, format: String) -> Data {
        let key = "\(row).\(format)"
        if let data = lock.withLock({ made[key] }) { return data }
        var random = SplitMix(seed: UInt64(row) &* 7919)
        // Feed-sized pictures: 64 to 320 pixels wide; PNG (uncompressed here) at most 200.
        let widths = format == "png" ? [64, 96, 120, 160, 200] : [64, 96, 120, 160, 200, 240, 320]
        let width = widths[Int(random.next() % UInt64(widths.count))]
        let aspect = [(4, 3), (1, 1), (3, 4), (16, 9)][Int(random.next() % 4)]
        let height = width * aspect.1 / aspect.0
        let picture = RGBPicture.landscape(width: width, height: height, seed: row)
        let data: Data
        switch format {
        case "png":
            data = PNGMaker.encode(picture)
        case "gif":
            let frames = random.next() % 2 == 0 ? 1 : 3
            data = GIFMaker.encode((0..<frames).map { RGBPicture.landscape(width: width, height: height, seed: row, frame: $0) })
        default:
            data = JPEGMaker.encode(picture, quality: 70 + Int(random.next() % 25))
        }
        lock.withLock { made[key] = data }
        return data
    }
}

/// An RGB picture in memory, 3 bytes a pixel, rows top to bottom: what the image makers encode.
struct RGBPicture {
    let width: Int
    let height: Int
    var pixels: [UInt8]

    /// A small landscape (sky, sun, two rows of hills) whose colours and layout come from `seed`,
    /// so that every image in the feed is different and compresses like a photo or an illustration.
    static func landscape(width: Int, height: Int, seed: Int, frame: Int = 0) -> RGBPicture {
        var random = SplitMix(seed: UInt64(truncatingIfNeeded: seed))
        func channel() -> Double { Double(random.next() % 200 + 40) }
        let sky = (channel(), channel(), 255.0)
        let hills = [(channel() * 0.4, channel(), channel() * 0.5), (channel() * 0.3, channel() * 0.7, channel() * 0.3)]
        let sunX = Double(random.next() % 100) / 100 * Double(width) + Double(frame * width / 12)
        let sunY = Double(height) * (0.15 + Double(random.next() % 30) / 100)
        let sunR = Double(min(width, height)) * (0.08 + Double(random.next() % 10) / 100)
        let waves = (Double(random.next() % 5 + 2), Double(random.next() % 7 + 3), Double(random.next() % 628) / 100)

        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let fy = Double(y) / Double(max(1, height - 1))
            for x in 0..<width {
                let fx = Double(x) / Double(max(1, width - 1))
                var color = (sky.0 * (1 - fy * 0.6), sky.1 * (1 - fy * 0.4), sky.2 * (1 - fy * 0.3))
                let dx = Double(x) - sunX, dy = Double(y) - sunY
                if dx * dx + dy * dy < sunR * sunR { color = (255, 220, 90) }
                let far = 0.55 + 0.08 * sin(fx * waves.0 + waves.2)
                let near = 0.72 + 0.1 * sin(fx * waves.1 + waves.2 * 2)
                if fy > near {
                    color = (hills[1].0 * (1.2 - fy * 0.4), hills[1].1 * (1.2 - fy * 0.4), hills[1].2)
                } else if fy > far {
                    color = (hills[0].0, hills[0].1 * (1.1 - fy * 0.3), hills[0].2)
                }
                let i = (y * width + x) * 3
                pixels[i] = UInt8(max(0, min(255, color.0)))
                pixels[i + 1] = UInt8(max(0, min(255, color.1)))
                pixels[i + 2] = UInt8(max(0, min(255, color.2)))
            }
        }
        return RGBPicture(width: width, height: height, pixels: pixels)
    }
}

