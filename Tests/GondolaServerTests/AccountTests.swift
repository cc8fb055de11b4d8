import Foundation
import GondolaProtocol
import Testing

@Suite struct AccountTests {
    @Test func anAccountIsActivatedFromItsMailThenSignsInAndResetsItsPassword() async throws {
        let server = try await startRentalsServer()
        let (status, created, _) = try await server.account("register", #"{"email":"Ann@Example.com","password":"first-pass","name":"Ann"}"#)
        #expect(status == 201 && created["user"]?["email"] == "ann@example.com" && created["activated"] == false)
        let (refused, notActive, _) = try await server.account("login", #"{"email":"ann@example.com","password":"first-pass"}"#)
        #expect(refused == 403 && notActive["error"]?["code"] == "account_not_activated")

        let activation = try #require(try await server.awaitMails(1).first)
        #expect(activation.to == "ann@example.com" && activation.subject == "Activate your account")
        #expect(activation.text.contains("automagic://activate?key=") && activation.text.contains("http://gondola.test/api/account/activate?key="))
        let key = try MailFile.key(activation.text, kind: "activate")
        let (pageStatus, page) = try await server.get("/api/account/activate?key=\(key)")
        #expect(pageStatus == 200 && page.contains("Account activated"))
        let (again, answer, _) = try await server.account("activate", #"{"key":"\#(key)"}"#)
        #expect(again == 200 && answer["already_activated"] == true)

        let (signedIn, session, _) = try await server.account("login", #"{"email":"ANN@example.com","password":"first-pass"}"#)
        #expect(signedIn == 200)
        let token = try #require(session["token"]?.stringValue)
        let user = try #require(session["user"]?["id"]?.stringValue)
        let live = try await LiveClient.connect(server.webSocketURL, token: token, encoding: .json)
        #expect(try await live.rpc("rental.list")["planned"] == [])
        await live.close()

        for email in ["ann@example.com", "nobody@example.com"] {
            let (resetStatus, resetBody, _) = try await server.account("reset-password/init", #"{"email":"\#(email)"}"#)
            #expect(resetStatus == 200 && resetBody == ["status": "ok"])
        }
        let reset = try #require(try await server.awaitMails(2).last)
        #expect(reset.to == "ann@example.com" && reset.text.contains("automagic://resetpassword?key="))
        // A marker mail asked for after the unknown address: once it is out, a mail for that address would be too.
        let (markerStatus, _, _) = try await server.account("reset-password/init", #"{"email":"ann@example.com"}"#)
        #expect(markerStatus == 200)
        let mails = try await server.awaitMails(3)
        #expect(mails.count == 3 && mails.allSatisfy { $0.to == "ann@example.com" }, "no mail for an address without an account")
        let resetKey = try MailFile.key(try #require(mails.last).text, kind: "resetpassword")
        let (finished, _, _) = try await server.account("reset-password/finish", #"{"key":"\#(resetKey)","new_password":"second-pass"}"#)
        #expect(finished == 200)
        let (twice, used, _) = try await server.account("reset-password/finish", #"{"key":"\#(resetKey)","new_password":"third-pass!"}"#)
        #expect(twice == 404 && used["error"]?["code"] == "key_not_found")
        #expect(try await server.account("login", #"{"email":"ann@example.com","password":"first-pass"}"#).0 == 401)
        #expect(try await server.account("login", #"{"email":"ann@example.com","password":"second-pass"}"#).0 == 200)

        let bearer = try await server.token(user)
        let (wrong, wrongBody, _) = try await server.account(
            "change-password", #"{"current_password":"nope-nope","new_password":"fourth-pass"}"#, bearer: bearer)
        #expect(wrong == 401 && wrongBody["error"]?["field"] == "current_password")
        #expect(
            try await server.account("change-password", #"{"current_password":"second-pass","new_password":"fourth-pass"}"#, bearer: bearer).0 == 200)
        #expect(try await server.account("login", #"{"email":"ann@example.com","password":"fourth-pass"}"#).0 == 200)
        #expect(try await server.account("change-password", #"{"current_password":"fourth-pass","new_password":"fifth-pass"}"#).0 == 401)
        try await server.stop()
    }

    @Test func everyBadRequestHasItsStatusCodeAndFieldAndChangesNothing() async throws {
        let server = try await startRentalsServer()
        let cases: [(String, String, Int, String, String?)] = [
            ("register", "not json", 400, "bad_body", nil),
            ("register", "[1]", 400, "bad_body", nil),
            ("register", #"{"password":"long-enough","name":"A"}"#, 400, "missing_field", "email"),
            ("register", #"{"email":7,"password":"long-enough","name":"A"}"#, 400, "missing_field", "email"),
            ("register", #"{"email":"a@b","password":"long-enough","name":"A"}"#, 422, "invalid_field", "email"),
            ("register", #"{"email":"a@b.c","password":"short","name":"A"}"#, 422, "invalid_field", "password"),
            ("register", #"{"email":"a@b.c","password":"\#(String(repeating: "x", count: 73))","name":"A"}"#, 422, "invalid_field", "password"),
            ("register", #"{"email":"a@b.c","password":"long-enough","name":"  "}"#, 422, "invalid_field", "name"),
            (
                "register", #"{"email":"a@b.c","password":"long-enough","name":"A","pad":"\#(String(repeating: "x", count: 20_000))"}"#, 413,
                "body_too_large", nil
            ),
            ("activate", #"{"key":"short"}"#, 422, "invalid_field", "key"),
            ("activate", #"{"key":"\#(String(repeating: "A", count: 43))"}"#, 404, "key_not_found", "key"),
            ("reset-password/finish", #"{"key":"\#(String(repeating: "A", count: 43))","new_password":"long-enough"}"#, 404, "key_not_found", "key"),
            ("reset-password/finish", #"{"key":"\#(String(repeating: "A", count: 43))","new_password":"x"}"#, 422, "invalid_field", "new_password"),
            ("reset-password/init", #"{"email":"nobody"}"#, 422, "invalid_field", "email"),
            ("login", #"{"email":"ghost@example.com","password":"whatever1"}"#, 401, "invalid_credentials", nil),
        ]
        for (path, body, status, code, field) in cases {
            let (got, answer, _) = try await server.account(path, body)
            #expect(
                got == status && answer["error"]?["code"] == .string(code) && answer["error"]?["field"] == field.map(JSON.string),
                "\(path) \(body.prefix(60)) answered \(got) \(answer.text)")
        }
        #expect(try await server.account("register", #"{"email":"bo@example.com","password":"long-enough","name":"Bo"}"#).0 == 201)
        let (taken, takenBody, _) = try await server.account("register", #"{"email":"BO@example.com","password":"other-pass","name":"Bob"}"#)
        #expect(taken == 409 && takenBody["error"]?["code"] == "email_taken" && takenBody["error"]?["field"] == "email")
        let (page, html) = try await server.get("/api/account/activate?key=nope")
        #expect(page == 422 && html.contains("Activation failed"))
        #expect(try await server.awaitMails(1).count == 1, "only the accepted registration sent a mail")
        try await server.stop()
    }

    @Test func repeatedFailedLoginsAreSlowedDownWithRetryAfterAndOthersStillSignIn() async throws {
        let server = try await startRentalsServer()
        for email in ["cy@example.com", "di@example.com"] {
            #expect(try await server.account("register", #"{"email":"\#(email)","password":"right-pass","name":"X"}"#).0 == 201)
        }
        for mail in try await server.awaitMails(2) {
            #expect(try await server.account("activate", #"{"key":"\#(try MailFile.key(mail.text, kind: "activate"))"}"#).0 == 200)
        }
        for _ in 0..<5 { #expect(try await server.account("login", #"{"email":"cy@example.com","password":"wrong-pass"}"#).0 == 401) }
        let (slowed, body, headers) = try await server.account("login", #"{"email":"cy@example.com","password":"right-pass"}"#)
        #expect(slowed == 429 && body["error"]?["code"] == "too_many_attempts")
        let retryAfter = try #require((headers["Retry-After"] as? String).flatMap(Int.init))
        #expect((1...900).contains(retryAfter))
        #expect(try await server.account("login", #"{"email":"di@example.com","password":"right-pass"}"#).0 == 200, "another account signs in")
        try await server.stop()
    }
}
