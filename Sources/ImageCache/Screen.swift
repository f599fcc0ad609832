// The platform around the cache: memory warnings, and the main screen's scale and size.

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
    internal func observeMemoryWarnings() {
        #if canImport(UIKit) && !os(watchOS)
        memoryWarnings = NotificationCenter.default.addObserver(
            forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
        ) { [weak self] _ in
            self?.purgeMemory()
        }
        #endif
    }

    /// The main screen's scale: what an image decoded for no view in particular (a `fetch`, a
    /// prefetch, your own binder's target) carries. `UIScreen` and `NSScreen` are main-actor
    /// isolated: a cache made on the main thread reads it there, one made elsewhere has the main
    /// queue read it soon after; until then, and on Linux, 1.
    internal static var screenScale: Double { screen.lock.withLock { screen.scale } }

    /// The longest side of the main screen in pixels, read as ``screenScale`` is: the default of
    /// ``maxDecodedPixelSize``; 4,096 until then, and where there is no screen to read.
    internal static var screenPixels: Int { screen.lock.withLock { screen.pixels } }

    private static let screen = Screen()
    private final class Screen: @unchecked Sendable {
        let lock = NSLock()
        var scale = 1.0  // guarded by `lock`
        var pixels = 4_096  // guarded by `lock`
    }

    /// Reads the main screen's scale and size into ``screenScale`` and ``screenPixels``, on the
    /// main thread.
    internal static func readScreenScale() {
        #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        guard Thread.isMainThread else { return DispatchQueue.main.async { readScreenScale() } }
        let (scale, pixels) = MainActor.assumeIsolated { () -> (CGFloat, CGSize?) in
            #if os(visionOS)
            return (UITraitCollection.current.displayScale, nil)  // visionOS has no UIScreen
            #elseif canImport(UIKit)
            return (UIScreen.main.scale, UIScreen.main.nativeBounds.size)
            #else
            let screen = NSScreen.main, scale = screen?.backingScaleFactor ?? 1
            let size = screen?.frame.size  // in points
            return (scale, size.map { CGSize(width: $0.width * scale, height: $0.height * scale) })
            #endif
        }
        screen.lock.withLock {
            screen.scale = Double(scale)
            if let pixels, pixels.width >= 1, pixels.height >= 1 {
                screen.pixels = Int(max(pixels.width, pixels.height))
            }
        }
        #endif
    }
}
