import GondolaGeo
import GondolaRESP
import Testing

/// The RESP reader: every RESP2 and RESP3 type, values split across reads, and
/// streams that are not RESP.
@Suite struct RESPParserTests {
    let parser = RESPParser()

    func parsed(_ text: String) throws -> RESPValue? { try parser.parse(Array(text.utf8))?.value }

    @Test func everyType() throws {
        #expect(try parsed("+OK\r\n") == .simpleString("OK"))
        #expect(try parsed("-ERR unknown command\r\n") == .error("ERR unknown command"))
        #expect(try parsed(":-42\r\n") == .integer(-42))
        #expect(try parsed("$5\r\nhe\r\no\r\n") == .bulkString(Array("he\r\no".utf8)))
        #expect(try parsed("$0\r\n\r\n") == .bulkString([]))
        #expect(try parsed("$-1\r\n") == .null && parsed("*-1\r\n") == .null && parsed("_\r\n") == .null)
        #expect(try parsed("*2\r\n:1\r\n$1\r\na\r\n") == .array([.integer(1), .bulkString([97])]))
        #expect(try parsed(",3.25\r\n") == .double(3.25) && parsed(",-inf\r\n") == .double(-.infinity))
        #expect(try parsed("#t\r\n") == .boolean(true) && parsed("#f\r\n") == .boolean(false))
        #expect(try parsed("(3492890328409238509324850943850943825024385\r\n") == .bigNumber("3492890328409238509324850943850943825024385"))
        #expect(try parsed("!21\r\nSYNTAX invalid syntax\r\n") == .error("SYNTAX invalid syntax"))
        #expect(try parsed("=15\r\ntxt:Some string\r\n") == .verbatim(format: "txt", text: "Some string"))
        #expect(try parsed("%1\r\n+first\r\n:1\r\n") == .map([RESPPair(key: .simpleString("first"), value: .integer(1))]))
        #expect(try parsed("~2\r\n+a\r\n+b\r\n") == .set([.simpleString("a"), .simpleString("b")]))
        #expect(
            try parsed(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nhi!\r\n")
                == .push([.bulkString(Array("message".utf8)), .bulkString(Array("ch".utf8)), .bulkString(Array("hi!".utf8))]))
        // An attribute describes the value after it, which is what a caller gets.
        #expect(try parsed("|1\r\n+ttl\r\n:3\r\n:7\r\n") == .integer(7))
    }

    /// A value arriving in pieces is nothing until its last byte, then the same value, with its length.
    @Test func everySplitPoint() throws {
        let whole = Array("*3\r\n$3\r\nSET\r\n%1\r\n+k\r\n,1.5\r\n>2\r\n:1\r\n_\r\n+next\r\n".utf8)
        let first = try #require(try parser.parse(whole))
        #expect(whole.count - first.length == "+next\r\n".utf8.count)
        for cut in 0..<first.length {
            #expect(try parser.parse(Array(whole.prefix(cut))) == nil, "cut at \(cut)")
        }
    }

    @Test func notRESP() {
        func failure(_ text: String) -> String? {
            do {
                _ = try parser.parse(Array(text.utf8))
                return nil
            } catch {
                return error.message
            }
        }
        #expect(failure("HTTP/1.1 400 Bad Request\r\n") == "unknown type byte 0x48 at byte 0")
        #expect(failure("+OK\rX") == "CR without LF at byte 3")
        #expect(failure(":12x\r\n") == "integer '12x' is not an integer")
        #expect(failure("$99999999999\r\n") == "string length 99999999999 is outside 0...67108864")
        #expect(failure("$3\r\nabcd\r\n") == "string of 3 bytes is not followed by CRLF")
        #expect(failure("*2000000\r\n") == "aggregate of 2000000 elements is outside 0...1048576")
        #expect(failure(String(repeating: "*1\r\n", count: 40) + ":1\r\n") == "values nested deeper than 32")
        #expect(failure("#x\r\n") == "boolean 'x' is not t or f")
        #expect(failure("(12a\r\n") == "big number '12a' is not an integer")
    }

    /// Commands go out as arrays of bulk strings, which the reader reads back.
    @Test func commandsRoundTrip() throws {
        var random = SeededRandom(seed: 36)
        for _ in 0..<200 {
            let arguments = (0..<Int(random.next() % 5 + 1)).map { _ in (0..<Int(random.next() % 40)).map { _ in UInt8(random.next() % 256) } }
            var bytes: [UInt8] = []
            RESPCommand.encode(arguments, into: &bytes)
            let (value, length) = try #require(try parser.parse(bytes), "seed 36")
            #expect(length == bytes.count && value == .array(arguments.map(RESPValue.bulkString)), "seed 36")
        }
    }
}
