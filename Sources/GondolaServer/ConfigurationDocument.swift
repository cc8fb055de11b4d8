import Foundation
import GondolaProtocol
import TOMLKit
import Yams

import struct GondolaHub.ConfigurationError

/// A configuration file read into the loader's terms: its top-level keys in order,
/// each with its value as JSON and the line it was written on. JSON, YAML and TOML
/// files carry the same keys; the file's extension says which it is.
struct ConfigurationDocument {
    /// One top-level key of the file.
    struct Member {
        let key: String
        let value: JSON
        /// The line (from 1) the key is written on; nil when it cannot be told.
        let line: Int?
    }

    /// The formats a configuration file may be written in.
    enum Format: String, CaseIterable {
        case json, yaml, toml

        /// The format a file's extension names (`.yml` is YAML too); nil for any other.
        init?(path: String) {
            switch URL(fileURLWithPath: path).pathExtension.lowercased() {
            case "json": self = .json
            case "yaml", "yml": self = .yaml
            case "toml": self = .toml
            default: return nil
            }
        }

        static let extensions = ".json, .yaml, .yml or .toml"
    }

    let path: String
    let members: [Member]

    /// Reads and parses `path`; the error names the file and, for a syntax error, its line and column.
    init(path: String) throws(ConfigurationError) {
        guard let format = Format(path: path) else {
            throw ConfigurationError("config file \(path): unknown format, expected a name ending in \(Format.extensions)")
        }
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ConfigurationError("cannot read config file \(path): \(error.localizedDescription)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ConfigurationError("config file \(path) is not UTF-8 text") }
        self.path = path
        switch format {
        case .json: members = try Self.jsonMembers(bytes, path: path)
        case .yaml: members = try Self.yamlMembers(text, path: path)
        case .toml: members = try Self.tomlMembers(text, path: path)
        }
    }

    /// Where a member's errors say it came from: the file and the key's line.
    func source(of member: Member) -> String {
        member.line.map { "config file \(path) line \($0)" } ?? "config file \(path)"
    }

    // MARK: JSON

    private static func jsonMembers(_ bytes: [UInt8], path: String) throws(ConfigurationError) -> [Member] {
        let json: JSON
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            let (line, column) = TextPosition.of(offset: error.offset, in: bytes)
            throw ConfigurationError("config file \(path) line \(line) column \(column): not valid JSON: \(error.reason)")
        }
        guard case let .object(members) = json else { throw ConfigurationError("config file \(path) must hold a JSON object") }
        let lines = TextPosition.topLevelKeyLines(ofJSON: bytes)
        return members.enumerated().map { index, member in
            Member(key: member.key, value: member.value, line: index < lines.count ? lines[index] : nil)
        }
    }

    // MARK: YAML

