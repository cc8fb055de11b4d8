extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let int = try? container.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let array = try? container.decode([JSON].self) {
            self = .array(array)
        } else {
            let object = try container.decode([String: JSON].self)
            self = .object(object.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) })
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(flag): try container.encode(flag)
        case let .int(int): try container.encode(int)
        case let .double(double): try container.encode(double)
        case let .string(text): try container.encode(text)
        case let .array(array): try container.encode(array)
        case let .object(members):
            try container.encode(Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }))
        case let .raw(raw): try raw.value.encode(to: encoder)
        }
    }
}
