// The load of a download by a plugged source (`ImageSource`): run in a task of its own, cancelled
// when the download stops, its bytes checked and decoded, then settled as a network attempt is.

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
    /// The loads that sources run, one task per download: it starts them and cancels them. Its
    /// lock guards its table alone (never taken with the cache's held).
    internal final class SourceLoads: @unchecked Sendable {
        private let lock = NSLock()
        private var running: [ObjectIdentifier: Task<Void, Never>] = [:]  // guarded by `lock`

        /// Runs `source` for `download`, then hands its bytes, or why there are none, to `ended`.
        func start(_ download: Download, from source: any ImageSource,
                   progress: @escaping @Sendable (Int, Int?) -> Void,
                   ended: @escaping @Sendable (Result<Data, Error>) -> Void) {
            let id = ObjectIdentifier(download)
            let url = download.url
            // Made and entered under the lock, so its own removal (also under it) comes after.
            lock.withLock {
                running[id] = Task.detached {
                    let result: Result<Data, Error>
                    do {
                        result = .success(try await source.data(for: url, progress: progress))
                    } catch {
                        result = .failure(Self.describe(error, of: source))
                    }
                    let current = self.lock.withLock { self.running.removeValue(forKey: id) != nil }
                    if current { ended(result) }  // else cancelled: the download's stop told its waiters
                }
            }
        }

        /// Cancels the load of `download`, if a source runs one.
        func cancel(_ download: Download) {
            lock.withLock { running.removeValue(forKey: ObjectIdentifier(download)) }?.cancel()
        }

        /// What a source's `error` says, as the cache's error (see ``ImageSource/data(for:progress:)``).
        static func describe(_ error: Swift.Error, of source: any ImageSource) -> Error {
            switch error {
            case let error as Error: return error
            case let error as URLError: return .network(error.code, "\(Swift.type(of: source)): \(error.localizedDescription)")
            case is CancellationError: return .cancelled
            default: return .network(.resourceUnavailable, "\(Swift.type(of: source)) failed: \(error)")
            }
        }
    }
}

nonisolated extension ImageCache {
    /// Starts the load of a download whose URL a source loads (see ``ImageSource``): its bytes are
    /// checked (none: `emptyBody`; over ``maxImageBytes``: `tooLarge`) and decoded as a body is,
    /// then the attempt ends as a network attempt does (`NetworkAttempt.finished`).
    internal func startSource(_ download: Download, _ source: any ImageSource) {
        let limit: Int? = locked { ledger in ledger.handedToSource(download) ? ledger.settings.maxImageBytes : nil }
        guard let limit else { return }  // cancelled meanwhile
        sourceLoads.start(download, from: source, progress: { [weak self] received, expected in
            if let self { NetworkAttempt(cache: self, download: download).progressed(received: received, expected: expected) }
        }, ended: { [self] result in
            let checked = result.flatMap { data -> Result<Data, Error> in
                if data.isEmpty { return .failure(.emptyBody) }
                return data.count > limit ? .failure(.tooLarge(limit: limit)) : .success(data)
            }
            let finish: @Sendable (Result<Payload, Error>, Data?) -> Void = { result, body in
                let whole = body.map { ($0.count, Optional($0.count)) }
                self.startNetwork(NetworkAttempt(cache: self, download: download).finished(result, bytes: body, whole: whole))
            }
            switch checked {
            case .failure(let error):
                finish(.failure(error), nil)
            case .success(let body) where download.decoder.isCheap(download.limits):
                finish(download.decoder.decode(body, download.limits), body)
            case .success(let body):
                decodes.async {
                    guard self.locked({ $0.isCurrent(download) }) else { return }
                    finish(download.decoder.decode(body, download.limits), body)
                }
            }
        })
    }
}
