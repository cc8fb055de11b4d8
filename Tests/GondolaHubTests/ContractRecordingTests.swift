import GondolaHub
import GondolaProtocol
import Testing

/// A request type's reader is its one declaration: run over a recorder it lists the
/// members it reads, with the rules it checks, and the decoder lets only those through.
@Suite struct ContractRecordingTests {
    /// A request that uses each kind of read.
    struct Sample: RequestContract {
        enum Mode: String, CaseIterable { case fast, slow }

        let user: String
        let limit: Int64

        init(_ fields: RequestFields) throws(HubError) {
            user = try fields.noting("who asks").string("user", maxLength: 64)
            limit = try fields.integer("limit", in: 1...100, default: 50)
            _ = try fields.optionalChoice("mode", Mode.self)
            let place = try fields.object("place")
            _ = try place.number("lat", in: -90...90)
            _ = try fields.oneOf(
                [
                    "trip": { (fields) throws(HubError) in try fields.string("trip", maxLength: 8) },
                    "scope": { (fields) throws(HubError) in try fields.text("scope", maxLength: 4_000) },
                ], ifNone: "trip or scope is required", ifSeveral: { _ in "trip or scope, not both" })
            let at = try fields.noting("a time within the hour", replacingLimits: true).integer("at", in: 1_000...2_000)
            _ = try fields.optionalFreeObject("meta")
            // A check of what was read together ends a recording here: every member is read by now.
            guard at > limit else { throw .badRequest("at must be after limit") }
        }
    }

    @Test func theReaderListsWhatItReadsWithItsRules() {
        #expect(
            Sample.fields == [
                .required("user", .string, "1–64 characters; who asks"), .optional("limit", .integer, "1–100, default 50"),
                .optional("mode", .string, "one of fast, slow"),
                .required("place", .object, members: [.required("lat", .number, "-90 to 90")]),
                .optional("trip", .string, "1–8 characters"), .optional("scope", .string, "1–4,000 characters, not blank"),
                .required("at", .integer, "a time within the hour"), .optional("meta", .object),
            ])
    }

    @Test func theDecoderLetsThroughOnlyWhatTheReaderReads() throws {
        let good: JSON = ["user": "ann", "place": ["lat": 45], "trip": "t", "at": 1_500, "meta": ["any": ["thing": 1]]]
        #expect(try Sample.decode(good).user == "ann")
        for (data, refusal) in [
            (good.adding("session", "s"), "unknown field 'session'"),
            (good.adding("place", ["lat": 45, "lon": 6]), "unknown field 'place.lon'"),
            (good.adding("scope", "all"), "trip or scope, not both"),
            (good.adding("limit", 101), "limit must be between 1 and 100, got 101"),
        ] as [(JSON, String)] {
            #expect(throws: HubError.badRequest(refusal)) { try Sample.decode(data) }
        }
    }

    /// A tagged object's variants are all recorded, each member as one that may be left out.
    @Test func everyVariantOfATaggedObjectIsRecorded() {
        struct Tagged: RequestContract {
            init(_ fields: RequestFields) throws(HubError) {
                _ = try fields.variant(
                    "k",
                    [
                        "one": { (fields) throws(HubError) in try fields.string("a", maxLength: .max) },
                        "two": { (fields) throws(HubError) in try fields.bool("b") ? "yes" : "no" },
                    ])
            }
        }
        #expect(Tagged.fields == [.required("k", .string, "one of one, two"), .optional("a", .string, "not empty"), .optional("b", .boolean)])
        #expect(throws: HubError.badRequest("k must be one of one, two, got 'three'")) { try Tagged.decode(["k": "three"]) }
    }
}
