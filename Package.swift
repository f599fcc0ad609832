// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ImageCache",
    platforms: [.iOS(.v13), .macOS(.v10_15), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "ImageCache", targets: ["ImageCache"]),
    ],
    targets: [
        // The whole library is one file at the top level, so that an app can copy it.
        .target(
            name: "ImageCache",
            path: ".",
            exclude: ["ExampleApp", "ImageCacheTests", "Benchmarks", "README.md", "LICENSE", "CHANGELOG.md"],
            sources: ["ImageCache.swift"]
        ),
        // A loopback HTTP server that the example app, the tests and the benchmarks serve images with.
        .target(
            name: "LoopbackServer",
            path: "ExampleApp/LoopbackServer",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "ExampleApp",
            dependencies: ["ImageCache", "LoopbackServer"],
            path: "ExampleApp/App"
        ),
        .executableTarget(
            name: "ImageCacheBenchmarks",
            dependencies: ["ImageCache", "LoopbackServer"],
            path: "Benchmarks",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The child process that the crash test kills while it writes.
        .executableTarget(
            name: "CrashHelper",
            dependencies: ["ImageCache"],
            path: "ImageCacheTests/CrashHelper"
        ),
        .testTarget(
            name: "ImageCacheTests",
            dependencies: ["ImageCache", "LoopbackServer"],
            path: "ImageCacheTests",
            exclude: ["CrashHelper"],
            resources: [.copy("Fixtures")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
