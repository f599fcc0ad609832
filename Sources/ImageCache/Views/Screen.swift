// The main screen's scale and size, read where each platform allows it.

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
#if os(watchOS)
import WatchKit
#endif

nonisolated extension ImageCache {
    /// The main screen's scale, once read: what an image decoded for no view in particular (a
    /// `fetch`, a prefetch, a binder given no scale) carries. Nil until then: a decode meanwhile
    /// carries 1 in its place (see ``ImageCache/Sizing/decodeScale(_:screen:)``), and its image is given the scale at
    /// delivery. 1 where there is no screen (Linux), or the read found none.
    ///
    /// Read where Apple allows it with no view at hand, never through the deprecated `UIScreen.main`:
    /// on watchOS on any thread (`WKInterfaceDevice` is not main-actor isolated); elsewhere on the
    /// main thread, where the screen's objects belong: when a cache is made there, on the main
    /// queue's next turn after one is made elsewhere, and whenever this is asked there (a callback's
    /// delivery, a binding); under UIKit the main thread's trait collection says it first (Apple
    /// defines it only in trait and layout callbacks: a first guess), and the screen of each window
    /// scene that becomes active corrects it; under AppKit `NSScreen.main` says it, read again when
    /// the displays change. What is kept only grows (``screen(_:read:)``): a scene on an external
    /// display of a lower scale, or a smaller one, does not lower it.
    internal static var screenScale: Double? {
        if let scale = screen.lock.withLock({ screen.scale }) { return scale }
        guard Thread.isMainThread else { return nil }
        readScreen()
        return screen.lock.withLock { screen.scale }
    }

    /// The longest side of the main screen in pixels, read with its scale: the default of
    /// ``maxDecodedPixelSize``; 4,096 until then, and where there is none to read.
    internal static var screenPixels: Int { screen.lock.withLock { screen.pixels } ?? 4_096 }

    internal static let screen = Screen()
    internal final class Screen: @unchecked Sendable {
        let lock = NSLock()
        #if canImport(UIKit) || canImport(AppKit)
        var scale: Double?  // guarded by `lock`
        #else
        var scale: Double? = 1  // no screen; guarded by `lock`
        #endif
        var pixels: Int?  // guarded by `lock`
        var sceneObserver: NSObjectProtocol?  // of scenes (UIKit) or displays (AppKit), made once; guarded by `lock`
    }

    /// Keeps what was read of the screen (see ``screen(_:read:)``).
    private static func noteScreen(scale: Double, pixels: CGSize?) {
        screen.lock.withLock {
            (screen.scale, screen.pixels) = Self.screen((screen.scale, screen.pixels), read: (scale, pixels))
        }
    }

    /// What is kept of the main screen after `kept` when a screen of `read` is read: its scale if it
    /// is one (1 to 16) and higher, else 1 if nothing was read before (there is no screen to read, a
    /// Mac with no display, or a trait collection that does not know says 0: as on Linux, so that
    /// memory keeps images, which it does not while the scale stands in); and the longest side of
    /// its pixels if it has two and it is longer. Only higher and longer: an external display's
    /// scene (1x or 2x, say, beside a 3x phone) does not lower what images are decoded for.
    internal static func screen(_ kept: (scale: Double?, pixels: Int?), read: (scale: Double, pixels: CGSize?))
        -> (scale: Double?, pixels: Int?) {
        var scale = kept.scale
        if (1...16).contains(read.scale) { scale = max(scale ?? 1, read.scale) } else if scale == nil { scale = 1 }
        let pixels = longestSide(read.pixels).map { max(kept.pixels ?? 0, $0) } ?? kept.pixels
        return (scale, pixels)
    }

    /// The longest side, in whole pixels, of a screen of `pixels`; nil unless both sides are at least 1.
    internal static func longestSide(_ pixels: CGSize?) -> Int? {
        guard let pixels, pixels.width >= 1, pixels.height >= 1, pixels.width.isFinite, pixels.height.isFinite
        else { return nil }
        return Int(max(pixels.width, pixels.height).rounded())
    }

    /// Reads the main screen's scale and size where the platform allows it now (see ``screenScale``):
    /// off the main thread (but on watchOS), on the main queue's next turn. Under UIKit, also reads
    /// the screen of each window scene that becomes active, from the first call on.
    internal static func readScreen() {
        #if os(watchOS)
        let device = WKInterfaceDevice.current()
        let (scale, points) = (device.screenScale, device.screenBounds.size)
        noteScreen(scale: Double(scale), pixels: CGSize(width: points.width * scale, height: points.height * scale))
        #elseif canImport(UIKit) || canImport(AppKit)
        guard Thread.isMainThread else { return DispatchQueue.main.async { readScreen() } }
        let (scale, pixels) = MainActor.assumeIsolated { () -> (CGFloat, CGSize?) in
            #if canImport(UIKit)
            observeScenes()
            return (UITraitCollection.current.displayScale, nil)  // its screen's size comes with a scene
            #else
            observeDisplays()
            let screen = NSScreen.main, scale = screen?.backingScaleFactor ?? 0
            let size = screen?.frame.size  // in points
            return (scale, size.map { CGSize(width: $0.width * scale, height: $0.height * scale) })
            #endif
        }
        noteScreen(scale: Double(scale), pixels: pixels)
        #endif
    }

    #if canImport(UIKit) && !os(watchOS)
    /// Reads the screen of each window scene that becomes active (its scale and size), once observed.
    /// visionOS has no screen: its trait collection's scale is all there is.
    @MainActor private static func observeScenes() {
        #if !os(visionOS)
        screen.lock.withLock {
            guard screen.sceneObserver == nil else { return }
            screen.sceneObserver = NotificationCenter.default.addObserver(
                forName: UIScene.didActivateNotification, object: nil, queue: .main
            ) { notification in
                let scene = notification.object as? UIWindowScene
                MainActor.assumeIsolated {
                    guard let screen = scene?.screen else { return }
                    noteScreen(scale: Double(screen.scale), pixels: screen.nativeBounds.size)
                }
            }
        }
        #endif
    }
    #elseif canImport(AppKit)
    /// Reads the main screen again when the displays change (one attached, another resolution).
    @MainActor private static func observeDisplays() {
        screen.lock.withLock {
            guard screen.sceneObserver == nil else { return }
            screen.sceneObserver = NotificationCenter.default.addObserver(
                forName: NSApplication.didChangeScreenParametersNotification, object: nil, queue: .main
            ) { _ in
                MainActor.assumeIsolated { readScreen() }
            }
        }
    }
    #endif
}
