import Foundation
import LoopbackServer

/// Makes real PNG files in code, so the demo needs no image assets.
enum PNGMaker {
    static func encode(_ picture: RGBPicture) -> Data {
        PNGEncoder.rgb(width: picture.width, height: picture.height, pixels: picture.pixels)
    }
}
