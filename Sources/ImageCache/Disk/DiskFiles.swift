// Disk files: one file per key, its dates and attributes, validators.

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

// The disk tier's folder as files: their names, and a listing that keeps little of each.
nonisolated extension ImageCache.DiskStore {
    /// An image file in the folder as `stat` saw it: what the tier needs of it, in 40 bytes, so that
    /// a scan of a large folder holds a tenth of what a name `String` and a whole `stat` would.
    struct File {
        let id: UInt64  // the name, 16 hex digits, as a number
        let size: Int64
        let downloadedAt: TimeInterval  // the modification date
        var usedAt: TimeInterval  // the access date
        let inode: UInt64  // with `downloadedAt`, what a later delete checks

        var name: String { ImageCache.DiskStore.name(id) }

        /// File `id` if `stat` (an `fstat` or `fstatat` that does not follow links) finds a regular file.
        init?(_ id: UInt64, _ stat: (UnsafeMutablePointer<Foundation.stat>) -> Int32) {
            var info = Foundation.stat()
            guard stat(&info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            (self.id, size, inode) = (id, Int64(info.st_size), UInt64(info.st_ino))
            (downloadedAt, usedAt, _) = ImageCache.POSIX.dates(of: info)
        }
    }

    /// The image files in the folder, nothing else, listed with `readdir` (no `String` per name);
    /// `sweeping`, it deletes the stale temporary files it meets.
    func list(sweeping: Bool = false) -> [File] {
        _ = reopenIfReplaced()
        guard let directory = openFolder(create: false) else { return [] }
        // An open file of its own: `readdir` moves the offset, which `directory` must not share.
        let fd = Foundation.openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = Foundation.fdopendir(fd) else {
            if fd >= 0 { Foundation.close(fd) }
            return []
        }
        defer { Foundation.closedir(stream) }
        var files: [File] = []
        var temporary: [String] = []
        while let entry = Foundation.readdir(stream) {
            withUnsafeBytes(of: &entry.pointee.d_name) { name in
                if let id = Self.imageID(name) {
                    let path = name.baseAddress!.assumingMemoryBound(to: CChar.self)  // `d_name`, NUL-terminated
                    if let file = File(id, { Foundation.fstatat(directory, path, $0, AT_SYMLINK_NOFOLLOW) }) {
                        files.append(file)
                    }
                } else if sweeping, name[0] == UInt8(ascii: ".") {
                    let string = String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
                    if Self.isTemporaryName(string) { temporary.append(string) }
                }
            }
        }
        for name in temporary { deleteIfStale(name, in: directory) }
        return files
    }

    /// The regular file `id` in the folder, if there is one.
    internal func file(_ id: UInt64) -> File? {
        guard let directory = openFolder(create: false) else { return nil }
        return File(id) { Foundation.fstatat(directory, Self.name(id), $0, AT_SYMLINK_NOFOLLOW) }
    }

    /// Deletes the temporary file `name` if its writer is gone. Named ".<image>.<pid>.<number>.tmp":
    /// its writer is gone if that process is, or if it has not changed the file for an hour (the pid
    /// may have been reused). (A writer in another pid namespace may look gone: its rename then
    /// fails, and `write` tries once more.) A file written under that name since it was judged stays.
    private func deleteIfStale(_ name: String, in directory: Int32) {
        var judged = Foundation.stat(), now = Foundation.stat()
        guard Foundation.fstatat(directory, name, &judged, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        let changedAt = ImageCache.POSIX.dates(of: judged).changed
        let pid = name.split(separator: ".").dropFirst().first.flatMap { Int32($0) }
        let clock = Date().timeIntervalSince1970  // the real clock, like the files' own dates
        guard clock - changedAt > Self.staleTemporaryAge
            || pid.map({ Foundation.kill($0, 0) != 0 && Foundation.errno == ESRCH }) ?? true else { return }
        guard Foundation.fstatat(directory, name, &now, AT_SYMLINK_NOFOLLOW) == 0, now.st_ino == judged.st_ino,
              now.st_mode & S_IFMT == S_IFREG else { return }
        Foundation.unlinkat(directory, name, 0)
    }

    /// A file name from a stable 64-bit FNV-1a hash of the URL: the same on every launch and
    /// platform, unlike `hashValue`, and never a path outside the folder.
    static func fileName(for url: String) -> String {
        name(fileID(for: url))
    }

    /// The hash that `fileName(for:)` writes in hexadecimal.
    static func fileID(for url: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 {  // every byte: a key with a NUL is a key of its own
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// An image file's name: `id` in 16 lowercase hexadecimal digits.
    static func name(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The number an image file's name (16 lowercase hexadecimal digits, then NUL) stands for.
    static func imageID(_ name: UnsafeRawBufferPointer) -> UInt64? {
        guard name.count > 16, name[16] == 0 else { return nil }
        var id: UInt64 = 0
        for byte in name.prefix(16) {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): id = id << 4 | UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): id = id << 4 | UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return id
    }

    static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".tmp")
    }
}

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
        private static func get(_ name: String, fd: Int32, capacity: Int) -> String? {
            var buffer = [UInt8](repeating: 0, count: capacity)
            #if canImport(Darwin)
            let count = Darwin.fgetxattr(fd, name, &buffer, capacity, 0, 0)
            #else
            let count = getxattr.map { $0(fd, name, &buffer, capacity) } ?? -1
            #endif
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }

        private static func set(_ name: String, _ value: String, fd: Int32) {
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

// System calls, by qualified names, and the cache's folder name.
nonisolated extension ImageCache {
    /// The disk tier's helpers around system calls, which are called by qualified names so that a
    /// copied file never picks up a host app's own `read` or `close`.
    internal enum POSIX {
        /// The error `errno` names.
        static func lastError() -> POSIXError {
            POSIXError(POSIXErrorCode(rawValue: Foundation.errno) ?? .EIO)
        }

        /// Throws the error `errno` names if `result`, a system call's, is not 0.
        static func check(_ result: Int32) throws {
            if result != 0 { throw lastError() }
        }

        static func describe(_ error: Swift.Error) -> String {
            if let posix = error as? POSIXError { return String(cString: Foundation.strerror(posix.code.rawValue)) }
            return String(describing: error)
        }

        private static func seconds(_ time: Foundation.timespec) -> TimeInterval {
            TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1e9
        }

        /// The modification, access and status change dates that `stat` read.
        static func dates(of info: Foundation.stat) -> (modified: TimeInterval, accessed: TimeInterval,
                                                        changed: TimeInterval) {
            #if canImport(Darwin)
            return (seconds(info.st_mtimespec), seconds(info.st_atimespec), seconds(info.st_ctimespec))
            #else
            return (seconds(info.st_mtim), seconds(info.st_atim), seconds(info.st_ctim))
            #endif
        }

        /// Leaves a date as it is in `futimens` (UTIME_OMIT, a macro Swift does not import on Linux).
        #if canImport(Darwin)
        static let omit = Foundation.timespec(tv_sec: 0, tv_nsec: -2)
        #else
        static let omit = Foundation.timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)
        #endif

        static func time(_ seconds: TimeInterval) -> Foundation.timespec {
            // Clamped: `Int(_:)` traps past `Int.max` (2038 where `Int` is 32 bits), and on NaN.
            let seconds = seconds.isNaN ? 0 : min(max(seconds, 0), TimeInterval(Int.max).nextDown)
            let whole = seconds.rounded(.down)
            return Foundation.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        }

        /// Reads `count` bytes into fresh memory without zero-filling it first.
        static func readAll(_ fd: Int32, count: Int) -> Data? {
            guard count >= 0, let buffer = Foundation.malloc(max(1, count)) else { return nil }
            guard transfer(count, { Foundation.read(fd, buffer + $0, count - $0) }) else {
                Foundation.free(buffer)
                return nil
            }
            return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
        }

        /// Calls `io` (a `read` or `write` of the bytes from the offset it is given) until `count` bytes
        /// are done, again after a signal; false at an error (in `errno`) or the end of the file.
        static func transfer(_ count: Int, _ io: (Int) -> Int) -> Bool {
            var done = 0
            while done < count {
                let n = io(done)
                if n > 0 { done += n } else if n == 0 || Foundation.errno != EINTR { return false }
            }
            return true
        }
    }

    /// A folder name that cannot leave the parent folder and that keeps distinct names apart: the
    /// name itself if it is made of letters, digits, "-", "_" and "." only, is not "." or "..", fits
    /// a file name (255 bytes) and does not end as a hashed name does ("-" and 16 lowercase hex
    /// digits: it could be another name's); else its first 64 characters so made, "-", and its hash.
    internal static func folderName(for name: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        let safe = String(name.map { allowed.contains($0) ? $0 : "_" })
        let tail = name.utf8.suffix(17)
        let hashed = tail.count == 17 && tail.first == UInt8(ascii: "-")
            && tail.dropFirst().allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        if safe == name, name != ".", name != "..", !name.isEmpty, name.utf8.count <= 255, !hashed { return name }
        return String(safe.prefix(64)) + "-" + DiskStore.fileName(for: name)
    }
}
