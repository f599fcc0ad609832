// A signature-only stand-in for Apple's UIKit, so that `swiftc -typecheck` on Linux can check the
// `#if canImport(UIKit)` code of ImageCache.swift and the iOS sample (ExampleApp/iOS). It is compiled
// into a module named UIKit by .ci/typecheck-apple; nothing here ever runs (every body traps).
//
// Rules for editing this file:
// - Mirror Apple's Swift declarations (the generated interface of the iOS 18 / 26 SDK, as shown on
//   developer.apple.com): same names, argument labels, optionality, class hierarchy, `open`, `@MainActor`,
//   `nonisolated`, Sendable. Add only what the checked code uses; leave out what it does not.
// - Declare only API available at the package's deployment target (iOS 13), unless marked with the
//   matching `@available(iOS N, *)`. Linux ignores iOS availability, so this check cannot tell whether
//   a newer API is guarded by `#available`; keep such API out of the shim where possible.
// - Where Swift source cannot say what the Objective-C importer says, the workaround is marked SHIM:.

@_exported import Foundation  // UIKit re-exports Foundation
@_exported import ObjectiveC  // and, through it, ObjectiveC's associated objects (.ci/shims/ObjectiveC)
#if !WATCHOS
@_exported import QuartzCore  // and QuartzCore: CALayer, a view's `layer` (.ci/shims/QuartzCore)
#endif
@_exported import CoreGraphics  // and CoreGraphics: CGImage (.ci/shims/CoreGraphics); CGFloat, CGSize are Foundation's here

// MARK: - Images (thread-safe, not main-actor isolated)

/// `open class UIImage : NSObject, NSSecureCoding, @unchecked Sendable` in the SDK. It is not
/// `@MainActor`: Apple documents image objects as immutable and safe to create and use from any thread.
/// SHIM: NSSecureCoding, NSItemProvider* and the other conformances are left out; `required
/// init?(coder:)` stands in for NSSecureCoding's requirement.
open class UIImage: NSObject, @unchecked Sendable {
    public override init() { super.init() }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }  // SHIM: for NSSecureCoding
    public /*not inherited*/ init?(named name: String) { fatalError("UIKit shim") }
    @available(iOS 13.0, *)
    public /*not inherited*/ init?(systemName name: String) { fatalError("UIKit shim") }
    public init?(contentsOfFile path: String) { fatalError("UIKit shim") }
    public init?(data: Data) { fatalError("UIKit shim") }
    @available(iOS 6.0, *)
    public init?(data: Data, scale: CGFloat) { fatalError("UIKit shim") }
    public init(cgImage: CGImage) { fatalError("UIKit shim") }
    /// `init(cgImage: CGImage, scale: CGFloat, orientation: UIImage.Orientation)`, iOS 4.0
    /// (developer.apple.com/documentation/uikit/uiimage/init(cgimage:scale:orientation:)).
    @available(iOS 4.0, *)
    public init(cgImage: CGImage, scale: CGFloat, orientation: UIImage.Orientation) { fatalError("UIKit shim") }

    /// The logical size, in points.
    open var size: CGSize { fatalError("UIKit shim") }
    @available(iOS 4.0, *)
    open var scale: CGFloat { fatalError("UIKit shim") }
    /// `var cgImage: CGImage? { get }`: the bitmap, nil for an image made from a CIImage
    /// (developer.apple.com/documentation/uikit/uiimage/cgimage).
    open var cgImage: CGImage? { fatalError("UIKit shim") }
    /// `var imageOrientation: UIImage.Orientation { get }`: how the bitmap is drawn
    /// (developer.apple.com/documentation/uikit/uiimage/imageorientation).
    open var imageOrientation: UIImage.Orientation { fatalError("UIKit shim") }

    // developer.apple.com/documentation/uikit/uiimage/animatedimage(with:duration:) and .../images:
    // `class func animatedImage(with images: [UIImage], duration: TimeInterval) -> UIImage?` and
    // `var images: [UIImage]? { get }` (nil for an image that is not animated), both iOS 5.
    @available(iOS 5.0, *)
    open class func animatedImage(with images: [UIImage], duration: TimeInterval) -> UIImage? {
        fatalError("UIKit shim")
    }
    @available(iOS 5.0, *)
    open var images: [UIImage]? { fatalError("UIKit shim") }
    /// `var duration: TimeInterval { get }`, iOS 5: an animated image's time for all its frames
    /// (developer.apple.com/documentation/uikit/uiimage/duration).
    @available(iOS 5.0, *)
    open var duration: TimeInterval { fatalError("UIKit shim") }
}

