import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `crash.*` RPC methods: `start`, `update`, `list`, `get`, `discard`, `report`,
/// `share`, `unshare`, `phone`.
extension CrashService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "crash.start", CrashMoment.self, CrashAnswer.self, rules: "a new draft (`source: \"manual\"`); `lat` and `lon` together", crashStart)
        registrations.register(
            "crash.update", CrashUpdate.self, CrashAnswer.self,
            rules:
                "`injured` ⊆ `myself`, `my_passengers`, `other_driver`, `other_driver_passengers`, `no_one`, `unsure`, where `no_one` and `unsure` stand alone (107 naming the field)",
            crashUpdate)
        registrations.register("crash.list", NoFields.self, CrashList.self, rules: "", crashList)
        registrations.register(
            "crash.get", CrashReference.self, CrashAnswer.self,
            rules: "photos by section: `license_insurance`, `licence_plate`, `other_vehicle_damage`, `your_vehicle_damage`, `crash_scene`", crashGet)
        registrations.register(
            "crash.discard", CrashReference.self, CrashChange.self, rules: "drafts only (a crash with a report: 108); rows and files are deleted",
            crashDiscard)
        registrations.register(
            "crash.report", CrashReference.self, CrashAnswer.self,
            rules:
                "108 until injuries, a note or a photo has been given; renders the PDF (crash time and place, injuries, note, each section with its photos)",
            crashReport)
        registrations.register(
            "crash.share", CrashShare.self, CrashLink.self,
            rules: "anyone may download the report there (default 7 days, at most 90; `ttl` in seconds); a new share revokes the previous link",
            crashShare)
        registrations.register("crash.phone", CrashPhone.self, CrashPhoneAnswer.self, rules: "an empty number clears it", crashPhone)
        registrations.register("crash.unshare", CrashReference.self, CrashChange.self, rules: "the shared link stops working", crashUnshare)
    }

    /// Answers `crash.start`.
    func crashStart(_ context: RPCContext, _ request: CrashMoment) async throws -> CrashAnswer {
        let crash = try await create(owner: context.user, source: .manual, place: request.place, occurredAt: request.occurredAt)
        return CrashAnswer(crash: crash, photos: [])
    }

    /// Answers `crash.update`.
    func crashUpdate(_ context: RPCContext, _ request: CrashUpdate) async throws -> CrashAnswer {
        let (crash, photos) = try await update(request.crash, by: context.user, injured: request.injured, note: request.note)
        return CrashAnswer(crash: crash, photos: photos)
    }

    /// Answers `crash.list`.
    func crashList(_ context: RPCContext, _: NoFields) async throws -> CrashList {
        CrashList(crashes: try await crashes(of: context.user))
    }

    /// Answers `crash.get`.
    func crashGet(_ context: RPCContext, _ request: CrashReference) async throws -> CrashAnswer {
        let crash = try await owned(request.crash, by: context.user)
        return CrashAnswer(crash: crash, photos: try await photos(of: crash))
    }

    /// Answers `crash.discard`.
    func crashDiscard(_ context: RPCContext, _ request: CrashReference) async throws -> CrashChange {
        try await discard(request.crash, by: context.user)
        return CrashChange(crash: request.crash, change: .discarded)
    }

    /// Answers `crash.report`.
    func crashReport(_ context: RPCContext, _ request: CrashReference) async throws -> CrashAnswer {
        let crash = try await report(request.crash, by: context.user)
        return CrashAnswer(crash: crash, photos: try await photos(of: crash), report: CrashHTTPPaths.report(crash.id))
    }

    /// Answers `crash.share`.
    func crashShare(_ context: RPCContext, _ request: CrashShare) async throws -> CrashLink {
        let (token, expiresAt) = try await share(request.crash, by: context.user, ttl: request.ttl)
        return CrashLink(crash: request.crash, url: CrashHTTPPaths.shared(token), expiresAt: expiresAt)
    }

    /// Answers `crash.phone`.
    func crashPhone(_ context: RPCContext, _ request: CrashPhone) async throws -> CrashPhoneAnswer {
        try await setPhone(request.phone, of: context.user)
        return CrashPhoneAnswer(phone: request.phone)
    }

    /// Answers `crash.unshare`.
    func crashUnshare(_ context: RPCContext, _ request: CrashReference) async throws -> CrashChange {
        try await unshare(request.crash, by: context.user)
        return CrashChange(crash: request.crash, change: .unshared)
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
}

/// `crash.start`: where and when a crash happened, both optional: `{lat?, lon?, ts?}`.
struct CrashMoment: RequestContract {
    let place: CrashPlace?
    let occurredAt: Int64?

    init(_ fields: RequestFields) throws(HubError) {
        place = try Self.place(fields)
        occurredAt = try Self.time(fields)
    }

    /// `lat` and `lon` together, or neither.
    static func place(_ fields: RequestFields) throws(HubError) -> CrashPlace? {
        let lat = try fields.noting("with lon").optionalNumber("lat", in: -90...90)
        let lon = try fields.noting("with lat").optionalNumber("lon", in: -180...180)
        switch (lat, lon) {
        case let (lat?, lon?): return CrashPlace(lat: lat, lon: lon)
        case (nil, nil): return nil
        case (nil, _?): throw .badRequest("lat is required")
        case (_?, nil): throw .badRequest("lon is required")
        }
    }

    /// `ts` in Unix milliseconds, from 2000 to a day ahead of now.
    static func time(_ fields: RequestFields) throws(HubError) -> Int64? {
        try fields.noting("Unix ms from 2000 to a day ahead", replacingLimits: true).optionalInteger(
            "ts", in: 946_684_800_000...(unixMilliseconds() + 86_400_000))
    }
}

/// `{crash}`: one of the caller's crashes.
struct CrashReference: RequestContract {
    let crash: String
    init(_ fields: RequestFields) throws(HubError) { crash = try fields.string("crash", maxLength: 64) }
}

/// `crash.update`: `{crash, injured?, note?}`, at least one of the last two.
struct CrashUpdate: RequestContract {
    let crash: String
    let injured: [InjuredParty]?
    let note: String?

    init(_ fields: RequestFields) throws(HubError) {
        crash = try fields.string("crash", maxLength: 64)
        try fields.requireAny(of: ["injured", "note"], "crash.update: give injured, note or both")
        injured = try fields.noting("who was hurt").optionalStringArray("injured", maxCount: InjuredParty.allCases.count, maxLength: 32).map {
            (names) throws(HubError) in try InjuredParty.selection(names)
        }
        note = try fields.optionalString("note", maxLength: CrashService.maxNoteLength, allowEmpty: true)
    }
}

/// `crash.share`: `{crash, ttl?}`, the link's lifetime in seconds.
struct CrashShare: RequestContract {
    let crash: String
    /// In milliseconds.
    let ttl: Int64?
    init(_ fields: RequestFields) throws(HubError) {
        crash = try fields.string("crash", maxLength: 64)
        ttl = try fields.noting("seconds; default 7 days").optionalInteger("ttl", in: 1...(CrashService.maxShareTTL / 1000)).map { $0 * 1000 }
    }
}

/// `crash.phone`: `{phone}`, a number in E.164 or empty to clear it.
struct CrashPhone: RequestContract {
    let phone: String?
    init(_ fields: RequestFields) throws(HubError) {
        let given = try fields.noting("E.164, or empty to clear").string("phone", maxLength: 16, allowEmpty: true)
        phone = given.isEmpty ? nil : try CrashService.phone(given)
    }
}
