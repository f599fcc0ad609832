// Fuzz target: HTTP header values and the freshness they give (`ImageCache.HTTP`). The input is
// cut at newlines into Cache-Control, Expires, Date, Age, Retry-After, ETag and Last-Modified.
// Properties, from the doc comments:
// - a date (`HTTP.date`) is finite, reads the same in any case, and its IMF-fixdate reads back to it;
// - a delta-seconds value and `max-age` lie in 0...`HTTP.maxSeconds`;
// - a response's freshness lifetime lies in 0...`HTTP.maxSeconds` and its age is finite and not negative;
// - `Retry-After` is finite and not negative.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func httpHeadersFuzzTarget(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let values = Fuzz.fields(Fuzz.data(pointer, count), 7)
    let names = ["Cache-Control", "Expires", "Date", "Age", "Retry-After", "ETag", "Last-Modified"]
    let maxSeconds = ImageCache.HTTP.maxSeconds

    for case let value? in values {
        if let time = ImageCache.HTTP.date(value) {
            Fuzz.require(time.isFinite, "date \(value) read as \(time)")
            for other in [value.uppercased(), value.lowercased()] {
                Fuzz.require(ImageCache.HTTP.date(other) == time, "date \(value) is \(time), but \(other) is not")
            }
            if let fixdate = imfFixdate(time) {
                Fuzz.require(ImageCache.HTTP.date(fixdate) == time, "date \(value) is \(time), its IMF-fixdate \(fixdate) is not")
            }
        }
        if let seconds = ImageCache.HTTP.delta(value[...]) {
            Fuzz.require((0...maxSeconds).contains(seconds), "delta-seconds \(value) read as \(seconds)")
        }
        if let maxAge = ImageCache.HTTP.CacheControl(value).maxAge {
            Fuzz.require((0...maxSeconds).contains(maxAge), "Cache-Control \(value): max-age \(maxAge)")
        }
    }

    var fields: [String: String] = [:]
    for (name, value) in zip(names, values) where value != nil { fields[name] = value }
    guard let response = HTTPURLResponse(url: URL(string: "http://127.0.0.1/fuzz.png")!, statusCode: 200,
                                         httpVersion: "HTTP/1.1", headerFields: fields) else { return 0 }
    let headers = ImageCache.HTTP.FreshnessHeaders(response)
    let now: TimeInterval = 1_700_000_000
    let freshness = ImageCache.HTTP.Freshness(response, headers, sentAt: now - 1, receivedAt: now)
    if let lifetime = freshness.lifetime {
        Fuzz.require((0...maxSeconds).contains(lifetime), "lifetime \(lifetime) for \(fields)")
    }
    Fuzz.require(freshness.age.isFinite && freshness.age >= 0, "age \(freshness.age) for \(fields)")
    if let retryAfter = ImageCache.HTTP.retryAfter(response) {
        Fuzz.require(retryAfter.isFinite && retryAfter >= 0, "Retry-After \(retryAfter) for \(fields)")
    }
    return 0
}

/// `time` as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), or nil outside years 0...9999.
private func imfFixdate(_ time: TimeInterval) -> String? {
    guard time.isFinite, time.rounded(.down) == time, abs(time) < 1e15 else { return nil }
    let seconds = Int(time)
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let inDay = seconds - days * 86_400
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    guard (0...9999).contains(year) else { return nil }
    let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let yearText = String(repeating: "0", count: 4 - String(year).count) + String(year)
    return "\(weekdays[((days % 7) + 7) % 7]), \(two(day)) \(months[month - 1]) \(yearText) "
        + "\(two(inDay / 3_600)):\(two(inDay / 60 % 60)):\(two(inDay % 60)) GMT"
}
