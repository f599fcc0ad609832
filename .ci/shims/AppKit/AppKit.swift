// A signature-only stand-in for Apple's AppKit, so that `swiftc -typecheck` on Linux can check the
// `#elseif canImport(AppKit)` code of ImageCache.swift. It is compiled into a module named AppKit by
// .ci/typecheck-apple; nothing here ever runs (every body traps).
//
// Rules for editing this file: mirror Apple's Swift declarations (the macOS 15 / 26 SDK interface as
// shown on developer.apple.com): names, labels, optionality, hierarchy, isolation, Sendable. Add only
// what the checked code uses; declare only API available at the package's deployment target
// (macOS 10.15). Workarounds for what Swift source cannot say are marked SHIM:.

@_exported import Foundation  // AppKit re-exports Foundation
@_exported import ObjectiveC  // and, through it, ObjectiveC's associated objects (.ci/shims/ObjectiveC)
@_exported import CoreGraphics  // and CoreGraphics: CGImage (.ci/shims/CoreGraphics); CGFloat, NSSize are Foundation's here
@_exported import QuartzCore  // and QuartzCore: NSView's CALayer, CATransition (.ci/shims/QuartzCore)

/// `open class NSImage : NSObject` in the SDK; not `@MainActor`.
/// Designated initializers are `init(size:)` and `init?(coder:)`; `init?(data:)`,
/// `init?(contentsOfFile:)` and `init?(contentsOf:)` are convenience initializers.
/// SHIM: NSCopying, NSSecureCoding, NSPasteboardReading/Writing and the other conformances are left
/// out; `required init?(coder:)` stands in for NSSecureCoding's requirement.
open class NSImage: NSObject {
    public init(size: NSSize) { super.init() }
    public required init?(coder: NSCoder) { fatalError("AppKit shim") }  // SHIM: for NSSecureCoding
    public convenience override init() { self.init(size: .zero) }
    public convenience init?(data: Data) { fatalError("AppKit shim") }
    public convenience init?(contentsOfFile fileName: String) { fatalError("AppKit shim") }
    public convenience init?(contentsOf url: URL) { fatalError("AppKit shim") }
    /// `size` `.zero` takes the CGImage's size in pixels, as points.
    public convenience init(cgImage: CGImage, size: NSSize) { fatalError("AppKit shim") }

