/// Why a command or reply could not be decoded, naming the offending field.
public struct ProtocolDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Typed access to the members of a JSON object, with protobuf-JSON defaults for
/// absent members and errors that name the field.
struct JSONFields {
    let members: [(key: String, value: JSON)]
    let path: String

    init(_ json: JSON, path: String) throws(ProtocolDecodingError) {
        guard case let .object(members) = json else {
            throw ProtocolDecodingError("\(path) must be an object, got \(json.kindName)")
        }
        self.members = members
        self.path = path
    }

    func value(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.key == key })?.value, !value.isNull else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { value(key) != nil }

    private func mismatch(_ key: String, _ expected: String, _ got: JSON) -> ProtocolDecodingError {
        ProtocolDecodingError("\(path).\(key) must be \(expected), got \(got.kindName)")
    }

    func string(_ key: String) throws(ProtocolDecodingError) -> String {
        guard let value = value(key) else { return "" }
        guard case let .string(text) = value else { throw mismatch(key, "a string", value) }
        return text
    }

    func bool(_ key: String) throws(ProtocolDecodingError) -> Bool {
        guard let value = value(key) else { return false }
        guard case let .bool(flag) = value else { throw mismatch(key, "a boolean", value) }
        return flag
    }

    /// An integer in `range`; protobuf JSON also allows 64-bit integers as decimal strings.
    func integer(_ key: String, in range: ClosedRange<Int64>) throws(ProtocolDecodingError) -> Int64 {
        guard let value = value(key) else { return 0 }
        let number: Int64?
        switch value {
        case let .int(int): number = int
        case let .double(double) where double == double.rounded() && abs(double) < 9.0e18: number = Int64(double)
        case let .string(text): number = Int64(text)
        default: number = nil
        }
        guard let number else { throw mismatch(key, "an integer", value) }
        guard range.contains(number) else {
            throw ProtocolDecodingError("\(path).\(key) must be between \(range.lowerBound) and \(range.upperBound), got \(number)")
        }
        return number
    }

    func uint32(_ key: String) throws(ProtocolDecodingError) -> UInt32 {
        UInt32(try integer(key, in: 0...Int64(UInt32.max)))
    }

    func int32(_ key: String) throws(ProtocolDecodingError) -> Int32 {
        Int32(try integer(key, in: Int64(Int32.min)...Int64(Int32.max)))
    }

    func uint64(_ key: String) throws(ProtocolDecodingError) -> UInt64 {
        UInt64(try integer(key, in: 0...Int64.max))
    }

    func raw(_ key: String) -> RawJSON? {
        value(key).map(RawJSON.init)
    }

    func object(_ key: String) throws(ProtocolDecodingError) -> JSONFields? {
        guard let value = value(key) else { return nil }
        return try JSONFields(value, path: "\(path).\(key)")
    }

    func array(_ key: String) throws(ProtocolDecodingError) -> [JSON] {
        guard let value = value(key) else { return [] }
        guard case let .array(elements) = value else { throw mismatch(key, "an array", value) }
        return elements
    }

    /// A JSON object whose members all decode with `decode`.
    func map<T>(_ key: String, _ decode: (JSON, String) throws(ProtocolDecodingError) -> T) throws(ProtocolDecodingError) -> [String: T] {
        guard let fields = try object(key) else { return [:] }
        var result: [String: T] = [:]
        for member in fields.members where !member.value.isNull {
            result[member.key] = try decode(member.value, "\(fields.path).\(member.key)")
        }
        return result
    }

    func stringMap(_ key: String) throws(ProtocolDecodingError) -> [String: String] {
        try map(key) { (value, path) throws(ProtocolDecodingError) in
            guard case let .string(text) = value else { throw ProtocolDecodingError("\(path) must be a string") }
            return text
        }
    }
}

/// Builds a JSON object, leaving out members that hold their protobuf default,
/// as protobuf's JSON mapping does.
struct JSONObjectBuilder {
    var members: [(key: String, value: JSON)] = []

    var json: JSON { .object(members) }

    mutating func add(_ key: String, _ value: String) {
        if !value.isEmpty { members.append((key, .string(value))) }
    }

    mutating func add(_ key: String, _ value: Bool) {
        if value { members.append((key, .bool(true))) }
    }

    mutating func add(_ key: String, _ value: some BinaryInteger) {
        if value != 0 { members.append((key, .int(Int64(value)))) }
    }

    mutating func add(_ key: String, _ value: RawJSON?) {
        if let value { members.append((key, .raw(value))) }
    }

    mutating func add(_ key: String, _ value: JSON?) {
        if let value { members.append((key, value)) }
    }

    mutating func add(_ key: String, array: [JSON]) {
        if !array.isEmpty { members.append((key, .array(array))) }
    }

    mutating func add(_ key: String, map: [String: JSON]) {
        if !map.isEmpty {
            members.append((key, .object(map.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) })))
        }
    }
}
