// A signature-only stand-in for Apple's SwiftUI, so that `swiftc` on Linux can check the
// `#if canImport(SwiftUI)` code of ImageCache.swift. .ci/shims/build compiles it into a module named
// SwiftUI three times: against the UIKit shim (iOS), the AppKit shim (macOS) and watchOS's UIKit
// (images only). Nothing here ever
// runs (every body traps, or returns `self` where an opaque `some View` needs a value).
//
// Rules: as for the UIKit shim. Mirror Apple's Swift declarations (the iOS 18 / macOS 15 SDK, where
// `View` and `StateObject` are `@MainActor`); add only what the checked code uses; mark API newer than
// the package's deployment targets with its `@available`.

// SwiftUI re-exports UIKit (iOS) or AppKit (macOS), and with them Foundation: a file that imports
// SwiftUI alone can use URL and UIImage.
#if canImport(UIKit)
@_exported import UIKit
#elseif canImport(AppKit)
@_exported import AppKit
#endif

// MARK: - Views

@MainActor @preconcurrency
public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor @preconcurrency var body: Self.Body { get }
}

/// SHIM: only the one-view block and the two branches of an `if` the checked code needs.
@resultBuilder
public struct ViewBuilder {
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    /// `static func buildEither<TrueContent, FalseContent>(first: TrueContent) ->
    /// _ConditionalContent<TrueContent, FalseContent>`, iOS 13, macOS 10.15
    /// (developer.apple.com/documentation/swiftui/viewbuilder/buildeither(first:)).
    public static func buildEither<TrueContent, FalseContent>(first: TrueContent)
        -> _ConditionalContent<TrueContent, FalseContent> { fatalError("SwiftUI shim") }
    /// `static func buildEither<TrueContent, FalseContent>(second: FalseContent) ->
    /// _ConditionalContent<TrueContent, FalseContent>`, iOS 13, macOS 10.15
    /// (developer.apple.com/documentation/swiftui/viewbuilder/buildeither(second:)).
    public static func buildEither<TrueContent, FalseContent>(second: FalseContent)
        -> _ConditionalContent<TrueContent, FalseContent> { fatalError("SwiftUI shim") }
}

/// What `ViewBuilder.buildEither` returns (see its documentation above). Apple documents no page of its
/// own for this underscored type; as in the SDK's interface: `@frozen struct _ConditionalContent<TrueContent,
/// FalseContent>`, a `View` when both are. SHIM: a stored class reference keeps Swift from inferring
/// Sendable, which the SDK does not declare.
@frozen public struct _ConditionalContent<TrueContent, FalseContent> {
    private let box: AnyObject
}

extension _ConditionalContent: View where TrueContent: View, FalseContent: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
}

extension Never: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
}

/// `@frozen public struct Image : Equatable, Sendable` in the SDK, a `View` whose `Body` is `Never`.
/// SHIM: Equatable is left out.
@frozen public struct Image: Sendable, View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }

    #if canImport(UIKit)
    public init(uiImage: UIImage) { fatalError("SwiftUI shim") }
    #elseif canImport(AppKit)
    public init(nsImage: NSImage) { fatalError("SwiftUI shim") }
    #endif

    public enum ResizingMode: Sendable {
        case tile
        case stretch
    }

    public func resizable(capInsets: EdgeInsets = EdgeInsets(), resizingMode: Image.ResizingMode = .stretch) -> Image {
        fatalError("SwiftUI shim")
    }
}

/// `@frozen struct Color`, a `View` and `Sendable`, iOS 13, macOS 10.15
/// (developer.apple.com/documentation/swiftui/color). SHIM: its Hashable and ShapeStyle conformances
/// are left out; `gray` is declared on `ShapeStyle where Self == Color` in the SDK,
/// `static var gray: Color { get }` (developer.apple.com/documentation/swiftui/shapestyle/gray).
@frozen public struct Color: Sendable, View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    public static var gray: Color { fatalError("SwiftUI shim") }
    /// `static let clear: Color` (developer.apple.com/documentation/swiftui/color/clear).
    public static var clear: Color { fatalError("SwiftUI shim") }
}

/// `@frozen struct EmptyView`, a `View` whose `Body` is `Never`, iOS 13, macOS 10.15; `@inlinable
/// nonisolated init()` (developer.apple.com/documentation/swiftui/emptyview).
@frozen public struct EmptyView: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    nonisolated public init() {}
}

