import GondolaHub
import GondolaProtocol
import Testing

/// Checks that a replica payload's writer and reader agree: what `json` writes (through
/// its text, as the bus carries it) reads back to the same JSON, and every member it
/// writes is one the reader reads (so the catalog lists it).
public func expectReadBack<Payload: ReplicaPayload>(_ payload: Payload, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let text = payload.json.text
    let read = try Payload(RequestFields(try JSONParser.parse(Array(text.utf8))))
    #expect(read.json.text == text, "\(Payload.self) reads back \(read.json.text), wrote \(text)", sourceLocation: sourceLocation)
    guard case let .object(members) = payload.json else {
        Issue.record("\(Payload.self) writes \(text), not an object", sourceLocation: sourceLocation)
        return
    }
    let listed = Set(Payload.fields.map(\.name))
    let unlisted = members.map(\.key).filter { !listed.contains($0) }
    #expect(unlisted.isEmpty, "\(Payload.self) writes \(unlisted), which its reader does not read", sourceLocation: sourceLocation)
}
