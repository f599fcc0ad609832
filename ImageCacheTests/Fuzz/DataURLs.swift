// Fuzz target: `data:` URLs (`DataURLSource.bytes(of:)`), which a server may put in a page. The input
// is the URL's text. Properties, from the doc comments:
// - it never traps: a URL that is not a data: URL with a comma, a broken percent escape or bad
//   base64 is refused with an `invalidRequest` that says so, nothing else;
// - without `;base64`, the bytes are the data's with each %XX replaced by its byte (so at most as
//   many as the data's, and the data itself when it has no %);
// - with `;base64`, the bytes are what Foundation's base64 decoder makes of the percent-decoded data
//   without white space (padded to a multiple of 4), at most 3/4 of the data's length plus 3.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func dataURLsFuzzTarget(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: Fuzz.data(pointer, count), as: UTF8.self)
    let result = Result { try ImageCache.DataURLSource.bytes(of: text) }
    guard case .success(let bytes) = result else {
        if case .failure(let error) = result, case ImageCache.Error.invalidRequest? = error as? ImageCache.Error {
            return 0
        }
        Fuzz.require(false, "refused \(text.debugDescription) with \(result) (not invalidRequest)")
        return 0
    }
    Fuzz.require(text.lowercased().hasPrefix("data:") && text.contains(","), "read \(text.debugDescription)")
    let comma = text.firstIndex(of: ",")!
    let header = text[text.index(text.startIndex, offsetBy: 5)..<comma]
    let payload = Data(text[text.index(after: comma)...].utf8)
    let isBase64 = header.split(separator: ";").last.map { $0.lowercased() == "base64" } ?? false
    if isBase64 {
        Fuzz.require(bytes.count <= payload.count * 3 / 4 + 3, "\(bytes.count) bytes from \(payload.count)")
    } else {
        Fuzz.require(bytes.count <= payload.count, "\(bytes.count) bytes from \(payload.count)")
        if !payload.contains(UInt8(ascii: "%")) { Fuzz.require(bytes == payload, "data changed without escapes") }
    }
    return 0
}
