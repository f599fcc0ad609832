// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "ImageCache",
    platforms: [.iOS(.v13), .macOS(.v10_15), .tvOS(.v13), .watchOS(.v6), .visionOS(.v1)],
    products: [
        .library(name: "ImageCache", targets: ["ImageCache"]),
    ],
    targets: [
        // The library, one file per concern. `.ci/amalgamate` joins these into the top-level
        // ImageCache.swift that apps may copy instead of depending on the package.
        .target(
            name: "ImageCache",
            path: "Sources/ImageCache",
            // The seams the tests' hooks set, and the benchmarks' SPI (Support/BenchmarkHooks.swift): the
            // package's own builds only; `.ci/amalgamate` leaves them out of the copied file.
            swiftSettings: [.define("IMAGECACHE_TESTING")]
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
        // The child processes that the shared-folder tests run several of at once on one folder.
        .executableTarget(
            name: "SharedFolderHelper",
            dependencies: ["ImageCache"],
            path: "ImageCacheTests/SharedFolderHelper"
        ),
        // The child process that the large-body tests measure the memory of while it downloads.
        .executableTarget(
            name: "LargeBodyHelper",
            dependencies: ["ImageCache"],
            path: "ImageCacheTests/LargeBodyHelper"
        ),
        // An app with ImageCache.swift copied in (a symbolic link to it) beside top-level names
        // of its own, such as `open` and `Entry`: the copy must compile and work there.
        .executableTarget(
            name: "CopyInHost",
            path: "ImageCacheTests/CopyInHost"
        ),
        .testTarget(
            name: "ImageCacheTests",
            dependencies: ["ImageCache", "LoopbackServer"],
            path: "ImageCacheTests",
            exclude: ["CrashHelper", "SharedFolderHelper", "LargeBodyHelper", "CopyInHost", "MainActorHost", "Fuzz"],
            resources: [.copy("Fixtures")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