extension UIImage {
    /// `enum Orientation : Int, @unchecked Sendable` in the SDK (UIImageOrientation).
    public enum Orientation: Int, @unchecked Sendable {
        case up = 0, down = 1, left = 2, right = 3, upMirrored = 4, downMirrored = 5, leftMirrored = 6, rightMirrored = 7
    }
}

extension UIImage {
    /// `UIImagePNGRepresentation`, imported as a method.
    public func pngData() -> Data? { fatalError("UIKit shim") }
    /// `UIImageJPEGRepresentation`, imported as a method.
    public func jpegData(compressionQuality: CGFloat) -> Data? { fatalError("UIKit shim") }
}

// watchOS's UIKit (`-D WATCHOS`, .ci/shims/build watchos) has images and no views, screens, scenes,
// application or trait collections: what follows is iOS's only.
#if !WATCHOS

// MARK: - Responders and the application

@MainActor
open class UIResponder: NSObject {
    public override init() { super.init() }
}

@MainActor
open class UIApplication: UIResponder {
    open class var shared: UIApplication { fatalError("UIKit shim") }
    open var applicationState: UIApplication.State { fatalError("UIKit shim") }
}

extension UIApplication {
    public enum State: Int, Sendable {
        case active = 0
        case inactive = 1
        case background = 2
    }
}

// The SDK declares these `nonisolated class let ...: NSNotification.Name` (imported from
// `UIKIT_EXTERN NSNotificationName const UIApplication...Notification`), so they can be read from any
// thread. SHIM: Swift source cannot declare a `class let`; `static let` is read the same way.
extension UIApplication {
    nonisolated public static let didEnterBackgroundNotification = NSNotification.Name("UIApplicationDidEnterBackgroundNotification")
    nonisolated public static let willEnterForegroundNotification = NSNotification.Name("UIApplicationWillEnterForegroundNotification")
    nonisolated public static let didFinishLaunchingNotification = NSNotification.Name("UIApplicationDidFinishLaunchingNotification")
    nonisolated public static let didBecomeActiveNotification = NSNotification.Name("UIApplicationDidBecomeActiveNotification")
    nonisolated public static let willResignActiveNotification = NSNotification.Name("UIApplicationWillResignActiveNotification")
    nonisolated public static let didReceiveMemoryWarningNotification = NSNotification.Name("UIApplicationDidReceiveMemoryWarningNotification")
    nonisolated public static let willTerminateNotification = NSNotification.Name("UIApplicationWillTerminateNotification")
    nonisolated public static let significantTimeChangeNotification = NSNotification.Name("UIApplicationSignificantTimeChangeNotification")
}

// MARK: - Views

