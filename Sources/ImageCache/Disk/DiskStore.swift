// The disk tier, `DiskStore`: one file per key in the cache's folder, its dates and attributes, its
// limits and sweeps, used on the disk queue only; and the folder as files (a listing that keeps
// little of each). The folder's name, how it is opened, and the files' names are in Folder.swift.

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
    /// The disk tier: one file per key, named by a stable hash of it, holding the original bytes.
    /// No index: a file's modification date is when its image was downloaded, its access date
    /// when it was last used (set by the cache itself, since mounts update access dates lazily or
    /// never). Used only on the cache's disk queue.
    ///
    /// Safe for several processes on one folder, without fsync: a file is written under a unique
    /// temporary name and renamed, so a reader sees a whole file or none; a file is deleted for
    /// being old or unused only if it is still the one that was judged (same inode and date), so a
    /// file another process has just written is not; a temporary file is deleted only when the
    /// process named in it is gone or it has not changed for an hour (a crash's left-overs). A file that
    /// does not decode (a write torn by power loss) is a miss, and is deleted. Nothing is opened
    /// through a symbolic link: the folder is opened once with `O_NOFOLLOW`, and every file in it
    /// relative to that descriptor, also with `O_NOFOLLOW`.
    internal final class DiskStore: @unchecked Sendable {  // confined to the disk queue
        /// An image to keep on disk.
        struct Item {
            let url: String
            let data: Data?  // nil: memory no longer has the bytes (they were written)
            let size: Int
            let downloadedAt: TimeInterval
            let receivedAt: TimeInterval  // earlier than `downloadedAt` by the shift of a long max-age
            var validators: Validators?
            var headers: HTTP.FreshnessHeaders?  // its Cache-Control and Expires (see `Validators.headers(fd:)`)
            // Hashed on the disk queue, not under the lock where the item is made.
            var id: UInt64 { fileID(for: url) }
        }

        /// What a write knows of the file it replaces, for the disk's figures: nothing (it looks
        /// before it renames), what its caller found in the same turn of the disk queue (`keep`,
        /// which looks anyway), so that it does not look twice; or that a listing found none, and
        /// the write must not replace one that came since (see `POSIX.renameIfAbsent`).
        enum Replacing {
            case unknown
            case looked(File?)
            case absent
        }

        /// What `write` did: wrote the file, failed (and reported it), or, `.absent`, found a file
        /// there (or a file system that cannot tell), for the caller to look at.
        enum Written {
            case written, failed, found
        }

        /// A file as read: its bytes, and whether it has expired (then its validators and freshness
        /// headers, if it has some).
        struct Found {
            let file: File
            let receivedAt: TimeInterval  // see `Item`
            let data: Data
            let validators: Validators?
            let headers: HTTP.FreshnessHeaders?
            let expired: Bool
        }

        let folder: URL
        let folderPath: String  // `folder.path`, which costs microseconds a call
        private(set) weak var owner: ImageCache?
        private var directory: Int32 = -1  // the folder, opened without following a link; -1 until needed
        private var opened: Foundation.stat?  // `directory`'s `fstat` when it was opened (nil: it failed)
        private var failing = false  // the last write failed: report a failure once, not per file
        private var renamesIfAbsent = POSIX.renamesIfAbsent  // false once the file system says it cannot
        private var lastTouch: TimeInterval = 0
        // The writer's part of a temporary file's name: this process, and a number unique to this
        // instance's writes (a random start, then counted), with no system call per write. (A child
        // forked without exec that went on writing would share both: a write that then collides
        // fails with EEXIST and is reported, and nothing is overwritten.)
        let writer = Foundation.getpid()
        private var writes = UInt32.random(in: 0 ... .max)
        private(set) var sweep: DispatchWorkItem?  // scheduled by the first lookup
        // The names the folder may hold, once listed (see `watchNames`): set on the disk queue, read
        // from any thread (`knowsAbsent`).
        private var watch: FolderWatch? {
            get { watchLock.withLock { _watch } }
            set { watchLock.withLock { _watch = newValue } }
        }
        private var _watch: FolderWatch?
        private let watchLock = NSLock()
        private var watchStarts = 0
        // The image files and their bytes when last counted, plus what this instance wrote and
        // deleted since; nil until counted. Only `recount` and `count` change it: they tell the cache.
        private var counted: (files: Int, bytes: Int)?
        // The stored images being encoded, by file: written when their bytes come unless a write
        // or a removal of the file comes first (see `ImageStore`).
        private(set) var storing: [UInt64: ImageStore] = [:]
        private(set) var timeToLive: TimeInterval  // the cache's settings, set here in order with the disk work
        private(set) var maxBytes: Int
        private(set) var maxStreamedBytes = ImageCache.defaultMaxDiskImageBytes  // ``ImageCache/maxDiskImageBytes``
        private(set) var keepsExpired = false
        #if IMAGECACHE_TESTING
        var injectedWriteError: POSIXErrorCode?  // see ImageCacheTests/TestHooks.swift
        private(set) var encodesEnded = 0  // stored images whose encoding came back, written or not (ImageCacheTests/TestHooks.swift)
        #endif
        internal static let staleTemporaryAge: TimeInterval = 3_600

        init(folder: URL, timeToLive: TimeInterval, maxBytes: Int) {
            self.folder = folder
            folderPath = folder.path
            self.timeToLive = timeToLive
            self.maxBytes = maxBytes
        }

        deinit {
            if directory >= 0 { Foundation.close(directory) }
        }

        /// The file `id` names if it is there, a regular file, and not expired (an expired one is
        /// deleted); marks it as used `now`.
        func read(_ id: UInt64, now: TimeInterval, maxBytes: Int) -> Found? {
            guard openFolder(create: false) != nil else { return nil }
            if sweep == nil, let queue = owner?.diskQueue {
                // Once per instance, 2 s after its first lookup: expired files, a crash's
                // temporary files and files past `maxBytes` go without competing with a launch's
                // first lookups. (Queued at once, a sweep of a large folder held the first
                // callbacks back.)
                let sweep = DispatchWorkItem { [weak self] in
                    guard let self, let owner = self.owner else { return }
                    self.reduce(maxBytes: self.maxBytes, now: owner.currentTime())
                }
                self.sweep = sweep
                queue.asyncAfter(deadline: .now() + 2, execute: sweep)
            }
            var watch = self.watch  // read once: its accessor takes a lock
            if watch?.isLost ?? true { watchNames(); watch = self.watch }
            // Known absent, unless the folder was replaced: then its new one is looked in.
            if watch?.knowsAbsent(id) == true, !reopenIfReplaced() { return nil }
            var fd = openFile(id)
            if fd == nil, Foundation.errno == ENOENT, reopenIfReplaced() { fd = openFile(id) }
            guard let fd else { return nil }
            defer { Foundation.close(fd) }
            // Larger than any download may be: not read (a planted or damaged file), a miss.
            guard let file = File(id, { Foundation.fstat(fd, $0) }),
                  file.size <= Int64(max(maxBytes, maxStreamedBytes)) else { return nil }
            var (expired, receivedAt) = (now >= file.downloadedAt + timeToLive, file.downloadedAt)
            if receivedAt > now + ImageCache.maxClockSkew {  // a date in the future, unless a max-age moved it there
                receivedAt -= Validators.shift(fd: fd)
                expired = expired || receivedAt > now + ImageCache.maxClockSkew
            }
            // Two more system calls: only when needed.
            let (validators, headers) = expired ? (Validators(fd: fd), Validators.headers(fd: fd)) : (nil, nil)
            // An expired file stays only to be revalidated, or to be served when offline.
            guard !expired || validators != nil || keepsExpired else {
                delete(file)
                return nil
            }
            // A large file is mapped, as its body was when it was streamed to disk: its pages are
            // read when the decode touches them, never copied into memory whole.
            let data = file.size > Int64(ImageCache.streamedAbove) ? POSIX.map(fd, count: Int(file.size))
                : POSIX.readAll(fd, count: Int(file.size))
            guard let data else { return nil }
            if !expired { Foundation.futimens(fd, dates(usedAt: now)) }
            return Found(file: file, receivedAt: receivedAt, data: data, validators: validators, headers: headers,
                         expired: expired)
        }

        /// The bytes of file `id` if it is still the entry downloaded at `downloadedAt` with `size`
        /// bytes (its date within 2 s: some file systems keep whole seconds); read as a look-up reads.
        func bytes(of id: UInt64, downloadedAt: TimeInterval, size: Int, now: TimeInterval) -> Data? {
            guard let found = read(id, now: now, maxBytes: size), found.data.count == size,
                  abs(found.file.downloadedAt - downloadedAt) <= 2 else { return nil }
            return found.data
        }

        /// Marks the file `found` was read from as downloaded again `now` (a `304 Not Modified`), with
        /// the freshness headers the `304` updated, if it is still that file.
        func renew(_ found: Found, downloadedAt: TimeInterval, receivedAt now: TimeInterval,
                   headers: HTTP.FreshnessHeaders) {
            guard isStill(found.file), let directory = openFolder(create: false) else { return }
            Foundation.utimensat(directory, found.file.name, dates(usedAt: now, downloadedAt: downloadedAt),
                                 AT_SYMLINK_NOFOLLOW)
            withFile(found.file.id) { fd in
                if downloadedAt > now { Validators.setShift(downloadedAt - now, fd: fd) }
                Validators.setHeaders(headers, fd: fd)
            }
        }

        /// Writes each image whose file is missing or older than it (or as old, of another size);
        /// marks the others as used. A newer file (another process's, say) is left as it is.
        func keep(_ items: [Item], usedAt now: TimeInterval) {
            // Many images beside a folder that is not much larger (a `persistCacheToDisk` after a
            // purge, say): one listing of the names instead of a `stat` per image that finds none.
            // An image the listing did not find is renamed into place only if there is still no
            // file (another process's may have come since, or this batch's own at another size).
            let listed = renamesIfAbsent && items.count >= 16 && (counted?.files ?? .max) <= 8 * items.count
            let present = listed ? imageIDs() : nil
            for item in items {
                if present?.contains(item.id) == false, write(item, usedAt: now, replacing: .absent) != .found {
                    continue
                }
                // 2 s: some file systems keep whole seconds.
                let file = file(item.id)
                if let file, file.downloadedAt > item.downloadedAt + 2
                    || (file.size == Int64(item.size) && file.downloadedAt + 2 >= item.downloadedAt) {
                    touch([file.id], at: now)
                } else {
                    write(item, usedAt: now, replacing: .looked(file))  // nothing if memory no longer has the bytes
                }
            }
        }

        /// Writes one image under a temporary name and renames it into place (see `Written`). If the
        /// images' bytes are then over `maxBytes`, deletes the least recently used down to 90% of it.
        /// A body streamed to disk (`spool`) is renamed into place instead, with the same dates and
        /// attributes; it cannot be written again if that fails.
        @discardableResult
        func write(_ item: Item, usedAt now: TimeInterval, replacing: Replacing = .unknown, spool: Spool? = nil) -> Written {
            guard let data = item.data ?? (spool == nil ? nil : Data()) else { return .failed }
            var replaced: Int64?  // the size of the file the write replaced
            var mode = replacing
            do {
                #if IMAGECACHE_TESTING
                if let injected = injectedWriteError { throw POSIXError(injected) }
                #endif
                do {
                    replaced = try spool.map { try adoptFile(item, $0, usedAt: now) }
                        ?? writeFile(item, data, usedAt: now, replacing: replacing)
                } catch let error as POSIXError where error.code == .ENOENT && spool == nil {
                    // The folder was deleted (and every file with it), or our temporary file was
                    // taken for a dead writer's: try once more, in the folder as it is now, where
                    // what `keep` looked at is not there (a newer file may be).
                    _ = reopenIfReplaced()
                    if case .looked = mode { mode = renamesIfAbsent ? .absent : .unknown }
                    replaced = try writeFile(item, data, usedAt: now, replacing: mode)
                }
                failing = false
            } catch let error as POSIXError where error.code == .EEXIST || error.code == .EINVAL || error.code == .ENOSYS {
                guard case .absent = mode else { return fail(item, error) }
                if error.code != .EEXIST { renamesIfAbsent = false }  // this file system cannot
                return .found
            } catch {
                return fail(item, error)
            }
            // Counted once: by the sweep, or here when a write comes first (the sweep waits 2 s), so
            // that only a write that passes the limit deletes anything.
            if counted == nil {
                recount()
            } else {
                count(files: replaced == nil ? 1 : 0, bytes: Int64(item.size) - (replaced ?? 0))
            }
            if let counted, counted.bytes > maxBytes { reduce(maxBytes: maxBytes - maxBytes / 10, now: now) }
            return .written
        }

        private func fail(_ item: Item, _ error: Swift.Error) -> Written {
            fail("cannot write \(folderPath)/\(Self.name(item.id)): \(POSIX.describe(error)); "
                 + "serving from memory and the network")
            return .failed
        }

        /// The cache it works for (held weakly: the cache holds it), set once the cache is made.
        func attach(to owner: ImageCache) { self.owner = owner }

        /// The cache's settings, set here in order with the disk work.
        func set(timeToLive: TimeInterval) { self.timeToLive = timeToLive }
        func set(maxStreamedBytes: Int) { self.maxStreamedBytes = maxStreamedBytes }
        func set(keepsExpired: Bool) { self.keepsExpired = keepsExpired }

        /// Notes a stored image being encoded for its file `job.item.id` (see `ImageStore`).
        func beginStoring(_ job: ImageStore) { storing[job.item.id] = job }

        /// Ends the store of file `id` under way, if any, and returns it.
        func endStoring(_ id: UInt64) -> ImageStore? {
            storing.isEmpty ? nil : storing.removeValue(forKey: id)
        }

        #if IMAGECACHE_TESTING
        func noteEncodeEnded() { encodesEnded += 1 }
        #endif

        /// A new `maxBytes`: applied at once only if the bytes already counted pass it (no listing
        /// ahead of a launch's lookups), else by the sweep or the next write.
        func setMaxBytes(_ limit: Int, now: TimeInterval) {
            maxBytes = limit
            if let counted, counted.bytes > limit { reduce(maxBytes: limit, now: now) }
        }

        /// Marks files as used, in the order given (the last is the most recent).
        func touch(_ ids: [UInt64], at now: TimeInterval) {
            guard let directory = openFolder(create: false) else { return }
            for id in ids { Foundation.utimensat(directory, Self.name(id), dates(usedAt: now), AT_SYMLINK_NOFOLLOW) }
        }

        func remove(_ id: UInt64) {
            guard let directory = openFolder(create: false) else { return }
            let name = Self.name(id)
            var absent = false  // nothing by that name (a `no-store` answer's usual case): one look-up, not two
            let size = File(id) { info in
                let result = Foundation.fstatat(directory, name, info, AT_SYMLINK_NOFOLLOW)
                absent = result != 0 && Foundation.errno == ENOENT
                return result
            }?.size
            if !absent, Foundation.unlinkat(directory, name, 0) == 0, let size { count(files: -1, bytes: -size) }
        }

        /// Drops a file because what was read from it is not an image.
        func discard(_ found: Found, because reason: String) {
            report("dropped \(folderPath)/\(found.file.name): \(reason)")
            delete(found.file)
        }

        /// Deletes every image, and temporary files a crash left behind.
        func removeAll() {
            for file in list(sweeping: true) { remove(file.id) }
            _ = PartialBody.reduce(in: folder, maxAge: 0, room: 0)
            recount((0, 0))
        }

        /// Deletes expired images and stale temporary files, then the least recently used images
        /// beyond the `maxCount` or `maxBytes` most recent.
        ///
        /// - Complexity: O(n log n) in the files, and ~40 bytes of memory a file.
        func reduce(maxCount: Int = .max, maxBytes: Int = .max, now: TimeInterval) {
            var live = list(sweeping: true)
            counted = nil  // counted below: the deletes on the way need not be
            let latest = now + ImageCache.maxClockSkew
            var end = 0  // `live` is filtered in place: a second array would double the memory
            for index in live.indices {
                var file = live[index]
                let untrusted = file.downloadedAt > latest
                    && file.downloadedAt - (withFile(file.id, Validators.shift(fd:)) ?? 0) > latest
                if untrusted || file.usedAt > latest { file.markLeastRecentlyUsed() }
                // An expired file with the server's validators is kept, to be revalidated.
                if now >= file.downloadedAt + timeToLive || untrusted, !keepsExpired,
                   withFile(file.id, { Validators(fd: $0) == nil }) ?? true {
                    delete(file)
                } else {
                    live[end] = file
                    end += 1
                }
            }
            live.removeLast(live.count - end)
            live.sort { $0.usedAt > $1.usedAt }
            // Kept parts of bodies (`PartialBody`) count against the limit, and go first for room.
            let images = live.reduce(0) { $0 + Int(clamping: $1.size) }
            let partial = PartialBody.reduce(in: folder, maxAge: timeToLive, room: maxBytes - min(images, maxBytes))
            var (kept, bytes) = (0, partial)
            for file in live {
                let size = Int(clamping: file.size)
                if kept < maxCount, size <= maxBytes - bytes {
                    (kept, bytes) = (kept + 1, bytes + size)
                } else {
                    delete(file)
                }
            }
            recount((kept, bytes))
        }

        /// Counts the folder's image files and their bytes again, for the cache's statistics.
        func recount() {
            recount(sizes())
        }

        private func recount(_ counts: (files: Int, bytes: Int)) {
            counted = counts
            owner?.diskCounted(counts)
        }

        /// Adds to what was counted (nothing until the folder has been counted), for the statistics.
        private func count(files: Int, bytes: Int64) {
            guard let old = counted else { return }
            recount((max(0, old.files + files), max(0, Int(clamping: Int64(old.bytes) + bytes))))
        }

        /// How many entry files the folder holds (expired ones included), and their bytes.
        func sizes() -> (files: Int, bytes: Int) {
            let files = list()
            return (files.count, Int(clamping: files.reduce(Int64(0)) { $0 + $1.size }))
        }

        /// Opens file `id` in the folder to read it. O_NONBLOCK: a FIFO planted under an image's name must
        /// not block the disk queue.
        private func openFile(_ id: UInt64) -> Int32? {
            guard let directory = openFolder(create: false) else { return nil }
            let fd = Foundation.openat(directory, Self.name(id), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            return fd >= 0 ? fd : nil
        }

        /// Watches the folder's names (`FolderWatch`; a few times at most, as a watch may be lost), listed
        /// 2 s later on the disk queue: a listing of a large folder would hold a launch's first
        /// look-ups back, which open their names meanwhile.
        private func watchNames() {
            watch = nil
            guard watchStarts < 3, let queue = owner?.diskQueue, let directory = openFolder(create: false) else { return }
            watchStarts += 1
            guard let watch = FolderWatch.start(path: folderPath, directory: directory) else { return }
            self.watch = watch
            queue.asyncAfter(deadline: .now() + 2) { [weak self] in self?.listWatched(watch) }
        }

        /// True if the folder's watch knows that it holds no file `id` now; from any thread. The folder
        /// moved away, deleted or replaced is not looked for (an `lstat` of its path costs
        /// microseconds; the kernel tells the watch of a move only, not of a deletion while the store
        /// holds the folder open): a removal queued instead would look in the open folder too.
        func knowsAbsent(_ id: UInt64) -> Bool {
            watch?.knowsAbsent(id) ?? false
        }

        /// Lists the folder for `watch`, if it is still the folder's.
        internal func listWatched(_ watch: FolderWatch) {
            let names = imageIDs()  // may find the folder replaced, and drop the watch
            if watch === self.watch { watch.list(names, holdsParts: names == nil || holdsParts()) }
        }

        #if IMAGECACHE_TESTING
        internal var folderWatch: FolderWatch? { watch }  // for tests to list at once, and to ask
        #endif

        /// Whether the folder holds a folder of kept parts (`PartialBody`), or may: known from the
        /// folder's watch, else one name looked up in the open folder.
        func holdsParts() -> Bool {
            if watch?.knowsNoParts == true { return false }
            guard let directory = openFolder(create: false) else { return true }
            var info = Foundation.stat()
            return Foundation.fstatat(directory, PartialBody.folderName, &info, AT_SYMLINK_NOFOLLOW) == 0
                || Foundation.errno != ENOENT
        }

        /// Whether the folder holds a file under `id` (a regular one).
        func holds(_ id: UInt64) -> Bool {
            withFile(id) { fd in
                var info = Foundation.stat()
                return Foundation.fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
            } ?? false
        }

        /// Deletes `file` if its name still holds it: a file another process has written since stays.
        private func delete(_ file: File) {
            guard isStill(file), let directory = openFolder(create: false) else { return }
            if Foundation.unlinkat(directory, file.name, 0) == 0 { count(files: -1, bytes: -file.size) }
        }

        /// Runs `body` on file `id` opened to read, and closes it; nil if it cannot be opened.
        @discardableResult
        private func withFile<T>(_ id: UInt64, _ body: (Int32) -> T) -> T? {
            guard let fd = openFile(id) else { return nil }
            defer { Foundation.close(fd) }
            return body(fd)
        }

        /// True if `judged`'s name still holds that file (same inode and date).
        private func isStill(_ judged: File) -> Bool {
            guard let current = file(judged.id) else { return false }
            return current.inode == judged.inode && current.downloadedAt == judged.downloadedAt
        }

        /// Forgets the folder's descriptor if the folder it stands for was deleted or replaced (by
        /// anyone: another instance or process may have made it again); true if it did.
        internal func reopenIfReplaced() -> Bool {
            guard directory >= 0 else { return false }
            var open = opened ?? Foundation.stat(), now = Foundation.stat()
            // The open folder's inode and device, read when it was opened, cannot change; and a deleted
            // folder's inode is not reused while it is open: a path that still leads to it is the folder.
            let gone = (opened == nil && (Foundation.fstat(directory, &open) != 0 || open.st_nlink == 0))
                || Foundation.lstat(folderPath, &now) != 0 || now.st_ino != open.st_ino || now.st_dev != open.st_dev
            guard gone else { return false }
            report("the folder \(folderPath) was deleted or replaced; using the one there now")
            Foundation.close(directory)
            directory = -1
            watch = nil  // it watched the old one
            return true
        }

        /// The folder's descriptor, opened once without following a symbolic link; with `create`,
        /// the folder (and its parents) are made first. It must be the process's own and private
        /// (0700 is set if it is not): a folder others can write to could be handed planted images.
        internal func openFolder(create: Bool) -> Int32? {
            if directory >= 0 { return directory }
            switch Self.openPrivate(folder, create: create) {
            case .success(let fd):
                var info = Foundation.stat()
                (directory, opened) = (fd, Foundation.fstat(fd, &info) == 0 ? info : nil)
                return fd
            case .failure(let problem):
                if let message = problem.message { fail(message) }
                return nil
            }
        }

        /// Writes `data` (the bytes of `item`) to a temporary file, with its dates, validators and
        /// freshness headers, and renames it into place; returns the size of the file it replaced, if
        /// any. A failure deletes the temporary file.
        private func writeFile(_ item: Item, _ data: Data, usedAt now: TimeInterval,
                               replacing: Replacing) throws -> Int64? {
            guard let directory = openFolder(create: true) else { throw POSIX.lastError() }
            let name = Self.name(item.id)
            // Hidden, unique across processes, and beside its final name.
            writes &+= 1
            let temporary = Self.temporaryName(name, writer: writer, number: UInt64(writes))
            let fd = Foundation.openat(directory, temporary,
                                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw POSIX.lastError() }
            var closed = false
            do {
                try data.withUnsafeBytes { bytes in
                    let written = POSIX.transfer(bytes.count) {
                        Foundation.write(fd, bytes.baseAddress! + $0, bytes.count - $0)
                    }
                    if !written { throw POSIX.lastError() }
                }
                try describe(fd, as: item, usedAt: now)
                closed = true  // once, even if that fails: the descriptor is gone either way
                // A network file system may report a full disk only here.
                try POSIX.check(Foundation.close(fd))
                switch replacing {
                case .unknown:
                    let replaced = file(item.id)?.size
                    try POSIX.check(Foundation.renameat(directory, temporary, directory, name))
                    return replaced
                case .looked(let file):
                    try POSIX.check(Foundation.renameat(directory, temporary, directory, name))
                    return file?.size
                case .absent:
                    try POSIX.check(POSIX.renameIfAbsent(directory, temporary, name))
                    return nil
                }
            } catch {
                if !closed { Foundation.close(fd) }
                Foundation.unlinkat(directory, temporary, 0)
                throw error
            }
        }

        /// Gives the file open as `fd` what a lookup reads besides the bytes: the validators and
        /// freshness headers of `item`, and its dates.
        private func describe(_ fd: Int32, as item: Item, usedAt now: TimeInterval) throws {
            item.validators?.write(to: fd)
            Validators.setHeaders(item.headers, fd: fd)
            if item.downloadedAt > item.receivedAt {
                Validators.setShift(item.downloadedAt - item.receivedAt, fd: fd)
            }
            try POSIX.check(Foundation.futimens(fd, dates(usedAt: now, downloadedAt: item.downloadedAt)))
        }

        /// Renames the body `spool` streamed to disk into place as the file of `item`, described as
        /// `writeFile` describes a file; returns the size of the file it replaced, if any. The
        /// temporary file is in the folder the spool was opened in: if that is no longer the folder
        /// (deleted or replaced meanwhile), the rename fails and the spool deletes its file.
        private func adoptFile(_ item: Item, _ spool: Spool, usedAt now: TimeInterval) throws -> Int64? {
            guard let directory = openFolder(create: true) else { throw POSIX.lastError() }
            var folder = Foundation.stat(), spoolFolder = Foundation.stat()
            guard Foundation.fstat(directory, &folder) == 0, Foundation.fstat(spool.directory, &spoolFolder) == 0,
                  folder.st_ino == spoolFolder.st_ino, folder.st_dev == spoolFolder.st_dev else {
                throw POSIXError(.ENOENT)
            }
            try spool.close { try describe($0, as: item, usedAt: now) }
            let replaced = file(item.id)?.size
            try POSIX.check(Foundation.renameat(spool.directory, spool.name, directory, Self.name(item.id)))
            spool.noteAdopted()
            return replaced
        }

        /// Dates for `futimens` or `utimensat`: last used `now`, and downloaded at `downloadedAt` (nil:
        /// left as it is). Later uses get later dates, even within one clock tick, so that the order
        /// of use is kept.
        private func dates(usedAt now: TimeInterval, downloadedAt: TimeInterval? = nil) -> [Foundation.timespec] {
            lastTouch = max(now, lastTouch + 1e-6)
            return [POSIX.time(lastTouch), downloadedAt.map(POSIX.time) ?? POSIX.omit]
        }

        private func report(_ message: String) {
            owner?.emit(.diskProblem(message))
        }

        /// Reports a failing disk once; the next successful image write ends the episode.
        private func fail(_ message: String) {
            if !failing { report(message) }
            failing = true
        }
    }
}
