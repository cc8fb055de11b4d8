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
///
/// Made with `init(recordingInto:)` it reads no data: each reader notes the member it was
/// asked for (`FieldRecorder`) and answers a value its rule accepts, so a request type's
/// reader also describes the request.
public struct JSONFields<Failure: FieldError>: Sendable {
    /// The object's members in their order; a repeated key reads as its last value.
    public let members: [(key: String, value: JSON)]
    /// Where the object sits in the request (`sections[2]`), empty at the top.
    public let path: String
    /// Where reads are noted instead of done; nil when reading data.
    private let recorder: FieldRecorder?
    /// What the members read through this copy mean, for the record (`noting`).
    private var note = ""
    /// Whether the note says the limits too.
    private var limitsNoted = false

    /// `data` must be an object; absent data reads as an empty object.
    public init(_ data: JSON?, path: String = "") throws(Failure) {
        self.path = path
        recorder = nil
        switch data {
        case nil, .null?: members = []
        case let .object(members)?: self.members = members
        case let .raw(raw)?: members = try JSONFields(raw.value, path: path).members
        case let other?: throw .invalidField("\(path.isEmpty ? "data" : path) must be an object, got \(other.kindName)")
        }
    }

    /// Reads nothing: every read is noted in `recorder`.
    public init(recordingInto recorder: FieldRecorder, path: String = "") {
        self.path = path
        self.recorder = recorder
        members = []
    }

    /// The same object, whose reads record `text` as what their member means, after the
    /// limits the reader checks; `replacingLimits` when those limits are not fixed (a time
    /// from an hour ago to a year ahead) and `text` says them.
    public func noting(_ text: String, replacingLimits: Bool = false) -> JSONFields {
        // Reading data, the note is never looked at: the same fields serve (no copy of the text).
        guard recorder != nil else { return self }
        var copy = self
        copy.note = text
        copy.limitsNoted = replacingLimits
        return copy
    }

    /// The path of a member, as error messages name it.
    public func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Whether the member is there and not null; a reader that asks this first marks the
    /// member as one that may be left out.
    public func has(_ key: String) -> Bool {
        if let recorder {
            recorder.ask(key)
            return true
        }
        return lookup(key) != nil
    }

    /// Whether the member is there as `null` (which may mean "clear it").
    public func isNull(_ key: String) -> Bool {
        members.last(where: { $0.key == key })?.value.isNull ?? false
    }