/// UIView's designated initializers are `init(frame:)` and `init?(coder:)` (required by NSCoding).
/// The importer makes NSObject's `init()` a convenience initializer: `UIView()` works, but a subclass's
/// designated initializer must call `super.init(frame:)`, not `super.init()`.
/// SHIM: `required init?(coder:)` stands in for the NSCoding conformance.
/// `open class UITraitCollection : NSObject, NSCopying, NSSecureCoding, @unchecked Sendable` in the SDK.
open class UITraitCollection: NSObject, @unchecked Sendable {
    /// The scale of the display, or 0 when it is not specified.
    open var displayScale: CGFloat { fatalError("UIKit shim") }
    /// `class var current: UITraitCollection { get set }`, iOS 13.0, not main-actor isolated (a
    /// per-thread value; developer.apple.com/documentation/uikit/uitraitcollection/current).
    @available(iOS 13.0, *)
    open class var current: UITraitCollection {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
}

/// `@MainActor open class UIScreen : NSObject, UITraitEnvironment` in the SDK; unavailable on
/// visionOS. SHIM: the UITraitEnvironment conformance is left out, and so is `class var main`
/// (discouraged since iOS 16, deprecated in iOS 26: "use a UIScreen instance found through context
/// instead"; developer.apple.com/documentation/uikit/uiscreen/main), which the code must not call:
/// a call that comes back fails this check.
@MainActor
open class UIScreen: NSObject {
    /// `var scale: CGFloat { get }`: the natural scale factor of the screen, 1, 2 or 3
    /// (developer.apple.com/documentation/uikit/uiscreen/scale).
    @available(iOS 4.0, *)
    open var scale: CGFloat { fatalError("UIKit shim") }
    /// `var nativeBounds: CGRect { get }`: the bounding rectangle of the physical screen, in pixels
    /// (developer.apple.com/documentation/uikit/uiscreen/nativebounds).
    @available(iOS 8.0, *)
    open var nativeBounds: CGRect { fatalError("UIKit shim") }
}

/// `@MainActor class UIScene : UIResponder` in the SDK, iOS 13, tvOS 13, visionOS 1
/// (developer.apple.com/documentation/uikit/uiscene). SHIM: UIKit makes scenes; the initializer
/// `init(session:connectionOptions:)` is left out.
@available(iOS 13.0, *)
@MainActor
open class UIScene: UIResponder {
    /// `nonisolated class let didActivateNotification: NSNotification.Name`, iOS 13: the scene is
    /// onscreen and responding; the notification's `object` is the scene
    /// (developer.apple.com/documentation/uikit/uiscene/didactivatenotification). SHIM: `static let`,
    /// since Swift source cannot declare a `class let`.
    nonisolated public static let didActivateNotification = NSNotification.Name("UISceneDidActivateNotification")
}

/// `@MainActor class UIWindowScene : UIScene` in the SDK, iOS 13, tvOS 13, visionOS 1
/// (developer.apple.com/documentation/uikit/uiwindowscene).
@available(iOS 13.0, *)
@MainActor
open class UIWindowScene: UIScene {
    /// `var screen: UIScreen { get }`: the screen that displays the scene; iOS 13, tvOS 13, not
    /// visionOS (developer.apple.com/documentation/uikit/uiwindowscene/screen).
    open var screen: UIScreen { fatalError("UIKit shim") }
}

@MainActor
open class UIView: UIResponder {
    public init(frame: CGRect) { super.init() }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }
    public convenience override init() { self.init(frame: .zero) }

