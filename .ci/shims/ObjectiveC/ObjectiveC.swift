// A signature-only stand-in for the associated-object functions of Apple's ObjectiveC module, which
// Foundation re-exports on Apple platforms and swift-corelibs-foundation has not. The UIKit and
// AppKit shims re-export it, so that code that imports either sees these functions as it would on
// iOS or macOS. Compiled into a module named ObjectiveC by .ci/shims/build; nothing here ever runs.

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
