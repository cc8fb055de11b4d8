import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `crash.*` RPC methods: `start`, `update`, `list`, `get`, `discard`, `report`,
/// `share`, `unshare`, `phone`.
struct CrashRPC: Sendable {
    let crashes: CrashService

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("crash.start") { context, data in
            let fields = try RequestFields(data)
            let crash = try await crashes.create(
                owner: context.user, source: .manual, place: try Self.place(fields),
                occurredAt: try Self.time(fields))
            return CrashJSON.crash(crash, photos: [])
        }
        registrations.register("crash.update") { context, data in
            let fields = try RequestFields(data)
            let id = try fields.string("crash", maxLength: 64)
            let injured =
                fields.has("injured")
                ? try InjuredParty.selection(try fields.stringArray("injured", maxCount: InjuredParty.allCases.count, maxLength: 32))
                : nil
            let note = try fields.optionalString("note", maxLength: CrashService.maxNoteLength, allowEmpty: true)
            guard injured != nil || note != nil else { throw HubError.badRequest("crash.update: give injured, note or both") }
            let (crash, photos) = try await crashes.update(id, by: context.user, injured: injured, note: note)
            return CrashJSON.crash(crash, photos: photos)
        }
        registrations.register("crash.list") { context, _ in
            ["crashes": .array(try await crashes.crashes(of: context.user).map { CrashJSON.summary($0.crash, photoCount: $0.photos) })]
        }
        registrations.register("crash.get") { context, data in
            let crash = try await crashes.owned(try RequestFields(data).string("crash", maxLength: 64), by: context.user)
            return CrashJSON.crash(crash, photos: try await crashes.photos(of: crash))
        }
        registrations.register("crash.discard") { context, data in
            let id = try RequestFields(data).string("crash", maxLength: 64)
            try await crashes.discard(id, by: context.user)
            return ["crash": .string(id), "discarded": true]
        }
        registrations.register("crash.report") { context, data in
            let id = try RequestFields(data).string("crash", maxLength: 64)
            let crash = try await crashes.report(id, by: context.user)
            return CrashJSON.crash(crash, photos: try await crashes.photos(of: crash))
                .adding("report", .string(CrashHTTPPaths.report(crash.id)))
        }
        registrations.register("crash.share") { context, data in
            let fields = try RequestFields(data)
            let id = try fields.string("crash", maxLength: 64)
            let ttl = try fields.optionalInteger("ttl", in: 1...(CrashService.maxShareTTL / 1000)).map { $0 * 1000 }
            let (token, expiresAt) = try await crashes.share(id, by: context.user, ttl: ttl)
            return ["crash": .string(id), "url": .string(CrashHTTPPaths.shared(token)), "expires_at": .int(expiresAt)]
        }
        registrations.register("crash.phone") { context, data in
            let given = try RequestFields(data).string("phone", maxLength: 16, allowEmpty: true)
            let phone = given.isEmpty ? nil : try Self.phone(given)
            try await crashes.setPhone(phone, of: context.user)
            return ["phone": phone.map { .string($0) } ?? .null]
        }
        registrations.register("crash.unshare") { context, data in
            let id = try RequestFields(data).string("crash", maxLength: 64)
            try await crashes.unshare(id, by: context.user)
            return ["crash": .string(id), "shared": false]
        }
    }

    /// A phone number in E.164 form: `+`, then 7 to 15 digits not starting with 0.
    static func phone(_ text: String) throws(HubError) -> String {
        let digits = text.utf8.dropFirst()
        guard text.hasPrefix("+"), (7...15).contains(digits.count), digits.first != UInt8(ascii: "0"),
            digits.allSatisfy({ (48...57).contains($0) })
        else {
            throw .badRequest("phone: expected E.164 like +36201234567, got '\(text)'")
        }
        return text
    }

    /// `lat` and `lon` together, or neither.
    static func place(_ fields: RequestFields) throws(HubError) -> CrashPlace? {
        guard fields.has("lat") || fields.has("lon") else { return nil }
        return CrashPlace(lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180))
    }

    /// `ts` in Unix milliseconds, from 2000 to a day ahead of now.
    static func time(_ fields: RequestFields) throws(HubError) -> Int64? {
        try fields.optionalInteger("ts", in: 946_684_800_000...(unixMilliseconds() + 86_400_000))
    }
}
