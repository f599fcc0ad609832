// A signature-only stand-in for the part of Apple's WatchKit that ImageCache.swift uses on watchOS,
// compiled into a module named WatchKit by `.ci/shims/build watchos` (with watchOS's images-only
// UIKit); nothing here ever runs. Rules: as for the UIKit shim. `#if os(watchOS)` is false on Linux:
// .ci/typecheck-apple compiles ImageCache.swift's watchOS branch by reading it as `#if WATCHOS`.

@_exported import Foundation

/// `class WKInterfaceDevice` in the SDK (developer.apple.com/documentation/watchkit/wkinterfacedevice),
/// watchOS 2. Its documented declaration is not main-actor isolated (WatchKit's interface classes,
/// `WKInterfaceController` say, are `@MainActor`): it may be read on any thread.
open class WKInterfaceDevice: NSObject {
    /// `class func current() -> WKInterfaceDevice`: the shared device object.
    open class func current() -> WKInterfaceDevice { fatalError("WatchKit shim") }
    /// `var screenBounds: CGRect { get }`: the screen's bounds, in points.
    open var screenBounds: CGRect { fatalError("WatchKit shim") }
    /// `var screenScale: CGFloat { get }`: pixels per point (2 on an Apple Watch).
    open var screenScale: CGFloat { fatalError("WatchKit shim") }
}

/// `func WKAccessibilityIsReduceMotionEnabled() -> Bool` in the SDK
/// (developer.apple.com/documentation/watchkit/wkaccessibilityisreducemotionenabled()), watchOS 4:
/// whether Reduce Motion is on. A C function, not main-actor isolated.
public func WKAccessibilityIsReduceMotionEnabled() -> Bool { fatalError("WatchKit shim") }