/// `nonisolated struct ProgressView<Label, CurrentValueLabel> where Label : View, CurrentValueLabel
/// : View`, a `View`, iOS 14, macOS 11, tvOS 14, watchOS 7 (developer.apple.com/documentation/swiftui/progressview).
/// SHIM: only the determinate initializer without labels.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
public struct ProgressView<Label: View, CurrentValueLabel: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    /// `nonisolated init<V>(value: V?, total: V = 1.0) where Label == EmptyView, CurrentValueLabel ==
    /// EmptyView, V : BinaryFloatingPoint` (developer.apple.com/documentation/swiftui/progressview/init(value:total:)).
    nonisolated public init<V>(value: V?, total: V = 1.0)
        where Label == EmptyView, CurrentValueLabel == EmptyView, V: BinaryFloatingPoint { fatalError("SwiftUI shim") }
}

/// `@frozen struct Alignment : Equatable, Sendable` (developer.apple.com/documentation/swiftui/alignment).
/// SHIM: `center` is a `static let` in the SDK; only it is declared.
@frozen public struct Alignment: Equatable, Sendable {
    public static var center: Alignment { fatalError("SwiftUI shim") }
}

@frozen public struct EdgeInsets: Equatable, Sendable {
    public var top: CGFloat, leading: CGFloat, bottom: CGFloat, trailing: CGFloat
    public init(top: CGFloat, leading: CGFloat, bottom: CGFloat, trailing: CGFloat) {
        (self.top, self.leading, self.bottom, self.trailing) = (top, leading, bottom, trailing)
    }
    public init() { self.init(top: 0, leading: 0, bottom: 0, trailing: 0) }
}

/// `@frozen nonisolated struct ZStack<Content> where Content : View`; `nonisolated init(alignment:
/// Alignment = .center, @ViewBuilder content: () -> Content)` (developer.apple.com/documentation/swiftui/zstack).
/// SHIM: no `alignment` (nothing checked passes one).
@frozen public struct ZStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    nonisolated public init(@ViewBuilder content: () -> Content) { fatalError("SwiftUI shim") }
}

// MARK: - Lists

/// `@frozen struct Axis`'s `struct Set : OptionSet`, iOS 13, macOS 10.15
/// (developer.apple.com/documentation/swiftui/axis/set). SHIM: Axis is an enum here, with only its Set.
public enum Axis {
    public struct Set: OptionSet, Sendable {
        public let rawValue: Int8
        public init(rawValue: Int8) { self.rawValue = rawValue }
        public static let horizontal = Axis.Set(rawValue: 1)
        public static let vertical = Axis.Set(rawValue: 2)
    }
}

/// `@frozen struct HorizontalAlignment : Equatable`, iOS 13 (developer.apple.com/documentation/swiftui/horizontalalignment).
@frozen public struct HorizontalAlignment: Equatable, Sendable {
    public static let center = HorizontalAlignment()
}

/// `@frozen struct PinnedScrollableViews : OptionSet`, iOS 14
/// (developer.apple.com/documentation/swiftui/pinnedscrollableviews).
@frozen public struct PinnedScrollableViews: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
}

/// `nonisolated struct ScrollView<Content> where Content : View`, iOS 13; `nonisolated init(_ axes:
/// Axis.Set = .vertical, showsIndicators: Bool = true, @ViewBuilder content: () -> Content)`
/// (developer.apple.com/documentation/swiftui/scrollview/init(_:showsindicators:content:)).
public struct ScrollView<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    nonisolated public init(_ axes: Axis.Set = .vertical, showsIndicators: Bool = true,
                            @ViewBuilder content: () -> Content) { fatalError("SwiftUI shim") }
}

/// `nonisolated struct LazyVStack<Content> where Content : View`, iOS 14, macOS 11; `nonisolated
/// init(alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil, pinnedViews:
/// PinnedScrollableViews = .init(), @ViewBuilder content: () -> Content)`
/// (developer.apple.com/documentation/swiftui/lazyvstack/init(alignment:spacing:pinnedviews:content:)).
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
public struct LazyVStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    nonisolated public init(alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil,
                            pinnedViews: PinnedScrollableViews = .init(), @ViewBuilder content: () -> Content) {
        fatalError("SwiftUI shim")
    }
}

