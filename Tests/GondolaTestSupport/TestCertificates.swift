import Foundation

/// A certificate authority of the test's own and what it signed, made with Debian's `openssl`
/// in a fresh folder: a server certificate for 127.0.0.1 and localhost, a client certificate,
/// and another CA that signed neither (to be refused).
public struct TestCertificates: Sendable {
    public let folder: String
    public var caFile: String { folder + "/ca.crt" }
    public var serverCertificateFile: String { folder + "/server.crt" }
    public var serverKeyFile: String { folder + "/server.key" }
    public var clientCertificateFile: String { folder + "/client.crt" }
    public var clientKeyFile: String { folder + "/client.key" }
    public var otherCAFile: String { folder + "/other-ca.crt" }

    public init() throws {
        folder = NSTemporaryDirectory() + "gondola-tls-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\n".utf8).write(to: URL(fileURLWithPath: folder + "/server.ext"))
        for (name, subject) in [("ca", "/CN=gondola-test-ca"), ("other-ca", "/CN=another-ca")] {
            try openssl([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(folder)/\(name).key", "-out", "\(folder)/\(name).crt",
                "-days", "2", "-subj", subject,
            ])
        }
        for (name, extensions) in [("server", ["-extfile", "\(folder)/server.ext"]), ("client", [])] {
            try openssl([
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(folder)/\(name).key", "-out", "\(folder)/\(name).csr",
                "-subj", "/CN=gondola-test-\(name)",
            ])
            try openssl(
                [
                    "x509", "-req", "-in", "\(folder)/\(name).csr", "-CA", caFile, "-CAkey", "\(folder)/ca.key", "-CAcreateserial",
                    "-out", "\(folder)/\(name).crt", "-days", "2",
                ] + extensions)
        }
    }

    private func openssl(_ arguments: [String]) throws {
        let (status, _) = try TestProcess.run(["/usr/bin/openssl"] + arguments, errors: folder + "/openssl.log")
        guard status == 0 else {
            throw TestRedisError("openssl \(arguments.prefix(2).joined(separator: " ")) failed with \(status); see \(folder)/openssl.log")
        }
    }
}
