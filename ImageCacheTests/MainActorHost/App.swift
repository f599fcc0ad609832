// An app made from Xcode 26's template, with ImageCache.swift copied in: the target's default actor
// isolation is the main actor (SE-0466), so every declaration without an isolation of its own, in
// this file and in the copied one, is main-actor isolated unless it says otherwise. CopyInTests
// compiles the two files the way such a target does, in both language modes:
//
//   swiftc -default-isolation MainActor -parse-as-library -swift-version 6 ImageCache.swift App.swift
//   swiftc -default-isolation MainActor -parse-as-library -swift-version 5 ImageCache.swift App.swift
//
// Usage: MainActorHost <parent folder> <image URL>
// Fetches the image with one instance of the cache (from the network) and again with a second
// instance on the same folder (from disk), peeking after each; prints one line per fetch,
// "<source> <byte count> <width>x<height> peeked|not-peeked", and exits 0, or prints "nil <why>" and
// exits 1. The main thread stays blocked on a semaphore while each fetch runs, and callbacks go to a
// private queue: a step of the cache that needed the main actor would never run, and the fetch would
// fail after 60 s instead of completing.
import Dispatch
import Foundation

/// The result a callback hands to the blocked main thread. `nonisolated`, as an app writes a type
/// that callbacks on other queues use.
nonisolated final class Delivered: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>?
    func set(_ result: Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>) { lock.withLock { self.result = result } }
    func get() -> Result<ImageCache.Fetched<ImageCache.Image>, ImageCache.Error>? { lock.withLock { result } }
}

@main
struct MainActorHost {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let url = URL(string: arguments[2]) else {
            FileHandle.standardError.write(Data("usage: MainActorHost <parent folder> <image URL>\n".utf8))
            exit(2)
        }
        let folder = URL(fileURLWithPath: arguments[1])
        for _ in 0..<2 {
            let (line, ok) = fetchOnce(url, folder: folder)
            print(line)
            guard ok else { exit(1) }
        }
        exit(0)
    }

    /// Fetches `url` with a new instance of the cache in `folder` while this (the main) thread waits,
    /// then peeks it, and writes what the instance holds to disk.
    static func fetchOnce(_ url: URL, folder: URL) -> (line: String, ok: Bool) {
        let cache = ImageCache(uniqueName: "main-actor-host", directory: folder)
        cache.callbackQueue = DispatchQueue(label: "MainActorHost.callbacks")
        defer { cache.persistCacheToDisk() }
        let delivered = Delivered()
        let done = DispatchSemaphore(value: 0)
        cache.fetch(url) { result in
            delivered.set(result)
            done.signal()
        }
        guard done.wait(timeout: .now() + 60) == .success, let result = delivered.get() else {
            return ("nil no callback after 60 s", false)
        }
        switch result {
        case .success(let fetched):
            let image = fetched.value
            let peeked = cache.peek(url) == image ? "peeked" : "not-peeked"
            return ("\(fetched.source) \(image.data.count) \(image.width)x\(image.height) \(peeked)", true)
        case .failure(let error):
            return ("nil \(error)", false)
        }
    }
}
