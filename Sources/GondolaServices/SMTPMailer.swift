import CCurl
import Foundation

/// Sends mails to an SMTP server with libcurl: `smtp://user:password@host:port` (STARTTLS
/// when the server offers it) or `smtps://…` (TLS from the start). Each delivery runs on
/// its own thread and waits at most `timeout` seconds.
public struct SMTPMailer: Sendable {
    let url: String
    let timeout: Int

    /// Checks the URL's scheme and host; the error names the value.
    public init(url: String, timeout: Int = 30) throws {
        guard let components = URLComponents(string: url), ["smtp", "smtps"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw MailDeliveryError("smtp_url must look like smtp://user:password@host:port, got '\(url)'")
        }
        self.url = url
        self.timeout = timeout
    }

    /// Hands the mail to the server; throws with curl's reason when it is not taken.
    public func deliver(_ message: MailMessage, id: String) async throws {
        let document = Array(message.rfc5322(messageID: id).utf8)
        let (url, timeout) = (url, timeout)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.send(document, from: message.from, to: message.to, url: url, timeout: timeout) })
            }
        }
    }

    /// The bytes still to hand to curl's read callback.
    private final class Upload {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    private static func send(_ document: [UInt8], from: String, to: String, url: String, timeout: Int) throws {
        guard let curl = curl_easy_init() else { throw MailDeliveryError("libcurl could not start") }
        defer { curl_easy_cleanup(curl) }
        let upload = Upload(document)
        let recipients = curl_slist_append(nil, "<\(MailMessage.address(of: to))>")
        defer { curl_slist_free_all(recipients) }
        _ = gondola_curl_set_string(curl, CURLOPT_URL, url)
        _ = gondola_curl_set_string(curl, CURLOPT_MAIL_FROM, "<\(MailMessage.address(of: from))>")
        _ = gondola_curl_set_list(curl, CURLOPT_MAIL_RCPT, recipients)
        _ = gondola_curl_set_long(curl, CURLOPT_USE_SSL, Int(CURLUSESSL_TRY.rawValue))
        _ = gondola_curl_set_long(curl, CURLOPT_UPLOAD, 1)
        _ = gondola_curl_set_long(curl, CURLOPT_TIMEOUT, timeout)
        _ = gondola_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
        _ = gondola_curl_set_read_function(curl) { buffer, size, count, context in
            guard let buffer, let context else { return 0 }
            let upload = Unmanaged<Upload>.fromOpaque(context).takeUnretainedValue()
            let length = min(size * count, upload.bytes.count - upload.offset)
            upload.bytes.withUnsafeBufferPointer { source in
                UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + upload.offset, byteCount: length)
            }
            upload.offset += length
            return length
        }
        let retained = Unmanaged.passRetained(upload)
        defer { retained.release() }
        _ = gondola_curl_set_pointer(curl, CURLOPT_READDATA, retained.toOpaque())
        let result = curl_easy_perform(curl)
        guard result == CURLE_OK else {
            throw MailDeliveryError("SMTP delivery to \(to) failed: \(String(cString: curl_easy_strerror(result)))")
        }
    }
}
