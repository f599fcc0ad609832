// Signature shim of the `os` module (the unified log), as Apple's SDK declares what ImageCache
// uses of it: `Logger` (iOS 14, macOS 11, tvOS 14, watchOS 7) and the message interpolation its
// methods take. Bodies do nothing; only the signatures are checked.

@available(macOS 11.0, iOS 14.0, watchOS 7.0, tvOS 14.0, *)
public struct Logger {
    public init(subsystem: String, category: String) {}
    public func debug(_ message: OSLogMessage) {}
    public func log(_ message: OSLogMessage) {}
}

@available(macOS 11.0, iOS 14.0, watchOS 7.0, tvOS 14.0, *)
public struct OSLogMessage: ExpressibleByStringInterpolation, ExpressibleByStringLiteral {
    public init(stringInterpolation: OSLogInterpolation) {}
    public init(stringLiteral value: String) {}
}

@available(macOS 11.0, iOS 14.0, watchOS 7.0, tvOS 14.0, *)
public struct OSLogInterpolation: StringInterpolationProtocol {
    public init(literalCapacity: Int, interpolationCount: Int) {}
    public mutating func appendLiteral(_ literal: String) {}
    public mutating func appendInterpolation(_ argumentString: @autoclosure @escaping () -> String,
                                             align: OSLogStringAlignment = .none,
                                             privacy: OSLogPrivacy = .auto) {}
}

@available(macOS 11.0, iOS 14.0, watchOS 7.0, tvOS 14.0, *)
public struct OSLogPrivacy {
    public static var auto: OSLogPrivacy { OSLogPrivacy() }
    public static var `public`: OSLogPrivacy { OSLogPrivacy() }
    public static var `private`: OSLogPrivacy { OSLogPrivacy() }
}

@available(macOS 11.0, iOS 14.0, watchOS 7.0, tvOS 14.0, *)
public struct OSLogStringAlignment {
    public static var none: OSLogStringAlignment { OSLogStringAlignment() }
}
