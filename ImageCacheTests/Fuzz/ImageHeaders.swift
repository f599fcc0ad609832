// Fuzz target: image headers (PNG and APNG, JPEG, GIF, WebP), as `ImageCache.inspect` reads them
// before any decoder. Properties, from the doc comments of `inspect` and `decode`:
// - an empty input fails with `emptyBody`; a failure is never anything but not-an-image or corrupt;
// - a success has a positive size, an end inside the input, at least one frame, a duration for
//   each frame of an animation (finite, positive), and a number of plays of 0 or more;
// - the bytes kept for it (up to its end) inspect again to the same result, and `decode` keeps
//   exactly those bytes, which `Image(data:)` accepts with the same size;
// - an animated WebP (more than one frame) has, read here independently of `WebPAnimation`: the
//   VP8X animation flag, an ANIM chunk before its first ANMF, one ANMF per frame, each lying inside
//   the canvas and holding a whole VP8 or VP8L chunk inside itself, and plays of at most 65,535.
// - `ImageSize(header:)` of any input gives nil or a positive size with an orientation of 1...8; of
//   a PNG, GIF or WebP that inspects, the size inspect reads (a JPEG's is its first frame header's);
// - `ProgressiveScans` finds the same scans and the same end in the input read whole as read in two
//   parts (cut where the first byte says), the end inside the input, and none unless progressive;
// - `InterlacedPasses` likewise: the same passes, end and state read whole as in two parts, at most
//   7 passes, none unless interlaced, the end inside the input, and a preview of exactly the bytes
//   up to the end and an IEND chunk.

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
    var wholePasses = ImageCache.InterlacedPasses(), partPasses = ImageCache.InterlacedPasses()
    wholePasses.read(data)
    partPasses.read(data.prefix(Int(data.first ?? 0) * data.count / 256))
    partPasses.read(data)
    Fuzz.require(wholePasses.passes == partPasses.passes && wholePasses.end == partPasses.end
                 && wholePasses.isBroken == partPasses.isBroken && wholePasses.hasEnded == partPasses.hasEnded,
                 "passes \(wholePasses) read whole, \(partPasses) in two parts")
    Fuzz.require(wholePasses.passes <= 7 && wholePasses.end <= data.count
                 && (wholePasses.passes == 0 || wholePasses.isInterlaced), "passes \(wholePasses)")
    if let preview = wholePasses.preview(of: data) {
        Fuzz.require(preview.count == wholePasses.end + 12 && preview.prefix(wholePasses.end) == data.prefix(wholePasses.end),
                     "a preview of \(preview.count) bytes for \(wholePasses)")
    }
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
        if info.format == .webp, info.frames > 1 { checkAnimatedWebP(data, info.width, info.height, info.frames, info.timing.plays) }
        let kept = Data(data.prefix(info.end))
        guard case .success(let again) = ImageCache.inspect(kept) else {
            Fuzz.require(false, "the \(kept.count) bytes kept for \(info) do not inspect again: \(ImageCache.inspect(kept))")
            return 0
        }
        Fuzz.require(again == info, "the bytes kept inspect as \(again), the input as \(info)")
        guard case .success(let decoded) = ImageCache.PlatformDecoder.decode(data) else {
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

/// The promises of `WebPAnimation` for a file it accepted with `frames` frames, checked by a walk of
/// its own over the chunks.
private func checkAnimatedWebP(_ data: Data, _ width: Int, _ height: Int, _ frames: Int, _ plays: Int) {
    let bytes = [UInt8](data)
    func le(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
    func tag(_ at: Int) -> String { String(decoding: bytes[at..<at + 4], as: UTF8.self) }
    Fuzz.require(tag(12) == "VP8X" && bytes[20] & 0x02 != 0, "\(frames) frames without VP8X's animation flag")
    Fuzz.require((0...65_535).contains(plays), "plays \(plays)")
    let end = min(bytes.count, 8 + le(4, 4) + (le(4, 4) & 1))
    var (offset, anim, seen) = (12, false, 0)
    while end - offset >= 8 {
        let (start, length) = (offset + 8, le(offset + 4, 4))
        Fuzz.require(length <= end - start, "an accepted file's chunk at \(offset) overruns its RIFF")
        if tag(offset) == "ANIM" { anim = true }
        if tag(offset) == "ANMF" {
            seen += 1
            Fuzz.require(anim, "frame \(seen) before ANIM")
            Fuzz.require(length >= 16, "frame \(seen) of \(length) bytes")
            let (x, y, w, h) = (le(start, 3) * 2, le(start + 3, 3) * 2, le(start + 6, 3) + 1, le(start + 9, 3) + 1)
            Fuzz.require(x + w <= width && y + h <= height, "frame \(seen) (\(w)x\(h) at \(x),\(y)) outside \(width)x\(height)")
            var (inner, image) = (start + 16, false)
            while inner < start + length {
                let size = start + length - inner >= 8 ? le(inner + 4, 4) : Int.max
                Fuzz.require(size <= start + length - inner - 8, "frame \(seen)'s chunk at \(inner) runs past its ANMF")
                if ["VP8 ", "VP8L"].contains(tag(inner)) { image = true }
                inner += 8 + size + (size & 1)
            }
            Fuzz.require(image, "frame \(seen) has no VP8 or VP8L chunk")
        }
        offset = start + length + (length & 1)
    }
    Fuzz.require(seen == frames, "\(seen) ANMF chunks for \(frames) frames")
}
