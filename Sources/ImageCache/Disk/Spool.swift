// A large body on its way to disk (`Spool`): a temporary file in the cache's folder that the
// transport writes as the bytes arrive, that the disk queue renames into place as the entry's file
// (`DiskStore.write(_:usedAt:replacing:spool:)`), and that is deleted when nobody took it.

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
    /// Bodies larger than this many bytes (announced, or grown past it) are written to a temporary
    /// file as they arrive instead of gathered in memory: 4 MiB. Below it a body costs little beside
    /// what its decode costs, and takes today's path (one write and a rename once it is whole);
    /// above it, six downloads at once would hold 24 MiB and more of bodies in memory, each one
    /// twice while it is decoded and written. The common web image is far below it; a camera's photo
    /// or a panorama is above it.
    internal static let streamedAbove = 4 * 1024 * 1024

    /// A body streamed to disk: a temporary file in the cache's folder, named as `DiskStore` names
    /// its own (`.<entry>.<pid>.<number>.tmp`: a crash's is deleted by the next sweep, its process
    /// being gone), written on the transport's delegate queue as the bytes arrive. When the body is
    /// whole it is mapped (`mapped()`) for its decode, and the disk queue renames it into place as
    /// the entry's file, with its dates and validators (`DiskStore.write`), which `adopted` records.
    /// A spool nobody adopted (a transfer cancelled, failed, cut short, retried, not kept) is
    /// deleted when its last reference goes, unless `PartialBody.keep` kept a failed transfer's part
    /// to resume from (renamed to `.<entry>.partial`): no other path leaves its file behind.
    ///
    /// Thread safety: written by one queue at a time, handed on under the cache's lock (the
    /// transport's delegate queue fills it, the disk queue adopts it); `deinit` runs after both.
    internal final class Spool: @unchecked Sendable {
        let id: UInt64  // the entry's file
        let url: URL  // the temporary file, for ImageIO to read from (see `Decoder.decodeFile`)
        let name: String  // the temporary file's name in the folder
        let directory: Int32  // the folder the spool was opened in, its own descriptor
        private(set) var fd: Int32
        private(set) var count = 0  // bytes written
        private(set) var adopted = false  // renamed into place as the entry's file: not deleted

        /// Notes that it was renamed into place as the entry's file: its file is not deleted.
        func noteAdopted() { adopted = true }

        private init(id: UInt64, folder: URL, name: String, directory: Int32, fd: Int32, count: Int = 0) {
            (self.id, self.name, self.directory, self.fd, self.count) = (id, name, directory, fd, count)
            url = folder.appendingPathComponent(name)
        }

        /// A new temporary file for the entry `key` in `folder` (made if missing, and used only if it
        /// is private, as `DiskStore` uses it); nil if it cannot be made: the body then stays in
        /// memory within ``ImageCache/maxImageBytes``.
        static func open(in folder: URL, key: String) -> Spool? {
            guard case .success(let directory) = DiskStore.openPrivate(folder, create: true) else { return nil }
            let id = DiskStore.fileID(for: key)
            let name = DiskStore.temporaryName(DiskStore.name(id), writer: Foundation.getpid(), number: .random(in: 0 ... .max))
            // Read too: the whole body is mapped from it (`mapped()`).
            let fd = Foundation.openat(directory, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                Foundation.close(directory)
                return nil
            }
            return Spool(id: id, folder: folder, name: name, directory: directory, fd: fd)
        }

        /// A spool that goes on from a kept partial body (`PartialBody.claim`): the file `name` in
        /// `directory`, open as `fd` at its end, its `count` bytes there already.
        static func resuming(id: UInt64, folder: URL, name: String, directory: Int32, fd: Int32, count: Int) -> Spool {
            Spool(id: id, folder: folder, name: name, directory: directory, fd: fd, count: count)
        }

        /// Appends `data`; throws the system's error (a full disk, say).
        func append(_ data: Data) throws {
            try data.withUnsafeBytes { bytes in
                guard bytes.count > 0 else { return }
                let written = POSIX.transfer(bytes.count) {
                    Foundation.write(fd, bytes.baseAddress! + $0, bytes.count - $0)
                }
                if !written { throw POSIX.lastError() }
            }
            count += data.count
        }

        /// The whole body, mapped from the file rather than read: nil if it cannot be.
        func mapped() -> Data? {
            POSIX.map(fd, count: count)
        }

        /// Runs `body` on the file's descriptor, then closes it (once, even if that fails: the
        /// descriptor is gone either way; a network file system may report a full disk only there).
        func close(after body: (Int32) throws -> Void) throws {
            guard fd >= 0 else { throw POSIXError(.EBADF) }
            let fd = self.fd
            self.fd = -1
            do {
                try body(fd)
            } catch {
                Foundation.close(fd)
                throw error
            }
            try POSIX.check(Foundation.close(fd))
        }

        /// Deletes the file now (a failed transfer's, before its waiters hear of it); a mapping of
        /// it stays valid.
        func discard() {
            if fd >= 0 { Foundation.close(fd) }
            fd = -1
            if !adopted { Foundation.unlinkat(directory, name, 0) }
            adopted = true  // nothing left to delete
        }

        deinit {
            if fd >= 0 { Foundation.close(fd) }
            if !adopted { Foundation.unlinkat(directory, name, 0) }
            Foundation.close(directory)
        }
    }
}