    private static func yamlMembers(_ text: String, path: String) throws(ConfigurationError) -> [Member] {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            switch error {
            case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
                let during = context.map { " (\($0.text))" } ?? ""
                throw ConfigurationError("config file \(path) line \(mark.line) column \(mark.column): not valid YAML: \(problem)\(during)")
            case let .duplicatedKeysInMapping(duplicates, context):
                throw ConfigurationError(
                    "config file \(path) line \(context.mark.line): not valid YAML: keys written twice: \(duplicates.joined(separator: ", "))")
            default:
                throw ConfigurationError("config file \(path): not valid YAML: \(error)")
            }
        } catch {
            throw ConfigurationError("config file \(path): not valid YAML: \(error)")
        }
        guard let root else { return [] }
        guard case let .mapping(mapping) = root else { throw ConfigurationError("config file \(path) must hold a YAML mapping of keys to values") }
        var members: [Member] = []
        for (key, value) in mapping {
            let line = key.mark?.line
            guard let name = key.string else {
                throw ConfigurationError("config file \(path) line \(line ?? 0): a key must be text, got '\(key.any)'")
            }
            members.append(Member(key: name, value: try json(of: value, path: path), line: line))
        }
        return members
    }

    /// The JSON value of a YAML node: plain scalars by their resolved type, quoted ones as text.
    private static func json(of node: Node, path: String) throws(ConfigurationError) -> JSON {
        switch node {
        case let .scalar(scalar):
            if scalar.style != .plain { return .string(scalar.string) }
            if node.null != nil { return .null }
            if let flag = node.bool { return .bool(flag) }
            if let number = node.int { return .int(Int64(number)) }
            if let number = node.float { return .double(number) }
            return .string(scalar.string)
        case let .sequence(sequence):
            var entries: [JSON] = []
            for entry in sequence { entries.append(try json(of: entry, path: path)) }
            return .array(entries)
        case let .mapping(mapping):
            var members: [(key: String, value: JSON)] = []
            for (key, value) in mapping {
                guard let name = key.string else {
                    throw ConfigurationError("config file \(path) line \(key.mark?.line ?? 0): a key must be text, got '\(key.any)'")
                }
                members.append((name, try json(of: value, path: path)))
            }
            return .object(members)
        case .alias:
            throw ConfigurationError("config file \(path) line \(node.mark?.line ?? 0): YAML aliases are not resolved here; write the value out")
        }
    }

    // MARK: TOML

    private static func tomlMembers(_ text: String, path: String) throws(ConfigurationError) -> [Member] {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(
                "config file \(path) line \(error.source.begin.line) column \(error.source.begin.column): not valid TOML: \(error.description)")
        } catch {
            throw ConfigurationError("config file \(path): not valid TOML: \(error)")
        }
        let lines = TextPosition.topLevelKeyLines(ofTOML: text)
        var members: [Member] = []
        for key in table.keys {
            guard let value = table[key] else { continue }
            members.append(Member(key: key, value: try json(of: value.tomlValue, key: key, path: path), line: lines[key]))
        }
        return members.sorted { ($0.line ?? .max) < ($1.line ?? .max) }
    }

    /// The JSON value of a TOML value; a date and time with an offset becomes RFC 3339 text.
    private static func json(of value: TOMLValue, key: String, path: String) throws(ConfigurationError) -> JSON {
        switch value.type {
        case .bool: return .bool(value.bool ?? false)
        case .int: return .int(Int64(value.int ?? 0))
        case .double: return .double(value.double ?? 0)
        case .string: return .string(value.string ?? "")
        case .array:
            var entries: [JSON] = []
            for entry in value.array ?? TOMLArray() { entries.append(try json(of: entry.tomlValue, key: key, path: path)) }
            return .array(entries)
        case .table:
            guard let table = value.table else { return .object([]) }
            var members: [(key: String, value: JSON)] = []
            for name in table.keys {
                guard let member = table[name] else { continue }
                members.append((name, try json(of: member.tomlValue, key: key, path: path)))
            }
            return .object(members)
        case .dateTime:
            guard let dateTime = value.dateTime, dateTime.offset != nil, let date = dateTime.fDate else {
                throw ConfigurationError("config file \(path): '\(key)' holds a date and time without an offset; write it with one, such as Z")
            }
            return .string(date.formatted(.iso8601))
        case .date, .time:
            throw ConfigurationError("config file \(path): '\(key)' holds a local date or time; write a date and time with an offset, such as Z")
        }
    }
}

/// Lines and columns in configuration text, for errors that name where a key was written.
enum TextPosition {
    /// The line and column (from 1) of the byte at `offset`.
    static func of(offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, bytes.count) where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        return (line, offset - lineStart + 1)
    }

    /// The lines of the top object's member names, in order, in a valid JSON document.
    static func topLevelKeyLines(ofJSON bytes: [UInt8]) -> [Int] {
        var lines: [Int] = []
        var line = 1
        var depth = 0
        var index = 0
        var stringStartLine = 0
        var lastStringAtTop = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\n"): line += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: ":") where lastStringAtTop: lines.append(stringStartLine)
            case UInt8(ascii: "\""):
                stringStartLine = line
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                lastStringAtTop = depth == 1
                index += 1
                continue
            default: break
            }
            if byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t"), byte != UInt8(ascii: "\r"), byte != UInt8(ascii: "\n") {
                lastStringAtTop = false
            }
            index += 1
        }
        return lines
    }

    /// The line where each top-level key of a TOML document is first written: as
    /// `key = …` or `key.sub = …` before the first table header, or as a `[key]`,
    /// `[key.sub]` or `[[key]]` header.
    static func topLevelKeyLines(ofTOML text: String) -> [String: Int] {
        var lines: [String: Int] = [:]
        var inRootTable = true
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            let name: Substring?
            if line.hasPrefix("[") {
                inRootTable = false
                name = line.drop(while: { $0 == "[" }).prefix(while: { $0 != "]" && $0 != "." }).trimmingCharacters(in: .whitespaces)[...]
            } else if inRootTable, let equals = line.firstIndex(of: "="), !line.hasPrefix("#") {
                name = line[..<equals].prefix(while: { $0 != "." }).trimmingCharacters(in: .whitespaces)[...]
            } else {
                name = nil
            }
            guard let name, !name.isEmpty else { continue }
            let key = String(name.trimmingCharacters(in: CharacterSet(charactersIn: "\"'")))
            if lines[key] == nil { lines[key] = index + 1 }
        }
        return lines
    }
}
