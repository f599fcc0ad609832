// A host app that ImageCache.swift was copied into, as the README offers: the file beside this one
// is a symbolic link to the top-level ImageCache.swift, so the library is compiled into this
// module, not imported, and shares the module's namespace with the app's own declarations.
//
// Usage: CopyInHost <parent folder> <image URL>
// Fetches the image twice (see below); prints "image <byte count> <width>x<height>" and exits 0,
// or "nil <error>" and exits 1.
import Dispatch
import Foundation

// MARK: - The app's own top-level names
// Common names an app may well declare. Each one would break or silently take over an
// unqualified call to the C function of the same name in a copied file, or clash with a
// top-level helper type that a copied file should not have.

/// Called if a library call reached one of the app's functions below instead of the C one.
func hijacked(_ name: String) -> Never {
    FileHandle.standardError.write(Data("CopyInHost: ImageCache.swift called the app's \(name), not the C function\n".utf8))
    exit(3)
}

// Same signatures as the C functions: an unqualified call in the library would pick these.
func open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 { hijacked("open") }
func close(_ fd: Int32) -> Int32 { hijacked("close") }
func write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { hijacked("write") }
func malloc(_ size: Int) -> UnsafeMutableRawPointer? { hijacked("malloc") }
func free(_ pointer: UnsafeMutableRawPointer?) { hijacked("free") }

// Values and types under C names: an unqualified call in the library would no longer compile.
let read = 2
var clock = 0
struct stat { var hits = 0, misses = 0 }

// An app's logger: an unqualified `log` in the library may not mean the math function.
func log(_ message: String) {
    FileHandle.standardError.write(Data("CopyInHost: \(message)\n".utf8))
}

// Names a copied file must not declare at the top level itself.
struct Entry { let title: String }
enum Key: String { case feed, profile }
struct Image { let name: String }
enum Format { case short, long }

// MARK: - Fetching with the copied cache

/// The image a callback delivered, handed to the waiting main thread.
final class Delivered: @unchecked Sendable {
    private let lock = NSLock()
    private var image: ImageCache.Image?
    func set(_ image: ImageCache.Image?) { lock.withLock { self.image = image } }
    func get() -> ImageCache.Image? { lock.withLock { image } }
}

/// Fetches `url` with a new instance of the cache in `folder`, waits for the image, and writes
/// what the instance holds to disk. Returns the line to print and whether there was an image.
func fetchOnce(_ url: URL, folder: URL) -> (line: String, ok: Bool) {
    let cache = ImageCache(uniqueName: "copy-in", directory: folder)
    // Never the main queue: this program does not run it.
    cache.callbackQueue = DispatchQueue(label: "CopyInHost.callbacks")
    defer { cache.persistCacheToDisk() }
    let delivered = Delivered()
    let done = DispatchSemaphore(value: 0)
    cache.fetch(url) { _, image in
        delivered.set(image)
        done.signal()
    }
    // Bounded, so that a lost callback fails the test instead of hanging it.
    guard done.wait(timeout: .now() + 60) == .success else { return ("nil no callback after 60 s", false) }
    guard let image = delivered.get() else {
        return ("nil \(cache.error(for: url).map { "\($0)" } ?? "no error recorded")", false)
    }
    return ("image \(image.data.count) \(image.width)x\(image.height)", true)
}

/// In a function, so that the only top-level names are the ones declared on purpose.
func run() -> Int32 {
    let arguments = CommandLine.arguments
    guard arguments.count == 3, let url = URL(string: arguments[2]) else {
        FileHandle.standardError.write(Data("usage: CopyInHost <parent folder> <image URL>\n".utf8))
        return 2
    }
    // Twice, with a new instance each time: the first downloads the image and writes it to disk,
    // the second reads it back, so that the file's disk code runs in this module both ways.
    let folder = URL(fileURLWithPath: arguments[1])
    let first = fetchOnce(url, folder: folder)
    guard first.ok else {
        print(first.line)
        return 1
    }
    let second = fetchOnce(url, folder: folder)
    print(second.line)
    return second.ok ? 0 : 1
}

exit(run())
