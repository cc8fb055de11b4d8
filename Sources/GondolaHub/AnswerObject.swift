import GondolaProtocol

/// A JSON object an answer (or a publication) carries, declared once as the list of its
/// members: each names the member, says its kind and rule, and reads its value from the
/// object. `json` writes what the list says and `fields` describes it, so the catalog,
/// the API pages and the OpenAPI document list exactly the members written.
public protocol AnswerObject: Sendable {
    /// The members in the order they are written.
    static var members: [AnswerMember<Self>] { get }
}

extension AnswerObject {
    /// The object: each member's value, members without one left out.
    public var json: JSON { .object(jsonMembers) }

    /// The object's members, to write among others (a GeoJSON feature's properties).
    public var jsonMembers: [(key: String, value: JSON)] { jsonMembers(Self.members) }

    /// What `members` (some of the object's) write.
    public func jsonMembers(_ members: [AnswerMember<Self>]) -> [(key: String, value: JSON)] {
        var written: [(key: String, value: JSON)] = []
        written.reserveCapacity(members.count)
        for member in members { member.write(self, &written) }
        return written
    }

    /// The members, read from an object that holds one (`part` reads it), to write among that
    /// object's own (a car and its distance).
    public static func members<Outer>(in part: @escaping @Sendable (Outer) -> Self) -> [AnswerMember<Outer>] {
        members.map { $0.of(part) }
    }

    /// The members as the catalog prints them.
    public static var fields: [FieldContract] { members.flatMap(\.contracts) }
}

/// One member of an `AnswerObject` (or, `spread`, the members of an object written in
/// place): what the catalog says of it, and how its value is read from the object (none:
/// left out, which only a member that may be left out does).
public struct AnswerMember<Owner>: Sendable {
    /// The member, or the members a spread writes.
    public let contracts: [FieldContract]
    /// Appends the member's name and value, when it has one.
    let write: @Sendable (Owner, inout [(key: String, value: JSON)]) -> Void

    private init(contracts: [FieldContract], write: @escaping @Sendable (Owner, inout [(key: String, value: JSON)]) -> Void) {
        self.contracts = contracts
        self.write = write
    }

    private init(_ contract: FieldContract, _ value: @escaping @Sendable (Owner) -> JSON?) {
        let name = contract.name
        self.init(contracts: [contract]) { owner, written in
            if let value = value(owner) { written.append((name, value)) }
        }
    }

    /// The same member in an object that holds an `Owner` (`part` reads it).
    func of<Outer>(_ part: @escaping @Sendable (Outer) -> Owner) -> AnswerMember<Outer> {
        let write = self.write
        return AnswerMember<Outer>(contracts: contracts) { outer, written in write(part(outer), &written) }
    }

    /// The members of `Member`, written in place from JSON kept as it was written (a stored
    /// chat message's bytes): what `object` answers is written member by member.
    public static func spread<Member: AnswerObject>(_ member: Member.Type, _ object: @escaping @Sendable (Owner) -> JSON) -> Self {
        AnswerMember(contracts: Member.fields) { owner, written in
            if case let .object(members) = object(owner) { written += members }
        }
    }

    /// A member that is always there.
    static func always(
        _ name: String, _ kind: FieldContract.Kind, _ note: String, members: [FieldContract]? = nil, _ value: @escaping @Sendable (Owner) -> JSON
    ) -> Self {
        AnswerMember(.required(name, kind, note, members: members)) { value($0) }
    }

    /// A member that is there, null when `value` has none.
    static func orNull<Value>(
        _ name: String, _ kind: FieldContract.Kind, _ note: String, members: [FieldContract]? = nil, _ value: @escaping @Sendable (Owner) -> Value?,
        as write: @escaping @Sendable (Value) -> JSON
    ) -> Self {
        AnswerMember(.nullable(name, kind, note, members: members)) { value($0).map(write) ?? .null }
    }

    /// A member left out when `value` has none.
    static func orAbsent<Value>(
        _ name: String, _ kind: FieldContract.Kind, _ note: String, members: [FieldContract]? = nil, _ value: @escaping @Sendable (Owner) -> Value?,
        as write: @escaping @Sendable (Value) -> JSON
    ) -> Self {
        AnswerMember(.optional(name, kind, note, members: members)) { value($0).map(write) }
    }