/// `struct ForEach<Data, ID, Content> where Data : RandomAccessCollection, ID : Hashable`, iOS 13; a
/// `View` when `Content` is; `init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content:
/// @escaping (Data.Element) -> Content)` (developer.apple.com/documentation/swiftui/foreach/init(_:id:content:)).
public struct ForEach<Data: RandomAccessCollection, ID: Hashable, Content> {
    private let box: AnyObject  // not Sendable, as in the SDK
}

extension ForEach: View where Content: View {
    public typealias Body = Never
    public var body: Never { fatalError("SwiftUI shim") }
    public init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content) {
        fatalError("SwiftUI shim")
    }
}

/// `@frozen struct AnyTransition` (developer.apple.com/documentation/swiftui/anytransition), not
/// Sendable. SHIM: a stored class reference keeps Swift from inferring Sendable for the frozen struct.
@frozen public struct AnyTransition {
    private let box: AnyObject
    /// `nonisolated(unsafe) static let opacity: AnyTransition`: transparent to opaque on insertion,
    /// opaque to transparent on removal.
    nonisolated(unsafe) public static let opacity: AnyTransition = { fatalError("SwiftUI shim") }()
}

/// `@frozen struct Animation : Equatable, Sendable` (developer.apple.com/documentation/swiftui/animation).
@frozen public struct Animation: Equatable, Sendable {
    public static let `default` = Animation()
    /// `static func easeIn(duration: TimeInterval) -> Animation`
    public static func easeIn(duration: TimeInterval) -> Animation { fatalError("SwiftUI shim") }
}

/// `@frozen struct Transaction`, not Sendable, iOS 13, macOS 10.15: the context of a state change, which
/// carries its animation (developer.apple.com/documentation/swiftui/transaction). SHIM: a stored class
/// reference keeps Swift from inferring Sendable for the frozen struct.
@frozen public struct Transaction {
    private let box: AnyObject
    /// `init()` (developer.apple.com/documentation/swiftui/transaction/init()).
    public init() { fatalError("SwiftUI shim") }
    /// `init(animation: Animation?)` (developer.apple.com/documentation/swiftui/transaction/init(animation:)).
    public init(animation: Animation?) { fatalError("SwiftUI shim") }
    /// `var disablesAnimations: Bool`, iOS 13, macOS 10.15: whether views should disable animations
    /// (the deprecated `animation(_:)` adds none then)
    /// (developer.apple.com/documentation/swiftui/transaction/disablesanimations).
    public var disablesAnimations: Bool { get { fatalError("SwiftUI shim") } set { fatalError("SwiftUI shim") } }
}

/// `func withTransaction<Result>(_ transaction: Transaction, _ body: () throws -> Result) rethrows ->
/// Result`, not main-actor isolated, iOS 13, macOS 10.15
/// (developer.apple.com/documentation/swiftui/withtransaction(_:_:)).
public func withTransaction<Result>(_ transaction: Transaction, _ body: () throws -> Result) rethrows -> Result {
    fatalError("SwiftUI shim")
}

extension View {
    /// `nonisolated func id<ID>(_ id: ID) -> some View where ID : Hashable`: a new identity when `id` changes.
    nonisolated public func id<ID: Hashable>(_ id: ID) -> some View { self }
    /// `nonisolated func transition(_ t: AnyTransition) -> some View`
    /// (developer.apple.com/documentation/swiftui/view/transition(_:)-5h5h0).
    nonisolated public func transition(_ t: AnyTransition) -> some View { self }
    nonisolated public func scaledToFill() -> some View { self }
    nonisolated public func onAppear(perform action: (() -> Void)? = nil) -> some View { self }
    nonisolated public func onDisappear(perform action: (() -> Void)? = nil) -> some View { self }
    /// `nonisolated func environment<V>(_ keyPath: WritableKeyPath<EnvironmentValues, V>, _ value: V)
    /// -> some View`, iOS 13, macOS 10.15, watchOS 6
    /// (developer.apple.com/documentation/swiftui/view/environment(_:_:)).
    nonisolated public func environment<V>(_ keyPath: WritableKeyPath<EnvironmentValues, V>, _ value: V)
        -> some View { self }
    /// `nonisolated func background<Background>(_ background: Background, alignment: Alignment = .center)
    /// -> some View where Background : View`, iOS 13, macOS 10.15, watchOS 6
    /// (developer.apple.com/documentation/swiftui/view/background(_:alignment:)).
    nonisolated public func background<Background: View>(_ background: Background, alignment: Alignment = .center)
        -> some View { self }
    /// `nonisolated func aspectRatio(_ aspectRatio: CGFloat? = nil, contentMode: ContentMode) -> some View`,
    /// iOS 13, macOS 10.15, watchOS 6
    /// (developer.apple.com/documentation/swiftui/view/aspectratio(_:contentmode:)).
    nonisolated public func aspectRatio(_ aspectRatio: CGFloat? = nil, contentMode: ContentMode) -> some View { self }
}

