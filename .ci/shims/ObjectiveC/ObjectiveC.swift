// A signature-only stand-in for the associated-object functions of Apple's ObjectiveC module, which
// Foundation re-exports on Apple platforms and swift-corelibs-foundation has not. The UIKit and
// AppKit shims re-export it, so that code that imports either sees these functions as it would on
// iOS or macOS. Compiled into a module named ObjectiveC by .ci/shims/build; nothing here ever runs.
// It also holds Swift's key-value observation (`observe(_:options:changeHandler:)`), which Apple's
// Foundation overlay gives NSObject and swift-corelibs-foundation has not, and the members of
// Apple's Foundation that swift-corelibs-foundation lacks and the Apple branches use (URLRequest's
// network constraints).

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public enum objc_AssociationPolicy: UInt, @unchecked Sendable {
    case OBJC_ASSOCIATION_ASSIGN = 0
    case OBJC_ASSOCIATION_RETAIN_NONATOMIC = 1
    case OBJC_ASSOCIATION_COPY_NONATOMIC = 3
    case OBJC_ASSOCIATION_RETAIN = 769
    case OBJC_ASSOCIATION_COPY = 771
}

public func objc_setAssociatedObject(_ object: Any, _ key: UnsafeRawPointer, _ value: Any?, _ policy: objc_AssociationPolicy) {
    fatalError("ObjectiveC shim")
}

public func objc_getAssociatedObject(_ object: Any, _ key: UnsafeRawPointer) -> Any? {
    fatalError("ObjectiveC shim")
}

// MARK: - Key-value observation (Apple's Foundation overlay)

/// `protocol _KeyValueCodingAndObserving`, which `NSObject` adopts: the home of `observe`.
public protocol _KeyValueCodingAndObserving {}

extension NSObject: _KeyValueCodingAndObserving {}

/// `struct NSKeyValueObservingOptions : OptionSet, Sendable`
/// (developer.apple.com/documentation/foundation/nskeyvalueobservingoptions).
public struct NSKeyValueObservingOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let new = NSKeyValueObservingOptions(rawValue: 0x01)
    public static let old = NSKeyValueObservingOptions(rawValue: 0x02)
    public static let initial = NSKeyValueObservingOptions(rawValue: 0x04)
    public static let prior = NSKeyValueObservingOptions(rawValue: 0x08)
}

/// `struct NSKeyValueObservedChange<Value>`
/// (developer.apple.com/documentation/foundation/nskeyvalueobservedchange).
public struct NSKeyValueObservedChange<Value> {
    public let newValue: Value?
    public let oldValue: Value?
}

/// `@objc(_NSKeyValueObservation) class NSKeyValueObservation : NSObject`: observing until it is
/// deinitialized or invalidated (developer.apple.com/documentation/foundation/nskeyvalueobservation).
public class NSKeyValueObservation: NSObject {
    /// `func invalidate()`
    public func invalidate() { fatalError("ObjectiveC shim") }
}

extension _KeyValueCodingAndObserving {
    /// `@preconcurrency func observe<Value>(_ keyPath: KeyPath<Self, Value>, options:
    /// NSKeyValueObservingOptions = [], changeHandler: @escaping @Sendable (Self,
    /// NSKeyValueObservedChange<Value>) -> Void) -> NSKeyValueObservation`
    /// (developer.apple.com/documentation/objectivec/nsobject-swift.class/observe(_:options:changehandler:)).
    @preconcurrency public func observe<Value>(_ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
                                               changeHandler: @escaping @Sendable (Self, NSKeyValueObservedChange<Value>) -> Void)
        -> NSKeyValueObservation {
        fatalError("ObjectiveC shim")
    }
}

// MARK: - Network constraints (Apple's Foundation; not in swift-corelibs-foundation)

extension URLRequest {
    /// `var allowsConstrainedNetworkAccess: Bool { get set }` (iOS 13, macOS 10.15, watchOS 6)
    /// (developer.apple.com/documentation/foundation/urlrequest/allowsconstrainednetworkaccess).
    public var allowsConstrainedNetworkAccess: Bool {
        get { fatalError("ObjectiveC shim") }
        set { fatalError("ObjectiveC shim") }
    }
    /// `var allowsExpensiveNetworkAccess: Bool { get set }` (iOS 13, macOS 10.15, watchOS 6)
    /// (developer.apple.com/documentation/foundation/urlrequest/allowsexpensivenetworkaccess).
    public var allowsExpensiveNetworkAccess: Bool {
        get { fatalError("ObjectiveC shim") }
        set { fatalError("ObjectiveC shim") }
    }
}
