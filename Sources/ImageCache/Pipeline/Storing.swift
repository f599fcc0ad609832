// Storing: what `store(_:for:)` puts in the cache, with the expensive work off the caller's thread.
// Bytes are decoded on a decode worker while their key's entry is a store's decode that fetches join
// (`StoreDecode`); an image goes to memory at once, and its bytes to disk after: its own, or the original bytes of the
// entry memory holds it in, or an encoding made on a decode worker whose write keeps its place
// among the disk's work (`ImageStore`).

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
    /// Stores `data` under `key` (see `store(_:for:)`): checked and decoded here where that is cheap
    /// (Linux's structural check), else on a decode worker.
    internal func store(_ data: Data, under key: Key) throws {
        let decoder = Decoder.image
        let limits = locked { $0.decodeLimits }
        guard decoder.isCheap(limits) else { return try decodeStored(data, under: key, decoder) }
        try store((try? decoder.decode(data, limits).get()) ?? Payload(bytes: data, value: Box(data)), under: key)
    }

    /// Puts `payload`, whose bytes are in hand, in memory and on disk under `key` at once. Downloads
    /// of the key, and of its sizes (the binder's), stop; their callers get it.
    private func store(_ payload: Payload, under key: Key) throws {
        let now = currentTime()
        let size = payload.bytes?.count ?? 0
        let item = DiskStore.Item(url: key.string, data: payload.bytes, size: size, downloadedAt: now, receivedAt: now)
        let stopped = try locked { ledger in
            let stopped = try ledger.replace(key, size: size)
            ledger.keepStored(key, payload, size: size, .write(item, key: key, usedAt: now), now: now)
            return stopped
        }
        finishStopped(stopped, with: .success(Delivery(payload: payload, source: .memory)), entryOf: key)
    }

    /// Stores `image` under `key` (see `store(_:for:)`): in memory at once (if memory keeps it), its
    /// bytes on disk after. Throws when their size is known now and too large. An image with no
    /// bytes in hand is encoded on the store's queue, never the caller's thread, whether memory
    /// keeps it or not (in an app extension memory keeps few photos): fetches of `key` wait for
    /// its file meanwhile.
    internal func store(_ image: Image, under key: Key) throws {
        if let refusal = Self.bitmapRefusal(of: image) { throw refusal }  // nothing to keep or encode
        let now = currentTime()
        let stopped = try locked { ledger in
            let bytes = storedBytes(of: image, in: ledger)
            let stopped = try ledger.replace(key, size: bytes.size)
            let item = DiskStore.Item(url: key.string, data: bytes.data, size: bytes.size ?? 0, downloadedAt: now,
                                      receivedAt: now)
            let disk: DiskWork = bytes.data != nil ? .write(item, key: key, usedAt: now)
                : .store(ImageStore(item, image, from: bytes.file, limit: ledger.settings.maxImageBytes,
                                    maxPixels: ledger.decodeLimits.maxPixels))
            ledger.keepStored(key, Payload(bytes: bytes.data, image: image), size: bytes.size ?? 0, disk, now: now)
            return stopped
        }
        finishStopped(stopped, with: .success(Delivery(payload: Payload(image: image), source: .memory)), entryOf: key)
    }

    /// The bytes `store` writes for `image`: the plugged encoder's (see ``Plugins/encoder``), else
    /// the platform's encoding (``encodedBytes(of:maxPixels:)``).
    private static func encoded(_ image: Image, by encoder: (any ImageEncoder)?, maxPixels: Int) -> Data? {
        guard let encoder else { return encodedBytes(of: image, maxPixels: maxPixels) }
        return encoder.encode(image)
    }

    /// Where the bytes `store` keeps for an image are.
    internal struct StoredBytes {
        var data: Data?  // in hand
        var file: (key: String, downloadedAt: TimeInterval, size: Int)?  // its entry's file, if still that
        var size: Int? { data?.count ?? file?.size }
    }

    /// The bytes `store` keeps for `image`: its own where it has them (Linux); else the original
    /// bytes of the entry memory holds it in (in memory until written, then in that entry's file);
    /// else none: it is encoded (``encodedBytes(of:maxPixels:)``). A variant processors made has
    /// no bytes of its own: the file under its key string is its original's, not it.
    ///
    /// - Complexity: O(n) in memory's entries, where an image has no bytes of its own.
    private func storedBytes(of image: Image, in ledger: Ledger) -> StoredBytes {
        if plugins.encoder == nil, let own = PlatformDecoder.downloadedBytes(of: image) { return StoredBytes(data: own) }
        guard let entry = ledger.slot(holding: image), entry.key.processors.isEmpty else { return StoredBytes() }
        if let data = entry.data { return StoredBytes(data: data) }
        return StoredBytes(file: (entry.key.string, entry.downloadedAt, entry.size))
    }

    /// An image `store` put in memory whose bytes were not in hand. Queued on the disk queue in the
    /// order of the disk's work; there its bytes are copied from the file of the entry it came from
    /// if that is still the entry's file, else encoded on a decode worker and written when they come,
    /// unless a removal or a write of the key came first (`DiskStore.storing`). Look-ups of the key
    /// on disk wait for it meanwhile, so that none reads the key's older file.
    internal final class ImageStore: @unchecked Sendable {  // used on the disk queue; the image only read
        let item: DiskStore.Item  // without its bytes
        let image: Image
        let source: (key: String, downloadedAt: TimeInterval, size: Int)?
        let limit: Int  // `maxImageBytes` when it was stored
        let maxPixels: Int  // the longest side of a whole decode when it was stored: its encoding's
        private(set) var parked: [DiskLookUp] = []  // look-ups waiting for it

        /// Keeps a look-up of its key on disk waiting until its file is settled (see `settle`).
        func park(_ lookUp: DiskLookUp) { parked.append(lookUp) }

        init(_ item: DiskStore.Item, _ image: Image, from source: (key: String, downloadedAt: TimeInterval, size: Int)?,
             limit: Int, maxPixels: Int) {
            (self.item, self.image, self.source, self.limit, self.maxPixels) = (item, image, source, limit, maxPixels)
        }

        func with(_ data: Data) -> DiskStore.Item {
            DiskStore.Item(url: item.url, data: data, size: data.count, downloadedAt: item.downloadedAt,
                           receivedAt: item.receivedAt)
        }
    }

    /// Writes a stored image's bytes, on the disk queue: copied from its entry's file if that is still
    /// the file, else encoded first on `encodes`, not on a decode worker that downloads wait for
    /// (`storedOnDisk` writes them then).
    internal func storeOnDisk(_ job: ImageStore) {
        let now = currentTime()
        if let source = job.source,
           let data = disk.bytes(of: DiskStore.fileID(for: source.key), downloadedAt: source.downloadedAt,
                                 size: source.size, now: now) {
            return run(.write(job.with(data), key: Key(string: job.item.url), usedAt: now))
        }
        settle(job.item.id)  // an earlier store of the key, still encoding, gives way
        disk.beginStoring(job)
        let encoder = plugins.encoder
        Self.encodes.async {
            let data = Self.encoded(job.image, by: encoder, maxPixels: job.maxPixels)
            self.diskQueue.async { self.storedOnDisk(job, data) }
        }
    }

    /// Writes the encoding of a stored image, on the disk queue, unless a removal or a write of its
    /// key came since. An image that cannot be encoded, or whose encoding is larger than
    /// `maxImageBytes`, leaves no file (the key's older one goes: it is not this image), and an
    /// event says why.
    private func storedOnDisk(_ job: ImageStore, _ data: Data?) {
        #if IMAGECACHE_TESTING
        disk.noteEncodeEnded()
        #endif
        guard disk.storing[job.item.id] === job else { return }
        if let data, data.count <= job.limit {
            return run(.write(job.with(data), key: Key(string: job.item.url), usedAt: currentTime()))
        }
        disk.remove(job.item.id)
        settle(job.item.id)
        let why = data == nil ? "it cannot be encoded" : "its encoding is larger than maxImageBytes (\(job.limit))"
        emit(.diskProblem("not keeping on disk the image stored under \(job.item.url): \(why)"))
    }

    /// Ends the store of file `id` under way, if any, on the disk queue: what came after it (a write,
    /// a removal) decides the file now, and the look-ups that waited for it go on.
    internal func settle(_ id: UInt64) {
        guard let job = disk.endStoring(id) else { return }
        for lookUp in job.parked { lookUp.run() }
    }

    /// Where stored images are encoded, at a utility priority: a photo's encoding takes a while, and
    /// the decode workers are the downloads'. (Concurrent: one store's slow encoding does not hold
    /// a later store of the same key, which wins.)
    private static let encodes = DispatchQueue(label: "ImageCache.encode", qos: .utility, attributes: .concurrent)

    /// `settle` for every store under way (the folder was emptied).
    internal func settleAll() {
        for id in Array(disk.storing.keys) { settle(id) }
    }
}

