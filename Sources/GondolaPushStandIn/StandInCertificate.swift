import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A self-signed certificate for `localhost` and 127.0.0.1, made when the stand-in starts:
/// it is both the server's certificate and the root a client trusts (`push_ca_file`).
struct StandInCertificate {
    let pem: String
    let tls: TLSConfiguration

    init() throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Gondola push stand-in") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PrivateKey(key).publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400), issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        pem = try certificate.serializeAsPEM().pemString
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        self.tls = tls
    }
}