    /// The member's value as it arrived (nil when absent or null).
    private func member(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.key == key })?.value, !value.isNull else { return nil }
        return value
    }

    private func lookup(_ key: String) -> JSON? {
        guard let value = member(key) else { return nil }
        if case let .raw(raw) = value { return raw.value }
        return value
    }

    /// Any JSON value (nil when absent or null).
    public func value(_ key: String) -> JSON? {
        if record(key, .any, required: false) { return .string("x") }
        return lookup(key)
    }

    /// Any JSON value that must be there; `kind` is what the record says it is (`.object`
    /// for an object whose members are the caller's own, a GeoJSON geometry).
    public func anyValue(_ key: String, kind: FieldContract.Kind = .any) throws(Failure) -> JSON {
        if record(key, kind, required: true) { return kind == .object ? .object([]) : .string("x") }
        return try required(key)
    }

    /// A member that must be there but may be null (a form field's value, where null clears
    /// it); a payload kept as it arrived is read as its value.
    public func nullableValue(_ key: String) throws(Failure) -> JSON {
        if let recorder {
            recorder.record(key, .any, required: true, nullable: true, rule: rule(""))
            return .null
        }
        guard let value = members.last(where: { $0.key == key })?.value else { throw .invalidField("\(path(of: key)) is required") }
        if case let .raw(raw) = value { return raw.value }
        return value
    }

    /// Notes the read when recording (and answers true), with `limits` and the note as its rule;
    /// `limits` is written only then, so reading data never formats a rule.
    private func record(_ key: String, _ kind: FieldContract.Kind, required: Bool, _ limits: @autoclosure () -> String = "") -> Bool {
        guard let recorder else { return false }
        recorder.record(key, kind, required: required, rule: rule(limits()))
        return true
    }

    /// Notes the read of an object (or array of objects) when recording: the recorder of its members.
    private func recordObject(_ key: String, _ kind: FieldContract.Kind, required: Bool, _ limits: @autoclosure () -> String = "") -> JSONFields? {
        guard let recorder, let children = recorder.record(key, kind, required: required, rule: rule(limits()), nested: true) else { return nil }
        return JSONFields(recordingInto: children, path: path(of: key))
    }

    private func rule(_ limits: String) -> String {
        (limitsNoted ? [note] : [limits, note]).filter { !$0.isEmpty }.joined(separator: "; ")
    }

    private func required(_ key: String) throws(Failure) -> JSON {
        guard let value = lookup(key) else { throw .invalidField("\(path(of: key)) is required") }
        return value
    }

    public func string(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws(Failure) -> String {
        if record(key, .string, required: true, Self.stringLimits(maxLength, allowEmpty)) { return allowEmpty ? "" : "x" }
        return try string(try required(key), key, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    private func string(_ value: JSON, _ key: String, maxLength: Int, allowEmpty: Bool) throws(Failure) -> String {
        guard case let .string(text) = value else { throw .invalidField("\(path(of: key)) must be a string, got \(value.kindName)") }
        guard allowEmpty || !text.isEmpty else { throw .invalidField("\(path(of: key)) must not be empty") }
        guard text.count <= maxLength else { throw .invalidField("\(path(of: key)) is \(text.count) characters, more than \(maxLength)") }
        return text
    }

    public func optionalString(_ key: String, maxLength: Int, allowEmpty: Bool = false) throws(Failure) -> String? {
        if record(key, .string, required: false, Self.stringLimits(maxLength, allowEmpty)) { return nil }
        guard let value = lookup(key) else { return nil }
        return try string(value, key, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    /// A string with something besides whitespace in it (names, titles, messages).
    public func text(_ key: String, maxLength: Int) throws(Failure) -> String {
        if record(key, .string, required: true, Self.textLimits(maxLength)) { return "x" }
        return try text(try required(key), key, maxLength: maxLength)
    }

    private func text(_ value: JSON, _ key: String, maxLength: Int) throws(Failure) -> String {
        let text = try string(value, key, maxLength: maxLength, allowEmpty: false)
        guard !text.allSatisfy(\.isWhitespace) else { throw .invalidField("\(path(of: key)) must not be blank") }
        return text
    }

    public func optionalText(_ key: String, maxLength: Int) throws(Failure) -> String? {
        if record(key, .string, required: false, Self.textLimits(maxLength)) { return nil }
        guard let value = lookup(key) else { return nil }
        return try text(value, key, maxLength: maxLength)
    }

    /// A finite number in `range`; numbers spelled as strings ("NaN", "1e999") are refused.
    public func number(_ key: String, in range: ClosedRange<Double>) throws(Failure) -> Double {
        if record(key, .number, required: true, Self.numberLimits(range)) { return min(max(0, range.lowerBound), range.upperBound) }
        return try number(try required(key), key, in: range)
    }

    private func number(_ value: JSON, _ key: String, in range: ClosedRange<Double>) throws(Failure) -> Double {
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
        if record(key, .number, required: false, Self.numberLimits(range)) { return nil }
        guard let value = lookup(key) else { return nil }
        return try number(value, key, in: range)
    }

    public func integer(_ key: String, in range: ClosedRange<Int64>) throws(Failure) -> Int64 {
        if record(key, .integer, required: true, Self.integerLimits(range)) { return min(max(0, range.lowerBound), range.upperBound) }
        return try integer(try required(key), key, in: range, allowingDecimalStrings: false)
    }

    /// An integer in `range`, `fallback` when absent or null.
    public func integer(_ key: String, in range: ClosedRange<Int64>, default fallback: Int64) throws(Failure) -> Int64 {
        if record(
            key, .integer, required: false,
            [Self.integerLimits(range), "default \(Self.grouped(fallback))"].filter { !$0.isEmpty }.joined(separator: ", "))
        {
            return fallback
        }
        guard let value = lookup(key) else { return fallback }
        return try integer(value, key, in: range, allowingDecimalStrings: false)
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
        if record(key, .integer, required: false, Self.integerLimits(range)) { return nil }
        guard let value = lookup(key) else { return nil }
        return try integer(value, key, in: range, allowingDecimalStrings: false)
    }

    public func bool(_ key: String) throws(Failure) -> Bool {
        if record(key, .boolean, required: true) { return false }
        return try bool(try required(key), key)
    }

    /// A boolean, `fallback` when absent or null.
    public func bool(_ key: String, default fallback: Bool) throws(Failure) -> Bool {
        if record(key, .boolean, required: false, "default \(fallback)") { return fallback }
        guard let value = lookup(key) else { return fallback }
        return try bool(value, key)
    }

    /// A boolean, nil when absent or null.
    public func optionalBool(_ key: String) throws(Failure) -> Bool? {
        if record(key, .boolean, required: false) { return nil }
        guard let value = lookup(key) else { return nil }
        return try bool(value, key)
    }

    private func bool(_ value: JSON, _ key: String) throws(Failure) -> Bool {
        guard case let .bool(flag) = value else { throw .invalidField("\(path(of: key)) must be a boolean, got \(value.kindName)") }
        return flag
    }

    /// One of an enumeration's raw values.
    public func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws(Failure) -> T where T.RawValue == String {
        let choices = T.allCases.map(\.rawValue).joined(separator: ", ")
        if record(key, .string, required: true, "one of \(choices)"), let first = T.allCases.first { return first }
        let text = try string(try required(key), key, maxLength: 64, allowEmpty: false)
        guard let choice = T(rawValue: text) else {
            throw .invalidField("\(path(of: key)) must be one of \(choices), got '\(text)'")
        }
        return choice
    }

    /// Throws `message` unless at least one of `keys` is there (when recording, nothing:
    /// each is recorded where it is read, and optional readers answer nil).
    public func requireAny(of keys: [String], _ message: String) throws(Failure) {
        guard recorder == nil, !keys.contains(where: { lookup($0) != nil }) else { return }
        throw .invalidField(message)
    }

    /// One of an enumeration's raw values, nil when absent or null.
    public func optionalChoice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws(Failure) -> T? where T.RawValue == String {
        has(key) ? try choice(key, type) : nil
    }

    public func object(_ key: String) throws(Failure) -> JSONFields {
        if let recording = recordObject(key, .object, required: true) { return recording }
        return try JSONFields(try required(key), path: path(of: key))
    }

    /// The member's object, nil when absent or null (when recording, the recorder of its members).
    public func optionalObject(_ key: String) throws(Failure) -> JSONFields? {
        if let recording = recordObject(key, .object, required: false) { return recording }
        guard let value = lookup(key) else { return nil }
        return try JSONFields(value, path: path(of: key))
    }

    /// An object whose members are the caller's own (neither listed nor refused: metadata,
    /// a map of names), nil when absent or null.
    public func optionalFreeObject(_ key: String) throws(Failure) -> JSONFields? {
        if record(key, .object, required: false) { return nil }
        guard let value = lookup(key) else { return nil }
        return try JSONFields(value, path: path(of: key))
    }

    public func stringArray(_ key: String, maxCount: Int, maxLength: Int) throws(Failure) -> [String] {
        if record(key, .stringArray, required: true, Self.arrayLimits(maxCount, of: maxLength)) { return ["x"] }
        return try stringArray(try required(key), key, maxCount: maxCount, maxLength: maxLength)
    }

    /// An array of strings, nil when absent or null.
    public func optionalStringArray(_ key: String, maxCount: Int, maxLength: Int) throws(Failure) -> [String]? {
        if record(key, .stringArray, required: false, Self.arrayLimits(maxCount, of: maxLength)) { return nil }
        guard let value = lookup(key) else { return nil }
        return try stringArray(value, key, maxCount: maxCount, maxLength: maxLength)
    }

    private func stringArray(_ value: JSON, _ key: String, maxCount: Int, maxLength: Int) throws(Failure) -> [String] {
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

    /// Exactly `count` finite numbers.
    public func numberArray(_ key: String, count: Int) throws(Failure) -> [Double] {
        if record(key, .numberArray, required: true, "\(count) numbers") { return (0..<count).map(Double.init) }
        let value = try required(key)
        guard case let .array(items) = value, items.count == count else {
            throw .invalidField("\(path(of: key)) must be an array of \(count) numbers, got \(value.kindName)")
        }
        var numbers: [Double] = []
        for (index, item) in items.enumerated() {
            switch item {
            case let .int(number): numbers.append(Double(number))
            case let .double(number) where number.isFinite: numbers.append(number)
            default: throw .invalidField("\(path(of: key))[\(index)] must be a finite number, got \(item.kindName)")
            }
        }
        return numbers
    }

    /// An array of objects whose members are read later or are the caller's own (a form's
    /// fields), each with its path; the record does not list their members.
    public func freeObjectArray(_ key: String, maxCount: Int) throws(Failure) -> [JSONFields] {
        if record(key, .objectArray, required: true, Self.arrayLimits(maxCount, of: nil)) { return [] }
        return try objects(try required(key), key, maxCount: maxCount)
    }

    /// An array of objects, each read with its path (`sections[2].fields[0].key`).
    public func objectArray(_ key: String, maxCount: Int) throws(Failure) -> [JSONFields] {
        if let recording = recordObject(key, .objectArray, required: true, Self.arrayLimits(maxCount, of: nil)) { return [recording] }
        return try objects(try required(key), key, maxCount: maxCount)
    }

    private func objects(_ value: JSON, _ key: String, maxCount: Int) throws(Failure) -> [JSONFields] {
        guard case let .array(items) = value else { throw .invalidField("\(path(of: key)) must be an array, got \(value.kindName)") }
        guard items.count <= maxCount else { throw .invalidField("\(path(of: key)) has \(items.count) items, more than \(maxCount)") }
        var result: [JSONFields] = []
        for (index, item) in items.enumerated() { result.append(try JSONFields(item, path: "\(path(of: key))[\(index)]")) }
        return result
    }

    /// What reads the members of one alternative (`oneOf`, `variant`). Give readers this
    /// type where they are written: left to inference, a literal of several takes the
    /// type checker minutes.
    public typealias Reader<T> = (JSONFields) throws(Failure) -> T

    /// The one member of `choices` that is there, read by its reader; none there throws
    /// `ifNone`, several throw `ifSeveral` of their names. When recording, every reader runs,
    /// each member marked as one that may be left out, and the first value read is answered.
    public func oneOf<T>(
        _ choices: KeyValuePairs<String, Reader<T>>, ifNone: String, ifSeveral: ([String]) -> String
    ) throws(Failure) -> T {
        guard let recorder else {
            let given = choices.filter { lookup($0.key) != nil }
            guard given.count == 1 else { throw .invalidField(given.isEmpty ? ifNone : ifSeveral(given.map(\.key))) }
            return try given[0].value(self)
        }
        return try recordAlternatives(Array(choices).map { choice in { () throws(Failure) in try choice.value(self) } }, recorder, ifNone)
    }

    /// As `oneOf(_:ifNone:ifSeveral:)`, where several throw the one message `ifSeveral`.
    public func oneOf<T>(_ choices: KeyValuePairs<String, Reader<T>>, ifNone: String, ifSeveral: String) throws(Failure) -> T {
        try oneOf(choices, ifNone: ifNone, ifSeveral: { _ in ifSeveral })
    }

    /// The members of a tagged object: `tag` names which of `variants` it is, and that
    /// variant's reader reads the rest. When recording, every variant's reader runs, and
    /// what they read may be left out.
    public func variant<T>(_ tag: String, _ variants: KeyValuePairs<String, Reader<T>>) throws(Failure) -> T {
        let names = variants.map(\.key)
        if let recorder {
            recorder.record(tag, .string, required: true, rule: rule("one of \(names.joined(separator: ", "))"))
            return try recordAlternatives(variants.map { variant in { () throws(Failure) in try variant.value(self) } }, recorder, tag)
        }
        let name = try string(try required(tag), tag, maxLength: 64, allowEmpty: false)
        guard let variant = variants.first(where: { $0.key == name }) else {
            throw .invalidField("\(path(of: tag)) must be one of \(names.joined(separator: ", ")), got '\(name)'")
        }
        return try variant.value(self)
    }

    /// Runs each of `readers` as an alternative; the first value read is answered.
    private func recordAlternatives<T>(_ readers: [() throws(Failure) -> T], _ recorder: FieldRecorder, _ none: String) throws(Failure) -> T {
        var first: Result<T, Failure>?
        for reader in readers {
            // A reader's checks beyond its reads (a geometry's rings) may refuse the recorder's
            // answers; its members are recorded by then.
            let result = recorder.alternative { Result { () throws(Failure) in try reader() } }
            if case .success = result, case .failure? = first { first = result }
            first = first ?? result
        }
        guard let first else { throw .invalidField(none) }
        return try first.get()
    }

    /// The object read.
    public var json: JSON { .object(members) }

    private static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// A limit as a rule prints it (`9,000`).
    private static func limit(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? grouped(Int64(number)) : String(number)
    }

    /// `1234567` as `1,234,567`.
    private static func grouped(_ number: Int64) -> String {
        let digits = String(number.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return number < 0 ? "-" + result : result
    }

    private static func stringLimits(_ maxLength: Int, _ allowEmpty: Bool) -> String {
        if maxLength == .max { return allowEmpty ? "" : "not empty" }
        return allowEmpty ? "at most \(grouped(Int64(maxLength))) characters" : "1–\(grouped(Int64(maxLength))) characters"
    }

    private static func textLimits(_ maxLength: Int) -> String {
        maxLength == .max ? "not blank" : "1–\(grouped(Int64(maxLength))) characters, not blank"
    }

    private static func numberLimits(_ range: ClosedRange<Double>) -> String {
        let bounded = (lower: range.lowerBound > -Double.greatestFiniteMagnitude, upper: range.upperBound < Double.greatestFiniteMagnitude)
        switch bounded {
        case (true, true): return "\(limit(range.lowerBound)) to \(limit(range.upperBound))"
        case (true, false): return "at least \(limit(range.lowerBound))"
        case (false, true): return "at most \(limit(range.upperBound))"
        case (false, false): return ""
        }
    }

    private static func integerLimits(_ range: ClosedRange<Int64>) -> String {
        let bounded = (lower: range.lowerBound > Int64.min / 2, upper: range.upperBound < Int64.max / 2)
        switch bounded {
        case (true, true): return "\(grouped(range.lowerBound))–\(grouped(range.upperBound))"
        case (true, false): return "at least \(grouped(range.lowerBound))"
        case (false, true): return "at most \(grouped(range.upperBound))"
        case (false, false): return ""
        }
    }

    private static func arrayLimits(_ maxCount: Int, of maxLength: Int?) -> String {
        let count = maxCount == .max ? "" : "up to \(grouped(Int64(maxCount))) items"
        guard let maxLength else { return count }
        let items = maxLength == .max ? "non-empty strings" : "strings of 1–\(grouped(Int64(maxLength))) characters"
        return count.isEmpty ? items : "\(count), \(items)"
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
        try bool(key, default: false)
    }

    /// An integer in `range`; protobuf JSON also allows 64-bit integers as decimal strings.
    func protobufInteger(_ key: String, in range: ClosedRange<Int64>) throws(Failure) -> Int64 {
        if record(key, .integer, required: false, Self.integerLimits(range)) { return 0 }
        guard let value = lookup(key) else { return 0 }
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
        if record(key, .any, required: false) { return RawJSON(.object([])) }
        return member(key).map(RawJSON.init)
    }

    func protobufArray(_ key: String) throws(Failure) -> [JSON] {
        guard let value = lookup(key) else { return [] }
        guard case let .array(elements) = value else { throw .invalidField("\(path(of: key)) must be an array, got \(value.kindName)") }
        return elements
    }

    /// A JSON object whose members all decode with `decode` (given the value and its path).
    public func map<T>(_ key: String, _ decode: (JSON, String) throws(Failure) -> T) throws(Failure) -> [String: T] {
        if record(key, .object, required: false) { return [:] }
        guard let value = lookup(key) else { return [:] }
        let fields = try JSONFields(value, path: path(of: key))
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
