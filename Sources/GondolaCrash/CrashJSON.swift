import GondolaHub
import GondolaProtocol

/// The JSON clients see for crashes and photos.
enum CrashJSON {
    static func crash(_ crash: Crash, photos: [CrashPhoto]) -> JSON {
        var sections: [(key: String, value: JSON)] = []
        for section in PhotoSection.allCases {
            sections.append((section.rawValue, .array(photos.filter { $0.section == section }.map(photo))))
        }
        return summary(crash, photoCount: photos.count)
            .adding("photos", .object(sections))
    }

    /// A crash without its photos, with counts of what it holds (`crash.list`).
    static func summary(_ crash: Crash, photoCount: Int) -> JSON {
        [
            "id": .string(crash.id),
            "status": .string(crash.reportedAt == nil ? "draft" : "report"),
            "source": .string(crash.source.rawValue),
            "occurred_at": .int(crash.occurredAt),
            "place": crash.place.map { ["lat": .double($0.lat), "lon": .double($0.lon)] } ?? .null,
            "injured": .array(crash.injured.map { .string($0.rawValue) }),
            "note": .string(crash.note),
            "created_at": .int(crash.createdAt),
            "updated_at": .int(crash.updatedAt),
            "reported_at": crash.reportedAt.map { .int($0) } ?? .null,
            "counts": ["injured": .int(Int64(crash.injured.count)), "photos": .int(Int64(photoCount)), "note": .bool(!crash.note.isEmpty)],
        ]
    }

    static func photo(_ photo: CrashPhoto) -> JSON {
        [
            "id": .string(photo.id), "crash": .string(photo.crash), "section": .string(photo.section.rawValue),
            "file_name": .string(photo.fileName), "content_type": .string(photo.contentType),
            "size": .int(Int64(photo.size)), "width": .int(Int64(photo.width)), "height": .int(Int64(photo.height)),
            "created_at": .int(photo.createdAt),
        ]
    }
}

/// A crash with its photos by section: what `crash.start`, `crash.update`, `crash.get`,
/// `crash.report` and the server API's `crash_detected` answer.
struct CrashAnswer: ResponseContract {
    /// The members of a crash without its photos (also each entry of `crash.list`).
    static let summaryFields: [FieldContract] = [
        .required("id", .string), .required("status", .string, "`draft` or `report`"), .required("source", .string, "`manual` or `detected`"),
        .required("occurred_at", .integer, "Unix ms"), .nullable("place", .object, "`{lat, lon}` or null"),
        .required("injured", .stringArray), .required("note", .string), .required("created_at", .integer, "Unix ms"),
        .required("updated_at", .integer, "Unix ms"), .nullable("reported_at", .integer, "Unix ms, or null for a draft"),
        .required("counts", .object, "`{injured, photos, note}`"),
    ]
    static let fields: [FieldContract] =
        summaryFields + [
            .required("photos", .object, "section → `[{id, crash, section, file_name, content_type, size, width, height, created_at}]`"),
            .optional("report", .string, "the PDF's path (`crash.report`)"),
            .optional("sms", .object, "`{status: queued|no_phone|failed, to?}` (`crash_detected`)"),
        ]

    let crash: Crash
    let photos: [CrashPhoto]
    var report: String?
    var sms: JSON?

    var json: JSON {
        var json = CrashJSON.crash(crash, photos: photos)
        if let report { json = json.adding("report", .string(report)) }
        if let sms { json = json.adding("sms", sms) }
        return json
    }
}

/// `crash.list`'s answer: the caller's crashes, each without its photos.
struct CrashList: ResponseContract {
    static let fields: [FieldContract] = [
        .required("crashes", .objectArray, "drafts first, then reports, newest first", members: CrashAnswer.summaryFields)
    ]
    let crashes: [(crash: Crash, photos: Int)]
    var json: JSON { ["crashes": .array(crashes.map { CrashJSON.summary($0.crash, photoCount: $0.photos) })] }
}

/// The answer of a change to one crash that says only what became of it: `crash.discard`
/// (`discarded: true`) and `crash.unshare` (`shared: false`).
struct CrashChange: ResponseContract {
    static let fields: [FieldContract] = [
        .required("crash", .string), .optional("discarded", .boolean, "`crash.discard`"), .optional("shared", .boolean, "`crash.unshare`"),
    ]
    let crash: String
    let member: String
    let value: Bool
    var json: JSON { ["crash": .string(crash), member: .bool(value)] }
}

/// `crash.share`'s answer: the link anyone may download the report from.
struct CrashLink: ResponseContract {
    static let fields: [FieldContract] = [
        .required("crash", .string), .required("url", .string, "the shared report's path"), .required("expires_at", .integer, "Unix ms"),
    ]
    let crash: String
    let url: String
    let expiresAt: Int64
    var json: JSON { ["crash": .string(crash), "url": .string(url), "expires_at": .int(expiresAt)] }
}

/// `crash.phone`'s answer: the number kept, or null.
struct CrashPhoneAnswer: ResponseContract {
    static let fields: [FieldContract] = [.nullable("phone", .string, "E.164, or null when cleared")]
    let phone: String?
    var json: JSON { ["phone": phone.map { .string($0) } ?? .null] }
}
