// A signature-only stand-in for Apple's ImageIO, so that `swiftc` on Linux can check the
// `#if canImport(ImageIO)` code of ImageCache.swift. It is compiled into a module named ImageIO by
// .ci/shims/build; nothing here ever runs (every body traps). Rules: as for the UIKit shim (mirror
// Apple's Swift declarations, iOS 18 / macOS 15 SDK; add only what the checked code uses).

@_exported import CoreGraphics  // ImageIO's headers import CoreGraphics

/// `class CGImageSource` in the SDK: a CoreFoundation type, imported as a class.
public final class CGImageSource {
    private init() { fatalError("ImageIO shim") }
}

public func CGImageSourceCreateWithData(_ data: CFData, _ options: CFDictionary?) -> CGImageSource? {
    fatalError("ImageIO shim")
}

// developer.apple.com/documentation/imageio/cgimagesourcecreatewithurl(_:_:): iOS 4, macOS 10.4,
// watchOS 2, tvOS 9, visionOS 1: an image source that reads from a file's URL.
public func CGImageSourceCreateWithURL(_ url: CFURL, _ options: CFDictionary?) -> CGImageSource? {
    fatalError("ImageIO shim")
}

public func CGImageSourceCopyPropertiesAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CFDictionary? {
    fatalError("ImageIO shim")
}

// developer.apple.com/documentation/imageio/cgimagesourcegetcount(_:): iOS 4, macOS 10.4.
/// `func CGImageSourceCopyProperties(_ isrc: CGImageSource, _ options: CFDictionary?) -> CFDictionary?`:
/// the container's properties (developer.apple.com/documentation/imageio/cgimagesourcecopyproperties(_:_:)).
public func CGImageSourceCopyProperties(_ isrc: CGImageSource, _ options: CFDictionary?) -> CFDictionary? {
    fatalError("ImageIO shim")
}

public func CGImageSourceGetCount(_ isrc: CGImageSource) -> Int {
    fatalError("ImageIO shim")
}

public func CGImageSourceCreateThumbnailAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CGImage? {
    fatalError("ImageIO shim")
}

/// `func CGImageSourceCreateImageAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CGImage?`
/// (developer.apple.com/documentation/imageio/cgimagesourcecreateimageatindex(_:_:_:)): iOS 4, macOS 10.4.
public func CGImageSourceCreateImageAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CGImage? {
    fatalError("ImageIO shim")
}

/// `func CGImageSourceCreateIncremental(_ options: CFDictionary?) -> CGImageSource`: an empty source
/// that accumulates data as it downloads (developer.apple.com/documentation/imageio/cgimagesourcecreateincremental(_:)):
/// iOS 4, macOS 10.4, watchOS 2.
public func CGImageSourceCreateIncremental(_ options: CFDictionary?) -> CGImageSource {
    fatalError("ImageIO shim")
}

/// `func CGImageSourceUpdateData(_ isrc: CGImageSource, _ data: CFData, _ final: Bool)`: all the data so
/// far, each time (developer.apple.com/documentation/imageio/cgimagesourceupdatedata(_:_:_:)): iOS 4, macOS 10.4.
public func CGImageSourceUpdateData(_ isrc: CGImageSource, _ data: CFData, _ final: Bool) {
    fatalError("ImageIO shim")
}

/// `class CGImageDestination` in the SDK: a CoreFoundation type, imported as a class; iOS 4, macOS
/// 10.4, watchOS 2 (developer.apple.com/documentation/imageio/cgimagedestination).
public final class CGImageDestination {
    private init() { fatalError("ImageIO shim") }
}

// Writing images (developer.apple.com/documentation/imageio, "CGImageDestination"), iOS 4, macOS 10.4,
// watchOS 2: `CGImageDestinationCreateWithData(_:_:_:_:)` (the type is a uniform type identifier,
// `count` the number of images), `CGImageDestinationSetProperties(_:_:)` (the file's properties),
// `CGImageDestinationAddImage(_:_:_:)` (an image and its properties), and
// `CGImageDestinationFinalize(_:)` (false if an error occurred).
public func CGImageDestinationCreateWithData(_ data: CFMutableData, _ type: CFString, _ count: Int,
                                             _ options: CFDictionary?) -> CGImageDestination? {
    fatalError("ImageIO shim")
}

public func CGImageDestinationSetProperties(_ idst: CGImageDestination, _ properties: CFDictionary?) {
    fatalError("ImageIO shim")
}

public func CGImageDestinationAddImage(_ idst: CGImageDestination, _ image: CGImage, _ properties: CFDictionary?) {
    fatalError("ImageIO shim")
}

public func CGImageDestinationFinalize(_ idst: CGImageDestination) -> Bool {
    fatalError("ImageIO shim")
}

// `let kCGImageDestinationLossyCompressionQuality: CFString` (iOS 4, macOS 10.4) and
// `let kCGImageDestinationImageMaxPixelSize: CFString` (iOS 8, macOS 10.10): properties of an image
// added to a destination, its lossy quality (0 to 1) and the longest side it is scaled down to.
nonisolated(unsafe) public let kCGImageDestinationLossyCompressionQuality: CFString = "kCGImageDestinationLossyCompressionQuality"
nonisolated(unsafe) public let kCGImageDestinationImageMaxPixelSize: CFString = "kCGImageDestinationImageMaxPixelSize"

