import GondolaProtocol

/// Reads the members of an RPC's `data` or a server API body with errors that
/// name the field: a wrong type, a missing value, a non-finite or out-of-range
/// number, a too-long text or array each answer 107 with the field's path.
public struct RequestFields: Sendable {
    let members: [(key: String, value: JSON)]
    let path: String

    /// `data` must be an object; absent data reads as an empty object.
    public init(_ data: JSON?, path: String = "") throws(HubError) {
        self.path = path
        switch data {
        case nil, .null?: members = []
        case let .object(members)?: self.members = members
        case let .raw(raw)?: members = try RequestFields(raw.value, path: path).members
        case let other?: throw .badRequest("\(path.isEmpty ? "data" : path) must be an object, got \(other.kindName)")
        }
    }

    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    public func has(_ key: String) -> Bool { value(key) != nil }

    public func value(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.key == key })?.value, !value.isNull else { return nil }
        if case let .raw(raw) = value { return raw.value }
        return value
    }

    private func required(_ key: String) throws(HubError) -> JSON {
        guard let value = value(key) else { throw .badRequest("\(name(key)) is required") }
        return value
    }

    public func string(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws(HubError) -> String {
        let value = try required(key)
        guard case let .string(text) = value else { throw .badRequest("\(name(key)) must be a string, got \(value.kindName)") }
        guard allowEmpty || !text.isEmpty else { throw .badRequest("\(name(key)) must not be empty") }
        guard text.count <= maxLength else { throw .badRequest("\(name(key)) is \(text.count) characters, more than \(maxLength)") }
        return text
    }

    public func optionalString(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws(HubError) -> String? {
        has(key) ? try string(key, maxLength: maxLength, allowEmpty: allowEmpty) : nil
    }

    /// A string with something besides whitespace in it (names, titles, messages).
    public func text(_ key: String, maxLength: Int) throws(HubError) -> String {
        let text = try string(key, maxLength: maxLength)
        guard !text.allSatisfy(\.isWhitespace) else { throw .badRequest("\(name(key)) must not be blank") }
        return text
    }

    public func optionalText(_ key: String, maxLength: Int) throws(HubError) -> String? {
        has(key) ? try text(key, maxLength: maxLength) : nil
    }

    /// A finite number in `range`; numbers spelled as strings ("NaN", "1e999") are refused.
    public func number(_ key: String, in range: ClosedRange<Double>) throws(HubError) -> Double {
        let value = try required(key)
        let number: Double
        switch value {
        case let .int(int): number = Double(int)
        case let .double(double): number = double
        default: throw .badRequest("\(name(key)) must be a number, got \(value.kindName)")
        }
        guard number.isFinite else { throw .badRequest("\(name(key)) must be a finite number") }
        guard range.contains(number) else {
            throw .badRequest("\(name(key)) must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)), got \(Self.format(number))")
        }
        return number
    }

    public func optionalNumber(_ key: String, in range: ClosedRange<Double>) throws(HubError) -> Double? {
        has(key) ? try number(key, in: range) : nil
    }

    public func integer(_ key: String, in range: ClosedRange<Int64>) throws(HubError) -> Int64 {
        let value = try required(key)
        let number: Int64
        switch value {
        case let .int(int): number = int
        case let .double(double) where double.isFinite && double == double.rounded() && abs(double) < 9e18: number = Int64(double)
        default: throw .badRequest("\(name(key)) must be an integer, got \(value.kindName)")
        }
        guard range.contains(number) else { throw .badRequest("\(name(key)) must be between \(range.lowerBound) and \(range.upperBound), got \(number)") }
        return number
    }

    public func optionalInteger(_ key: String, in range: ClosedRange<Int64>) throws(HubError) -> Int64? {
        has(key) ? try integer(key, in: range) : nil
    }

    public func bool(_ key: String) throws(HubError) -> Bool {
        let value = try required(key)
        guard case let .bool(flag) = value else { throw .badRequest("\(name(key)) must be a boolean, got \(value.kindName)") }
        return flag
    }

    /// One of an enumeration's raw values.
    public func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws(HubError) -> T where T.RawValue == String {
        let text = try string(key, maxLength: 64)
        guard let choice = T(rawValue: text) else {
            throw .badRequest("\(name(key)) must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return choice
    }

    public func object(_ key: String) throws(HubError) -> RequestFields {
        try RequestFields(try required(key), path: name(key))
    }

    public func optionalObject(_ key: String) throws(HubError) -> RequestFields? {
        has(key) ? try object(key) : nil
    }

    public func stringArray(_ key: String, maxCount: Int, maxLength: Int) throws(HubError) -> [String] {
        let value = try required(key)
        guard case let .array(items) = value else { throw .badRequest("\(name(key)) must be an array, got \(value.kindName)") }
        guard items.count <= maxCount else { throw .badRequest("\(name(key)) has \(items.count) items, more than \(maxCount)") }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard case let .string(text) = item, !text.isEmpty, text.count <= maxLength else {
                throw .badRequest("\(name(key))[\(index)] must be a non-empty string of at most \(maxLength) characters")
            }
            result.append(text)
        }
        return result
    }

    /// An array of objects, each read with its path (`sections[2].fields[0].key`).
    public func objectArray(_ key: String, maxCount: Int) throws(HubError) -> [RequestFields] {
        let value = try required(key)
        guard case let .array(items) = value else { throw .badRequest("\(name(key)) must be an array, got \(value.kindName)") }
        guard items.count <= maxCount else { throw .badRequest("\(name(key)) has \(items.count) items, more than \(maxCount)") }
        var result: [RequestFields] = []
        for (index, item) in items.enumerated() { result.append(try RequestFields(item, path: "\(name(key))[\(index)]")) }
        return result
    }

    /// The path of a member, as error messages name it.
    public func path(of key: String) -> String { name(key) }

    /// Every member, for objects whose keys are data (social links).
    public var all: [(key: String, value: JSON)] { members }

    /// The object read.
    public var json: JSON { .object(members) }

    private static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}
