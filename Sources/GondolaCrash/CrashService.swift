import CoreMetrics
import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices
import Logging
import NIOPosix

/// The crash rules: who may see and change a crash, what may be collected, and the
/// push-repository pattern — each change is written to the repository, then published
/// on `crash:<id>` so every device of the owner shows the same draft.
public final class CrashService: Sendable {
    /// The longest note, in characters.
    static let maxNoteLength = 2_000
    /// Photos one section may hold.
    static let maxPhotosPerSection = 20
    /// The largest photo, in bytes.
    public static let maxPhotoBytes = 10 << 20

    let node: Node
    let repository: any CrashRepository
    let files: any CrashFiles
    let links: SignedLinks
    /// Where crash texts (`{"to", "text"}`) wait for the gateway, durably: no request waits on it.
    let textCalls: OutboundCalls
    /// The deep link of a crash text; `{id}` becomes the crash id.
    let linkTemplate: String
    /// Where a detected crash is posted for the owner's phones.
    let notices: NoticeBoard
    let logger: Logger
    /// Held while a file is stored and its row committed, and while a row is deleted and
    /// its file removed: the same bytes uploaded again meanwhile never lose their file.
    /// Callers wait for it as tasks.
    private let fileChanges = TaskKeyedLocks()

    init(
        node: Node, repository: any CrashRepository, files: any CrashFiles, links: SignedLinks, texts: any TextMessageSender,
        outboundCalls: any OutboundCallStore, linkTemplate: String, notices: NoticeBoard = NoticeBoard(),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance, logger: Logger
    ) {
        self.textCalls = OutboundCalls(service: "sms", store: outboundCalls, metrics: metrics, logger: logger) { text in
            try await texts.send(to: try text.callString("to"), text: try text.callString("text"))
        }
        self.notices = notices
        self.node = node
        self.repository = repository
        self.files = files
        self.links = links
        self.linkTemplate = linkTemplate
        self.logger = logger
    }

    /// Removes the files a crash left without a row (a stop between a file's write and
    /// its row's commit, or between a row's deletion and its file's); run at start.
    func sweepFiles() async throws {
        let removed = try await files.sweep()
        if removed > 0 { logger.notice("crash photos: removed unreferenced files", metadata: ["count": "\(removed)"]) }
    }

    // MARK: Crashes

    /// Records a crash for `owner` (detected by telematics or started by hand).
    func create(owner: String, source: CrashSource, place: CrashPlace?, occurredAt: Int64?) async throws(HubError) -> Crash {
        let now = unixMilliseconds()
        let crash = Crash(
            id: RandomID.make("crash-"), owner: owner, source: source, occurredAt: occurredAt ?? now, place: place,
            injured: [], note: "", createdAt: now, updatedAt: now, reportedAt: nil,
            reportHash: nil, shareID: nil, shareExpiresAt: nil)
        try await databaseWrite { try await repository.insert(crash) }
        return crash
    }

    /// The crash `id` when `user` owns it; the same 103 whether it is someone else's or absent.
    func owned(_ id: String, by user: String) async throws(HubError) -> Crash {
        guard let crash = try await databaseRead({ try await repository.crash(id) }), crash.owner == user else {
            throw .permissionDenied("crash \(id) is not yours")
        }
        return crash
    }

    func crashes(of user: String) async throws(HubError) -> [(crash: Crash, photos: Int)] {
        try await databaseRead { try await repository.crashes(of: user) }
    }

    func photos(of crash: Crash) async throws(HubError) -> [CrashPhoto] {
        try await databaseRead { try await repository.photos(of: crash.id) }
    }

    /// Saves the given fields of a crash (a draft is saved on every change) and publishes it.
    func update(_ id: String, by user: String, injured: [InjuredParty]?, note: String?) async throws(HubError) -> (Crash, [CrashPhoto]) {
        var crash = try await owned(id, by: user)
        if let injured { crash.injured = injured }
        if let note { crash.note = note }
        crash.updatedAt = unixMilliseconds()
        try await databaseWrite { try await repository.update(crash) }
        let photos = try await self.photos(of: crash)
        publish(crash.id, ["type": "crash.updated", "crash": CrashAnswer(crash: crash, photos: photos).json])
        return (crash, photos)
    }

    /// Deletes a draft with its photos and their files.
    func discard(_ id: String, by user: String) async throws(HubError) {
        let crash = try await owned(id, by: user)
        guard crash.reportedAt == nil else { throw .notAvailable("crash \(id) has a report and is kept; only drafts can be discarded") }
        try await withFilesLocked { () throws(HubError) in
            let unused = try await databaseWrite { try await repository.delete(id) }
            for hash in unused { await files.remove(hash) }
        }
        publish(id, ["type": "crash.discarded", "crash": .string(id)])
    }