/// `enum ContentMode`, Hashable, CaseIterable, Sendable, iOS 13, macOS 10.15, watchOS 6: how a view
/// fills its parent with an aspect ratio (developer.apple.com/documentation/swiftui/contentmode).
public enum ContentMode: Hashable, CaseIterable, Sendable {
    /// Scales the content to fit the parent.
    case fit
    /// Scales the content to fill the parent.
    case fill
}

// MARK: - State

/// SHIM: `DynamicProperty` has a requirement `mutating func update()` with a default; nothing here calls it.
public protocol DynamicProperty {}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
@MainActor @preconcurrency @frozen @propertyWrapper
public struct StateObject<ObjectType>: DynamicProperty where ObjectType: ObservableObject {
    nonisolated public init(wrappedValue thunk: @autoclosure @escaping () -> ObjectType) { fatalError("SwiftUI shim") }
    @MainActor @preconcurrency public var wrappedValue: ObjectType { fatalError("SwiftUI shim") }
}

@frozen @propertyWrapper
public struct Environment<Value>: DynamicProperty {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) { fatalError("SwiftUI shim") }
    public var wrappedValue: Value { fatalError("SwiftUI shim") }
}

/// `protocol EnvironmentKey`, iOS 13, macOS 10.15, watchOS 6
/// (developer.apple.com/documentation/swiftui/environmentkey).
public protocol EnvironmentKey {
    associatedtype Value
    static var defaultValue: Self.Value { get }
}

public struct EnvironmentValues {
    /// `subscript<K>(key: K.Type) -> K.Value where K : EnvironmentKey { get set }`
    /// (developer.apple.com/documentation/swiftui/environmentvalues/subscript(_:)).
    public subscript<K>(key: K.Type) -> K.Value where K: EnvironmentKey {
        get { fatalError("SwiftUI shim") }
        set { fatalError("SwiftUI shim") }
    }
    /// The display scale of this environment: 2 or 3 on iPhones.
    public var displayScale: CGFloat {
        get { fatalError("SwiftUI shim") }
        set { fatalError("SwiftUI shim") }
    }
}

// MARK: - From Combine, which SwiftUI re-exports

/// SHIM: Combine's `ObservableObject` requires `ObjectWillChangePublisher: Publisher` with
/// `Failure == Never`; this shim has no `Publisher`, so the constraint is left out.
public protocol ObservableObject: AnyObject {
    associatedtype ObjectWillChangePublisher = ObservableObjectPublisher
    var objectWillChange: Self.ObjectWillChangePublisher { get }
}

extension ObservableObject where Self.ObjectWillChangePublisher == ObservableObjectPublisher {
    public var objectWillChange: ObservableObjectPublisher { fatalError("SwiftUI shim") }
}

final public class ObservableObjectPublisher {
    public init() {}
}

/// Like Combine's: usable only on properties of classes (the `_enclosingInstance` subscript).
@propertyWrapper
public struct Published<Value> {
    public init(wrappedValue: Value) { fatalError("SwiftUI shim") }

    @available(*, unavailable, message: "@Published is only available on properties of classes")
    public var wrappedValue: Value {
        get { fatalError("SwiftUI shim") }
        set { fatalError("SwiftUI shim") }
    }

    public static subscript<EnclosingSelf: AnyObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Published<Value>>
    ) -> Value {
        get { fatalError("SwiftUI shim") }
        set { fatalError("SwiftUI shim") }
    }
}
