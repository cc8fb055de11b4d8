import GondolaHub
import GondolaProtocol

/// The kinds of field a form has: the inspection app's input cells.
enum FieldType: String, CaseIterable, Sendable {
    case date, time, double, int, stepper, text, textarea, dropdown
    case radioBoolean = "radio_boolean"
    case radioSwitch = "radio_switch"
    case `switch`
    case spacer, title
    case viewField = "view_field"

    /// Display-only fields hold no value.
    var holdsValue: Bool { ![.spacer, .title, .viewField].contains(self) }
}

/// How much of a row a field takes.
enum FieldWidth: String, CaseIterable, Sendable {
    case full, half, third, fourth, fill
}

/// A condition on another field's value: equal to one value, or one of several.
struct FieldDependency: Sendable, Equatable {
    let key: String
    let accepted: [JSON]

    func holds(_ value: JSON?) -> Bool {
        guard let value else { return false }
        return accepted.contains(value)
    }
}

/// What a text field accepts beyond its length.
enum TextValidation: String, CaseIterable, Sendable {
    /// Letters and digits, 6 to 12 of them, upper case (a passport number).
    case passportNumber = "passport_number"
    /// Letters, digits and spaces.
    case alphanumeric
}

/// One field of a form and its rules.
struct FormField: Sendable {
    let key: String
    let header: String
    let type: FieldType
    let width: FieldWidth
    let editable: Bool
    let required: Bool
    let dependencies: [FieldDependency]
    /// `int`, `double`, `stepper`: the bounds; `stepper`: the step.
    let minimum: Double?
    let maximum: Double?
    let step: Int64?
    /// `text`, `textarea`: the longest value.
    let maxLength: Int
    let validation: TextValidation?
    /// `dropdown`: the code table its values come from.
    let codeTable: String?
    /// The field as the schema gave it (for clients).
    let json: JSON
}

/// A section of a form: a title and its fields in order.
struct FormSection: Sendable {
    let key: String
    let title: String
    let fields: [FormField]
}

/// A form's schema: sections of typed fields with dependencies, checked when it is
/// loaded (unknown type, duplicate key, a dependency on a missing or value-less field, a
/// dependency cycle, a dropdown on an unknown code table are refused naming the problem).
/// `order` lists the fields so that each comes after every field it depends on.
struct FormSchema: Sendable {
    static let maxFields = 500
    static let maxSections = 50

    let id: String
    let version: Int
    let title: String
    let sections: [FormSection]
    let fields: [String: FormField]
    let order: [String]
    let json: JSON

    /// Reads and checks a schema; `version` is the one it is stored as.
    static func parse(_ json: JSON, version: Int, codeTables: CodeTables) async throws(HubError) -> FormSchema {
        let outline = try SchemaOutline(try RequestFields(json, path: "schema"))
        var sections: [FormSection] = []
        var fields: [String: FormField] = [:]
        var keys: [String] = []
        for section in outline.sections {
            var sectionFields: [FormField] = []
            for item in section.items {
                let field = try await FormField.parse(item, codeTables: codeTables)
                guard fields[field.key] == nil else { throw .badRequest("\(item.path(of: "key")): '\(field.key)' is used twice") }
                fields[field.key] = field
                keys.append(field.key)
                sectionFields.append(field)
            }
            sections.append(FormSection(key: section.key, title: section.title, fields: sectionFields))
        }
        guard !fields.isEmpty, fields.count <= maxFields else { throw .badRequest("schema: 1 to \(maxFields) fields, got \(fields.count)") }
        for key in keys {
            for dependency in fields[key]!.dependencies {
                guard let target = fields[dependency.key] else {
                    throw .badRequest("field '\(key)' depends on '\(dependency.key)', which the schema lacks")
                }
                guard target.type.holdsValue else {
                    throw .badRequest("field '\(key)' depends on '\(dependency.key)', a \(target.type.rawValue) without a value")
                }
            }
        }
        return FormSchema(
            id: outline.id, version: version, title: outline.title, sections: sections, fields: fields,
            order: try dependencyOrder(keys, fields), json: json)
    }

    /// The keys with each after the fields it depends on; a cycle is refused naming it.
    private static func dependencyOrder(_ keys: [String], _ fields: [String: FormField]) throws(HubError) -> [String] {
        var order: [String] = []
        var state: [String: Bool] = [:]  // false: being visited, true: done
        func visit(_ key: String, _ path: [String]) throws(HubError) {
            if state[key] == true { return }
            if state[key] == false {
                let cycle = path.drop { $0 != key } + [key]
                throw .badRequest("dependency cycle: \(cycle.joined(separator: " → "))")
            }
            state[key] = false
            for dependency in fields[key]!.dependencies { try visit(dependency.key, path + [key]) }
            state[key] = true
            order.append(key)
        }
        for key in keys { try visit(key, []) }
        return order
    }