    // MARK: Members that are always there

    public static func string(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> String) -> Self {
        always(name, .string, note) { .string(value($0)) }
    }

    public static func integer(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> Int64) -> Self {
        always(name, .integer, note) { .int(value($0)) }
    }

    public static func number(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> Double) -> Self {
        always(name, .number, note) { .double(value($0)) }
    }

    public static func boolean(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> Bool) -> Self {
        always(name, .boolean, note) { .bool(value($0)) }
    }

    public static func strings(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> [String]) -> Self {
        always(name, .stringArray, note) { .array(value($0).map(JSON.string)) }
    }

    /// An object declared by its own members.
    public static func object<Member: AnswerObject>(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> Member) -> Self {
        always(name, .object, note, members: Member.fields) { value($0).json }
    }

    /// An array of objects declared by their members.
    public static func objects<Member: AnswerObject>(_ name: String, _ note: String = "", _ value: @escaping @Sendable (Owner) -> [Member]) -> Self {
        always(name, .objectArray, note, members: Member.fields) { .array(value($0).map(\.json)) }
    }

    /// An array of objects kept as JSON (stored bodies) that `Member` describes.
    public static func objects<Member: AnswerObject>(
        _ name: String, _ note: String = "", as member: Member.Type, _ value: @escaping @Sendable (Owner) -> [JSON]
    ) -> Self {
        always(name, .objectArray, note, members: Member.fields) { .array(value($0)) }
    }

    /// JSON that is the caller's own or built elsewhere (a publication's `data`, a GeoJSON
    /// feature): `kind` and `note` say what it holds.
    public static func json(_ name: String, _ kind: FieldContract.Kind, _ note: String = "", _ value: @escaping @Sendable (Owner) -> JSON) -> Self {
        always(name, kind, note, value)
    }

    // MARK: Members that are null without a value

    public static func string(_ name: String, _ note: String = "", orNull value: @escaping @Sendable (Owner) -> String?) -> Self {
        orNull(name, .string, note, value, as: JSON.string)
    }

    public static func strings(_ name: String, _ note: String = "", orNull value: @escaping @Sendable (Owner) -> [String]?) -> Self {
        orNull(name, .stringArray, note, value, as: { .array($0.map(JSON.string)) })
    }

    public static func integer(_ name: String, _ note: String = "", orNull value: @escaping @Sendable (Owner) -> Int64?) -> Self {
        orNull(name, .integer, note, value, as: JSON.int)
    }

    public static func object<Member: AnswerObject>(_ name: String, _ note: String = "", orNull value: @escaping @Sendable (Owner) -> Member?) -> Self
    {
        orNull(name, .object, note, members: Member.fields, value, as: { $0.json })
    }

    // MARK: Members left out without a value

    public static func string(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> String?) -> Self {
        orAbsent(name, .string, note, value, as: JSON.string)
    }

    public static func integer(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> Int64?) -> Self {
        orAbsent(name, .integer, note, value, as: JSON.int)
    }

    public static func number(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> Double?) -> Self {
        orAbsent(name, .number, note, value, as: JSON.double)
    }

    public static func boolean(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> Bool?) -> Self {
        orAbsent(name, .boolean, note, value, as: JSON.bool)
    }

    public static func strings(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> [String]?) -> Self {
        orAbsent(name, .stringArray, note, value, as: { .array($0.map(JSON.string)) })
    }

    public static func object<Member: AnswerObject>(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> Member?) -> Self
    {
        orAbsent(name, .object, note, members: Member.fields, value, as: { $0.json })
    }

    public static func objects<Member: AnswerObject>(_ name: String, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> [Member]?)
        -> Self
    {
        orAbsent(name, .objectArray, note, members: Member.fields, value, as: { .array($0.map(\.json)) })
    }

    public static func json(_ name: String, _ kind: FieldContract.Kind, _ note: String = "", ifAny value: @escaping @Sendable (Owner) -> JSON?)
        -> Self
    {
        orAbsent(name, kind, note, value, as: { $0 })
    }
}

/// A point as answers carry it: `{lat, lon}`.
public struct Coordinates: AnswerObject {
    public static let members: [AnswerMember<Self>] = [.number("lat") { $0.lat }, .number("lon") { $0.lon }]
    public let lat: Double
    public let lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }
}