    open var frame: CGRect {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var bounds: CGRect {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var isHidden: Bool {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var alpha: CGFloat {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var contentMode: UIView.ContentMode {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var clipsToBounds: Bool {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var tag: Int {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var superview: UIView? { fatalError("UIKit shim") }
    open var window: UIWindow? { fatalError("UIKit shim") }
    @available(iOS 4.0, *)
    open var contentScaleFactor: CGFloat {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var subviews: [UIView] { fatalError("UIKit shim") }
    /// `var layer: CALayer { get }` (developer.apple.com/documentation/uikit/uiview/layer).
    open var layer: CALayer { fatalError("UIKit shim") }
    /// From `UITraitEnvironment`, which UIView adopts.
    open var traitCollection: UITraitCollection { fatalError("UIKit shim") }
    open func addSubview(_ view: UIView) { fatalError("UIKit shim") }
    open func removeFromSuperview() { fatalError("UIKit shim") }
    open func setNeedsLayout() { fatalError("UIKit shim") }
    open func layoutIfNeeded() { fatalError("UIKit shim") }
    open func layoutSubviews() { fatalError("UIKit shim") }
}

extension UIView {
    public enum ContentMode: Int, Sendable {
        case scaleToFill = 0
        case scaleAspectFit = 1
        case scaleAspectFill = 2
        case redraw = 3
        case center = 4
        case top = 5
        case bottom = 6
        case left = 7
        case right = 8
        case topLeft = 9
        case topRight = 10
        case bottomLeft = 11
        case bottomRight = 12
    }
}

@MainActor
open class UIWindow: UIView {
    public override init(frame: CGRect) { super.init(frame: frame) }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }
}

@MainActor
open class UIImageView: UIView {
    // UIImageView.h marks no designated initializer, so all four are designated (subclasses write
    // `override init(image:)` and call `super.init(image:)`).
    public override init(frame: CGRect) { super.init(frame: frame) }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }
    public init(image: UIImage?) { super.init(frame: .zero) }
    @available(iOS 3.0, *)
    public init(image: UIImage?, highlightedImage: UIImage?) { super.init(frame: .zero) }

    open var image: UIImage? {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    @available(iOS 3.0, *)
    open var highlightedImage: UIImage? {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    // developer.apple.com/documentation/uikit/uiimageview: `var animationImages: [UIImage]? { get set }`,
    // `var animationDuration: TimeInterval { get set }`, `var animationRepeatCount: Int { get set }`
    // (0, the default, repeats forever), `func startAnimating()`, `func stopAnimating()`.
    open var animationImages: [UIImage]? {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var animationDuration: TimeInterval {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var animationRepeatCount: Int {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open func startAnimating() { fatalError("UIKit shim") }
    open func stopAnimating() { fatalError("UIKit shim") }
}

@MainActor
open class UILabel: UIView {
    public override init(frame: CGRect) { super.init(frame: frame) }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }

    open var text: String? {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var numberOfLines: Int {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
}

// MARK: - Scroll views and table views

/// All of UIScrollViewDelegate's methods are `optional` in the SDK. SHIM: Swift without Objective-C
/// has no optional requirements; each one is a requirement with an empty default below, so a conforming
/// type may implement any or none of them.
@MainActor
public protocol UIScrollViewDelegate: NSObjectProtocol {
    func scrollViewDidScroll(_ scrollView: UIScrollView)
    func scrollViewWillBeginDragging(_ scrollView: UIScrollView)
    func scrollViewDidEndDragging(_ scrollView: UIScrollView, willDecelerate decelerate: Bool)
    func scrollViewDidEndDecelerating(_ scrollView: UIScrollView)
}

extension UIScrollViewDelegate {
    public func scrollViewDidScroll(_ scrollView: UIScrollView) {}
    public func scrollViewWillBeginDragging(_ scrollView: UIScrollView) {}
    public func scrollViewDidEndDragging(_ scrollView: UIScrollView, willDecelerate decelerate: Bool) {}
    public func scrollViewDidEndDecelerating(_ scrollView: UIScrollView) {}
}

/// SHIM: the SDK's `weak var delegate: (any UIScrollViewDelegate)?` is left out, because Swift source
/// cannot let UITableView narrow it to `(any UITableViewDelegate)?` the way the importer does.
@MainActor
open class UIScrollView: UIView {
    public override init(frame: CGRect) { super.init(frame: frame) }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }

    open var contentOffset: CGPoint {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var contentSize: CGSize {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var isTracking: Bool { fatalError("UIKit shim") }
    open var isDragging: Bool { fatalError("UIKit shim") }
    open var isDecelerating: Bool { fatalError("UIKit shim") }
}

/// Required: number of rows and the cell. Optional in the SDK (SHIM: requirement plus default):
/// `numberOfSections(in:)`.
@MainActor
public protocol UITableViewDataSource: NSObjectProtocol {
    func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int
    func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell
    func numberOfSections(in tableView: UITableView) -> Int
}

extension UITableViewDataSource {
    public func numberOfSections(in tableView: UITableView) -> Int { 1 }
}

/// All optional in the SDK (SHIM: requirements plus empty defaults).
@MainActor
public protocol UITableViewDelegate: UIScrollViewDelegate {
    func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath)
    func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath)
    func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat
    func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath)
}

extension UITableViewDelegate {
    public func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath) {}
    public func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath) {}
    public func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat { 44 }
    public func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath) {}
}

/// `prefetchRowsAt` is required, `cancelPrefetchingForRowsAt` optional (SHIM: requirement plus
/// default). UITableViewController does not adopt this protocol: a subclass adopts it itself, and
/// implements its methods without `override`.
@available(iOS 10.0, *)
@MainActor
public protocol UITableViewDataSourcePrefetching: NSObjectProtocol {
    func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath])
    func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath])
}

@available(iOS 10.0, *)
extension UITableViewDataSourcePrefetching {
    public func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {}
}

/// `prefetchItemsAt` is required, `cancelPrefetchingForItemsAt` optional (SHIM: requirement plus
/// default).
@available(iOS 10.0, *)
@MainActor
public protocol UICollectionViewDataSourcePrefetching: NSObjectProtocol {
    func collectionView(_ collectionView: UICollectionView, prefetchItemsAt indexPaths: [IndexPath])
    func collectionView(_ collectionView: UICollectionView, cancelPrefetchingForItemsAt indexPaths: [IndexPath])
}

@available(iOS 10.0, *)
extension UICollectionViewDataSourcePrefetching {
    public func collectionView(_ collectionView: UICollectionView, cancelPrefetchingForItemsAt indexPaths: [IndexPath]) {}
}

extension UIView {
    /// `struct AnimationOptions : OptionSet, @unchecked Sendable` in the SDK; only the options the
    /// checked code uses.
    public struct AnimationOptions: OptionSet, @unchecked Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static var allowUserInteraction: UIView.AnimationOptions { UIView.AnimationOptions(rawValue: 1 << 1) }
        public static var transitionCrossDissolve: UIView.AnimationOptions { UIView.AnimationOptions(rawValue: 5 << 20) }
    }

    /// `class func transition(with:duration:options:animations:completion:)`, iOS 4.0, in the
    /// SDK's UIViewAnimationWithBlocks category; main-actor isolated, as UIView is.
    @available(iOS 4.0, *)
    public class func transition(with view: UIView, duration: TimeInterval, options: UIView.AnimationOptions = [],
                                 animations: (() -> Void)?, completion: ((Bool) -> Void)? = nil) {
        fatalError("UIKit shim")
    }
}

/// Designated: `init(frame:collectionViewLayout:)` and `init?(coder:)`. SHIM: only the prefetching
/// data source is declared (no layout, data source or cells: nothing checked uses them).
@MainActor
open class UICollectionView: UIScrollView {
    @available(iOS 10.0, *)
    weak open var prefetchDataSource: (any UICollectionViewDataSourcePrefetching)?
}

/// Designated: `init(frame:style:)` and `init?(coder:)`; `init(frame:)` is a convenience initializer.
@MainActor
open class UITableView: UIScrollView {
    public init(frame: CGRect, style: UITableView.Style) { super.init(frame: frame) }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }
    public convenience override init(frame: CGRect) { self.init(frame: frame, style: .plain) }

    open var style: UITableView.Style { fatalError("UIKit shim") }
    weak open var dataSource: (any UITableViewDataSource)?
    weak open var delegate: (any UITableViewDelegate)?
    @available(iOS 10.0, *)
    weak open var prefetchDataSource: (any UITableViewDataSourcePrefetching)?

    open var rowHeight: CGFloat {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open var estimatedRowHeight: CGFloat {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }

    open func reloadData() { fatalError("UIKit shim") }
    open var numberOfSections: Int { fatalError("UIKit shim") }
    open func numberOfRows(inSection section: Int) -> Int { fatalError("UIKit shim") }

    @available(iOS 6.0, *)
    open func register(_ cellClass: AnyClass?, forCellReuseIdentifier identifier: String) { fatalError("UIKit shim") }
    open func dequeueReusableCell(withIdentifier identifier: String) -> UITableViewCell? { fatalError("UIKit shim") }
    @available(iOS 6.0, *)
    open func dequeueReusableCell(withIdentifier identifier: String, for indexPath: IndexPath) -> UITableViewCell {
        fatalError("UIKit shim")
    }

    open func cellForRow(at indexPath: IndexPath) -> UITableViewCell? { fatalError("UIKit shim") }
    open func indexPath(for cell: UITableViewCell) -> IndexPath? { fatalError("UIKit shim") }
    open var visibleCells: [UITableViewCell] { fatalError("UIKit shim") }
    open var indexPathsForVisibleRows: [IndexPath]? { fatalError("UIKit shim") }
    open var indexPathForSelectedRow: IndexPath? { fatalError("UIKit shim") }
    open func deselectRow(at indexPath: IndexPath, animated: Bool) { fatalError("UIKit shim") }

    open func beginUpdates() { fatalError("UIKit shim") }
    open func endUpdates() { fatalError("UIKit shim") }
    open func insertRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) { fatalError("UIKit shim") }
    open func deleteRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) { fatalError("UIKit shim") }
    @available(iOS 3.0, *)
    open func reloadRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) { fatalError("UIKit shim") }
}

