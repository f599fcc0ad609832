import Foundation
import LoopbackServer

/// Real PNG files made in code (RGB, stored deflate), because on Linux `ImageCache.Image(data:)`
/// checks that the bytes are a whole image. Same idea as the example app's `PNGMaker`.
enum TestImages {
    /// A 130 x 130 RGB picture: 50.9 KB, the "50 KB image" of the figures.
    static let photo = png(width: 130, height: 130, seed: 1)
    /// An 8 x 8 RGB picture (about 270 bytes), for the 10,000-entry disk folder.
    static let thumbnail = png(width: 8, height: 8, seed: 2)

    /// A `width` x `height` RGB picture: a diagonal gradient tinted by `seed`.
    static func png(width: Int, height: Int, seed: Int) -> Data {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 3)
        let tint = (UInt8(truncatingIfNeeded: seed &* 73), UInt8(truncatingIfNeeded: seed &* 151),
                    UInt8(truncatingIfNeeded: seed &* 29))
        for y in 0..<height {
            for x in 0..<width {
                let shade = UInt8(truncatingIfNeeded: (x + y) * 255 / max(1, width + height - 2))
                pixels += [shade ^ tint.0, UInt8(truncatingIfNeeded: x * 255 / max(1, width - 1)) ^ tint.1, shade &+ tint.2]
            }
        }
        return PNGEncoder.rgb(width: width, height: height, pixels: pixels)
    }
}
