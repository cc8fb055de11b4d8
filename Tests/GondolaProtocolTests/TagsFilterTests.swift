import GondolaProtocol
import Testing

/// Publication tags filters (`tf`) as Centrifugo matches and checks them.
@Suite struct TagsFilterTests {
    static let tags = ["ticker": "AAPL", "price": "101.50", "source": "NASDAQ", "note": "split 2:1"]

    static func leaf(_ key: String, _ cmp: String, _ val: String = "", _ vals: [String] = []) -> TagsFilter {
        TagsFilter(key: key, cmp: cmp, val: val, vals: vals)
    }

    @Test(arguments: [
        (leaf("ticker", "eq", "AAPL"), true), (leaf("ticker", "eq", "MSFT"), false),
        (leaf("ticker", "neq", "MSFT"), true), (leaf("absent", "neq", "x"), true),
        (leaf("source", "in", "", ["NYSE", "NASDAQ"]), true), (leaf("source", "nin", "", ["NYSE", "NASDAQ"]), false),
        (leaf("absent", "in", "", ["x"]), false), (leaf("absent", "nin", "", ["x"]), true),
        (leaf("note", "ex"), true), (leaf("absent", "ex"), false), (leaf("absent", "nex"), true),
        (leaf("note", "sw", "split"), true), (leaf("note", "ew", "2:1"), true), (leaf("note", "ct", "t 2"), true),
        (leaf("absent", "ct", "x"), false),
        (leaf("price", "gt", "101.5"), false), (leaf("price", "gte", "101.5"), true), (leaf("price", "lt", "102"), true),
        (leaf("price", "lte", "-3"), false), (leaf("price", "gt", "99"), true),
        // Not decimal numbers: never matches (Foundation alone would read 12 out of "12abc").
        (leaf("note", "gt", "1"), false), (leaf("price", "lt", "12abc"), false),
    ])
    func leavesCompareOneTag(filter: TagsFilter, matches: Bool) {
        #expect(filter.problem == nil)
        #expect(filter.matches(Self.tags) == matches, "\(filter.json)")
    }

    @Test func andOrNotCombineTheirNodes() {
        let aapl = Self.leaf("ticker", "eq", "AAPL")
        let nyse = Self.leaf("source", "eq", "NYSE")
        #expect(!TagsFilter(op: "and", nodes: [aapl, nyse]).matches(Self.tags))
        #expect(TagsFilter(op: "or", nodes: [aapl, nyse]).matches(Self.tags))
        #expect(TagsFilter(op: "and", nodes: [aapl, TagsFilter(op: "not", nodes: [nyse])]).matches(Self.tags))
        #expect(!TagsFilter(op: "not", nodes: [aapl]).matches(Self.tags))
    }

    @Test(arguments: [
        (leaf("ticker", ""), "tf: a leaf needs cmp"), (leaf("ticker", "like", "A"), "tf: unknown cmp 'like'"),
        (leaf("ticker", "eq"), "tf: eq needs val"), (leaf("ticker", "eq", "A", ["B"]), "tf: eq takes val, not vals"),
        (leaf("ticker", "in"), "tf: in needs vals"), (leaf("ticker", "in", "A", ["B"]), "tf: in takes vals, not val"),
        (leaf("ticker", "ex", "A"), "tf: ex takes neither val nor vals"), (leaf("", "eq", "A"), "tf: eq needs key"),
        (TagsFilter(op: "and"), "tf: and needs at least one node"), (TagsFilter(op: "xor", nodes: [leaf("a", "ex")]), "tf: unknown op 'xor'"),
        (TagsFilter(op: "not", nodes: [leaf("a", "ex"), leaf("b", "ex")]), "tf: not needs exactly one node"),
        (leaf("ticker", "in", "", Array(repeating: "x", count: 257)), "tf: in has 257 vals, more than 256"),
    ])
    func aBadFilterIsNamed(filter: TagsFilter, problem: String) {
        #expect(filter.problem == problem)
    }

    @Test func treesBeyondTheLimitsAreRefused() throws {
        var deep = Self.leaf("a", "ex")
        for _ in 0..<TagsFilter.maxDepth { deep = TagsFilter(op: "not", nodes: [deep]) }
        #expect(deep.problem == "tf is more than \(TagsFilter.maxDepth) levels deep")
        #expect(throws: ProtocolDecodingError.self) { try TagsFilter(json: deep.json) }
        let wide = TagsFilter(op: "or", nodes: Array(repeating: Self.leaf("a", "ex"), count: TagsFilter.maxNodes))
        #expect(wide.problem == "tf has \(TagsFilter.maxNodes + 1) nodes, more than \(TagsFilter.maxNodes)")
    }

    @Test func theJSONFormIsCentrifugosFilterNode() throws {
        let json = try JSONParser.parse(
            Array(#"{"op":"or","nodes":[{"key":"ticker","cmp":"eq","val":"AAPL"},{"key":"source","cmp":"in","vals":["NYSE"]}]}"#.utf8))
        let filter = try TagsFilter(json: json)
        #expect(filter == TagsFilter(op: "or", nodes: [Self.leaf("ticker", "eq", "AAPL"), Self.leaf("source", "in", "", ["NYSE"])]))
        #expect(try TagsFilter(json: filter.json) == filter)
        #expect(throws: ProtocolDecodingError.self) { try TagsFilter(json: JSONParser.parse(Array(#"{"vals":[1]}"#.utf8))) }
    }
}
