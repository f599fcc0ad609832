// What every fuzz target shares. Each target is compiled by `.ci/fuzz` with the library's sources
// as one module, so the parsers it calls are the library's own internal ones, and is linked with
// libFuzzer and AddressSanitizer (`swiftc -sanitize=fuzzer,address`). A property that does not hold
// prints what broke and aborts: libFuzzer reports that as a crash and saves the input.

import Foundation

enum Fuzz {
    /// Stops the run, naming the property that `condition` checks, if it is false.
    static func require(_ condition: Bool, _ property: @autoclosure () -> String,
                        file: StaticString = #fileID, line: UInt = #line) {
        guard !condition else { return }
        FileHandle.standardError.write(Data("property broken (\(file):\(line)): \(property())\n".utf8))
        abort()
    }

    /// The input as `Data` (libFuzzer passes a null pointer for an empty input).
    static func data(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> Data {
        guard let pointer, count > 0 else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    /// The input cut at each newline into at most `fields` strings (the last one keeps the rest),
    /// missing ones nil: several header values or attributes from one input.
    static func fields(_ data: Data, _ fields: Int) -> [String?] {
        let parts = data.split(separator: 0x0A, maxSplits: fields - 1, omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        return (0..<fields).map { $0 < parts.count ? parts[$0] : nil }
    }
}
