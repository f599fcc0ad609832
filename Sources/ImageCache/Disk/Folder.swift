// The cache's folder: how it is opened (its own, private, never through a link), its name, and the
// names in it: an image file's from its key (a stable hash, never a path outside the folder), the
// number a name stands for, a temporary file's name.

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
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 {  // every byte: a key with a NUL is a key of its own
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
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
