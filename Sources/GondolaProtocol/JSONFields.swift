/// Why a command or reply could not be decoded, naming the offending field.
public struct ProtocolDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The error a field reader throws, made from a message that names the field by its path.
public protocol FieldError: Error {
    /// A field that is missing, has the wrong type or lies out of range; `message` names it.
    static func invalidField(_ message: String) -> Self
}

extension ProtocolDecodingError: FieldError {
    public static func invalidField(_ message: String) -> ProtocolDecodingError { ProtocolDecodingError(message) }
}

/// Typed access to the members of a JSON object — a protocol command, an RPC's `data`, a
/// server API body — with errors that name the field by its path: a wrong type, a missing
/// value, a non-finite or out-of-range number, a too-long text or array. Each layer picks
/// the error it answers with (`ProtocolDecodingError` for the wire, the hub's 107).
public struct JSONFields<Failure: FieldError>: Sendable {
    /// The object's members in their order; a repeated key reads as its last value.
    public let members: [(key: String, value: JSON)]
    /// Where the object sits in the request (`sections[2]`), empty at the top.
    public let path: String

    /// `data` must be an object; absent data reads as an empty object.
    public init(_ data: JSON?, path: String = "") throws(Failure) {
        self.path = path
        switch data {
        case nil, .null?: members = []
        case let .object(members)?: self.members = members
        case let .raw(raw)?: members = try JSONFields(raw.value, path: path).members
        case let other?: throw .invalidField("\(path.isEmpty ? "data" : path) must be an object, got \(other.kindName)")
        }
    }

    /// The path of a member, as error messages name it.
    public func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    public func has(_ key: String) -> Bool { value(key) != nil }

