import GondolaProtocol
import Testing

@Suite struct JSONParserTests {
    @Test func parsesEveryKindOfValue() throws {
        let json = try JSONParser.parse(#" {"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "x\"y\\z\u00e9\ud83d\ude00"}, "d": {}} "#)
        #expect(json["a"] == [1, -2.5, 300.0, true, false, nil])
        #expect(json["b"]?["c"] == .string("x\"y\\zé😀"))
        #expect(json["d"] == .object([]))
    }

    @Test func keepsMemberOrderWhenWritten() throws {
        let text = #"{"z":1,"a":{"y":[],"b":"é"},"m":null}"#
        #expect(try JSONParser.parse(text).text == text)
    }

    @Test func escapesControlCharactersSoOutputStaysOnOneLine() throws {
        let value = JSON.string("line1\nline2\t\u{01}\"")
        let text = value.text
        #expect(!text.contains("\n"))
        #expect(text == #""line1\nline2\t\u0001\"""#)
        #expect(try JSONParser.parse(text) == value)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "\"\\x\"", "\"\\ud800\"",
        "{\"a\":1} x", "[1 2]", "nan", "\"a\u{01}b\"", "1e400",
    ])
    func refusesMalformedInput(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self, "after an escape") { try JSONParser.parse([0x22, 0x5C, 0x6E, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self, "a truncated sequence") { try JSONParser.parse([0x22, 0x61, 0xC3, 0x22]) }
    }

    @Test func stringsReadTheSameWhicheverPathTheyTake() throws {
        #expect(try JSONParser.parse(Array(#""plain ascii""#.utf8)) == .string("plain ascii"))
        #expect(try JSONParser.parse([0x22, 0x61, 0xC3, 0xA9, 0x22]) == .string("aé"))
        #expect(try JSONParser.parse(Array(#""tab\there é""#.utf8)) == .string("tab\there é"))
        #expect(try JSONParser.parse(Array(#"{"k\u00e9y":"v"}"#.utf8)) == ["kéy": "v"])
    }

    @Test func limitsNesting() {
        let deep = String(repeating: "[", count: JSONParser.maxDepth + 1) + String(repeating: "]", count: JSONParser.maxDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(throws: Never.self) { try JSONParser.parse(fine) }
    }

    @Test func rawJSONKeepsItsSpellingAndComparesByValue() throws {
        let raw = try RawJSON(validating: Array(#" { "b" : [ 1 , 2 ] } "#.utf8))
        #expect(raw.description == #"{ "b" : [ 1 , 2 ] }"#, "the value as written, without the white space around it")
        #expect(JSON.raw(raw) == ["b": [1, 2]])
        #expect(RawJSON(["b": [1, 2]]).description == #"{"b":[1,2]}"#, "a value the hub writes is compact")
    }

    @Test func integersStayIntegers() throws {
        #expect(try JSONParser.parse("9007199254740993") == .int(9_007_199_254_740_993))
        #expect(JSON.double(3).text == "3")
        #expect(JSON.double(0.25).text == "0.25")
    }

    @Test func integersAreSpelledAsSwiftSpellsThem() {
        let edges: [Int64] = [0, 7, -7, 9, 10, -10, 99, 100, 12_345, -999_999, .max, .min, .max - 1, .min + 1]
        for number in edges {
            #expect(JSON.int(number).text == String(number))
            var writer = JSONWriter()
            writer.writeNumber(number)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(number))
        }
        #expect(JSON.double(-42).text == "-42" && JSON.double(-0.0).text == "0" && JSON.double(999_999_999_999_999).text == "999999999999999")
    }

    @Test func stringsWithAndWithoutEscapesAreWrittenTheSameWayAsByteByByte() throws {
        for text in ["", "ann", "u-1234567890123456789", "é😀", "a\"b", "back\\slash", "tab\tin", "\u{1f}", String(repeating: "x", count: 300)] {
            var writer = JSONWriter()
            writer.writeString(text)
            #expect(try JSONParser.parse(writer.bytes) == .string(text), "\(text)")
            #expect(!writer.bytes.contains(0x0A))
        }
    }
}

@Suite struct FrameTests {
    @Test func splitsNewlineDelimitedValues() throws {
        let values = try Frame.values(in: Array("{\"id\":1}\n\n{\"id\":2}\r\n  \n{}".utf8))
        #expect(values.count == 3)
        #expect(values[2] == .object([]))
    }

    @Test func joinsMessagesWithNewlines() {
        #expect(Frame.join([Array("{}".utf8), Array("{\"a\":1}".utf8)]) == Array("{}\n{\"a\":1}".utf8))
    }
}
