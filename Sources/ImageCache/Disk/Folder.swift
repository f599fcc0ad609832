// The cache's folder: how it is opened (its own, private, never through a link), its name, the
// names in it (an image file's from its key: a stable hash, never a path outside the folder; the
// number a name stands for; a temporary file's name), and its listing (`File`).

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

nonisolated extension ImageCache.DiskStore {
    /// Opens `folder` as ``openFolder(create:)`` does, for a caller off the disk queue (a body
    /// streamed to disk, `Spool`): its own descriptor, or the problem to report (nil: none, the
    /// folder is not there and `create` was false).
    static func openPrivate(_ folder: URL, create: Bool) -> Result<Int32, Problem> {
        let folderPath = folder.path
        if create {
            try? FileManager.default.createDirectory(at: folder.deletingLastPathComponent(),
                                                     withIntermediateDirectories: true)
            Foundation.mkdir(folderPath, 0o700)
        }
        let fd = Foundation.open(folderPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            return .failure(Problem(create ? "cannot open \(folderPath): \(ImageCache.POSIX.describe(ImageCache.POSIX.lastError()))" : nil))
        }
        var info = Foundation.stat()
        if Foundation.fstat(fd, &info) == 0, info.st_mode & 0o777 != 0o700, Foundation.fchmod(fd, 0o700) == 0 {
            Foundation.fstat(fd, &info)
        }
        guard info.st_uid == Foundation.geteuid(), info.st_mode & 0o077 == 0 else {
            Foundation.close(fd)
            return .failure(Problem("not using \(folderPath): it belongs to another user or others may write to it"))
        }
        return .success(fd)
    }

    /// Why the folder cannot be used, in words (nil: nothing worth reporting).
    struct Problem: Swift.Error {
        let message: String?
        init(_ message: String?) { self.message = message }
    }

    /// A file name from a stable 64-bit FNV-1a hash of the URL: the same on every launch and
    /// platform, unlike `hashValue`, and never a path outside the folder.
    static func fileName(for url: String) -> String {
        name(fileID(for: url))
    }

    /// The hash that `fileName(for:)` writes in hexadecimal.
    static func fileID(for url: String) -> UInt64 {
        func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {  // every byte: a key with a NUL is a key of its own
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            return hash
        }
        // A native string's bytes in place: its UTF-8 view, walked index by index, costs several times more.
        return url.utf8.withContiguousStorageIfAvailable(hash) ?? hash(url.utf8)
    }

    /// An image file's name: `id` in 16 lowercase hexadecimal digits.
    static func name(_ id: UInt64) -> String {
        // Written byte by byte into the stack: one allocation per name, where `String(_:radix:)`
        // and padding made several.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { name in
            for index in 0..<16 {
                let digit = UInt8(truncatingIfNeeded: id >> (60 - 4 * index)) & 0xf
                name[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
            }
            return String(decoding: name, as: UTF8.self)
        }
    }

    /// A temporary file's name for the image file `name`: ".<name>.<writer>.<number>.tmp" (hidden,
    /// beside its final name; see `deleteIfStale` for how the writer's pid is read back).
    static func temporaryName(_ name: String, writer: Int32, number: UInt64) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { bytes in
            var count = 0
            func append(_ byte: UInt8) { bytes[count] = byte; count += 1 }
            func append(decimal: UInt64) {
                let start = count
                var rest = decimal
                repeat { append(UInt8(ascii: "0") + UInt8(rest % 10)); rest /= 10 } while rest > 0
                bytes[start..<count].reverse()
            }
            append(UInt8(ascii: "."))
            for byte in name.utf8.prefix(16) { append(byte) }
            append(UInt8(ascii: "."))
            if writer < 0 { append(UInt8(ascii: "-")) }
            append(decimal: UInt64(writer.magnitude))
            append(UInt8(ascii: "."))
            append(decimal: number)
            for byte in ".tmp".utf8 { append(byte) }
            return String(decoding: UnsafeMutableBufferPointer(rebasing: bytes[..<count]), as: UTF8.self)
        }
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

    /// Whether `name` is a temporary file's: a hidden name ending in ".tmp" (see `deleteIfStale`).
    static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".tmp")
    }
}

nonisolated extension ImageCache {
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

// The disk tier's folder as files: their names, and a listing that keeps little of each.
nonisolated extension ImageCache.DiskStore {
    /// An image file in the folder as `stat` saw it: what the tier needs of it, in 40 bytes, so that
    /// a scan of a large folder holds a tenth of what a name `String` and a whole `stat` would.
    struct File {
        let id: UInt64  // the name, 16 hex digits, as a number
        let size: Int64
        let downloadedAt: TimeInterval  // the modification date
        private(set) var usedAt: TimeInterval  // the access date
        let inode: UInt64  // with `downloadedAt`, what a later delete checks

        var name: String { ImageCache.DiskStore.name(id) }

        /// Counts it as the least recently used file (its dates cannot be trusted).
        mutating func markLeastRecentlyUsed() { usedAt = -.infinity }

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
        var files: [File] = []
        var temporary: [String] = []
        let listed = forEachName { directory, name in
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
        if let directory = listed { for name in temporary { deleteIfStale(name, in: directory) } }
        return files
    }

    /// The numbers of the names in the folder that are image files' names, without a `stat` of
    /// any (one may be something else by that name); nil if the folder cannot be listed.
    func imageIDs() -> Set<UInt64>? {
        _ = reopenIfReplaced()
        var ids = Set<UInt64>()
        let listed = forEachName { _, name in
            if let id = Self.imageID(name) { ids.insert(id) }
        }
        return listed == nil ? nil : ids
    }

    /// Calls `body` with the folder and each name in it (`d_name`, NUL-terminated), read with
    /// `readdir`; returns the folder, nil if it cannot be listed.
    private func forEachName(_ body: (Int32, UnsafeRawBufferPointer) -> Void) -> Int32? {
        guard let directory = openFolder(create: false) else { return nil }
        // An open file of its own: `readdir` moves the offset, which `directory` must not share.
        let fd = Foundation.openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = Foundation.fdopendir(fd) else {
            if fd >= 0 { Foundation.close(fd) }
            return nil
        }
        defer { Foundation.closedir(stream) }
        while let entry = Foundation.readdir(stream) {
            withUnsafeBytes(of: &entry.pointee.d_name) { body(directory, $0) }
        }
        return directory
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
}