    /// The keys of the fields shown for `values`: a field is shown when every dependency
    /// holds on a shown field's value (a hidden field counts as empty, so chains hide
    /// together).
    func visibleKeys(_ values: [String: JSON]) -> Set<String> {
        var visible = Set<String>()
        for key in order {
            let field = fields[key]!
            if field.dependencies.allSatisfy({ visible.contains($0.key) && $0.holds(values[$0.key]) }) { visible.insert(key) }
        }
        return visible
    }

    /// The required fields that are shown and have no value.
    func missing(_ values: [String: JSON]) -> [String] {
        let visible = visibleKeys(values)
        return order.filter { key in
            let field = fields[key]!
            return field.required && field.type.holdsValue && visible.contains(key) && values[key] == nil
        }.sorted { position($0) < position($1) }
    }

    /// The field's place in the schema, for messages in reading order.
    func position(_ key: String) -> Int {
        var index = 0
        for section in sections {
            for field in section.fields {
                if field.key == key { return index }
                index += 1
            }
        }
        return index
    }
}

/// A schema's members as a request carries them: its id, title and sections, each
/// section's fields left to `FormField.parse`, which needs the code tables.
struct SchemaOutline {
    let id: String
    let title: String
    let sections: [(key: String, title: String, items: [RequestFields])]

    init(_ root: RequestFields) throws(HubError) {
        id = try FormsNames.id(root, "id")
        title = try root.text("title", maxLength: 200)
        var sections: [(key: String, title: String, items: [RequestFields])] = []
        for section in try root.objectArray("sections", maxCount: FormSchema.maxSections) {
            sections.append(
                (
                    key: try FormsNames.id(section, "key"), title: try section.text("title", maxLength: 200),
                    items: try section.noting("the section's fields").freeObjectArray("fields", maxCount: FormSchema.maxFields)
                ))
        }
        self.sections = sections
    }
}

extension FormField {
    static func parse(_ item: RequestFields, codeTables: CodeTables) async throws(HubError) -> FormField {
        let key = try FormsNames.id(item, "key")
        let type = try item.choice("type", FieldType.self)
        let width = item.has("width") ? try item.choice("width", FieldWidth.self) : .full
        var dependencies: [FieldDependency] = []
        if item.has("dependencies") {
            for dependency in try item.objectArray("dependencies", maxCount: 20) {
                let target = try FormsNames.id(dependency, "key")
                switch (dependency.value("equals"), dependency.value("in")) {
                case let (value?, nil): dependencies.append(FieldDependency(key: target, accepted: [value]))
                case let (nil, .array(values)?) where !values.isEmpty && values.count <= 100:
                    dependencies.append(FieldDependency(key: target, accepted: values))
                default: throw .badRequest("\(dependency.path(of: "key")): give equals (a value) or in (1 to 100 values)")
                }
            }
        }
        let minimum = try item.optionalNumber("min", in: -1e15...1e15)
        let maximum = try item.optionalNumber("max", in: -1e15...1e15)
        if let minimum, let maximum, minimum > maximum { throw .badRequest("\(item.path(of: "min")) is above max") }
        var step: Int64?
        if type == .stepper {
            guard minimum != nil, maximum != nil else { throw .badRequest("\(item.path(of: "min")): a stepper needs min and max") }
            step = try item.optionalInteger("step", in: 1...1_000_000) ?? 1
        }
        let codeTable = try item.optionalString("code_table", maxLength: 64)
        if type == .dropdown {
            guard let codeTable else { throw .badRequest("\(item.path(of: "code_table")): a dropdown needs a code table") }
            guard try await codeTables.table(codeTable) != nil else {
                throw .badRequest("\(item.path(of: "code_table")): no code table named '\(codeTable)'")
            }
        }
        let defaultLength = type == .textarea ? 4_000 : 200
        return FormField(
            key: key, header: try item.optionalString("header", maxLength: 300, allowEmpty: true) ?? "", type: type, width: width,
            editable: item.has("editable") ? try item.bool("editable") : true, required: item.has("required") ? try item.bool("required") : false,
            dependencies: dependencies, minimum: minimum, maximum: maximum, step: step,
            maxLength: Int(try item.optionalInteger("max_length", in: 1...20_000) ?? Int64(defaultLength)),
            validation: item.has("validation") ? try item.choice("validation", TextValidation.self) : nil,
            codeTable: codeTable, json: item.json)
    }
}

/// Ids of schemas, sections, fields and assessments: 1 to 64 letters, digits, `_` or `-`.
enum FormsNames {
    static func id(_ fields: RequestFields, _ key: String) throws(HubError) -> String {
        let id = try fields.noting("letters, digits, `_` and `-`").string(key, maxLength: 64)
        guard id.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") })
        else {
            throw .badRequest("\(fields.path(of: key)): letters, digits, _ and - only, got '\(id)'")
        }
        return id
    }
}