// `public let kCGImageSource...: CFString` in the SDK (imported C constants, readable from any thread).
// SHIM: `nonisolated(unsafe)`, because NSString is not Sendable here and Swift source cannot declare
// an imported constant.
nonisolated(unsafe) public let kCGImageSourceShouldCacheImmediately: CFString = "kCGImageSourceShouldCacheImmediately"
nonisolated(unsafe) public let kCGImageSourceCreateThumbnailFromImageAlways: CFString = "kCGImageSourceCreateThumbnailFromImageAlways"
nonisolated(unsafe) public let kCGImageSourceCreateThumbnailWithTransform: CFString = "kCGImageSourceCreateThumbnailWithTransform"
nonisolated(unsafe) public let kCGImageSourceThumbnailMaxPixelSize: CFString = "kCGImageSourceThumbnailMaxPixelSize"
nonisolated(unsafe) public let kCGImagePropertyPixelWidth: CFString = "PixelWidth"
nonisolated(unsafe) public let kCGImagePropertyPixelHeight: CFString = "PixelHeight"
nonisolated(unsafe) public let kCGImagePropertyOrientation: CFString = "Orientation"
// Frame delays, `let ...: CFString` in the SDK (developer.apple.com/documentation/imageio: "GIF Image
// Properties", "PNG Image Properties"): the GIF and PNG dictionaries and kCGImagePropertyGIFDelayTime
// since iOS 4 / macOS 10.4, kCGImagePropertyGIFUnclampedDelayTime since iOS 4 / macOS 10.7,
// kCGImagePropertyAPNGDelayTime since iOS 8 / macOS 10.10. kCGImagePropertyAPNGUnclampedDelayTime has
// no page of its own there; the SDK bindings of other languages list it beside the APNG delay.
// The strings are what the keys hold (nothing here runs).
nonisolated(unsafe) public let kCGImagePropertyGIFDictionary: CFString = "{GIF}"
nonisolated(unsafe) public let kCGImagePropertyGIFDelayTime: CFString = "DelayTime"
nonisolated(unsafe) public let kCGImagePropertyGIFUnclampedDelayTime: CFString = "UnclampedDelayTime"
nonisolated(unsafe) public let kCGImagePropertyPNGDictionary: CFString = "{PNG}"
nonisolated(unsafe) public let kCGImagePropertyAPNGDelayTime: CFString = "DelayTime"
nonisolated(unsafe) public let kCGImagePropertyAPNGUnclampedDelayTime: CFString = "UnclampedDelayTime"
/// `let kCGImagePropertyGIFLoopCount: CFString`, in a GIF's {GIF} dictionary: its NETSCAPE2.0 loop count.
nonisolated(unsafe) public let kCGImagePropertyGIFLoopCount: CFString = "LoopCount"
/// `let kCGImagePropertyAPNGLoopCount: CFString`: the times an APNG plays, 0 for forever
/// (developer.apple.com/documentation/imageio/kcgimagepropertyapngloopcount).
nonisolated(unsafe) public let kCGImagePropertyAPNGLoopCount: CFString = "LoopCount"
// Sequence timing of WebP and HEICS (developer.apple.com/documentation/imageio: "WebP Data", "HEIC
// Image Properties"), `let ...: CFString` in the SDK: the WebP keys since iOS 14, macOS 11, tvOS 14,
// watchOS 7, visionOS 1; the HEICS keys since iOS 13, macOS 10.15, tvOS 13, watchOS 6, visionOS 1.
// Each dictionary holds a frame's delay (the clamped one at least 100 ms), its unclamped delay, and
// the container's loop count (the number of times to play the sequence).
@available(iOS 14, macOS 11, tvOS 14, watchOS 7, visionOS 1, *)
nonisolated(unsafe) public let kCGImagePropertyWebPDictionary: CFString = "{WebP}"
@available(iOS 14, macOS 11, tvOS 14, watchOS 7, visionOS 1, *)
nonisolated(unsafe) public let kCGImagePropertyWebPDelayTime: CFString = "DelayTime"
@available(iOS 14, macOS 11, tvOS 14, watchOS 7, visionOS 1, *)
nonisolated(unsafe) public let kCGImagePropertyWebPUnclampedDelayTime: CFString = "UnclampedDelayTime"
@available(iOS 14, macOS 11, tvOS 14, watchOS 7, visionOS 1, *)
nonisolated(unsafe) public let kCGImagePropertyWebPLoopCount: CFString = "LoopCount"
nonisolated(unsafe) public let kCGImagePropertyHEICSDictionary: CFString = "{HEICS}"
nonisolated(unsafe) public let kCGImagePropertyHEICSDelayTime: CFString = "DelayTime"
nonisolated(unsafe) public let kCGImagePropertyHEICSUnclampedDelayTime: CFString = "UnclampedDelayTime"
nonisolated(unsafe) public let kCGImagePropertyHEICSLoopCount: CFString = "LoopCount"
