/// One member of a request (an RPC's `data`, a server API body, a replica payload): its
/// name, the JSON it takes, whether it must be there, and the rule its value follows.
/// A request type's members are recorded from its reader (`FieldRecorder`), so that the
/// catalog prints them and the decoder refuses any other member (107 naming it).
public struct FieldContract: Sendable, Equatable {
    /// The JSON a member takes.
    public enum Kind: String, Sendable, Equatable {
        case string, integer, number, boolean, object
        case stringArray = "array of strings"
        case objectArray = "array of objects"
        case numberArray = "array of numbers"
        /// Any JSON value, passed on as it arrived (a publication's `data`).
        case any = "any JSON"
    }

    public let name: String
    public let kind: Kind
    public let required: Bool
    /// Whether the value may be null: a member that may be left out may be null too; a
    /// required one only when it says so (`nullable`).
    public let nullable: Bool
    /// What the value must be beyond its kind ("at most 80 characters"), empty when nothing.
    public let rule: String
    /// The members of an object (or of each object of an array), refused when not listed;
    /// nil when the object's members are free (a caller's own metadata).
    public let members: [FieldContract]?

    /// A member that must be there, not null.
    public static func required(_ name: String, _ kind: Kind, _ rule: String = "", members: [FieldContract]? = nil) -> FieldContract {
        FieldContract(name: name, kind: kind, required: true, nullable: false, rule: rule, members: members)
    }

    /// A member that must be there, null when it has no value.
    public static func nullable(_ name: String, _ kind: Kind, _ rule: String = "", members: [FieldContract]? = nil) -> FieldContract {
        FieldContract(name: name, kind: kind, required: true, nullable: true, rule: rule, members: members)
    }

    /// A member that may be left out (or null).
    public static func optional(_ name: String, _ kind: Kind, _ rule: String = "", members: [FieldContract]? = nil) -> FieldContract {
        FieldContract(name: name, kind: kind, required: false, nullable: true, rule: rule, members: members)
    }
}
