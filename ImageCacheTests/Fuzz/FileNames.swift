// Fuzz target: keys to file names (`DiskStore.fileName(for:)`, `imageID`) and cache names to
// folder names (`ImageCache.folderName(for:)`). The input is a key, and, cut at its first 0xFF byte,
// two names. Properties, from the doc comments:
// - a key's file name is 16 lowercase hexadecimal digits, a name inside the folder, and reads
//   back (as a directory entry) as the key's number; a directory entry is an image file only
//   under the name the cache would give its number;
// - a folder name stays inside the parent folder (one component, not "." or "..", no NUL, at most
//   255 bytes), and distinct names get distinct folders.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fileNamesFuzzTarget(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = Fuzz.data(pointer, count)
    let key = String(decoding: data, as: UTF8.self)
    let folder = URL(fileURLWithPath: "/caches/folder", isDirectory: true)

    let id = ImageCache.DiskStore.fileID(for: key)
    let name = ImageCache.DiskStore.fileName(for: key)
    Fuzz.require(name.utf8.count == 16 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) },
                 "file name \(name) for \(key.debugDescription)")
    Fuzz.require(folder.appendingPathComponent(name).deletingLastPathComponent().standardized.path == folder.path,
                 "file name \(name) leaves the folder")
    Fuzz.require(entryID(name.utf8) == id, "file name \(name) reads back as \(String(describing: entryID(name.utf8))), not \(id)")

    // A directory entry of 16 bytes from the input: an image file only under its canonical name.
    if data.count >= 16, let found = entryID(data.prefix(16)) {
        Fuzz.require(ImageCache.DiskStore.name(found).utf8.elementsEqual(data.prefix(16)),
                     "entry \(String(decoding: data.prefix(16), as: UTF8.self)) taken as file \(found)")
    }

    let halves = data.split(separator: 0xFF, maxSplits: 1, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    for cacheName in [key] + halves {
        let folderName = ImageCache.folderName(for: cacheName)
        Fuzz.require(!folderName.isEmpty && folderName != "." && folderName != ".." && !folderName.contains("/")
                     && !folderName.utf8.contains(0) && folderName.utf8.count <= 255,
                     "folder name \(folderName.debugDescription) for \(cacheName.debugDescription)")
    }
    if halves.count == 2, halves[0] != halves[1] {
        Fuzz.require(ImageCache.folderName(for: halves[0]) != ImageCache.folderName(for: halves[1]),
                     "\(halves[0].debugDescription) and \(halves[1].debugDescription) share the folder "
                     + ImageCache.folderName(for: halves[0]))
    }
    return 0
}

/// The number `imageID` reads from a directory entry named `name` (NUL-terminated, as `readdir` gives it).
private func entryID(_ name: some Collection<UInt8>) -> UInt64? {
    (Array(name) + [0]).withUnsafeBytes { ImageCache.DiskStore.imageID($0) }
}
