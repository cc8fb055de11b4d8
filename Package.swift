// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "gondola",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "gondola", targets: ["gondola"]),
        .executable(name: "gondola-load", targets: ["gondola-load"]),
        .executable(name: "gondola-push-standin", targets: ["gondola-push-standin"]),
        .library(name: "GondolaGeo", targets: ["GondolaGeo"]),
        .library(name: "GondolaOSM", targets: ["GondolaOSM"]),
        .library(name: "GondolaRESP", targets: ["GondolaRESP"]),
        .library(name: "GondolaRedis", targets: ["GondolaRedis"]),
        .library(name: "GondolaProtocol", targets: ["GondolaProtocol"]),
        .library(name: "GondolaHub", targets: ["GondolaHub"]),
        .library(name: "GondolaStore", targets: ["GondolaStore"]),
        .library(name: "GondolaRuntime", targets: ["GondolaRuntime"]),
        .library(name: "GondolaPostgres", targets: ["GondolaPostgres"]),
        .library(name: "GondolaCluster", targets: ["GondolaCluster"]),
        .library(name: "GondolaDomain", targets: ["GondolaDomain"]),
        .library(name: "GondolaTravel", targets: ["GondolaTravel"]),
        .library(name: "GondolaServices", targets: ["GondolaServices"]),
        .library(name: "GondolaCrash", targets: ["GondolaCrash"]),
        .library(name: "GondolaRentals", targets: ["GondolaRentals"]),
        .library(name: "GondolaForms", targets: ["GondolaForms"]),
        .library(name: "GondolaPush", targets: ["GondolaPush"]),
        .library(name: "GondolaServer", targets: ["GondolaServer"]),
        .library(name: "GondolaPushStandIn", targets: ["GondolaPushStandIn"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/grpc/grpc-swift-2.git", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf.git", from: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0"),
    ],
    targets: [
        .target(name: "CPrefetch"),
        // jemalloc in place of glibc's malloc for every binary that links the server, and its statistics.
        .target(name: "CAllocator", linkerSettings: [.linkedLibrary("jemalloc")]),
        // SQLite's page caches in one block reserved at start (sqlite3_config, which Swift cannot call).
        .target(name: "CSQLitePageCache", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "GondolaGeo", dependencies: ["CPrefetch"], exclude: ["README.md"]),
        .target(name: "GondolaOSM", dependencies: ["GondolaGeo", "GondolaProtocol"]),
        .target(name: "GondolaRESP"),
        .target(
            name: "GondolaRedis",
            dependencies: [
                "GondolaRESP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "GondolaProtocol",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["Protobuf/client.proto"]
        ),
        .target(
            name: "GondolaHub",
            dependencies: [
                "GondolaProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "GondolaStore",
            dependencies: [
                "GondolaHub",
                "CSQLitePageCache",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "GondolaRuntime",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "GondolaPostgres",
            dependencies: [
                "GondolaHub",
                "GondolaRuntime",
                "GondolaProtocol",
                "GondolaStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "GondolaCluster",
            dependencies: [
                "GondolaHub",
                "GondolaPostgres",
                "GondolaProtocol",
                "GondolaRedis",
                "GondolaRESP",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "GondolaDomain",
            dependencies: [
                "GondolaHub",
                "GondolaServices",
                "GondolaProtocol",
                "GondolaStore",
                "GondolaPostgres",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "GondolaServices",
            dependencies: [
                "CCurl",
                "GondolaProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
            ]
        ),
        .target(
            name: "GondolaCrash",
            dependencies: [
                "CHaru",
                "CHeif",
                "GondolaDomain",
                "GondolaHub",
                "GondolaPostgres",
                "GondolaServices",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "GondolaRentals",
            dependencies: [
                "GondolaDomain",
                "GondolaGeo",
                "GondolaHub",
                "GondolaPostgres",
                "GondolaServices",
                "GondolaStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "GondolaForms",
            dependencies: [
                "GondolaDomain",
                "GondolaHub",
                "GondolaPostgres",
                "GondolaProtocol",
                "GondolaStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "GondolaTravel",
            dependencies: [
                "GondolaDomain",
                "GondolaRuntime",
                "GondolaServices",
                "GondolaHub",
                "GondolaGeo",
                "GondolaStore",
                "GondolaPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .target(
            name: "GondolaPush",
            dependencies: [
                "GondolaDomain",
                "GondolaHub",
                "GondolaPostgres",
                "GondolaProtocol",
                "GondolaStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "GondolaPushStandIn",
            dependencies: [
                "GondolaProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "GondolaServer",
            dependencies: [
                "CAllocator",
                "GondolaPush",
                "GondolaRuntime",
                "GondolaCluster",
                "GondolaRedis",
                "GondolaPostgres",
                "GondolaCrash",
                "GondolaDomain",
                "GondolaForms",
                "GondolaRentals",
                "GondolaServices",
                "GondolaHub",
                "GondolaStore",
                "GondolaTravel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCertificateReloading", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            exclude: ["GRPC/api.proto"]
        ),
        .executableTarget(
            name: "gondola",
            dependencies: [
                "CAllocator",
                "GondolaOSM",
                "GondolaStore",
                "GondolaRentals",
                "GondolaServer",
                "GondolaTravel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "gondola-push-standin",
            dependencies: ["GondolaPushStandIn", "GondolaProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .systemLibrary(name: "CWebSockets", pkgConfig: "libwebsockets", providers: [.apt(["libwebsockets-dev"])]),
        .target(name: "CLoadSocket", dependencies: ["CWebSockets"], linkerSettings: [.linkedLibrary("uv")]),
        .target(
            name: "GondolaLoad",
            dependencies: [
                "CLoadSocket",
                "GondolaProtocol",
                "GondolaHub",
                "GondolaGeo",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "gondola-load",
            dependencies: [
                "GondolaLoad", "GondolaGeo", "GondolaHub", "GondolaProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CHaru", providers: [.apt(["libhpdf-dev"])]),
        .systemLibrary(name: "CHeif", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSpatialIndex", providers: [.apt(["libspatialindex-dev"])]),
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
        .executableTarget(
            name: "gondola-bench-geo",
            dependencies: [
                "GondolaGeo", "CSQLite", "CSpatialIndex", "CHiredis", "CLibPQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "GondolaGeoTests", dependencies: ["GondolaGeo"]),
        .testTarget(name: "GondolaOSMTests", dependencies: ["GondolaOSM", "GondolaGeo"]),
        .testTarget(
            name: "GondolaRedisTests",
            dependencies: [
                "GondolaRedis", "GondolaRESP", "GondolaGeo", "GondolaTestSupport", "GondolaCluster", "GondolaHub", "GondolaProtocol",
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "GondolaDomainTests",
            dependencies: [
                "GondolaDomain", "GondolaHub", "GondolaStore", "GondolaPostgres", "GondolaProtocol", "GondolaTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "GondolaLoadTests", dependencies: ["GondolaLoad", "GondolaGeo", "GondolaProtocol", "GondolaTestSupport"]),
        .testTarget(name: "GondolaProtocolTests", dependencies: ["GondolaProtocol"]),
        .testTarget(
            name: "GondolaHubTests",
            dependencies: [
                "GondolaHub", "GondolaCluster", "GondolaRedis", "GondolaTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "GondolaStoreTests",
            dependencies: [
                "GondolaStore", "GondolaPostgres", "GondolaHub", "GondolaProtocol", "GondolaTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "GondolaTravelTests",
            dependencies: [
                "GondolaTravel", "GondolaGeo", "GondolaHub", "GondolaStore", "GondolaPostgres", "GondolaTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .target(
            name: "GondolaTestSupport",
            dependencies: [
                "GondolaHub", "GondolaPostgres", "GondolaRedis", "GondolaRESP", .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/GondolaTestSupport"),
        .testTarget(
            name: "GondolaCrashTests",
            dependencies: [
                "GondolaCrash", "GondolaServices", "GondolaStore", "GondolaPostgres", "GondolaTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "GondolaFormsTests",
            dependencies: ["GondolaForms", "GondolaDomain", "GondolaHub", "GondolaProtocol", "GondolaStore", "GondolaPostgres", "GondolaTestSupport"]
        ),
        .testTarget(
            name: "GondolaPushTests",
            dependencies: [
                "GondolaPush", "GondolaPostgres", "GondolaStore", "GondolaTestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(
            name: "GondolaRentalsTests",
            dependencies: [
                "GondolaRentals", "GondolaGeo", "GondolaHub", "GondolaServices", "GondolaStore", "GondolaPostgres", "GondolaTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "GondolaServicesTests", dependencies: ["GondolaServices", "GondolaTestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(
            name: "GondolaServerTests",
            dependencies: [
                "CAllocator",
                "GondolaServer",
                "GondolaRuntime",
                "GondolaPush",
                "GondolaPushStandIn",
                "GondolaCrash",
                "GondolaRentals",
                "GondolaServices",
                "GondolaHub",
                "GondolaDomain",
                "GondolaTravel",
                "GondolaLoad",
                "GondolaTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
    ]
)
