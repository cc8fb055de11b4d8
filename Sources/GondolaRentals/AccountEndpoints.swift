import GondolaDomain
import GondolaProtocol
import GondolaStore
import Hummingbird
import NIOCore

/// The account API under `/api/account/`: `register`, `activate` (GET from the mail's
/// web link, answering a page or redirecting to `account_activated_url`; POST `{key}`
/// for apps), `activate/resend`, `login`, `reset-password/init`, `reset-password/finish`
/// and `change-password` (with `Authorization: Bearer`). Failures answer their HTTP
/// status with `{"error": {"code", "message", "field"?}}`, never 200.
struct AccountEndpoints: Sendable {
    let accounts: AccountService
    let signIn: SignInTokens
    let authentication: BearerAuthentication
    /// Where `GET activate` redirects once done; empty answers a page instead.
    let activatedURL: String

    func addRoutes(to router: HTTPRouter) {
        router.post("/api/account/register") { request, context in
            await answer(status: .created) { () async throws(AccountError) -> JSON in
                let body = try await AccountRequest.read(request)
                let (email, password, name) = (try body.email(), try body.password("password"), try body.name())
                let account = try await accounts.register(email: email, password: password, name: name, address: context.clientAddress)
                return ["user": ["id": .string(account.userID), "name": .string(account.name), "email": .string(account.email)], "activated": false]
            }
        }
        router.get("/api/account/activate") { request, _ in
            await activationPage(key: request.uri.formParameter("key") ?? "")
        }
        router.post("/api/account/activate") { request, _ in
            await answer { () async throws(AccountError) -> JSON in
                let (user, now) = try await accounts.activate(key: try await AccountRequest.read(request).key())
                return ["user": .string(user), "activated": true, "already_activated": .bool(!now)]
            }
        }
        router.post("/api/account/activate/resend") { request, _ in
            await answer { () async throws(AccountError) -> JSON in
                try await accounts.resendActivation(email: try await AccountRequest.read(request).email())
                return ["status": "ok"]
            }
        }
        router.post("/api/account/login") { request, context in
            do {
                let body = try await AccountRequest.read(request)
                let user = try await accounts.login(email: try body.email(), password: try body.string("password"), address: context.clientAddress)
                return try await signIn.response(for: user)
            } catch let error as AccountError {
                return error.response
            } catch {
                return AccountError.internalError("cannot mint a token: \(error)").response
            }
        }
        router.post("/api/account/reset-password/init") { request, _ in
            await answer { () async throws(AccountError) -> JSON in
                try await accounts.requestReset(email: try await AccountRequest.read(request).email())
                return ["status": "ok"]
            }
        }
        router.post("/api/account/reset-password/finish") { request, _ in
            await answer { () async throws(AccountError) -> JSON in
                let body = try await AccountRequest.read(request)
                try await accounts.finishReset(key: try body.key(), newPassword: try body.password("new_password"))
                return ["status": "password_changed"]
            }
        }
        router.post("/api/account/change-password") { request, _ in
            let user = try await authentication.user(of: request).get()
            return await answer { () async throws(AccountError) -> JSON in
                let body = try await AccountRequest.read(request)
                let (current, new) = (try body.string("current_password"), try body.password("new_password"))
                try await accounts.changePassword(user: user, current: current, new: new)
                return ["status": "password_changed"]
            }
        }
    }

    /// The JSON `body` answers with `status`, or its refusal.
    private func answer(status: HTTPResponse.Status = .ok, _ body: () async throws(AccountError) -> JSON) async -> Response {
        do {
            return JSONResponse.make(try await body(), status: status)
        } catch {
            return error.response
        }
    }

    /// The answer to the mail's web link: a redirect to `account_activated_url`, or a
    /// small page saying what happened (with the refusal's status when it failed).
    private func activationPage(key given: String) async -> Response {
        do {
            let (_, activatedNow) = try await accounts.activate(key: try AccountRequest.key(given))
            if !activatedURL.isEmpty {
                return Response(status: .seeOther, headers: [.location: activatedURL])
            }
            return Self.page(
                status: .ok, title: activatedNow ? "Account activated" : "Account already activated",
                text: "Your account is active. You can sign in in the app now.")
        } catch {
            return Self.page(status: error.status, title: "Activation failed", text: error.message)
        }
    }

    static func page(status: HTTPResponse.Status, title: String, text: String) -> Response {
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title)</title><style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}</style></head>
            <body><h1>\(title)</h1><p>\(HTMLText.escape(text))</p></body></html>
            """
        return Response(status: status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}

/// Text made safe to put in HTML.
enum HTMLText {
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