    // MARK: Photos

    /// Stores a photo in a section of the owner's crash: the file first, then its row.
    func addPhoto(to id: String, section: PhotoSection, bytes: [UInt8], image: ImageProbe, fileName: String?, by user: String) async throws(HubError)
        -> CrashPhoto
    {
        _ = try await owned(id, by: user)
        let photo = try await withFilesLocked { () throws(HubError) in
            try await storePhoto(in: id, section: section, bytes: bytes, image: image, fileName: fileName)
        }
        publish(id, ["type": "photo.added", "photo": photo.json])
        return photo
    }

    /// The file, then the row of a new photo; called with the files locked.
    private func storePhoto(in id: String, section: PhotoSection, bytes: [UInt8], image: ImageProbe, fileName: String?) async throws(HubError)
        -> CrashPhoto
    {
        let hash: String
        do {
            hash = try await files.store(bytes)
        } catch {
            throw .internalError("storing a photo failed: \(error)")
        }
        let photoID = RandomID.make("photo-")
        let photo = CrashPhoto(
            id: photoID, crash: id, section: section, fileHash: hash,
            fileName: fileName ?? "\(photoID).\(image.format.fileExtension)", contentType: image.format.contentType,
            size: bytes.count, width: image.width, height: image.height, createdAt: unixMilliseconds())
        let added: Bool
        do {
            added = try await repository.insert(photo, limit: Self.maxPhotosPerSection)
        } catch {
            await removeIfUnused(hash)
            throw .internalError("database write failed: \(error)")
        }
        guard added else {
            await removeIfUnused(hash)
            throw .limitExceeded("section \(section.rawValue) already holds \(Self.maxPhotosPerSection) photos")
        }
        return photo
    }

    /// A photo of the owner's crash with its bytes.
    func photo(_ photoID: String, of id: String, by user: String) async throws(HubError) -> (CrashPhoto, [UInt8]) {
        _ = try await owned(id, by: user)
        guard let photo = try await databaseRead({ try await repository.photo(photoID, of: id) }) else {
            throw .badRequest("crash \(id) has no photo \(photoID)")
        }
        guard let bytes = try await read(photo.fileHash) else { throw .internalError("the file of photo \(photoID) is missing") }
        return (photo, bytes)
    }

    /// Removes a photo: its row, then its file when no other photo has the same bytes.
    func removePhoto(_ photoID: String, of id: String, by user: String) async throws(HubError) -> CrashPhoto {
        _ = try await owned(id, by: user)
        guard let photo = try await databaseRead({ try await repository.photo(photoID, of: id) }) else {
            throw .badRequest("crash \(id) has no photo \(photoID)")
        }
        try await withFilesLocked { () throws(HubError) in
            let unused = try await databaseWrite { try await repository.delete(photo, at: unixMilliseconds()) }
            if unused { await files.remove(photo.fileHash) }
        }
        publish(id, ["type": "photo.removed", "photo": photo.json])
        return photo
    }

    /// Called with the files locked, after a row was not added.
    private func removeIfUnused(_ hash: String) async {
        if (try? await repository.isReferenced(hash)) == false { await files.remove(hash) }
    }

    /// Runs `body` holding the files' lock (see `fileChanges`).
    private func withFilesLocked<T: Sendable>(_ body: () async throws(HubError) -> T) async throws(HubError) -> T {
        try await fileChanges.withLock("files", body)
    }

    /// Publishes a change on the crash's channel; the change is already committed, so a
    /// failure is logged (clients catch up with `crash.get`).
    func publish(_ id: String, _ data: JSON) {
        node.publishInBackground(channel: "crash:\(id)", data: Payload(data))
    }
}

extension CrashService {
    /// Tells the owner of a detected crash on `personal:#<owner>` and by SMS with a deep
    /// link; answers whether a text was queued (the gateway is called in the background from
    /// the durable queue `textCalls`, with its timeout, retries and metrics).
    func notifyDetected(_ crash: Crash, phone given: String?) async -> JSON {
        let link = linkTemplate.replacingOccurrences(of: "{id}", with: crash.id)
        node.tell(crash.owner, ["type": "crash.detected", "crash": CrashSummary(crash: crash, photoCount: 0).json, "link": .string(link)])
        notices.post(
            Notice(
                audience: .users([crash.owner]), channel: PersonalChannel.name(of: crash.owner), category: .update, text: "crash.detected",
                link: ["screen": "crash", "crash": crash.id, "url": link], at: crash.createdAt))
        let stored: String?
        do {
            stored = try await repository.phone(of: crash.owner)
        } catch {
            return ["status": "failed", "error": .string("reading the phone number failed: \(error)")]
        }
        guard let phone = given ?? stored else { return ["status": "no_phone"] }
        let text = "We detected a crash. Collect what happened with Crash Assistant: \(link)"
        guard await textCalls.submit("crash \(crash.id)", ["to": .string(phone), "text": .string(text)]) else {
            return ["status": "failed", "to": .string(phone), "error": "the text queue is full"]
        }
        return ["status": "queued", "to": .string(phone)]
    }

