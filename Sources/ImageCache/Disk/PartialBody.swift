// A large body's first part, kept when its transfer failed (`PartialBody`): a file in a hidden
// folder inside the cache's folder that the next attempt or the next fetch (in this process or another) claims, asks
// the rest of with `Range` and `If-Range`, and appends to; removed when too old or when the disk
// limit needs room.

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
    /// The first part of a large body (one streamed to disk, see ``Spool``) whose transfer failed
    /// after some of it arrived: kept as `.<entry>.partial` in the hidden folder `.parts` inside
    /// the cache's folder (never listed as an entry), which is there only while a part is kept, so
    /// that a request's claim (one per download) fails at once in the common case, by the name of a
    /// folder the kernel knows is absent, rather than searching the cache's folder for a name; with the validator it was sent with (a strong `ETag`, else
    /// `Last-Modified`) in the file's extended attribute `user.imagecache.partial`; its length is the
    /// file's. The next request for the entry claims it by renaming it to a temporary name of its
    /// own (atomic: of two processes sharing the folder one gets it, the other asks for the whole
    /// body), and asks for the rest with `Range: bytes=N-` and `If-Range`: a `206` whose
    /// `Content-Range` starts at `N` is appended, a `200` (the validator changed, or the server
    /// ignores ranges) starts over. Where the file system keeps no extended attributes, nothing is
    /// resumed. ``DiskStore`` counts kept parts against the disk limit, and deletes them first
    /// when it needs room, and when they are older than the time to live.
    ///
    /// Thread safety: a claimed part belongs to one transfer (see `Transfer`), as its spool does.
    internal struct PartialBody {
        let spool: Spool  // the claimed file, open at its end
        let validator: String  // what `If-Range` carries
        private static let attribute = "user.imagecache.partial"

        /// The kept part's name for entry `id`.
        static func name(_ id: UInt64) -> String { "." + DiskStore.name(id) + ".partial" }

        /// The folder of kept parts, inside the cache's folder.
        static let folderName = ".parts"

        /// Whether `name` is a kept part's.
        static func isPartialName(_ name: String) -> Bool { name.hasPrefix(".") && name.hasSuffix(".partial") }

        /// The validator of `response` that `If-Range` may carry: a strong `ETag` (RFC 9110, 13.1.5:
        /// not a weak one), else `Last-Modified`.
        static func validator(_ response: URLResponse?) -> String? {
            let http = response as? HTTPURLResponse
            if let etag = http?.value(forHTTPHeaderField: "ETag"), !etag.hasPrefix("W/"), !etag.isEmpty { return etag }
            return http?.value(forHTTPHeaderField: "Last-Modified")
        }

        /// Claims the part kept for `key` in the folder of `disk`, if any, and asks `request` for the
        /// rest of it. A part without a readable validator is deleted. Called from any thread: it
        /// reads only what `disk` never changes.
        static func claim(in disk: DiskStore, key: String, _ request: inout URLRequest) -> PartialBody? {
            // By path, one call that fails at once in the common case (no part kept anywhere).
            let parts = Foundation.open(disk.folderPath + "/" + folderName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard parts >= 0 else { return nil }
            defer { Foundation.close(parts) }
            let (folder, id) = (disk.folder, DiskStore.fileID(for: key))
            guard case .success(let directory) = DiskStore.openPrivate(folder, create: false) else { return nil }
            let claimed = DiskStore.temporaryName(DiskStore.name(id), writer: disk.writer, number: .random(in: 0 ... .max))
            // The rename is the claim: of two claimants one finds the name gone.
            guard Foundation.renameat(parts, name(id), directory, claimed) == 0 else {
                Foundation.close(directory)
                return nil
            }
            Foundation.unlinkat(directory, folderName, AT_REMOVEDIR)  // gone with its last part (else not empty)
            let fd = Foundation.openat(directory, claimed, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            var info = Foundation.stat()
            guard fd >= 0, Foundation.fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0,
                  let validator = Validators.get(attribute, fd: fd, capacity: 2_048),
                  validator.unicodeScalars.allSatisfy({ $0 == "\t" || $0.value >= 0x20 && $0.value != 0x7F }),
                  Foundation.lseek(fd, 0, SEEK_END) == info.st_size else {
                if fd >= 0 { Foundation.close(fd) }
                Foundation.unlinkat(directory, claimed, 0)
                Foundation.close(directory)
                return nil
            }
            let spool = Spool.resuming(id: id, folder: folder, name: claimed, directory: directory, fd: fd,
                                       count: Int(info.st_size))
            request.setValue("bytes=\(info.st_size)-", forHTTPHeaderField: "Range")
            request.setValue(validator, forHTTPHeaderField: "If-Range")
            return PartialBody(spool: spool, validator: validator)
        }

        /// The response to a request that asked for the rest of `transfer`'s part: a `206` that goes
        /// on from it makes the part the transfer's spool; a `206` of another range fails the
        /// attempt (and the part is deleted); anything else starts over without it.
        static func answered(_ transfer: Transfer, status: Int) {
            guard let partial = transfer.limits.partial else { return }
            guard status == 206 else {
                transfer.dropPartial()
                return partial.spool.discard()
            }
            let range = (transfer.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Range")
            guard let (start, total) = contentRange(range), start == partial.spool.count else {
                transfer.fail(.httpStatus(206))
                return
            }
            transfer.resume(from: partial.spool, at: start, total: total)
        }

        /// The first byte and the whole length a `Content-Range` says (`bytes 100-199/200`, the
        /// length `*` if unknown); nil if it says anything else.
        static func contentRange(_ value: String?) -> (start: Int, total: Int?)? {
            guard let value, value.lowercased().hasPrefix("bytes ") else { return nil }
            let parts = value.dropFirst(6).split(separator: "/", maxSplits: 1)
            let bounds = parts.first?.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false) ?? []
            guard parts.count == 2, bounds.count == 2,
                  let start = Int(bounds[0].trimmingCharacters(in: .whitespaces)),
                  let end = Int(bounds[1].trimmingCharacters(in: .whitespaces)), start >= 0, end >= start else { return nil }
            let total = parts[1] == "*" ? nil : Int(parts[1].trimmingCharacters(in: .whitespaces))
            guard parts[1] == "*" || total.map({ $0 > end }) == true else { return nil }
            return (start, total ?? end + 1)
        }

        /// A transfer failed: keeps the part of its body on disk if it can be resumed (some bytes of
        /// a body larger than them, with a validator, cut by the network rather than refused by the
        /// transport), or deletes it.
        static func keep(_ transfer: Transfer) {
            guard let spool = transfer.spool ?? transfer.limits.partial?.spool else { return }
            let status = (transfer.response as? HTTPURLResponse)?.statusCode
            let validator: String? = switch status {
            case nil: transfer.limits.partial?.validator  // claimed, never answered: kept as it was
            case 200: Self.validator(transfer.response)
            case 206: Self.validator(transfer.response) ?? transfer.limits.partial?.validator
            default: nil
            }
            let short = status == nil || transfer.expected.map { spool.count < $0 } == true
            guard let validator, transfer.failure == nil, short, spool.count > 0, !spool.adopted else {
                return spool.discard()
            }
            do {
                try spool.close { Validators.set(attribute, validator, fd: $0) }
            } catch {
                return spool.discard()
            }
            // Twice at most: a claim in another process may remove the folder, emptied, in between.
            for _ in 0..<2 {
                Foundation.mkdirat(spool.directory, folderName, 0o700)
                let parts = Foundation.openat(spool.directory, folderName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard parts >= 0 else { continue }
                defer { Foundation.close(parts) }
                if Foundation.renameat(spool.directory, spool.name, parts, name(spool.id)) == 0 { return spool.noteAdopted() }
            }
            spool.discard()
        }

        /// Deletes the kept parts in `folder` last written more than `maxAge` seconds ago, then all of
        /// them if their bytes exceed `room`; returns the bytes of those left, to count against the
        /// disk limit.
        static func reduce(in folder: URL, maxAge: TimeInterval, room: Int) -> Int {
            guard case .success(let folderFD) = DiskStore.openPrivate(folder, create: false) else { return 0 }
            defer { Foundation.close(folderFD) }
            let directory = Foundation.openat(folderFD, folderName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard directory >= 0 else { return 0 }
            defer {
                Foundation.close(directory)
                Foundation.unlinkat(folderFD, folderName, AT_REMOVEDIR)  // if none is left
            }
            let path = folder.appendingPathComponent(folderName).path
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter(isPartialName)
            let clock = Date().timeIntervalSince1970  // the real clock, like the files' own dates
            var kept: [(String, Int)] = []
            for name in names {
                var info = Foundation.stat()
                guard Foundation.fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                if info.st_mode & S_IFMT != S_IFREG || clock - POSIX.dates(of: info).modified >= maxAge {
                    Foundation.unlinkat(directory, name, 0)
                } else {
                    kept.append((name, Int(info.st_size)))
                }
            }
            let bytes = kept.reduce(0) { $0 + $1.1 }
            guard bytes > room else { return bytes }
            for (name, _) in kept { Foundation.unlinkat(directory, name, 0) }
            return 0
        }
    }
}
