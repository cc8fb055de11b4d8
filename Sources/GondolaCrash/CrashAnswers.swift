import GondolaHub
import GondolaProtocol

/// A crash without its photos, with counts of what it holds: each entry of `crash.list`,
/// and the start of every answer with a crash.
struct CrashSummary: AnswerObject {
    /// How much a crash holds.
    struct Counts: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .integer("injured") { Int64($0.crash.injured.count) }, .integer("photos") { Int64($0.photoCount) },
            .boolean("note", "whether there is one") { !$0.crash.note.isEmpty },
        ]
        let crash: Crash
        let photoCount: Int
    }

    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.crash.id }, .string("status", "`draft` or `report`") { $0.crash.reportedAt == nil ? "draft" : "report" },
        .string("source", "`manual` or `detected`") { $0.crash.source.rawValue }, .integer("occurred_at", "Unix ms") { $0.crash.occurredAt },
        .object("place", "where it happened; null when not known", orNull: { $0.crash.place.map { Coordinates(lat: $0.lat, lon: $0.lon) } }),
        .strings("injured") { $0.crash.injured.map(\.rawValue) }, .string("note") { $0.crash.note },
        .integer("created_at", "Unix ms") { $0.crash.createdAt }, .integer("updated_at", "Unix ms") { $0.crash.updatedAt },
        .integer("reported_at", "Unix ms, or null for a draft", orNull: { $0.crash.reportedAt }),
        .object("counts") { Counts(crash: $0.crash, photoCount: $0.photoCount) },
    ]
    let crash: Crash
    let photoCount: Int
}

extension CrashPhoto: AnswerObject {
    public static let members: [AnswerMember<Self>] = [
        .string("id") { $0.id }, .string("crash") { $0.crash }, .string("section") { $0.section.rawValue },
        .string("file_name") { $0.fileName }, .string("content_type") { $0.contentType }, .integer("size", "bytes") { Int64($0.size) },
        .integer("width", "pixels") { Int64($0.width) }, .integer("height", "pixels") { Int64($0.height) },
        .integer("created_at", "Unix ms") { $0.createdAt },
    ]
}

/// A crash's photos, a member per section.
struct PhotosBySection: AnswerObject {
    static let members: [AnswerMember<Self>] = PhotoSection.allCases.map { section in
        .objects(section.rawValue) { $0.photos.filter { $0.section == section } }
    }
    let photos: [CrashPhoto]
}

/// A crash with its photos by section: what `crash.start`, `crash.update`, `crash.get`,
/// `crash.report` and the server API's `crash_detected` answer, and what a crash's channel
/// carries.
struct CrashAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] =
        CrashSummary.members(in: { CrashSummary(crash: $0.crash, photoCount: $0.photos.count) }) + [
            .object("photos") { PhotosBySection(photos: $0.photos) },
            .string("report", "the PDF's path (`crash.report`)", ifAny: { $0.report }),
            .json("sms", .object, "`{status: queued|no_phone|failed, to?}` (`crash_detected`)", ifAny: { $0.sms }),
        ]

    let crash: Crash
    let photos: [CrashPhoto]
    var report: String?
    var sms: JSON?
}

/// `crash.list`'s answer: the caller's crashes, each without its photos.
struct CrashList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .objects("crashes", "drafts first, then reports, newest first") { $0.crashes.map { CrashSummary(crash: $0.crash, photoCount: $0.photos) } }
    ]
    let crashes: [(crash: Crash, photos: Int)]
}

/// The answer of a change to one crash that says only what became of it: `crash.discard`
/// (`discarded: true`) and `crash.unshare` (`shared: false`).
struct CrashChange: ResponseContract, AnswerObject {
    /// What became of the crash.
    enum Change { case discarded, unshared }

    static let members: [AnswerMember<Self>] = [
        .string("crash") { $0.crash }, .boolean("discarded", "`crash.discard`", ifAny: { $0.change == .discarded ? true : nil }),
        .boolean("shared", "`crash.unshare`", ifAny: { $0.change == .unshared ? false : nil }),
    ]
    let crash: String
    let change: Change
}

/// `crash.share`'s answer: the link anyone may download the report from.
struct CrashLink: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("crash") { $0.crash }, .string("url", "the shared report's path") { $0.url }, .integer("expires_at", "Unix ms") { $0.expiresAt },
    ]
    let crash: String
    let url: String
    let expiresAt: Int64
}

/// `crash.phone`'s answer: the number kept, or null.
struct CrashPhoneAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.string("phone", "E.164, or null when cleared", orNull: { $0.phone })]
    let phone: String?
}
