// What a server said to revalidate an entry with, and the freshness headers kept beside it: the
// extended attributes of an entry's file, written before it is renamed into place and read back
// bounded (a damaged or planted attribute counts as none).

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
    /// What a server said to revalidate an entry with. The disk keeps it in the file's extended
    /// attribute `user.imagecache.validators`, set before the file is renamed into place; where
    /// the file system keeps none (older tmpfs), an expired entry is downloaded again.
    internal struct Validators {
        let etag: String?, lastModified: String?
        private static let attribute = "user.imagecache.validators"
        private static let shiftAttribute = "user.imagecache.shift"  // see `shift(fd:)`
        private static let headersAttribute = "user.imagecache.headers"  // see `headers(fd:)`

        init?(etag: String?, lastModified: String?) {
            guard etag != nil || lastModified != nil else { return nil }
            (self.etag, self.lastModified) = (etag, lastModified)
        }

        init?(_ response: URLResponse?) {
            let http = response as? HTTPURLResponse
            self.init(etag: http?.value(forHTTPHeaderField: "ETag"),
                      lastModified: http?.value(forHTTPHeaderField: "Last-Modified"))
        }

        init?(fd: Int32) {
            self.init(attribute: Self.get(Self.attribute, fd: fd, capacity: 2_048))
        }

        /// The validators an attribute's text says (see `attribute`); nil if it is not two lines, or
        /// if a line holds a character that a header value may not (a control character but a tab:
        /// RFC 9110, 5.5), which the cache never writes: a damaged or planted file is not revalidated
        /// with it, and sends no such header.
        init?(attribute text: String?) {
            let lines = text?.components(separatedBy: "\n") ?? []
            guard lines.count == 2, lines.allSatisfy({ $0.unicodeScalars.allSatisfy { $0 == "\t" || $0.value >= 0x20 && $0.value != 0x7F } })
            else { return nil }
            self.init(etag: lines[0].isEmpty ? nil : lines[0], lastModified: lines[1].isEmpty ? nil : lines[1])
        }

        /// The text kept in the attribute: the ETag, a newline, the Last-Modified date.
        var attribute: String { "\(etag ?? "")\n\(lastModified ?? "")" }

        func write(to fd: Int32) {
            Self.set(Self.attribute, attribute, fd: fd)
        }

        /// Makes `request` conditional: the server answers `304 Not Modified` if the entry is current.
        func ask(_ request: inout URLRequest) {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
            request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since")
        }

        /// Seconds by which the server's max-age moved a file's download date ahead (see
        /// `maxClockSkew`), in an attribute of its own; 0 if none.
        static func shift(fd: Int32) -> TimeInterval {
            shift(attribute: get(shiftAttribute, fd: fd, capacity: 32))
        }

        /// The shift an attribute's text says: a number of seconds in 0...`HTTP.maxSeconds`, the most
        /// a max-age moves a date; anything else (not a number, negative, `inf`, `nan`, `1e300`) is
        /// taken as no shift, 0, which a damaged or planted file's date in the future then expires.
        static func shift(attribute text: String?) -> TimeInterval {
            guard let seconds = text.flatMap({ TimeInterval($0) }), (0...HTTP.maxSeconds).contains(seconds) else { return 0 }
            return seconds
        }

        /// The text a shift of `seconds` is kept as.
        static func shiftText(_ seconds: TimeInterval) -> String {
            String(seconds.rounded(.up))
        }

        static func setShift(_ seconds: TimeInterval, fd: Int32) {
            set(shiftAttribute, shiftText(seconds), fd: fd)
        }

        /// The response's `Cache-Control` and `Expires`, kept (if it had either) in an attribute of
        /// their own: what judges the entry again after a `304` without them, and whether it may be
        /// served stale. Read only for an expired entry.
        static func headers(fd: Int32) -> HTTP.FreshnessHeaders? {
            headers(attribute: get(headersAttribute, fd: fd, capacity: 8_192))
        }

        /// The freshness headers an attribute's text says: `Cache-Control`, a newline, `Expires`.
        static func headers(attribute text: String?) -> HTTP.FreshnessHeaders? {
            let lines = text?.components(separatedBy: "\n") ?? []
            guard lines.count == 2 else { return nil }
            return HTTP.FreshnessHeaders(cacheControl: lines[0].isEmpty ? nil : lines[0],
                                         expires: lines[1].isEmpty ? nil : lines[1])
        }

        static func setHeaders(_ headers: HTTP.FreshnessHeaders?, fd: Int32) {
            guard let headers, headers.cacheControl != nil || headers.expires != nil else { return }
            set(headersAttribute, "\(headers.cacheControl ?? "")\n\(headers.expires ?? "")", fd: fd)
        }

        /// The extended attribute `name` of `fd` as text; nil if it is missing, empty or longer than `capacity`.
        static func get(_ name: String, fd: Int32, capacity: Int) -> String? {
            var buffer = [UInt8](repeating: 0, count: capacity)
            #if canImport(Darwin)
            let count = Darwin.fgetxattr(fd, name, &buffer, capacity, 0, 0)
            #else
            let count = getxattr.map { $0(fd, name, &buffer, capacity) } ?? -1
            #endif
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }

        static func set(_ name: String, _ value: String, fd: Int32) {
            let bytes = Array(value.utf8)
            #if canImport(Darwin)
            _ = Darwin.fsetxattr(fd, name, bytes, bytes.count, 0, 0)
            #else
            _ = setxattr.map { $0(fd, name, bytes, bytes.count, 0) }
            #endif
        }

        #if !canImport(Darwin)
        // Glibc's module leaves out <sys/xattr.h>: the two calls are found at run time.
        private static let getxattr = Foundation.dlsym(nil, "fgetxattr").map {
            unsafeBitCast($0, to: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer?,
                                                   Int) -> Int).self)
        }
        private static let setxattr = Foundation.dlsym(nil, "fsetxattr").map {
            unsafeBitCast($0, to: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafeRawPointer?,
                                                   Int, Int32) -> Int32).self)
        }
        #endif
    }
}