extension UITableView {
    public enum Style: Int, Sendable {
        case plain = 0
        case grouped = 1
        @available(iOS 13.0, *)
        case insetGrouped = 2
    }

    public enum RowAnimation: Int, Sendable {
        case fade = 0
        case right = 1
        case left = 2
        case top = 3
        case bottom = 4
        case none = 5
        case middle = 6
        case automatic = 100
    }
}

/// Designated: `init(style:reuseIdentifier:)` and `init?(coder:)`; `init(frame:)` is a convenience
/// initializer. `imageView`, `textLabel` and `detailTextLabel` are read-only and optional (the SDK
/// deprecates them in iOS 27 in favour of content configurations).
@MainActor
open class UITableViewCell: UIView {
    @available(iOS 3.0, *)
    public init(style: UITableViewCell.CellStyle, reuseIdentifier: String?) { super.init(frame: .zero) }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }
    public convenience override init(frame: CGRect) { self.init(style: .default, reuseIdentifier: nil) }

    @available(iOS 3.0, *)
    open var imageView: UIImageView? { fatalError("UIKit shim") }
    @available(iOS 3.0, *)
    open var textLabel: UILabel? { fatalError("UIKit shim") }
    @available(iOS 3.0, *)
    open var detailTextLabel: UILabel? { fatalError("UIKit shim") }
    open var contentView: UIView { fatalError("UIKit shim") }
    open var reuseIdentifier: String? { fatalError("UIKit shim") }
    open var accessoryType: UITableViewCell.AccessoryType {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    open func prepareForReuse() { fatalError("UIKit shim") }
}

