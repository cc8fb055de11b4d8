import Testing

@testable import GondolaProtocol

/// The one field reader: required and optional members, the protocol's defaults, and errors
/// that name the field by its path in whichever error type the caller picks.
@Suite struct JSONFieldsTests {
    /// An error of a caller's own, to show the reader throws what the caller asks for.
    struct CallerError: FieldError, Equatable {
        let message: String
        static func invalidField(_ message: String) -> CallerError { CallerError(message: message) }
    }

    typealias Fields = JSONFields<CallerError>

    static func parse(_ text: String) throws -> JSON { try JSONParser.parse(Array(text.utf8)) }

    @Test func readsTypedMembersAndNamesBadOnesByPath() throws {
        let fields = try Fields(Self.parse(#"{"name": "Ann", "age": 31, "lat": 46.5, "tags": ["a"], "home": {"city": ""}, "gone": null}"#))
        #expect(try fields.string("name", maxLength: 10) == "Ann")
        #expect(try fields.integer("age", in: 0...150) == 31)
        #expect(try fields.number("lat", in: -90...90) == 46.5)
        #expect(try fields.stringArray("tags", maxCount: 2, maxLength: 5) == ["a"])
        #expect(try fields.optionalString("gone", maxLength: 5) == nil)
        #expect(throws: CallerError(message: "age must be between 0 and 30, got 31")) { try fields.integer("age", in: 0...30) }
        #expect(throws: CallerError(message: "name is 3 characters, more than 2")) { try fields.string("name", maxLength: 2) }
        #expect(throws: CallerError(message: "gone is required")) { try fields.bool("gone") }
        #expect(throws: CallerError(message: "lat must be an integer, got number")) { try fields.integer("lat", in: 0...100) }
        #expect(throws: CallerError(message: "home.city must not be empty")) { try fields.object("home").string("city", maxLength: 5) }
        #expect(throws: CallerError(message: "data must be an object, got array")) { try Fields(.array([])) }
        #expect(try Fields(nil).members.isEmpty)
    }

    @Test func protocolMembersReadAsProtobufDefaultsWhenAbsent() throws {
        let fields = try ProtocolFields(Self.parse(#"{"offset": "18446744073709551", "flag": null}"#), path: "push")
        #expect(try fields.protobufString("epoch") == "")
        #expect(try fields.protobufBool("flag") == false)
        #expect(try fields.uint32("code") == 0)
        #expect(try fields.uint64("offset") == 18_446_744_073_709_551)
        #expect(try fields.optionalObject("info") == nil)
        #expect(try fields.protobufArray("list").isEmpty)
        #expect(throws: ProtocolDecodingError("push.offset must be between 0 and 4294967295, got 18446744073709551")) { try fields.uint32("offset") }
        let wrong = try ProtocolFields(Self.parse(#"{"epoch": 5, "offset": "5x"}"#), path: "push")
        #expect(throws: ProtocolDecodingError("push.epoch must be a string, got number")) { try wrong.protobufString("epoch") }
        #expect(throws: ProtocolDecodingError("push.offset must be an integer, got string")) { try wrong.uint64("offset") }
    }

    @Test func decimalStringsAreIntegersOnlyInTheProtocolMapping() throws {
        let fields = try Fields(Self.parse(#"{"n": "12"}"#))
        #expect(throws: CallerError(message: "n must be an integer, got string")) { try fields.integer("n", in: 0...100) }
        #expect(try fields.protobufInteger("n", in: 0...100) == 12)
    }
}
