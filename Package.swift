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
            exclude: ["ExampleApp", "ImageCacheTests", "README.md"],
            sources: ["ImageCache.swift"]
        ),
        .executableTarget(
            name: "ExampleApp",
            dependencies: ["ImageCache"],
            path: "ExampleApp"
        ),
        .testTarget(
            name: "ImageCacheTests",
            dependencies: ["ImageCache"],
            path: "ImageCacheTests",
            resources: [.copy("Fixtures")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
