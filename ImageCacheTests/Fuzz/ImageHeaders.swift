// Fuzz target: image headers (PNG and APNG, JPEG, GIF, WebP), as `ImageCache.inspect` reads them
// before any decoder. Properties, from the doc comments of `inspect` and `decode`:
// - an empty input fails with `emptyBody`; a failure is never anything but not-an-image or corrupt;
// - a success has a positive size, an end inside the input, at least one frame, a duration for
//   each frame of an animation (finite, positive), and a number of plays of 0 or more;
// - the bytes kept for it (up to its end) inspect again to the same result, and `decode` keeps
//   exactly those bytes, which `Image(data:)` accepts with the same size;
// - `ImageSize(header:)` of any input gives nil or a positive size with an orientation of 1...8; of
//   a PNG, GIF or WebP that inspects, the size inspect reads (a JPEG's is its first frame header's);
// - `ProgressiveScans` finds the same scans and the same end in the input read whole as read in two
//   parts (cut where the first byte says), the end inside the input, and none unless progressive.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func imageHeadersFuzzTarget(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = Fuzz.data(pointer, count)
    var whole = ImageCache.ProgressiveScans(), parts = ImageCache.ProgressiveScans()
    whole.read(data)
    parts.read(data.prefix(Int(data.first ?? 0) * data.count / 256))
    parts.read(data)
    Fuzz.require(whole.scans == parts.scans && whole.end == parts.end && whole.isBroken == parts.isBroken,
                 "scans \(whole) read whole, \(parts) in two parts")
    Fuzz.require(whole.end <= data.count && (whole.scans == 0 || whole.isProgressive), "scans \(whole)")
    let header = ImageCache.ImageSize(header: data)
    if let header {
        Fuzz.require(header.width > 0 && header.height > 0 && (1...8).contains(header.orientation), "header \(header)")
    }
    switch ImageCache.inspect(data) {
    case .failure(let error):
        switch error {
        case .emptyBody: Fuzz.require(data.isEmpty, "emptyBody for \(data.count) bytes")
        case .notAnImage, .corruptImage: Fuzz.require(!data.isEmpty, "\(error) for no bytes")
        default: Fuzz.require(false, "inspect failed with \(error)")
        }
    case .success(let info):
        Fuzz.require(info.width > 0 && info.height > 0, "size \(info.width)x\(info.height)")
        if info.format != .jpeg {
            Fuzz.require(header == ImageCache.ImageSize(width: info.width, height: info.height),
                         "the header says \(String(describing: header)), inspect \(info.width)x\(info.height)")
        }
        Fuzz.require(info.end > 0 && info.end <= data.count, "end \(info.end) of \(data.count) bytes")
        Fuzz.require(info.frames >= 1, "\(info.frames) frames")
        let durations = info.timing.durations
        Fuzz.require(info.frames == 1 ? durations.isEmpty : durations.count == info.frames,
                     "\(durations.count) durations for \(info.frames) frames")
        Fuzz.require(durations.allSatisfy { $0.isFinite && $0 > 0 }, "durations \(durations)")
        Fuzz.require(info.timing.plays >= 0, "plays \(info.timing.plays)")
        let kept = Data(data.prefix(info.end))
        guard case .success(let again) = ImageCache.inspect(kept) else {
            Fuzz.require(false, "the \(kept.count) bytes kept for \(info) do not inspect again: \(ImageCache.inspect(kept))")
            return 0
        }
        Fuzz.require(again == info, "the bytes kept inspect as \(again), the input as \(info)")
        guard case .success(let decoded) = ImageCache.decode(data) else {
            Fuzz.require(false, "inspected as \(info), but decode fails")
            return 0
        }
        Fuzz.require(decoded.data == kept, "decode keeps \(decoded.data.count) bytes, not the \(kept.count) inspected")
        let image = ImageCache.Image(data: kept)
        Fuzz.require(image?.width == info.width && image?.height == info.height,
                     "Image(data:) of the bytes kept: \(String(describing: image))")
    }
    return 0
}
