// System calls by qualified names (so that a copied file never picks up a host app's own `read` or
// `close`), with their errors and the dates files carry.

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

        /// Maps the first `count` bytes of `fd`, read-only, as `Data` that unmaps them when the last
        /// copy goes: the pages are the file's (the kernel reads them when touched and may drop them
        /// again), not the process's heap. The mapping outlives `fd` and the file's name. Nil if
        /// `mmap` fails, and for 0 bytes (there is nothing to map).
        static func map(_ fd: Int32, count: Int) -> Data? {
            guard count > 0 else { return nil }
            let address = Foundation.mmap(nil, count, PROT_READ, MAP_PRIVATE, fd, 0)
            guard let address, address != MAP_FAILED else { return nil }
            return Data(bytesNoCopy: address, count: count, deallocator: .custom { address, count in
                Foundation.munmap(address, count)
            })
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

        /// Whether `renameIfAbsent` can work here: where the C library has `renameat2` (glibc since
        /// 2.28); not on Apple platforms, whose disk tier looks before it renames.
        static var renamesIfAbsent: Bool {
            #if canImport(Darwin)
            return false
            #else
            return renameat2 != nil
            #endif
        }

        /// Renames `from` to `to`, both in the folder `directory`, only if nothing is at `to`, in one
        /// step (`renameat2` with `RENAME_NOREPLACE`): 0, or -1 with `errno` set (`EEXIST`: something
        /// is at `to`; `EINVAL`: the file system cannot; `ENOSYS`: the C library cannot).
        static func renameIfAbsent(_ directory: Int32, _ from: String, _ to: String) -> Int32 {
            #if canImport(Darwin)
            Foundation.errno = ENOSYS
            return -1
            #else
            guard let renameat2 else {
                Foundation.errno = ENOSYS
                return -1
            }
            return renameat2(directory, from, directory, to, 1)  // RENAME_NOREPLACE
            #endif
        }

        #if !canImport(Darwin)
        // Glibc's module leaves out `renameat2`: it is found at run time.
        private static let renameat2 = Foundation.dlsym(nil, "renameat2").map {
            unsafeBitCast($0, to: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>,
                                                   UInt32) -> Int32).self)
        }
        #endif
    }
}
