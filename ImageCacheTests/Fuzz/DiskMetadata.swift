// Fuzz target: what the attributes of a disk file say when read back (`ImageCache.Validators`),
// from bytes a damaged or planted file could hold. The whole input is each attribute in turn.
// Properties, from the doc comments:
// - the clock shift is finite and lies in 0...`HTTP.maxSeconds` (anything else reads as none: 0),
//   and every shift the cache writes reads back as written;
// - validators read back are one line each, hold no character a header value may not, and write
//   and read back to themselves;
// - the freshness headers read back give a lifetime in 0...`HTTP.maxSeconds` and a finite age;
// - a date given to `futimens` is never negative and its nanoseconds lie in 0..<1e9.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func diskMetadataFuzzTarget(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = Fuzz.data(pointer, count)
    let text = String(decoding: data, as: UTF8.self)
    let maxSeconds = ImageCache.HTTP.maxSeconds

    let shift = ImageCache.Validators.shift(attribute: text)
    Fuzz.require(shift.isFinite && (0...maxSeconds).contains(shift), "shift \(text) read as \(shift)")

    // The first 8 bytes as a number of seconds: a shift the cache may write, and a file's date.
    var bits: UInt64 = 0
    for byte in data.prefix(8) { bits = bits << 8 | UInt64(byte) }
    let seconds = Double(bitPattern: bits)
    if seconds.isFinite, seconds > 0, seconds <= maxSeconds {
        let written = ImageCache.Validators.shiftText(seconds)
        Fuzz.require(ImageCache.Validators.shift(attribute: written) == seconds.rounded(.up),
                     "shift \(seconds) written as \(written) reads back as \(ImageCache.Validators.shift(attribute: written))")
    }
    let time = ImageCache.POSIX.time(seconds)
    Fuzz.require(time.tv_sec >= 0 && (0..<1_000_000_000).contains(time.tv_nsec), "\(seconds) s as \(time)")

    if let validators = ImageCache.Validators(attribute: text) {
        for value in [validators.etag, validators.lastModified] {
            guard let value else { continue }
            Fuzz.require(!value.isEmpty && value.unicodeScalars.allSatisfy { $0 == "\t" || !($0.value < 0x20 || $0.value == 0x7F) },
                         "validator \(value.debugDescription) read from \(text.debugDescription)")
        }
        Fuzz.require(validators.etag != nil || validators.lastModified != nil, "validators with neither value")
        let again = ImageCache.Validators(attribute: validators.attribute)
        Fuzz.require(again?.etag == validators.etag && again?.lastModified == validators.lastModified,
                     "validators \(validators) write and read back as \(String(describing: again))")
    }

    if let headers = ImageCache.Validators.headers(attribute: text) {
        let now: TimeInterval = 1_700_000_000
        let freshness = ImageCache.HTTP.Freshness(nil, headers, sentAt: now, receivedAt: now)
        if let lifetime = freshness.lifetime {
            Fuzz.require((0...maxSeconds).contains(lifetime), "lifetime \(lifetime) from \(text.debugDescription)")
        }
        Fuzz.require(freshness.age.isFinite && freshness.age >= 0, "age \(freshness.age)")
    }
    return 0
}
