// What a miss's look-up on disk may know without looking the name up (`FolderWatch`): the image
// names the folder has held since a listing, kept by the kernel's notices of new names (inotify, on
// Linux; elsewhere there is none and every look-up opens its name).

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
    /// The image names a folder may hold: every name a listing found, and every name that came into
    /// it since the watch began, by any process (the kernel tells of each name made or renamed into
    /// the folder; its notice is queued before the call that made it returns). A name it does not
    /// hold is not in the folder, which a miss then knows without an `open` of a name the file
    /// system has never cached (the most costly look-up there is). Any thread may ask it (its lock
    /// is taken last, and never held while it calls out). Once the notices can no longer say
    /// everything (too many queued, the folder itself moved), it knows nothing, and the store stops
    /// using it. A folder deleted (or replaced, or its parent renamed) while the store holds it open
    /// is not told of (the kernel's notice waits for the last descriptor): the store's own check
    /// that its path still names the open folder, at each look-up, finds that.
    internal final class FolderWatch: @unchecked Sendable {  // its state is guarded by `lock`
        private let notices: Int32  // the inotify descriptor
        private let lock = NSLock()
        private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8_192, alignment: 8)  // for `drain`
        private var names: Set<UInt64>?  // nil until listed
        private var lost = false  // the notices may have missed a name
        private var partsSeen = false  // the folder of kept parts was there when listed, or came since

        #if canImport(Glibc)
        private static let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
                                         | IN_DONT_FOLLOW)
        #endif

        private static let parts = Array(PartialBody.folderName.utf8)

        private init(_ notices: Int32) { self.notices = notices }

        deinit {
            Foundation.close(notices)
            buffer.deallocate()
        }

        /// Watches the folder at `path`, which `directory` must be (else nil); nil too where the
        /// platform has no such notices or its limits are reached. It knows nothing until `list`.
        static func start(path: String, directory: Int32) -> FolderWatch? {
            #if canImport(Glibc)
            var (open, there) = (Foundation.stat(), Foundation.stat())
            guard Foundation.fstat(directory, &open) == 0 else { return nil }
            let notices = Foundation.inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard notices >= 0 else { return nil }
            let watch = FolderWatch(notices)
            // Watched by path: the folder there must still be the open one, after the watch began.
            guard Foundation.inotify_add_watch(notices, path, mask) >= 0, Foundation.lstat(path, &there) == 0,
                  open.st_ino == there.st_ino, open.st_dev == there.st_dev else {
                return nil
            }
            return watch
            #else
            return nil
            #endif
        }

        /// Begins to know the folder's names: `listed`, the image names a listing made after `start`
        /// found (nil: it could not list), and whether the folder of kept parts was there after `start`.
        func list(_ listed: Set<UInt64>?, holdsParts: Bool) {
            lock.withLock {
                guard let listed else { return lost = true }
                (names, partsSeen) = (listed, partsSeen || holdsParts)
                drain()
            }
        }

        /// True if the notices may have missed a name: it knows nothing any more.
        var isLost: Bool { lock.withLock { lost } }

        /// True if the folder holds no image file named for `id`: after the notices queued so far.
        /// False when it may, or when it cannot know.
        func knowsAbsent(_ id: UInt64) -> Bool {
            lock.withLock {
                guard names != nil, !lost else { return false }
                // Known there, or there once (notices only add names): no notice can change that, so
                // a disk hit reads none (a `read` of the notices, a system call). No second reference
                // to the set is held while `drain` adds to it (that would copy it whole).
                if names?.contains(id) == true { return false }
                drain()
                guard !lost, let known = names?.contains(id) else { return false }
                return !known
            }
        }

        /// True if the folder holds no folder of kept parts (`PartialBody`), after the notices queued
        /// so far. False when it may, or when it cannot know.
        var knowsNoParts: Bool {
            lock.withLock {
                guard names != nil, !lost, !partsSeen else { return false }
                drain()
                return !lost && !partsSeen
            }
        }

        /// Reads the notices queued so far: each image name made in the folder joins `names`; a
        /// notice that some were lost, or that the folder itself moved (or went: told only once no
        /// descriptor holds it), loses the watch. Under `lock`.
        private func drain() {
            #if canImport(Glibc)
            while !lost {
                let count = Foundation.read(notices, buffer.baseAddress, buffer.count)
                guard count > 0 else {
                    if count < 0, Foundation.errno == EAGAIN || Foundation.errno == EINTR { return }
                    return lost = true
                }
                do {
                    let bytes = UnsafeRawBufferPointer(buffer)
                    var offset = 0
                    let header = MemoryLayout<inotify_event>.size
                    while offset + header <= count {
                        let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                        let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                        if mask & UInt32(IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT) != 0 {
                            lost = true
                        } else if length > 0, offset + header + length <= count {
                            let name = UnsafeRawBufferPointer(rebasing: bytes[(offset + header)..<(offset + header + length)])
                            if let id = DiskStore.imageID(name) {
                                names?.insert(id)
                            } else if name.starts(with: Self.parts), name.count == Self.parts.count || name[Self.parts.count] == 0 {
                                partsSeen = true
                            }
                        }
                        offset += header + length
                    }
                }
            }
            #endif
        }
    }
}