// The platform's encoding of an image that has no bytes of its own.
nonisolated extension ImageCache {
    /// How `store(_ image:for:)` encodes an image that has no bytes of its own: a JPEG (quality
    /// ``storedJPEGQuality``) for an opaque still, as a camera's photo is, compact; a PNG for one
    /// with transparency or an animation's frames, which a JPEG cannot keep.
    internal enum StoredEncoding: Equatable { case jpeg, png }

    internal static func storedEncoding(frames: Int, opaque: Bool) -> StoredEncoding {
        frames == 1 && opaque ? .jpeg : .png
    }

    internal static let storedJPEGQuality = 0.9

    /// Whether a bitmap whose `CGImageAlphaInfo` has the raw value `raw` is opaque: none, or an
    /// alpha byte skipped (`noneSkipLast`, `noneSkipFirst`).
    internal static func isOpaque(alphaInfo raw: UInt32) -> Bool {
        raw == 0 || raw == 5 || raw == 6
    }

    /// The longest side a stored image of `width` x `height` pixels is encoded at: `bound` (the
    /// longest side of a whole decode: more is never shown) if it is longer; nil to keep its size.
    internal static func storedMaxPixels(width: Int, height: Int, bound: Int) -> Int? {
        max(width, height) > bound ? max(1, bound) : nil
    }

    /// An image's bytes for the disk where it has none of its own, by ``storedEncoding(frames:opaque:)``,
    /// within `maxPixels` on its longest side (``storedMaxPixels(width:height:bound:)``), made by
    /// ImageIO: on UIKit with the image's orientation (as EXIF, which ImageIO applies when it
    /// decodes) and, for an animation, its frames (each for the time UIKit shows it) and play count;
    /// on AppKit of its bitmap (an `NSImage` is drawn upright); on Linux its own bytes.
    internal static func encodedBytes(of image: Image, maxPixels: Int) -> Data? {
        #if canImport(UIKit)
        let frames = image.images ?? [image]
        let runs = self.runs(frames)
        let unit = image.duration / Double(frames.count)  // UIKit shows every frame for the same time
        var stills: [(image: CGImage, orientation: Int, delay: Double?)] = []
        for (frame, repeats) in runs {
            guard let cgImage = frame.cgImage else { return nil }
            stills.append((cgImage, exifOrientation(uiKit: frame.imageOrientation.rawValue),
                           runs.count > 1 ? unit * Double(repeats) : nil))
        }
        return imageIOBytes(stills, plays: runs.count > 1 ? PlatformDecoder.plays(of: image) ?? 0 : nil, maxPixels: maxPixels)
        #elseif canImport(AppKit)
        guard let cgImage = image.tiffRepresentation.flatMap(NSBitmapImageRep.init(data:))?.cgImage else { return nil }
        return imageIOBytes([(cgImage, 1, nil)], plays: nil, maxPixels: maxPixels)
        #else
        return image.data
        #endif
    }

    #if canImport(ImageIO)
    /// `stills` written by ImageIO as one file (a JPEG for one opaque still, else a PNG, an APNG of
    /// them with their delays and `plays` when there are several), each within `maxPixels`.
    private static func imageIOBytes(_ stills: [(image: CGImage, orientation: Int, delay: Double?)], plays: Int?,
                                     maxPixels: Int) -> Data? {
        let opaque = stills.allSatisfy { isOpaque(alphaInfo: $0.image.alphaInfo.rawValue) }
        let encoding = storedEncoding(frames: stills.count, opaque: opaque)
        let data = NSMutableData()
        let type = encoding == .jpeg ? "public.jpeg" : "public.png"
        guard let destination = CGImageDestinationCreateWithData(data as CFMutableData, type as CFString,
                                                                 stills.count, nil) else { return nil }
        if let plays {
            let loop: [CFString: Any] = [kCGImagePropertyAPNGLoopCount: plays]
            CGImageDestinationSetProperties(destination, [kCGImagePropertyPNGDictionary: loop] as CFDictionary)
        }
        for still in stills {
            var properties: [CFString: Any] = [kCGImagePropertyOrientation: still.orientation]
            if let delay = still.delay {
                properties[kCGImagePropertyPNGDictionary] = [kCGImagePropertyAPNGDelayTime: delay]
            }
            if encoding == .jpeg { properties[kCGImageDestinationLossyCompressionQuality] = storedJPEGQuality }
            if let longest = storedMaxPixels(width: still.image.width, height: still.image.height, bound: maxPixels) {
                properties[kCGImageDestinationImageMaxPixelSize] = longest
            }
            CGImageDestinationAddImage(destination, still.image, properties as CFDictionary)
        }
        return CGImageDestinationFinalize(destination) ? data as Data : nil
    }
    #endif

    /// The EXIF orientation (1 to 8) of a UIKit `UIImage.Orientation` raw value (`up` 0, `down`,
    /// `left`, `right`, `upMirrored`, `downMirrored`, `leftMirrored`, `rightMirrored` 7): what
    /// ImageIO writes so that a decode turns the pixels as UIKit draws them. 1 for anything else.
    internal static func exifOrientation(uiKit raw: Int) -> Int {
        let exif = [1, 3, 8, 6, 2, 4, 5, 7]
        return exif.indices.contains(raw) ? exif[raw] : 1
    }

    /// `frames` as runs of the same object repeated (UIKit's animated images repeat a frame to show
    /// it longer, see ``ImageCache/FrameTiming/schedule(_:maxShown:)``): each distinct frame once, with its repeats.
    internal static func runs<Frame: AnyObject>(_ frames: [Frame]) -> [(frame: Frame, repeats: Int)] {
        var runs: [(frame: Frame, repeats: Int)] = []
        for frame in frames {
            if let last = runs.last, last.frame === frame {
                runs[runs.count - 1].repeats += 1
            } else {
                runs.append((frame, 1))
            }
        }
        return runs
    }
}

nonisolated extension ImageCache.Ledger {
    /// The prologue of every store under `key`: refuses `size` bytes past the limit, then forgets
    /// the key's downloads (and those of its variants) and its second chance. Returns what it stopped.
    mutating func replace(_ key: ImageCache.Key, size: Int?) throws -> [ImageCache.Stopped] {
        let limit = settings.maxImageBytes
        if let size, size > limit { throw Error.tooLarge(limit: limit) }
        let stopped = forgetWithVariants(key)
        shelf.removeObject(forKey: key)  // an older image of the key
        return stopped
    }

    /// Puts `payload` in memory under `key` at `now`, and `item` on disk (bytes to write, or an
    /// image whose bytes are made first).
    mutating func keepStored(_ key: ImageCache.Key, _ payload: Payload, size: Int, _ disk: ImageCache.DiskWork,
                             now: TimeInterval) {
        keepOnDisk(insert(key, payload, size: size, downloadedAt: now), usedAt: now)
        queueOnDisk(disk)
    }
}
