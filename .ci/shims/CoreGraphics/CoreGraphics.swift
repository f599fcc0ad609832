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
    /// `var colorSpace: CGColorSpace? { get }`: nil for an image mask
    /// (developer.apple.com/documentation/coregraphics/cgimage/colorspace).
    public var colorSpace: CGColorSpace? { fatalError("CoreGraphics shim") }
}

/// `enum CGImageAlphaInfo : UInt32, @unchecked Sendable` in the SDK
/// (developer.apple.com/documentation/coregraphics/cgimagealphainfo).
public enum CGImageAlphaInfo: UInt32, @unchecked Sendable {
    case none = 0, premultipliedLast, premultipliedFirst, last, first, noneSkipLast, noneSkipFirst, alphaOnly
}

// MARK: - Drawing (the built-in processors)

public extension CGImage {
    /// `func cropping(to rect: CGRect) -> CGImage?`: the part of the bitmap in `rect`, in pixels from
    /// the top left (developer.apple.com/documentation/coregraphics/cgimage/cropping(to:)).
    func cropping(to rect: CGRect) -> CGImage? { fatalError("CoreGraphics shim") }
}

/// `class CGColorSpace` in the SDK: a CoreFoundation type, imported as a class.
public final class CGColorSpace {
    private init() { fatalError("CoreGraphics shim") }
    /// `init?(name: CFString)` (CGColorSpaceCreateWithName), iOS 2, macOS 10.2
    /// (developer.apple.com/documentation/coregraphics/cgcolorspace/init(name:)).
    public init?(name: CFString) { fatalError("CoreGraphics shim") }
    /// `class let sRGB: CFString` (kCGColorSpaceSRGB), iOS 9, macOS 10.5
    /// (developer.apple.com/documentation/coregraphics/cgcolorspace/srgb).
    public class var sRGB: CFString { fatalError("CoreGraphics shim") }
    /// `var model: CGColorSpaceModel { get }` (CGColorSpaceGetModel), iOS 2, macOS 10.5
    /// (developer.apple.com/documentation/coregraphics/cgcolorspace/model).
    public var model: CGColorSpaceModel { fatalError("CoreGraphics shim") }
}

/// `enum CGColorSpaceModel : Int32, @unchecked Sendable` in the SDK
/// (developer.apple.com/documentation/coregraphics/cgcolorspacemodel).
public enum CGColorSpaceModel: Int32, @unchecked Sendable {
    case unknown = -1, monochrome = 0, rgb = 1, cmyk = 2, lab = 3, deviceN = 4, indexed = 5, pattern = 6, XYZ = 7
}

/// `func CGColorSpaceCreateDeviceRGB() -> CGColorSpace`
/// (developer.apple.com/documentation/coregraphics/cgcolorspacecreatedevicergb()).
public func CGColorSpaceCreateDeviceRGB() -> CGColorSpace { fatalError("CoreGraphics shim") }

/// `struct CGAffineTransform` in the SDK (its fields left out: only made and passed here).
public struct CGAffineTransform {
    /// `init(a: CGFloat, b: CGFloat, c: CGFloat, d: CGFloat, tx: CGFloat, ty: CGFloat)`
    /// (developer.apple.com/documentation/corefoundation/cgaffinetransform/init(a:b:c:d:tx:ty:)).
    public init(a: CGFloat, b: CGFloat, c: CGFloat, d: CGFloat, tx: CGFloat, ty: CGFloat) { fatalError("CoreGraphics shim") }
}

/// `class CGPath` in the SDK: a CoreFoundation type, imported as a class.
public class CGPath {
    /// `init(roundedRect rect: CGRect, cornerWidth: CGFloat, cornerHeight: CGFloat, transform:
    /// UnsafePointer<CGAffineTransform>?)`, iOS 7, macOS 10.9
    /// (developer.apple.com/documentation/coregraphics/cgpath/init(roundedrect:cornerwidth:cornerheight:transform:)).
    public init(roundedRect rect: CGRect, cornerWidth: CGFloat, cornerHeight: CGFloat,
                transform: UnsafePointer<CGAffineTransform>?) { fatalError("CoreGraphics shim") }
    /// `init(ellipseIn rect: CGRect, transform: UnsafePointer<CGAffineTransform>?)`, iOS 5, macOS 10.7
    /// (developer.apple.com/documentation/coregraphics/cgpath/init(ellipsein:transform:)).
    public init(ellipseIn rect: CGRect, transform: UnsafePointer<CGAffineTransform>?) { fatalError("CoreGraphics shim") }
}

/// `enum CGInterpolationQuality : Int32, @unchecked Sendable` in the SDK
/// (developer.apple.com/documentation/coregraphics/cginterpolationquality).
public enum CGInterpolationQuality: Int32, @unchecked Sendable {
    case `default` = 0, none = 1, low = 2, medium = 4, high = 3
}

/// `enum CGPathFillRule : Int, @unchecked Sendable` in the SDK
/// (developer.apple.com/documentation/coregraphics/cgpathfillrule).
public enum CGPathFillRule: Int, @unchecked Sendable {
    case winding = 0, evenOdd = 1
}

/// `class CGContext` in the SDK: a CoreFoundation type, imported as a class (not Sendable).
public final class CGContext {
    /// `init?(data: UnsafeMutableRawPointer?, width: Int, height: Int, bitsPerComponent: Int,
    /// bytesPerRow: Int, space: CGColorSpace, bitmapInfo: UInt32)`: a bitmap context
    /// (CGBitmapContextCreate; the SDK's Swift overlay, iOS 10 to 18 and after).
    public init?(data: UnsafeMutableRawPointer?, width: Int, height: Int, bitsPerComponent: Int, bytesPerRow: Int,
                 space: CGColorSpace, bitmapInfo: UInt32) { fatalError("CoreGraphics shim") }
    /// `var interpolationQuality: CGInterpolationQuality { get set }`
    public var interpolationQuality: CGInterpolationQuality {
        get { fatalError("CoreGraphics shim") }
        set { fatalError("CoreGraphics shim") }
    }
    /// `func concatenate(_ transform: CGAffineTransform)` (CGContextConcatCTM)
    /// (developer.apple.com/documentation/coregraphics/cgcontext/concatenate(_:)).
    public func concatenate(_ transform: CGAffineTransform) { fatalError("CoreGraphics shim") }
    /// `func addPath(_ path: CGPath)`
    public func addPath(_ path: CGPath) { fatalError("CoreGraphics shim") }
    /// `func clip(using rule: CGPathFillRule = .winding)`
    public func clip(using rule: CGPathFillRule = .winding) { fatalError("CoreGraphics shim") }
    /// `func draw(_ image: CGImage, in rect: CGRect, byTiling: Bool = false)`
    /// (developer.apple.com/documentation/coregraphics/cgcontext/draw(_:in:bytiling:)).
    public func draw(_ image: CGImage, in rect: CGRect, byTiling: Bool = false) { fatalError("CoreGraphics shim") }
    /// `var data: UnsafeMutableRawPointer? { get }`: a bitmap context's pixels (CGBitmapContextGetData).
    public var data: UnsafeMutableRawPointer? { fatalError("CoreGraphics shim") }
    /// `var bytesPerRow: Int { get }` (CGBitmapContextGetBytesPerRow).
    public var bytesPerRow: Int { fatalError("CoreGraphics shim") }
    /// `func makeImage() -> CGImage?` (CGBitmapContextCreateImage).
    public func makeImage() -> CGImage? { fatalError("CoreGraphics shim") }
}
