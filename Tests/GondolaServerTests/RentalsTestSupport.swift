import Foundation
import GondolaProtocol
import GondolaServer
import GondolaTestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server with the rentals domain at bcrypt cost 4 (fast tests) and mails written to
/// its data folder.
func startRentalsServer(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) async throws -> RunningServer {
    try await startTravelServer { configuration in
        configuration.domainSettings.values["bcrypt_cost"] = 4
        configuration.domainSettings.values["public_url"] = "http://gondola.test"
        adjust(&configuration)
    }
}

extension RunningServer {
    var mailFolder: String { server.configuration.dataFolder + "/mail" }

    /// The text parts of the mails written so far, oldest first, as (to, subject, text).
    func mails() throws -> [(to: String, subject: String, text: String)] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: mailFolder)) ?? []).filter { $0.hasSuffix(".eml") }.sorted()
        return try names.map { name in try MailFile.parse(String(contentsOfFile: mailFolder + "/" + name, encoding: .utf8)) }
    }

    /// Waits until `count` mails were written (or 5 s pass); answers the mails there are, which the caller checks.
    func awaitMails(_ count: Int) async throws -> [(to: String, subject: String, text: String)] {
        try? await eventually("\(count) mails", within: .seconds(5)) { try mails().count >= count }
        return try mails()
    }

    /// POSTs a JSON body to an account route; answers the status, the body and the headers.
    func account(_ path: String, _ body: String, bearer: String? = nil) async throws -> (Int, JSON, [AnyHashable: Any]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/api/account/\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return (http.statusCode, try JSONParser.parse(Array(data)), http.allHeaderFields)
    }
}

/// Reads the `.eml` files the hub writes (multipart/alternative, base64 parts).
enum MailFile {
    static func parse(_ document: String) throws -> (to: String, subject: String, text: String) {
        let lines = document.components(separatedBy: "\r\n")
        let header = { (name: String) in lines.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) } ?? "" }
        guard let start = lines.firstIndex(of: "Content-Type: text/plain; charset=utf-8") else { throw HarnessError("no text part") }
        let body = lines[(start + 3)...].prefix { !$0.hasPrefix("--") }.joined()
        guard let data = Data(base64Encoded: body) else { throw HarnessError("text part is not base64") }
        return (header("To"), header("Subject"), String(decoding: data, as: UTF8.self))
    }

    /// The key of the first `<kind>?key=` link in a mail's text.
    static func key(_ text: String, kind: String) throws -> String {
        guard let range = text.range(of: "\(kind)?key=") else { throw HarnessError("no \(kind) link in: \(text)") }
        return String(text[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }
}
