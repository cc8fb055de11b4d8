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
