// A signature-only stand-in for Apple's QuartzCore (Core Animation), so that `swiftc` on Linux can
// check the AppKit fade of ImageCache.swift (a CATransition added to an NSImageView's layer). It is
// compiled into a module named QuartzCore by .ci/shims/build, which AppKit re-exports as the SDK's
// does; nothing here ever runs (every body traps). Rules: as for the UIKit shim (mirror Apple's
// Swift declarations, iOS 18 / macOS 15 SDK; add only what the checked code uses).

@_exported import Foundation

/// `typealias CFTimeInterval = Double` (CoreFoundation), the unit of Core Animation's durations.
public typealias CFTimeInterval = Double

/// `open class CALayer : NSObject, NSSecureCoding, CAMediaTiming` in the SDK: not main-actor
/// isolated, not Sendable. SHIM: the conformances are left out.
open class CALayer: NSObject {
    public override init() { super.init() }
    /// `var bounds: CGRect { get set }`: the layer's bounds rectangle, animatable, key-value
    /// observable as every layer property (developer.apple.com/documentation/quartzcore/calayer/bounds).
    open var bounds: CGRect {
        get { fatalError("QuartzCore shim") }
        set { fatalError("QuartzCore shim") }
    }
    /// `func add(_ anim: CAAnimation, forKey key: String?)`
    /// (developer.apple.com/documentation/quartzcore/calayer/add(_:forkey:)).
    open func add(_ anim: CAAnimation, forKey key: String?) { fatalError("QuartzCore shim") }
    /// `func removeAllAnimations()`
    /// (developer.apple.com/documentation/quartzcore/calayer/removeallanimations()).
    open func removeAllAnimations() { fatalError("QuartzCore shim") }
    /// `func removeAnimation(forKey key: String)`
    /// (developer.apple.com/documentation/quartzcore/calayer/removeanimation(forkey:)).
    open func removeAnimation(forKey key: String) { fatalError("QuartzCore shim") }
}

/// `open class CAAnimation : NSObject, NSSecureCoding, NSCopying, CAMediaTiming, CAAction` in the
/// SDK. SHIM: of CAMediaTiming, only `duration`; the other conformances are left out.
open class CAAnimation: NSObject {
    public override init() { super.init() }
    /// `var duration: CFTimeInterval { get set }`, from CAMediaTiming, in seconds.
    open var duration: CFTimeInterval {
        get { fatalError("QuartzCore shim") }
        set { fatalError("QuartzCore shim") }
    }
}

/// `open class CATransition : CAAnimation` in the SDK: a cross fade of a layer's contents by default
/// (developer.apple.com/documentation/quartzcore/catransition).
open class CATransition: CAAnimation {
    public override init() { super.init() }
    /// `var type: CATransitionType { get set }`
    open var type: CATransitionType {
        get { fatalError("QuartzCore shim") }
        set { fatalError("QuartzCore shim") }
    }
}

/// `struct CATransitionType : Hashable, Equatable, RawRepresentable, Sendable` in the SDK
/// (developer.apple.com/documentation/quartzcore/catransitiontype).
public struct CATransitionType: Hashable, Equatable, RawRepresentable, Sendable {
    public init(rawValue: String) { self.rawValue = rawValue }
    public let rawValue: String
    /// `static let fade: CATransitionType` (kCATransitionFade).
    public static let fade = CATransitionType(rawValue: "fade")
}
