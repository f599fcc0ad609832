// A signature-only stand-in for Apple's CoreGraphics, so that `swiftc` on Linux can check the Apple
// code of ImageCache.swift that decodes with ImageIO. It is compiled into a module named CoreGraphics
// by .ci/shims/build; nothing here ever runs (every body traps). Rules: as for the UIKit shim (mirror
// Apple's Swift declarations, iOS 18 / macOS 15 SDK; add only what the checked code uses).
// Foundation on Linux already has CGFloat, CGSize, CGPoint and CGRect.

@_exported import Foundation  // CoreGraphics re-exports CoreFoundation, which Foundation stands in for here

// SHIM: CFData, CFMutableData, CFDictionary and CFString are CoreFoundation types, toll-free bridged
// to NSData, NSMutableData, NSDictionary and NSString, so that `data as CFData` and `options as
// CFDictionary` compile on Apple platforms. swift-corelibs-foundation has no such types; aliases make
// the same casts compile.
public typealias CFData = NSData
public typealias CFMutableData = NSMutableData
public typealias CFDictionary = NSDictionary
public typealias CFString = NSString
// CFURL is toll-free bridged to NSURL (`url as CFURL` compiles on Apple platforms).
public typealias CFURL = NSURL

/// `class CGImage` in the SDK: a CoreFoundation type, imported as a class (not Sendable).
public final class CGImage {
    private init() { fatalError("CoreGraphics shim") }
    /// Width in pixels.
    public var width: Int { fatalError("CoreGraphics shim") }
    /// Height in pixels.
    public var height: Int { fatalError("CoreGraphics shim") }
    /// `var bytesPerRow: Int { get }`: the bytes of a row of the bitmap
    /// (developer.apple.com/documentation/coregraphics/cgimage/bytesperrow).
    public var bytesPerRow: Int { fatalError("CoreGraphics shim") }
    /// `var alphaInfo: CGImageAlphaInfo { get }` (developer.apple.com/documentation/coregraphics/cgimage/alphainfo).
    public var alphaInfo: CGImageAlphaInfo { fatalError("CoreGraphics shim") }
}

/// `enum CGImageAlphaInfo : UInt32, @unchecked Sendable` in the SDK
/// (developer.apple.com/documentation/coregraphics/cgimagealphainfo).
public enum CGImageAlphaInfo: UInt32, @unchecked Sendable {
    case none = 0, premultipliedLast, premultipliedFirst, last, first, noneSkipLast, noneSkipFirst, alphaOnly
}
