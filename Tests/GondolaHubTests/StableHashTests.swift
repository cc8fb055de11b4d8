import Testing

@testable import GondolaHub

/// Rendezvous ownership: every node given the same candidates picks the same owner, and
/// a candidate leaving moves only the keys it owned.
@Suite struct StableHashTests {
    static let keys = (0..<2_000).map { "t\($0)" }

    @Test func fnv1aMatchesItsPublishedValues() {
        #expect(StableHash.fnv1a("") == 0xcbf2_9ce4_8422_2325)
        #expect(StableHash.fnv1a("a") == 0xaf63_dc4c_8601_ec8c)
        #expect(StableHash.fnv1a("foobar") == 0x8594_4171_f739_67e8)
    }

    @Test func theOwnerDoesNotDependOnTheCandidatesOrder() {
        let nodes = ["node-a", "node-b", "node-c"]
        for key in Self.keys {
            let owners = Set([nodes, nodes.reversed(), [nodes[1], nodes[2], nodes[0]]].map { StableHash.owner(of: key, among: $0) })
            #expect(owners.count == 1)
        }
        #expect(StableHash.owner(of: "t1", among: []) == nil)
    }

    @Test func aLeavingCandidateMovesOnlyItsKeysAndTheKeysSpreadEvenly() {
        let nodes = ["9f1c", "2b7e", "c04d"]
        let before = Dictionary(uniqueKeysWithValues: Self.keys.map { ($0, StableHash.owner(of: $0, among: nodes)!) })
        let counts = Dictionary(grouping: before.values, by: { $0 }).mapValues(\.count)
        #expect(counts.values.allSatisfy { (500...830).contains($0) }, "\(counts)")
        let after = Dictionary(uniqueKeysWithValues: Self.keys.map { ($0, StableHash.owner(of: $0, among: nodes.dropLast())!) })
        for key in Self.keys where before[key] != "c04d" { #expect(after[key] == before[key]) }
    }
}
