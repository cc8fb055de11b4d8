// swift-tools-version:6.1
// libFuzzer targets for the client protocol's command decoders and the Redis reply
// reader. Built apart from the main package so that only GondolaProtocol, GondolaRESP
// and SwiftProtobuf are compiled with
// the fuzzer and address sanitizers: `Scripts/fuzz [seconds]`.
import PackageDescription

let package = Package(
    name: "gondola-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "gondola", path: "..")],
    targets: [
        .executableTarget(name: "FuzzJSONCommands", dependencies: [.product(name: "GondolaProtocol", package: "gondola")]),
        .executableTarget(name: "FuzzProtobufCommands", dependencies: [.product(name: "GondolaProtocol", package: "gondola")]),
        .executableTarget(name: "FuzzRESPReplies", dependencies: [.product(name: "GondolaRESP", package: "gondola")]),
    ]
)
