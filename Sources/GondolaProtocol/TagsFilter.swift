import Foundation

/// A filter on publication tags that a subscription asks for (`tf` in subscribe, Centrifugo's
/// `FilterNode`): only publications whose tags match it reach the subscription. A leaf
/// (`op` empty) compares the tag `key` with `cmp` — `eq`, `neq`, `in`, `nin` (against
/// `vals`), `ex`, `nex` (present or not), `sw`, `ew`, `ct` (starts with, ends with,
/// contains), or `gt`, `gte`, `lt`, `lte` (as decimal numbers; a tag that is not one never
/// matches) — and `and`, `or` and `not` combine `nodes`. Centrifugo's matching and checks,
/// with limits of its own: `maxNodes` nodes, `maxDepth` levels, `maxValues` values in `vals`.
public struct TagsFilter: Sendable, Equatable {
    public static let maxNodes = 64
    public static let maxDepth = 8
    public static let maxValues = 256

    public var op: String
    public var key: String
    public var cmp: String
    public var val: String
    public var vals: [String]
    public var nodes: [TagsFilter]

    public init(op: String = "", key: String = "", cmp: String = "", val: String = "", vals: [String] = [], nodes: [TagsFilter] = []) {
        self.op = op
        self.key = key
        self.cmp = cmp
        self.val = val
        self.vals = vals
        self.nodes = nodes
    }

    /// Why the filter cannot be applied (Centrifugo's rules, and the limits), nil when it can.
    public var problem: String? {
        guard nodeCount <= Self.maxNodes else { return "tf has \(nodeCount) nodes, more than \(Self.maxNodes)" }
        return problem(depth: 1)
    }

    private var nodeCount: Int { 1 + nodes.reduce(0) { $0 + $1.nodeCount } }

    private func problem(depth: Int) -> String? {
        guard depth <= Self.maxDepth else { return "tf is more than \(Self.maxDepth) levels deep" }
        switch op {
        case "":
            switch cmp {
            case "eq", "neq", "sw", "ew", "ct", "gt", "gte", "lt", "lte":
                if val.isEmpty { return "tf: \(cmp) needs val" }
                if !vals.isEmpty { return "tf: \(cmp) takes val, not vals" }
            case "in", "nin":
                if vals.isEmpty { return "tf: \(cmp) needs vals" }
                if vals.count > Self.maxValues { return "tf: \(cmp) has \(vals.count) vals, more than \(Self.maxValues)" }
                if !val.isEmpty { return "tf: \(cmp) takes vals, not val" }
            case "ex", "nex":
                if !val.isEmpty || !vals.isEmpty { return "tf: \(cmp) takes neither val nor vals" }
            case "": return "tf: a leaf needs cmp"
            default: return "tf: unknown cmp '\(cmp)'"
            }
            if key.isEmpty, cmp != "ex", cmp != "nex" { return "tf: \(cmp) needs key" }
            if !nodes.isEmpty { return "tf: a leaf has no nodes" }
        case "and", "or":
            if nodes.isEmpty { return "tf: \(op) needs at least one node" }
        case "not":
            if nodes.count != 1 { return "tf: not needs exactly one node" }
        default: return "tf: unknown op '\(op)'"
        }
        for node in nodes {
            if let problem = node.problem(depth: depth + 1) { return problem }
        }
        return nil
    }

    /// Whether a publication with `tags` passes (the filter is one `problem` accepts).
    public func matches(_ tags: [String: String]) -> Bool {
        switch op {
        case "and": return nodes.allSatisfy { $0.matches(tags) }
        case "or": return nodes.contains { $0.matches(tags) }
        case "not": return nodes.first.map { !$0.matches(tags) } ?? false
        default: break
        }
        let value = tags[key]
        switch cmp {
        case "eq": return value == val
        case "neq": return value != val
        case "in": return vals.contains(value ?? "")
        case "nin": return !vals.contains(value ?? "")
        case "ex": return value != nil
        case "nex": return value == nil
        case "sw": return value?.hasPrefix(val) ?? false
        case "ew": return value?.hasSuffix(val) ?? false
        case "ct": return value.map { $0.contains(val) } ?? false
        case "gt", "gte", "lt", "lte":
            guard let value, let left = Self.decimal(value), let right = Self.decimal(val) else { return false }
            switch cmp {
            case "gt": return left > right
            case "gte": return left >= right
            case "lt": return left < right
            default: return left <= right
            }
        default: return false
        }
    }

    /// A decimal number written whole (`-12`, `3.50`), nil for anything else: Foundation's
    /// parser alone would take the number at the start of `12abc`.
    private static func decimal(_ text: String) -> Decimal? {
        let unsigned = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        let parts = unsigned.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }) else {
            return nil
        }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("op", op)
        object.add("key", key)
        object.add("cmp", cmp)
        object.add("val", val)
        if !vals.isEmpty { object.add("vals", array: vals.map(JSON.string)) }
        if !nodes.isEmpty { object.add("nodes", array: nodes.map(\.json)) }
        return object.json
    }

    public init(json: JSON, path: String = "tf") throws(ProtocolDecodingError) {
        try self.init(json: json, path: path, depth: 1)
    }

    private init(json: JSON, path: String, depth: Int) throws(ProtocolDecodingError) {
        guard depth <= Self.maxDepth else { throw ProtocolDecodingError("\(path) is more than \(Self.maxDepth) levels deep") }
        let fields = try ProtocolFields(json, path: path)
        op = try fields.protobufString("op")
        key = try fields.protobufString("key")
        cmp = try fields.protobufString("cmp")
        val = try fields.protobufString("val")
        vals = try fields.protobufArray("vals").enumerated().map { (index, value) throws(ProtocolDecodingError) in
            guard case let .string(text) = value else { throw ProtocolDecodingError("\(path).vals[\(index)] must be a string") }
            return text
        }
        nodes = try fields.protobufArray("nodes").enumerated().map { (index, value) throws(ProtocolDecodingError) in
            try TagsFilter(json: value, path: "\(path).nodes[\(index)]", depth: depth + 1)
        }
    }
}
