import GondolaHub
import GondolaProtocol
import Testing

/// An answer's member list is its one declaration: the JSON it writes and the members the
/// catalog lists come from it.
@Suite struct AnswerObjectTests {
    struct Item: AnswerObject {
        static let members: [AnswerMember<Self>] = [.string("name") { $0.name }, .integer("rank", ifAny: { $0.rank })]
        let name: String
        let rank: Int64?
    }

    struct Sample: AnswerObject {
        static let members: [AnswerMember<Self>] =
            [
                .string("id", "the sample's") { $0.id }, .boolean("open") { $0.open }, .string("owner", "null without one", orNull: { $0.owner }),
                .object("at", ifAny: { $0.at }), .objects("items", "best first") { $0.items },
            ] + Item.members(in: { $0.items[0] })
        let id: String
        let open: Bool
        let owner: String?
        let at: Coordinates?
        let items: [Item]
    }

    @Test func theMembersListWhatIsWritten() {
        #expect(
            Sample.fields == [
                .required("id", .string, "the sample's"), .required("open", .boolean), .nullable("owner", .string, "null without one"),
                .optional("at", .object, members: [.required("lat", .number), .required("lon", .number)]),
                .required("items", .objectArray, "best first", members: [.required("name", .string), .optional("rank", .integer)]),
                .required("name", .string), .optional("rank", .integer),
            ])
    }

    @Test func aMemberWithoutAValueIsNullOrLeftOutAsDeclared() {
        let bare = Sample(id: "s", open: false, owner: nil, at: nil, items: [Item(name: "a", rank: nil)])
        #expect(bare.json.text == #"{"id":"s","open":false,"owner":null,"items":[{"name":"a"}],"name":"a"}"#)
        let full = Sample(
            id: "s", open: true, owner: "ann", at: Coordinates(lat: 47.5, lon: 11.25), items: [Item(name: "a", rank: 1), Item(name: "b", rank: nil)])
        #expect(
            full.json.text
                == #"{"id":"s","open":true,"owner":"ann","at":{"lat":47.5,"lon":11.25},"items":[{"name":"a","rank":1},{"name":"b"}],"name":"a","rank":1}"#
        )
    }
}
