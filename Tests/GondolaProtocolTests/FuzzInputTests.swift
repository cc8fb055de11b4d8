import Foundation
import GondolaProtocol
import Testing

/// Replays the fuzzers' inputs kept in the repository: the seed frames the official
/// SDK writes must decode into commands with nothing refused or malformed, and every
/// kept crash (Fuzz/Regressions) must now decode without crashing and round-trip.
@Suite struct FuzzInputTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(_ kind: String, _ encoding: ProtocolEncoding) -> [(String, [UInt8])] {
        let folder = fuzzFolder.appendingPathComponent(kind).appendingPathComponent(encoding.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.compactMap { name in
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else { return nil }
            return (name, Array(data))
        }
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func seedFramesFromTheSDKDecodeCleanly(_ encoding: ProtocolEncoding) throws {
        let seeds = Self.inputs("Seeds", encoding)
        #expect(seeds.count >= 8)
        for (name, frame) in seeds {
            let decoded = try encoding.commands(in: frame)
            #expect(!decoded.isEmpty, "\(name)")
            for command in decoded {
                guard case .command = command else {
                    Issue.record("\(encoding) seed \(name): \(command)")
                    continue
                }
            }
            #expect(encoding.roundTripFailure(of: frame) == nil, "\(name)")
        }
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func keptCrashesNoLongerCrash(_ encoding: ProtocolEncoding) {
        for (name, frame) in Self.inputs("Regressions", encoding) {
            #expect(encoding.roundTripFailure(of: frame) == nil, "\(name)")
        }
    }
}
