// A host app that ImageCache.swift was copied into, as the README offers: the file beside this one
// is a symbolic link to the top-level ImageCache.swift, so the library is compiled into this
// module, not imported, and shares the module's namespace with the app's own declarations.
//
// Usage: CopyInHost <parent folder> <image URL>
// Prints "image <byte count> <width>x<height>" and exits 0, or "nil <error>" and exits 1.
import Dispatch
import Foundation

/// The image a callback delivered, handed to the waiting main thread.
final class Delivered: @unchecked Sendable {
    private let lock = NSLock()
    private var image: ImageCache.Image?
    func set(_ image: ImageCache.Image?) { lock.withLock { self.image = image } }
    func get() -> ImageCache.Image? { lock.withLock { image } }
}

func fetchOne() -> Int32 {
    let arguments = CommandLine.arguments
    guard arguments.count == 3, let url = URL(string: arguments[2]) else {
        FileHandle.standardError.write(Data("usage: CopyInHost <parent folder> <image URL>\n".utf8))
        return 2
    }
    let cache = ImageCache(uniqueName: "copy-in", directory: URL(fileURLWithPath: arguments[1]))
    // Never the main queue: this program does not run it.
    cache.callbackQueue = DispatchQueue(label: "CopyInHost.callbacks")
    let delivered = Delivered()
    let done = DispatchSemaphore(value: 0)
    cache.fetch(url) { _, image in
        delivered.set(image)
        done.signal()
    }
    // Bounded, so that a lost callback fails the test instead of hanging it.
    guard done.wait(timeout: .now() + 60) == .success else {
        print("nil no callback after 60 s")
        return 1
    }
    guard let image = delivered.get() else {
        print("nil \(cache.error(for: url).map { "\($0)" } ?? "no error recorded")")
        return 1
    }
    print("image \(image.data.count) \(image.width)x\(image.height)")
    return 0
}

exit(fetchOne())