extension UITableViewCell {
    public enum CellStyle: Int, Sendable {
        case `default` = 0
        case value1 = 1
        case value2 = 2
        case subtitle = 3
    }

    public enum AccessoryType: Int, Sendable {
        case none = 0
        case disclosureIndicator = 1
        case detailDisclosureButton = 2
        case checkmark = 3
        case detailButton = 4
    }
}

// MARK: - View controllers

/// Designated: `init(nibName:bundle:)` and `init?(coder:)` (required by NSCoding). `init()` is a
/// convenience initializer: a subclass's designated initializer calls `super.init(nibName: nil,
/// bundle: nil)`, and a subclass that adds a designated initializer must also implement
/// `required init?(coder:)`.
@MainActor
open class UIViewController: UIResponder {
    public init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) { super.init() }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }
    public convenience override init() { self.init(nibName: nil, bundle: nil) }

    open var view: UIView! {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    @available(iOS 9.0, *)
    open var viewIfLoaded: UIView? { fatalError("UIKit shim") }
    @available(iOS 3.0, *)
    open var isViewLoaded: Bool { fatalError("UIKit shim") }
    open var title: String? {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }

    open func loadView() { fatalError("UIKit shim") }
    open func viewDidLoad() { fatalError("UIKit shim") }
    open func viewWillAppear(_ animated: Bool) { fatalError("UIKit shim") }
    open func viewDidAppear(_ animated: Bool) { fatalError("UIKit shim") }
    open func viewWillDisappear(_ animated: Bool) { fatalError("UIKit shim") }
    open func viewDidDisappear(_ animated: Bool) { fatalError("UIKit shim") }
    open func didReceiveMemoryWarning() { fatalError("UIKit shim") }
}

