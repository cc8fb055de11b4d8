import Testing

@testable import GondolaProtocol

/// Fossil deltas: what the encoder writes, applied by the decoder, gives the target back
/// exactly, for random bytes, edits of them and real position frames; bad deltas are refused.
@Suite struct FossilDeltaTests {
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func roundTrip(_ source: [UInt8], _ target: [UInt8]) throws -> [UInt8] {
        let delta = FossilDelta.encode(from: source, to: target)
        #expect(try FossilDelta.apply(delta, to: source) == target)
        return delta
    }

    @Test func knownDeltaMatchesTheFormat() throws {
        let source = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        let target = Array("abcdefghijklmnopqrstuvwxyz0123456789!".utf8)
        let delta = try Self.roundTrip(source, target)
        // Length 37 ("a"), a copy of 36 bytes from 0 ("_@0,"), an insert of "!" and the checksum.
        let text = String(decoding: delta, as: UTF8.self)
        #expect(text.hasPrefix("a\n_@0,1:!"))
        #expect(text.hasSuffix(";"))
    }

    @Test func edgeCasesRoundTrip() throws {
        #expect(String(decoding: try Self.roundTrip([], []), as: UTF8.self) == "0\n0;")
        _ = try Self.roundTrip([], Array("new".utf8))
        _ = try Self.roundTrip(Array("old text that goes away".utf8), [])
        let same = Array(repeating: UInt8(ascii: "x"), count: 1000)
        #expect(try Self.roundTrip(same, same).count < 20)
    }

    @Test func randomSourcesAndEditsRoundTrip() throws {
        var random = Generator(state: 7)
        for _ in 0..<300 {
            let source = (0..<Int.random(in: 0...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            var target = source
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                let at = Int.random(in: 0...target.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    target.insert(
                        contentsOf: (0..<Int.random(in: 1...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, at: at)
                case 1: target.removeSubrange(at..<min(target.count, at + Int.random(in: 1...40, using: &random)))
                default: if at < target.count { target[at] = UInt8.random(in: 0...255, using: &random) }
                }
            }
            _ = try Self.roundTrip(source, target)
            _ = try Self.roundTrip(target, source)
        }
    }

    @Test func positionFramesShrinkToTheirChanges() throws {
        func frame(_ step: Int) -> [UInt8] {
            let entries = (0..<20).map { user in
                #"{"user":"traveller-\#(user)","lat":45.\#(297_310 + user * 13 + (user % 3 == 0 ? step : 0)),"lon":6.\#(583_120 + user * 7),"ts":\#(1_764_000_000_000 + step * 250)}"#
            }
            return Array(#"{"positions":[\#(entries.joined(separator: ","))]}"#.utf8)
        }
        var total = 0
        for step in 1..<40 {
            total += try Self.roundTrip(frame(step - 1), frame(step)).count
        }
        let whole = (1..<40).reduce(0) { $0 + frame($1).count }
        // Every entry's ts and a third of the positions change each frame: the rest is copied.
        #expect(total * 3 < whole)
    }

    @Test func keepingUTF8TheDeltaIsTextAndStillExact() throws {
        var random = Generator(state: 5)
        // Characters that share lead or continuation bytes, so byte matches stop inside them.
        let alphabet = Array("aé©ũ€₠₡𝄞𝄟 {}\":,0123456789".unicodeScalars)
        for _ in 0..<200 {
            let source = String(
                String.UnicodeScalarView((0..<Int.random(in: 0...200, using: &random)).map { _ in alphabet.randomElement(using: &random)! }))
            var target = Array(source.unicodeScalars)
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                let at = Int.random(in: 0...target.count, using: &random)
                target.insert(contentsOf: (0..<Int.random(in: 1...6, using: &random)).map { _ in alphabet.randomElement(using: &random)! }, at: at)
            }
            let sourceBytes = Array(source.utf8)
            let targetBytes = Array(String(String.UnicodeScalarView(target)).utf8)
            let delta = FossilDelta.encode(from: sourceBytes, to: targetBytes, keepingUTF8: true)
            #expect(String(validating: delta, as: UTF8.self) != nil)
            #expect(try FossilDelta.apply(delta, to: sourceBytes) == targetBytes)
        }
    }

    @Test func badDeltasAreRefused() {
        let source = Array("0123456789abcdefghij".utf8)
        let good = FossilDelta.encode(from: source, to: Array("0123456789abcdefghij and more".utf8))
        var badChecksum = good
        badChecksum[badChecksum.count - 2] = UInt8(ascii: badChecksum[badChecksum.count - 2] == UInt8(ascii: "0") ? "1" : "0")
        #expect(throws: FossilDelta.Failure("checksum mismatch")) { try FossilDelta.apply(badChecksum, to: source) }
        #expect(throws: FossilDelta.Failure("copy of 5 bytes at 18 is outside the 20-byte source")) {
            try FossilDelta.apply(Array("5\n5@I,0;".utf8), to: source)
        }
        #expect(throws: FossilDelta.Failure("the delta ends without a checksum")) { try FossilDelta.apply(Array("3\n3:abc".utf8), to: source) }
        #expect(throws: FossilDelta.Failure("an insert of 9 bytes runs past the delta")) { try FossilDelta.apply(Array("9\n9:abc".utf8), to: source) }
        #expect(throws: FossilDelta.Failure("the length is not followed by a newline")) { try FossilDelta.apply(Array("3:abc".utf8), to: source) }
        #expect(throws: FossilDelta.Failure("the target has 3 bytes, the delta says 4")) {
            try FossilDelta.apply(Array("4\n3:abc0;".utf8), to: source)
        }
        #expect(throws: FossilDelta.Failure("a number was expected at byte 0")) { try FossilDelta.apply([], to: source) }
    }
}
