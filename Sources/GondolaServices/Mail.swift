import Foundation
import Mustache

/// A mail to one recipient, with a plain-text and an HTML part.
public struct MailMessage: Sendable, Equatable {
    public var from: String
    public var to: String
    public var subject: String
    public var text: String
    public var html: String

    public init(from: String, to: String, subject: String, text: String, html: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
    }

    /// The message as an RFC 5322 document (what an `.eml` file and an SMTP `DATA` hold):
    /// `multipart/alternative` with the text part first, both parts UTF-8 in base64, and a
    /// subject outside ASCII encoded as RFC 2047 words. `date` and `messageID` make it
    /// reproducible in tests.
    public func rfc5322(date: Date = Date(), messageID: String = UUID().uuidString) -> String {
        let boundary = "gondola-" + messageID.filter(\.isLetter)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let domain = Self.address(of: from).split(separator: "@").last.map(String.init) ?? "gondola.local"
        let lines = [
            "From: \(from)",
            "To: \(to)",
            "Subject: \(Self.headerText(subject))",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(messageID)@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "",
            "--\(boundary)",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "",
            Self.base64Lines(text),
            "--\(boundary)",
            "Content-Type: text/html; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "",
            Self.base64Lines(html),
            "--\(boundary)--",
            "",
        ]
        return lines.joined(separator: "\r\n")
    }

    /// The bare address of a mailbox written `Name <address>` or `address`, for the SMTP
    /// envelope (which takes no display name).
    public static func address(of mailbox: String) -> String {
        guard let open = mailbox.lastIndex(of: "<"), let close = mailbox.lastIndex(of: ">"), open < close else {
            return mailbox.trimmingCharacters(in: .whitespaces)
        }
        return String(mailbox[mailbox.index(after: open)..<close])
    }

    /// ASCII as it is; anything else as one RFC 2047 base64 word per 45 bytes of UTF-8.
    static func headerText(_ text: String) -> String {
        guard !text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 32 }) else { return text }
        return stride(from: 0, to: Array(text.utf8).count, by: 45).map { start -> String in
            "=?UTF-8?B?" + Data(Array(text.utf8)[start..<min(start + 45, text.utf8.count)]).base64EncodedString() + "?="
        }.joined(separator: "\r\n ")
    }

    public static func base64Lines(_ text: String) -> String {
        Data(text.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
    }
}

/// The mails a domain sends, each a subject, a text and an HTML Mustache template
/// registered under `<name>.subject`, `<name>.text` and `<name>.html`. `{{value}}` is
/// escaped in the HTML part only; the subject and the text part are plain text.
public struct MailTemplates: Sendable {
    private var library = MustacheLibrary()
    private var names: Set<String> = []

    public init() {}

    /// Adds the three templates of one mail; a template that does not parse names itself.
    public mutating func register(_ name: String, subject: String, text: String, html: String) throws {
        let plain = "{{% CONTENT_TYPE: TEXT}}"
        for (part, source) in [("subject", plain + subject), ("text", plain + text), ("html", html)] {
            do {
                try library.register(source, named: "\(name).\(part)")
            } catch {
                throw MailTemplateError("mail template \(name).\(part) does not parse: \(error)")
            }
        }
        names.insert(name)
    }

    /// The mail `name` for `values`, from `from` to `to`.
    public func render(_ name: String, values: [String: String], from: String, to: String) throws -> MailMessage {
        guard names.contains(name), let subject = library.render(values, withTemplate: "\(name).subject"),
            let text = library.render(values, withTemplate: "\(name).text"),
            let html = library.render(values, withTemplate: "\(name).html")
        else {
            throw MailTemplateError("no mail template named \(name)")
        }
        return MailMessage(from: from, to: to, subject: subject.trimmingCharacters(in: .whitespacesAndNewlines), text: text, html: html)
    }
}

/// A mail template that is missing or does not parse.
public struct MailTemplateError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Where mails go when no SMTP server is configured: each one is an `.eml` file in a
/// folder (written to a temporary name and renamed, so a file is always whole), to be
/// opened with any mail program.
public struct MailFolder: Sendable {
    public let folder: String

    public init(folder: String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// Writes the mail and answers the file's path.
    @discardableResult
    public func deliver(_ message: MailMessage, id: String, date: Date = Date()) throws -> String {
        let name = "\(Int64(date.timeIntervalSince1970 * 1000))-\(id.filter { $0.isLetter || $0.isNumber || $0 == "-" }).eml"
        let path = folder + "/" + name
        let temporary = folder + "/." + name + ".tmp"
        try Data(message.rfc5322(date: date, messageID: id).utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw MailDeliveryError("cannot write \(path): errno \(errno)")
        }
        return path
    }
}

/// A mail that could not be handed over, naming where and why.
public struct MailDeliveryError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
