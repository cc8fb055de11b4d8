import Foundation
import GondolaHub
import GondolaProtocol

/// Checks a value against its field; answers the value as stored (numbers of an `int`
/// field as integers). `null` clears a field and is always accepted here.
enum FieldValidation {
    static func check(_ value: JSON, for field: FormField, codeTables: CodeTables) async throws(HubError) -> JSON {
        if case .null = value { return .null }
        let name = "value of '\(field.key)'"
        switch field.type {
        case .spacer, .title, .viewField:
            throw .badRequest("'\(field.key)' is a \(field.type.rawValue) and holds no value")
        case .radioBoolean, .radioSwitch, .switch:
            guard case .bool = value else { throw .badRequest("\(name): expected true or false, got \(value.kindName)") }
            return value
        case .int, .stepper:
            let number = try integer(value, name)
            try inRange(Double(number), field, name)
            if let step = field.step, let minimum = field.minimum, (number - Int64(minimum)) % step != 0 {
                throw .badRequest("\(name): \(number) is not on a step of \(step) from \(Int64(minimum))")
            }
            return .int(number)
        case .double:
            let number: Double
            switch value {
            case let .int(whole): number = Double(whole)
            case let .double(real) where real.isFinite: number = real
            default: throw .badRequest("\(name): expected a number, got \(value.kindName)")
            }
            try inRange(number, field, name)
            return value
        case .date:
            let text = try string(value, name, maxLength: 10)
            guard Self.date(text) else { throw .badRequest("\(name): expected a date YYYY-MM-DD, got '\(text)'") }
            return value
        case .time:
            let text = try string(value, name, maxLength: 5)
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard text.count == 5, parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour),
                (0...59).contains(minute), parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
            else {
                throw .badRequest("\(name): expected a time HH:MM, got '\(text)'")
            }
            return value
        case .text, .textarea:
            let text = try string(value, name, maxLength: field.maxLength)
            switch field.validation {
            case .passportNumber?:
                guard (6...12).contains(text.count), text.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("0"..."9").contains($0) }) else {
                    throw .badRequest("\(name): a passport number is 6 to 12 capital letters and digits, got '\(text)'")
                }
            case .alphanumeric?:
                guard text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == " ") }) else {
                    throw .badRequest("\(name): letters, digits and spaces only, got '\(text.prefix(80))'")
                }
            case nil:
                break
            }
            return value
        case .dropdown:
            let code = try string(value, name, maxLength: 64)
            guard let name = field.codeTable, let table = try await codeTables.table(name), table.contains(code) else {
                throw .badRequest("\(name): '\(code)' is not a code of table '\(field.codeTable ?? "")'")
            }
            return value
        }
    }

    private static func integer(_ value: JSON, _ name: String) throws(HubError) -> Int64 {
        switch value {
        case let .int(number): return number
        case let .double(number) where number.isFinite && number == number.rounded() && abs(number) < 1e15: return Int64(number)
        default: throw .badRequest("\(name): expected a whole number, got \(value.kindName == "number" ? "a fraction" : value.kindName)")
        }
    }

    private static func inRange(_ number: Double, _ field: FormField, _ name: String) throws(HubError) {
        if let minimum = field.minimum, number < minimum { throw .badRequest("\(name): \(number.formatted) is below \(minimum.formatted)") }
        if let maximum = field.maximum, number > maximum { throw .badRequest("\(name): \(number.formatted) is above \(maximum.formatted)") }
    }

    private static func string(_ value: JSON, _ name: String, maxLength: Int) throws(HubError) -> String {
        guard case let .string(text) = value else { throw .badRequest("\(name): expected a string, got \(value.kindName)") }
        guard text.count <= maxLength else { throw .badRequest("\(name): \(text.count) characters, more than \(maxLength)") }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" && $0 != "\t" }) else {
            throw .badRequest("\(name): control characters are not allowed")
        }
        return text
    }

    /// A real calendar day written YYYY-MM-DD (years 1900–2999).
    static func date(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.count == 10, parts.count == 3, parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1900...2999).contains(year), (1...12).contains(month), day >= 1
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return day <= days
    }
}

extension Double {
    /// Whole numbers without a fraction, others as Swift writes them.
    var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self) }
}