    /// Sets (or, with nil, removes) the number the user's crash texts go to.
    func setPhone(_ phone: String?, of user: String) async throws(HubError) {
        try await databaseWrite { try await repository.setPhone(phone, of: user) }
    }
}

extension CrashService {
    /// How long a share link lasts unless told, and at most.
    static let defaultShareTTL: Int64 = 7 * 86_400_000
    static let maxShareTTL: Int64 = 90 * 86_400_000

    /// Renders the crash's report as a PDF, keeps it, and turns the draft into a report.
    /// Refused (108) while nothing has been collected.
    func report(_ id: String, by user: String) async throws(HubError) -> Crash {
        let crash = try await owned(id, by: user)
        let photos = try await self.photos(of: crash)
        guard crash.hasInformation(photoCount: photos.count) else {
            throw .notAvailable("crash \(id) has nothing to report yet: give who was injured, a note or a photo first")
        }
        let pdf: [UInt8]
        do {
            var pictures: [CrashReportPDF.Photo] = []
            for photo in photos {
                if let bytes = try await files.read(photo.fileHash) { pictures.append(CrashReportPDF.Photo(photo: photo, bytes: bytes)) }
            }
            // Rendering takes up to a few hundred milliseconds: on the thread pool, not a task's thread.
            pdf = try await NIOThreadPool.singleton.runIfActive { [pictures] in try CrashReportPDF.render(crash, photos: pictures) }
        } catch {
            throw .internalError("crash report: \(error)")
        }
        let now = unixMilliseconds()
        let hash = try await withFilesLocked { () throws(HubError) -> String in
            let hash: String
            do {
                hash = try await files.store(pdf)
            } catch {
                throw .internalError("storing a report failed: \(error)")
            }
            if let unused = try await databaseWrite({ try await repository.setReport(id, hash: hash, at: now) }) {
                await files.remove(unused)
            }
            return hash
        }
        var reported = crash
        reported.reportHash = hash
        reported.reportedAt = now
        reported.updatedAt = now
        publish(id, ["type": "report.created", "crash": CrashAnswer(crash: reported, photos: photos).json])
        return reported
    }

    /// The PDF of the owner's last report.
    func reportPDF(_ id: String, by user: String) async throws(HubError) -> [UInt8] {
        try await reportBytes(try owned(id, by: user))
    }

    /// A link under which anyone can download the report until it expires or is revoked.
    func share(_ id: String, by user: String, ttl: Int64?) async throws(HubError) -> (token: String, expiresAt: Int64) {
        let crash = try await owned(id, by: user)
        guard crash.reportHash != nil else { throw .notAvailable("crash \(id) has no report to share yet (crash.report)") }
        let shareID = RandomID.make("share-")
        let expiresAt = unixMilliseconds() + (ttl ?? Self.defaultShareTTL)
        try await databaseWrite { try await repository.setShare(id, shareID: shareID, expiresAt: expiresAt) }
        return (links.sign(resource: "crash-report:\(id)", id: shareID, expiresAt: expiresAt), expiresAt)
    }

    /// Revokes the crash's share link; links handed out before no longer open.
    func unshare(_ id: String, by user: String) async throws(HubError) {
        _ = try await owned(id, by: user)
        try await databaseWrite { try await repository.setShare(id, shareID: nil, expiresAt: nil) }
    }

    /// The report a share link opens, or nil for a link that is forged, expired or revoked.
    func sharedReport(_ token: String) async throws(HubError) -> [UInt8]? {
        guard let grant = links.verify(token, now: unixMilliseconds()), grant.resource.hasPrefix("crash-report:") else { return nil }
        let id = String(grant.resource.dropFirst("crash-report:".count))
        guard let crash = try await databaseRead({ try await repository.crash(id) }), crash.shareID == grant.id else { return nil }
        return try await reportBytes(crash)
    }

    private func reportBytes(_ crash: Crash) async throws(HubError) -> [UInt8] {
        guard let hash = crash.reportHash else { throw .notAvailable("crash \(crash.id) has no report yet (crash.report)") }
        guard let bytes = try await read(hash) else { throw .internalError("the report file of crash \(crash.id) is missing") }
        return bytes
    }

    /// The bytes of `hash`; a storage failure is an internal error.
    private func read(_ hash: String) async throws(HubError) -> [UInt8]? {
        do {
            return try await files.read(hash)
        } catch {
            throw .internalError("reading a file failed: \(error)")
        }
    }
}