/// `@MainActor class UITableViewController : UIViewController, UITableViewDelegate,
/// UITableViewDataSource`. Because its Objective-C interface adopts both protocols, the importer
/// gives the class every method of both (optional ones too), so a subclass implements them with
/// `override` (`override func tableView(_:cellForRowAt:)`, `override func scrollViewDidScroll(_:)`).
/// The shim declares each method the checked code may use as an `open` member to get the same rule.
@MainActor
open class UITableViewController: UIViewController, UITableViewDelegate, UITableViewDataSource {
    public init(style: UITableView.Style) { super.init(nibName: nil, bundle: nil) }
    public override init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) {
        super.init(nibName: nibNameOrNil, bundle: nibBundleOrNil)
    }
    public required init?(coder: NSCoder) { fatalError("UIKit shim") }

    open var tableView: UITableView! {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }
    @available(iOS 3.2, *)
    open var clearsSelectionOnViewWillAppear: Bool {
        get { fatalError("UIKit shim") }
        set { fatalError("UIKit shim") }
    }

    // UITableViewDataSource
    open func numberOfSections(in tableView: UITableView) -> Int { fatalError("UIKit shim") }
    open func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int { fatalError("UIKit shim") }
    open func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell { fatalError("UIKit shim") }

    // UITableViewDelegate
    open func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        fatalError("UIKit shim")
    }
    @available(iOS 6.0, *)
    open func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        fatalError("UIKit shim")
    }
    open func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat { fatalError("UIKit shim") }
    open func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath) { fatalError("UIKit shim") }

    // UIScrollViewDelegate
    open func scrollViewDidScroll(_ scrollView: UIScrollView) { fatalError("UIKit shim") }
    open func scrollViewWillBeginDragging(_ scrollView: UIScrollView) { fatalError("UIKit shim") }
    open func scrollViewDidEndDragging(_ scrollView: UIScrollView, willDecelerate decelerate: Bool) { fatalError("UIKit shim") }
    open func scrollViewDidEndDecelerating(_ scrollView: UIScrollView) { fatalError("UIKit shim") }
}

// MARK: - IndexPath (UIKit's Swift overlay adds rows and items to Foundation's IndexPath)

extension IndexPath {
    /// Initialize for use with `UITableView` or `UITableViewDataSource`.
    public init(row: Int, section: Int) { self.init(indexes: [section, row]) }
    /// Initialize for use with `UICollectionView` or `UICollectionViewDataSource`.
    public init(item: Int, section: Int) { self.init(indexes: [section, item]) }

    /// The section of this index path, when used with `UITableView`.
    public var section: Int {
        get { self[0] }
        set { self[0] = newValue }
    }
    /// The row of this index path, when used with `UITableView`.
    public var row: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
    /// The item of this index path, when used with `UICollectionView`.
    public var item: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
}
#endif

#if !WATCHOS
/// `UIAccessibility` in the SDK's Swift overlay: a namespace of accessibility settings.
/// `@MainActor static var isReduceMotionEnabled: Bool { get }`: iOS 8, tvOS, visionOS 1
/// (developer.apple.com/documentation/uikit/uiaccessibility/isreducemotionenabled).
public enum UIAccessibility {
    @MainActor public static var isReduceMotionEnabled: Bool { fatalError("UIKit shim") }
}
#endif
