import Foundation
import GondolaServices
import GondolaTestSupport
import Testing

@Suite struct MailTests {
    func templates() throws -> MailTemplates {
        var templates = MailTemplates()
        try templates.register(
            "activation", subject: "Activate your account, {{name}}",
            text: "Hello {{name}},\nopen {{link}} to activate your account.",
            html: "<p>Hello {{name}},</p><p><a href=\"{{link}}\">Activate</a></p>")
        return templates
    }

    @Test func valuesAreEscapedInTheHTMLPartOnly() throws {
        let mail = try templates().render(
            "activation", values: ["name": "Zoë <Z>", "link": "automagic://activate?key=a&b"],
            from: "noreply@gondola.test", to: "zoe@example.com")
        #expect(mail.subject == "Activate your account, Zoë <Z>")
        #expect(mail.text == "Hello Zoë <Z>,\nopen automagic://activate?key=a&b to activate your account.")
        #expect(mail.html.contains("Hello Zoë &lt;Z&gt;") && mail.html.contains("key=a&amp;b"))
    }

    @Test func missingAndBrokenTemplatesAreNamed() throws {
        let registered = try templates()
        #expect(throws: MailTemplateError.self) { try registered.render("reset", values: [:], from: "a@b", to: "c@d") }
        var empty = MailTemplates()
        do {
            try empty.register("broken", subject: "{{#open}}", text: "", html: "")
            Issue.record("an unclosed section parsed")
        } catch let error as MailTemplateError {
            #expect(error.description.contains("broken.subject"))
        }
    }

    /// The written file, read back by Python's own mail parser.
    @Test func anEMLFileIsAValidMultipartMessage() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-mail-\(UUID().uuidString)").path
        let mailbox = try MailFolder(folder: folder)
        let message = MailMessage(
            from: "noreply@gondola.test", to: "zoe@example.com", subject: "Réinitialiser le mot de passe — Automagic",
            text: "Bonjour Zoë,\n" + String(repeating: "long line ", count: 30), html: "<p>Bonjour Zoë</p>")
        let path = try mailbox.deliver(message, id: "mail-1", date: Date(timeIntervalSince1970: 1_763_800_000))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [URL(fileURLWithPath: path).lastPathComponent])
        let printed = try TestProcess.run([
            "/usr/bin/python3", "-c",
            """
            import email, email.policy, json, sys
            m = email.message_from_binary_file(open(sys.argv[1], 'rb'), policy=email.policy.default)
            parts = [p for p in m.walk() if not p.is_multipart()]
            print(json.dumps({"subject": str(m["subject"]), "to": str(m["to"]), "date": str(m["date"]), "types": [p.get_content_type() for p in parts],
                              "text": parts[0].get_content(), "html": parts[1].get_content(), "defects": len(m.defects)}))
            """, path,
        ]).output
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any])
        #expect(parsed["subject"] as? String == message.subject)
        #expect(parsed["to"] as? String == "zoe@example.com")
        #expect(parsed["date"] as? String == "Sat, 22 Nov 2025 08:26:40 +0000")
        #expect(parsed["types"] as? [String] == ["text/plain", "text/html"])
        #expect(parsed["text"] as? String == message.text && parsed["html"] as? String == message.html)
        #expect(parsed["defects"] as? Int == 0)
    }
}

/// Mails through libcurl to a real SMTP server (aiosmtpd, Debian's python3-aiosmtpd,
/// keeping what it receives in a maildir).
@Suite struct SMTPMailerTests {
    func freePort() throws -> Int {
        let printed = try TestProcess.run([
            "/usr/bin/python3", "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])",
        ])
        return Int(printed.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    @Test func aMailReachesARealSMTPServerWhole() async throws {
        let maildir = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-maildir-\(UUID().uuidString)").path
        let port = try freePort()
        let server = try TestProcess.spawn(
            ["/usr/bin/python3", "-m", "aiosmtpd", "-n", "-l", "127.0.0.1:\(port)", "-c", "aiosmtpd.handlers.Mailbox", maildir], errors: "/dev/null")
        // aiosmtpd does not stop on SIGTERM while it serves.
        defer {
            kill(server, SIGKILL)
            _ = TestProcess.wait(server)
        }
        let mailer = try SMTPMailer(url: "smtp://127.0.0.1:\(port)", timeout: 10)
        // Display names stay in the headers; the SMTP envelope takes the bare addresses.
        let message = MailMessage(
            from: "Automagic <noreply@gondola.test>", to: "Zoe <zoe@example.com>", subject: "Activate your account",
            text: "Open automagic://activate?key=k1", html: "<a href=\"automagic://activate?key=k1\">Activate</a>")
        var delivered = false
        for _ in 0..<50 where !delivered {
            do {
                try await mailer.deliver(message, id: "mail-7")
                delivered = true
            } catch {
                try await Task.sleep(for: .milliseconds(100))  // the server is still starting
            }
        }
        #expect(delivered)
        let received = try FileManager.default.contentsOfDirectory(atPath: maildir + "/new")
        #expect(received.count == 1)
        let text = try String(contentsOfFile: maildir + "/new/" + (received.first ?? ""), encoding: .utf8)
        #expect(text.contains("Subject: Activate your account") && text.contains("To: Zoe <zoe@example.com>"))
        #expect(text.contains("Message-ID: <mail-7@gondola.test>"))
        #expect(text.contains(MailMessage.base64Lines(message.text)))
    }

    @Test func aServerThatIsNotThereAndABadURLAreNamed() async throws {
        let mailer = try SMTPMailer(url: "smtp://127.0.0.1:\(try freePort())", timeout: 5)
        do {
            try await mailer.deliver(MailMessage(from: "a@b.test", to: "c@d.test", subject: "s", text: "t", html: "h"), id: "m")
            Issue.record("delivered to a closed port")
        } catch let error as MailDeliveryError {
            #expect(error.description.hasPrefix("SMTP delivery to c@d.test failed: "))
        }
        for bad in ["http://mail.test", "smtp://", "mail.test:25"] {
            #expect(throws: MailDeliveryError.self) { try SMTPMailer(url: bad) }
        }
    }
}
