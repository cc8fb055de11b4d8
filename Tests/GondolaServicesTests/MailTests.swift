import Foundation
import GondolaServices
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
        let mail = try templates().render("activation", values: ["name": "Zoë <Z>", "link": "automagic://activate?key=a&b"],
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
        let message = MailMessage(from: "noreply@gondola.test", to: "zoe@example.com", subject: "Réinitialiser le mot de passe — Automagic",
                                  text: "Bonjour Zoë,\n" + String(repeating: "long line ", count: 30), html: "<p>Bonjour Zoë</p>")
        let path = try mailbox.deliver(message, id: "mail-1", date: Date(timeIntervalSince1970: 1_763_800_000))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [URL(fileURLWithPath: path).lastPathComponent])
        let parser = Process()
        parser.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        parser.arguments = ["-c", """
            import email, email.policy, json, sys
            m = email.message_from_binary_file(open(sys.argv[1], 'rb'), policy=email.policy.default)
            parts = [p for p in m.walk() if not p.is_multipart()]
            print(json.dumps({"subject": str(m["subject"]), "to": str(m["to"]), "date": str(m["date"]), "types": [p.get_content_type() for p in parts],
                              "text": parts[0].get_content(), "html": parts[1].get_content(), "defects": len(m.defects)}))
            """, path]
        let output = Pipe()
        parser.standardOutput = output
        try parser.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        parser.waitUntilExit()
        let parsed = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(parsed["subject"] as? String == message.subject)
        #expect(parsed["to"] as? String == "zoe@example.com")
        #expect(parsed["date"] as? String == "Sat, 22 Nov 2025 08:26:40 +0000")
        #expect(parsed["types"] as? [String] == ["text/plain", "text/html"])
        #expect(parsed["text"] as? String == message.text && parsed["html"] as? String == message.html)
        #expect(parsed["defects"] as? Int == 0)
    }
}
