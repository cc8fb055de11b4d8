import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices
import Hummingbird
import NIOCore

/// The crash photos over HTTP, for the connection token's user (`Authorization: Bearer`):
/// `POST /api/crash/<id>/photos/<section>` stores the body (a JPEG, PNG or HEIC of at most
/// 10 MiB, recognised from its bytes; `?name=` gives its file name) and answers the photo;
/// `GET /api/crash/<id>/photos/<photo>` serves it; `DELETE` removes it and answers what went.
/// `GET /api/crash/<id>/report.pdf` serves the owner's last report, and
/// `GET /api/shared/crash/<token>` serves it to anyone holding a share link (`crash.share`).
struct CrashPhotoEndpoints: Sendable {
    let crashes: CrashService
    let authentication: BearerAuthentication
    static let maxFileNameLength = 100

    /// The last path part is a section for `POST` and a photo id for `GET` and `DELETE`
    /// (the router wants one parameter name per path).
    func addRoutes(to router: HTTPRouter) {
        router.post("/api/crash/:crash/photos/:part") { request, context in
            try await upload(request, crash: context.parameters.get("crash") ?? "", section: context.parameters.get("part") ?? "")
        }
        router.get("/api/crash/:crash/photos/:part") { request, context in
            let user = try await authentication.user(of: request).get()
            return await JSONResponse.answering { () throws(HubError) in
                let (photo, bytes) = try await crashes.photo(
                    context.parameters.get("part") ?? "", of: context.parameters.get("crash") ?? "", by: user)
                return Response(
                    status: .ok, headers: [.contentType: photo.contentType, .cacheControl: "private, max-age=31536000, immutable"],
                    body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            }
        }
        router.get("/api/crash/:crash/report.pdf") { request, context in
            let user = try await authentication.user(of: request).get()
            return await JSONResponse.answering { () throws(HubError) in
                Self.pdf(try await crashes.reportPDF(context.parameters.get("crash") ?? "", by: user))
            }
        }
        router.get("/api/shared/crash/:token") { _, context in
            await JSONResponse.answering { () throws(HubError) in
                guard let pdf = try await crashes.sharedReport(context.parameters.get("token") ?? "") else {
                    return JSONResponse.error(.notFound, code: 103, "this link is not valid: it was revoked, has expired or was never issued")
                }
                return Self.pdf(pdf)
            }
        }
        router.delete("/api/crash/:crash/photos/:part") { request, context in
            let user = try await authentication.user(of: request).get()
            return await JSONResponse.answering { () throws(HubError) in
                JSONResponse.make(
                    try await crashes.removePhoto(context.parameters.get("part") ?? "", of: context.parameters.get("crash") ?? "", by: user).json)
            }
        }
    }

    private func upload(_ request: Request, crash: String, section name: String) async throws -> Response {
        let user = try await authentication.user(of: request).get()
        let section: PhotoSection
        let fileName: String?
        do throws(HubError) {
            section = try PhotoSection.named(name)
            fileName = try Self.fileName(request.uri.formParameter("name"))
            _ = try await crashes.owned(crash, by: user)
        } catch {
            return JSONResponse.error(error)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: CrashService.maxPhotoBytes)
        } catch {
            return JSONResponse.error(.contentTooLarge, code: 106, "a photo is at most \(CrashService.maxPhotoBytes) bytes")
        }
        let bytes = Array(body.readableBytesView)
        guard let image = ImageProbe(bytes) else {
            return JSONResponse.error(.unsupportedMediaType, code: 107, "the body is not a JPEG, PNG or HEIC image (\(bytes.count) bytes)")
        }
        return await JSONResponse.answering { () throws(HubError) in
            let photo = try await crashes.addPhoto(to: crash, section: section, bytes: bytes, image: image, fileName: fileName, by: user)
            return JSONResponse.make(photo.json, status: .created)
        }
    }

    static func pdf(_ bytes: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/pdf", .contentDisposition: "inline; filename=\"crash-report.pdf\""],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A file name without path separators or control characters, or nil when none was given.
    static func fileName(_ given: String?) throws(HubError) -> String? {
        guard let given, !given.isEmpty else { return nil }
        guard given.count <= maxFileNameLength,
            !given.unicodeScalars.contains(where: { $0 == "/" || $0 == "\\" || $0.properties.generalCategory == .control }),
            given != ".", given != ".."
        else {
            throw .badRequest(
                "name: a file name of at most \(maxFileNameLength) characters without / \\ or control characters, got '\(given.prefix(120))'")
        }
        return given
    }
}
