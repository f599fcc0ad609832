// Fuzz target: BlurHash strings, as `ImageCache.BlurHash.parse` reads a request's and a view decodes
// it (`Placeholders.image`). Input: two bytes for the size asked (each 0...255, then scaled so that
// sizes past the bound appear), the rest the hash's text. Properties, from the doc of `BlurHash`:
// - a string longer than `maxLength`, or whose length is not 4 + 2 x the components its first
//   character announces, or with a character outside base 83, is refused with a reason;
// - one that parses has 1...9 components on each axis;
// - its decode is at most `maxSide` x `maxSide` pixels, 3 bytes each, whatever size is asked; its
//   PNG is a whole PNG of that size, no larger than the pixels plus its rows' filter bytes and the
//   headers of its chunks and stored blocks.
// `.ci/fuzz` runs it with -malloc_limit_mb=1: any single allocation over 1 MiB is a failure.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func blurHashFuzzTarget(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = Fuzz.data(pointer, count)
    let asked = (width: Int(data.first ?? 0) * 17 - 100, height: Int(data.dropFirst().first ?? 0) * 17 - 100)
    let text = String(decoding: data.dropFirst(2), as: UTF8.self)
    typealias BlurHash = ImageCache.BlurHash
    switch BlurHash.parse(text) {
    case .failure(let malformed):
        Fuzz.require(malformed.description.hasPrefix("malformed BlurHash: "), "reason \(malformed)")
    case .success(let hash):
        let length = text.utf8.count
        Fuzz.require(length <= BlurHash.maxLength, "parsed \(length) characters")
        Fuzz.require((1...BlurHash.maxComponents).contains(hash.componentsX)
                     && (1...BlurHash.maxComponents).contains(hash.componentsY),
                     "\(hash.componentsX)x\(hash.componentsY) components")
        Fuzz.require(length == 4 + 2 * hash.componentsX * hash.componentsY, "\(length) characters parsed")
        let decoded = hash.pixels(width: asked.width, height: asked.height)
        Fuzz.require((1...BlurHash.maxSide).contains(decoded.width) && (1...BlurHash.maxSide).contains(decoded.height),
                     "decoded at \(decoded.width)x\(decoded.height) for \(asked)")
        Fuzz.require(decoded.rgb.count == decoded.width * decoded.height * 3, "\(decoded.rgb.count) bytes")
        let png = ImageCache.PNGWriter.png(decoded.rgb, channels: 3, width: decoded.width, height: decoded.height)
        let raw = decoded.height * (1 + decoded.width * 3)
        Fuzz.require(png.count <= raw + 8 + 25 + 12 + 6 + 5 * (raw / 65_535 + 1) + 12, "a PNG of \(png.count) bytes")
        guard case .success(let info) = ImageCache.inspect(png) else {
            Fuzz.require(false, "the PNG does not inspect: \(ImageCache.inspect(png))")
            return 0
        }
        Fuzz.require(info.width == decoded.width && info.height == decoded.height && info.end == png.count,
                     "the PNG inspects as \(info)")
    }
    return 0
}