    /// The size of the image, in points.
    open var size: NSSize {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    open var isValid: Bool { fatalError("AppKit shim") }
    open var tiffRepresentation: Data? { fatalError("AppKit shim") }
    open var representations: [NSImageRep] { fatalError("AppKit shim") }
    /// `func cgImage(forProposedRect proposedDestRect: UnsafeMutablePointer<NSRect>?, context
    /// referenceContext: NSGraphicsContext?, hints: [NSImageRep.HintKey : Any]?) -> CGImage?`, macOS 10.6
    /// (developer.apple.com/documentation/appkit/nsimage/cgimage(forproposedrect:context:hints:)).
    open func cgImage(forProposedRect proposedDestRect: UnsafeMutablePointer<NSRect>?,
                      context referenceContext: NSGraphicsContext?,
                      hints: [NSImageRep.HintKey: Any]?) -> CGImage? { fatalError("AppKit shim") }
}

/// `open class NSGraphicsContext : NSObject` in the SDK (nothing of it used but the type).
open class NSGraphicsContext: NSObject {}

/// `open class NSImageRep : NSObject, NSCopying, NSCoding` in the SDK.
open class NSImageRep: NSObject {
    /// `struct HintKey : Hashable, Equatable, RawRepresentable, @unchecked Sendable` in the SDK.
    public struct HintKey: Hashable, RawRepresentable, @unchecked Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }
    open var pixelsWide: Int {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    open var pixelsHigh: Int {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
}

/// `open class NSBitmapImageRep : NSImageRep, NSSecureCoding` in the SDK.
open class NSBitmapImageRep: NSImageRep {
    public init?(data: Data) { fatalError("AppKit shim") }
    /// `var cgImage: CGImage? { get }` (developer.apple.com/documentation/appkit/nsbitmapimagerep/cgimage).
    open var cgImage: CGImage? { fatalError("AppKit shim") }
}

// Sendable. SDKs up to Xcode 16 mark NSImage explicitly non-Sendable ("conformance of 'NSImage' to
// 'Sendable' is unavailable"). The macOS 26 SDK makes it Sendable, but only from macOS 14 ("conformance
// of 'NSImage' to 'Sendable' is only available in macOS 14.0 or newer"), and this package deploys to
// macOS 10.15. Either way, code for macOS 10.15 cannot rely on it, so the default is the strict one.
// `.ci/typecheck-apple` passes -D SHIM_NSIMAGE_SENDABLE when APPLE_SHIM_NSIMAGE_SENDABLE=1, to model
// the macOS 26 SDK with a macOS 14+ deployment target.
#if SHIM_NSIMAGE_SENDABLE
extension NSImage: @unchecked Sendable {}
#else
@available(*, unavailable)
extension NSImage: @unchecked Sendable {}
#endif

// MARK: - Views (main-actor isolated, as in the SDK)

@MainActor
open class NSResponder: NSObject {
    public override init() { super.init() }
}

@MainActor
open class NSWindow: NSResponder {
    /// `var backingScaleFactor: CGFloat { get }`, macOS 10.7: 2 on a Retina display, 1 otherwise
    /// (developer.apple.com/documentation/appkit/nswindow/backingscalefactor).
    @available(macOS 10.7, *)
    open var backingScaleFactor: CGFloat { fatalError("AppKit shim") }
}

/// `@MainActor class NSApplication : NSResponder` in the SDK (developer.apple.com/documentation/appkit/nsapplication).
/// SHIM: only the notification the checked code observes.
@MainActor
open class NSApplication: NSResponder {
    /// `class let didChangeScreenParametersNotification: NSNotification.Name`: the displays' configuration
    /// changed; posted on the main actor (developer.apple.com/documentation/appkit/nsapplication/didchangescreenparametersnotification).
    /// SHIM: `static let`, since Swift source cannot declare a `class let`.
    nonisolated public static let didChangeScreenParametersNotification =
        NSNotification.Name("NSApplicationDidChangeScreenParametersNotification")
}

/// `@MainActor open class NSScreen : NSObject` in the SDK.
@MainActor
open class NSScreen: NSObject {
    /// `class var main: NSScreen? { get }`: the screen with the key window
    /// (developer.apple.com/documentation/appkit/nsscreen/main).
    open class var main: NSScreen? { fatalError("AppKit shim") }
    /// `var backingScaleFactor: CGFloat { get }`, macOS 10.7
    /// (developer.apple.com/documentation/appkit/nsscreen/backingscalefactor).
    @available(macOS 10.7, *)
    open var backingScaleFactor: CGFloat { fatalError("AppKit shim") }
    /// `var frame: NSRect { get }`: the screen's full dimensions and location, in points
    /// (developer.apple.com/documentation/appkit/nsscreen/frame).
    open var frame: NSRect { fatalError("AppKit shim") }
}

/// Designated: `init(frame:)` and `init?(coder:)`.
@MainActor
open class NSView: NSResponder {
    public init(frame frameRect: NSRect) { super.init() }
    public required init?(coder: NSCoder) { fatalError("AppKit shim") }

    /// `var frame: NSRect { get set }`: the view's frame rectangle in its superview's coordinates
    /// (developer.apple.com/documentation/appkit/nsview/frame).
    open var frame: NSRect {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    open var bounds: NSRect {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    open var window: NSWindow? { fatalError("AppKit shim") }
    /// `var isHidden: Bool { get set }` (developer.apple.com/documentation/appkit/nsview/ishidden).
    open var isHidden: Bool {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    /// `var wantsLayer: Bool { get set }`: true gives the view a backing CALayer.
    open var wantsLayer: Bool {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    /// `var layer: CALayer? { get set }` (developer.apple.com/documentation/appkit/nsview/layer).
    open var layer: CALayer? {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
    /// Converts a size from the view's coordinates (points) to the backing store's (pixels).
    @available(macOS 10.7, *)
    open func convertToBacking(_ size: NSSize) -> NSSize { fatalError("AppKit shim") }
}

@MainActor
open class NSControl: NSView {
    public override init(frame frameRect: NSRect) { super.init(frame: frameRect) }
    public required init?(coder: NSCoder) { fatalError("AppKit shim") }
}

@MainActor
open class NSImageView: NSControl {
    public override init(frame frameRect: NSRect) { super.init(frame: frameRect) }
    public required init?(coder: NSCoder) { fatalError("AppKit shim") }

    open var image: NSImage? {
        get { fatalError("AppKit shim") }
        set { fatalError("AppKit shim") }
    }
}

// MARK: - IndexPath (AppKit's Swift overlay adds items, for NSCollectionView, to Foundation's IndexPath)

extension IndexPath {
    /// Initialize for use with `NSCollectionView`.
    public init(item: Int, section: Int) { self.init(indexes: [section, item]) }

    /// The item of this index path, when used with `NSCollectionView`.
    public var item: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
    /// The section of this index path, when used with `NSCollectionView`.
    public var section: Int {
        get { self[0] }
        set { self[0] = newValue }
    }
}

/// `open class NSWorkspace : NSObject` in the SDK; not `@MainActor`. Of it, `class var shared:
/// NSWorkspace { get }` and `var accessibilityDisplayShouldReduceMotion: Bool { get }`, macOS 10.12
/// (developer.apple.com/documentation/appkit/nsworkspace/accessibilitydisplayshouldreducemotion).
open class NSWorkspace: NSObject {
    open class var shared: NSWorkspace { fatalError("AppKit shim") }
    open var accessibilityDisplayShouldReduceMotion: Bool { fatalError("AppKit shim") }
}