    /// The member's value as it arrived (nil when absent or null).
    private func member(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.key == key })?.value, !value.isNull else { return nil }
        return value
    }

    public func value(_ key: String) -> JSON? {
        guard let value = member(key) else { return nil }
        if case let .raw(raw) = value { return raw.value }
        return value
    }

    private func required(_ key: String) throws(Failure) -> JSON {
        guard let value = value(key) else { throw .invalidField("\(path(of: key)) is required") }
        return value
    }

    public func string(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws(Failure) -> String {
        try string(try required(key), key, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    private func string(_ value: JSON, _ key: String, maxLength: Int, allowEmpty: Bool) throws(Failure) -> String {
        guard case let .string(text) = value else { throw .invalidField("\(path(of: key)) must be a string, got \(value.kindName)") }
        guard allowEmpty || !text.isEmpty else { throw .invalidField("\(path(of: key)) must not be empty") }
        guard text.count <= maxLength else { throw .invalidField("\(path(of: key)) is \(text.count) characters, more than \(maxLength)") }
        return text
    }

    public func optionalString(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws(Failure) -> String? {
        guard let value = value(key) else { return nil }
        return try string(value, key, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    /// A string with something besides whitespace in it (names, titles, messages).
    public func text(_ key: String, maxLength: Int) throws(Failure) -> String {
        let text = try string(key, maxLength: maxLength)
        guard !text.allSatisfy(\.isWhitespace) else { throw .invalidField("\(path(of: key)) must not be blank") }
        return text
    }

    public func optionalText(_ key: String, maxLength: Int) throws(Failure) -> String? {
        has(key) ? try text(key, maxLength: maxLength) : nil
    }

    /// A finite number in `range`; numbers spelled as strings ("NaN", "1e999") are refused.
    public func number(_ key: String, in range: ClosedRange<Double>) throws(Failure) -> Double {
        let value = try required(key)
        let number: Double
        switch value {
        case let .int(int): number = Double(int)
        case let .double(double): number = double
        default: throw .invalidField("\(path(of: key)) must be a number, got \(value.kindName)")
        }
        guard number.isFinite else { throw .invalidField("\(path(of: key)) must be a finite number") }
        guard range.contains(number) else {
            throw .invalidField(
                "\(path(of: key)) must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)), got \(Self.format(number))")
        }
        return number
    }

    public func optionalNumber(_ key: String, in range: ClosedRange<Double>) throws(Failure) -> Double? {
        has(key) ? try number(key, in: range) : nil
    }

    public func integer(_ key: String, in range: ClosedRange<Int64>) throws(Failure) -> Int64 {
        try integer(try required(key), key, in: range, allowingDecimalStrings: false)
    }

    /// `value` as an integer in `range`; protobuf JSON also spells 64-bit integers as decimal strings.
    private func integer(_ value: JSON, _ key: String, in range: ClosedRange<Int64>, allowingDecimalStrings: Bool) throws(Failure) -> Int64 {
        let number: Int64
        switch value {
        case let .int(int): number = int
        case let .double(double) where double.isFinite && double == double.rounded() && abs(double) < 9e18: number = Int64(double)
        case let .string(text) where allowingDecimalStrings:
            guard let parsed = Int64(text) else { throw .invalidField("\(path(of: key)) must be an integer, got string") }
            number = parsed
        default: throw .invalidField("\(path(of: key)) must be an integer, got \(value.kindName)")
        }
        guard range.contains(number) else {
            throw .invalidField("\(path(of: key)) must be between \(range.lowerBound) and \(range.upperBound), got \(number)")
        }
        return number
    }

    public func optionalInteger(_ key: String, in range: ClosedRange<Int64>) throws(Failure) -> Int64? {
        guard let value = value(key) else { return nil }
        return try integer(value, key, in: range, allowingDecimalStrings: false)
    }

    public func bool(_ key: String) throws(Failure) -> Bool {
        try bool(try required(key), key)
    }

    private func bool(_ value: JSON, _ key: String) throws(Failure) -> Bool {
        guard case let .bool(flag) = value else { throw .invalidField("\(path(of: key)) must be a boolean, got \(value.kindName)") }
        return flag
    }

    /// One of an enumeration's raw values.
    public func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws(Failure) -> T where T.RawValue == String {
        let text = try string(key, maxLength: 64)
        guard let choice = T(rawValue: text) else {
            throw .invalidField("\(path(of: key)) must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return choice
    }

    public func object(_ key: String) throws(Failure) -> JSONFields {
        try JSONFields(try required(key), path: path(of: key))
    }

    public func optionalObject(_ key: String) throws(Failure) -> JSONFields? {
        guard let value = value(key) else { return nil }
        return try JSONFields(value, path: path(of: key))
    }

    public func stringArray(_ key: String, maxCount: Int, maxLength: Int) throws(Failure) -> [String] {
        let value = try required(key)
        guard case let .array(items) = value else { throw .invalidField("\(path(of: key)) must be an array, got \(value.kindName)") }
        guard items.count <= maxCount else { throw .invalidField("\(path(of: key)) has \(items.count) items, more than \(maxCount)") }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard case let .string(text) = item, !text.isEmpty, text.count <= maxLength else {
                throw .invalidField("\(path(of: key))[\(index)] must be a non-empty string of at most \(maxLength) characters")
            }
            result.append(text)
        }
        return result
    }

    /// An array of objects, each read with its path (`sections[2].fields[0].key`).
    public func objectArray(_ key: String, maxCount: Int) throws(Failure) -> [JSONFields] {
        let value = try required(key)
        guard case let .array(items) = value else { throw .invalidField("\(path(of: key)) must be an array, got \(value.kindName)") }
        guard items.count <= maxCount else { throw .invalidField("\(path(of: key)) has \(items.count) items, more than \(maxCount)") }
        var result: [JSONFields] = []
        for (index, item) in items.enumerated() { result.append(try JSONFields(item, path: "\(path(of: key))[\(index)]")) }
        return result
    }

    /// The object read.
    public var json: JSON { .object(members) }

    private static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}

/// The field reader of the protocol's own messages.
typealias ProtocolFields = JSONFields<ProtocolDecodingError>

/// The protocol's JSON mapping: an absent or null member reads as its protobuf default
/// (empty text, false, zero, no object).
extension JSONFields {
    func protobufString(_ key: String) throws(Failure) -> String {
        try optionalString(key, maxLength: .max, allowEmpty: true) ?? ""
    }

    /// A boolean, false when absent or null.
    public func protobufBool(_ key: String) throws(Failure) -> Bool {
        guard let value = value(key) else { return false }
        return try bool(value, key)
    }

    /// An integer in `range`; protobuf JSON also allows 64-bit integers as decimal strings.
    func protobufInteger(_ key: String, in range: ClosedRange<Int64>) throws(Failure) -> Int64 {
        guard let value = value(key) else { return 0 }
        return try integer(value, key, in: range, allowingDecimalStrings: true)
    }

    func uint32(_ key: String) throws(Failure) -> UInt32 {
        UInt32(try protobufInteger(key, in: 0...Int64(UInt32.max)))
    }

    func int32(_ key: String) throws(Failure) -> Int32 {
        Int32(try protobufInteger(key, in: Int64(Int32.min)...Int64(Int32.max)))
    }

    /// An unsigned 64-bit integer (up to `Int64.max`), a number or a decimal string.
    public func uint64(_ key: String) throws(Failure) -> UInt64 {
        UInt64(try protobufInteger(key, in: 0...Int64.max))
    }

    /// The member as it arrived, for payloads passed on untouched.
    public func raw(_ key: String) -> RawJSON? {
        member(key).map(RawJSON.init)
    }

    func protobufArray(_ key: String) throws(Failure) -> [JSON] {
        guard let value = value(key) else { return [] }
        guard case let .array(elements) = value else { throw .invalidField("\(path(of: key)) must be an array, got \(value.kindName)") }
        return elements
    }

    /// A JSON object whose members all decode with `decode` (given the value and its path).
    public func map<T>(_ key: String, _ decode: (JSON, String) throws(Failure) -> T) throws(Failure) -> [String: T] {
        guard let fields = try optionalObject(key) else { return [:] }
        var result: [String: T] = [:]
        for member in fields.members where !member.value.isNull {
            result[member.key] = try decode(member.value, fields.path(of: member.key))
        }
        return result
    }

    /// A JSON object of strings.
    public func stringMap(_ key: String) throws(Failure) -> [String: String] {
        try map(key) { (value, path) throws(Failure) in
            guard case let .string(text) = value else { throw .invalidField("\(path) must be a string") }
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
