// `data:` URLs: the bytes are in the URL, decoded inline (base64 or percent-encoded).

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif
#if canImport(ImageIO)
import ImageIO
#endif
#if canImport(SwiftUI)
import SwiftUI
#endif


nonisolated extension ImageCache {
    /// Loads `data:` URLs (RFC 2397): `data:[<media type>][;base64],<data>`, the data base64 or
    /// percent-encoded. Always on: the bytes are the URL's own, so it reads nothing else. Not
    /// written to the disk tier (the URL holds them).
    internal struct DataURLSource: ImageSource {
        var writesToDisk: Bool { false }

        func loads(_ url: URL) -> Bool { url.scheme?.lowercased() == "data" }

        func data(for url: URL, progress: @escaping @Sendable (Int, Int?) -> Void) async throws -> Data {
            try Self.bytes(of: url.absoluteString)
        }

        /// The bytes of the `data:` URL `string`, or an `invalidRequest` that says what is wrong.
        static func bytes(of string: String) throws -> Data {
            let text = Substring(string)
            guard text.prefix(5).lowercased() == "data:", let comma = text.firstIndex(of: ",") else {
                throw Error.invalidRequest("a data: URL has no comma before its data")
            }
            let header = text[text.index(text.startIndex, offsetBy: 5)..<comma]
            let base64 = header.split(separator: ";").last.map { $0.lowercased() == "base64" } ?? false
            guard let decoded = Self.percentDecoded(text[text.index(after: comma)...].utf8) else {
                throw Error.invalidRequest("a data: URL's data has a broken percent escape")
            }
            guard base64 else { return decoded }
            let compact = decoded.filter { !(Character(UnicodeScalar($0)).isWhitespace) }
            let padded = compact + Data(repeating: UInt8(ascii: "="), count: (4 - compact.count % 4) % 4)
            guard let bytes = Data(base64Encoded: padded) else {
                throw Error.invalidRequest("a data: URL's base64 data is not valid base64")
            }
            return bytes
        }

        /// `text` with each `%XX` escape replaced by its byte; nil for a broken escape.
        private static func percentDecoded(_ text: Substring.UTF8View) -> Data? {
            var bytes = Data()
            bytes.reserveCapacity(text.count)
            var iterator = text.makeIterator()
            while let byte = iterator.next() {
                guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            }
            return bytes
        }

        private static func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
    }
}
