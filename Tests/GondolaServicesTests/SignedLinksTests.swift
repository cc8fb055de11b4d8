import GondolaServices
import Testing

@Suite struct SignedLinksTests {
    let links = SignedLinks(secret: "a-secret-of-at-least-thirty-two-bytes")

    @Test func aLinkGrantsItsResourceUntilItExpires() {
        let token = links.sign(resource: "crash-report:c1", id: "share-1", expiresAt: 2_000)
        let grant = links.verify(token, now: 1_999)
        #expect(grant?.resource == "crash-report:c1" && grant?.id == "share-1" && grant?.expiresAt == 2_000)
        #expect(links.verify(token, now: 2_000) == nil)
    }

    @Test func alteredForgedAndForeignLinksGrantNothing() {
        let token = links.sign(resource: "crash-report:c1", id: "share-1", expiresAt: 2_000)
        let other = SignedLinks(secret: "another-secret-of-at-least-32-bytes!")
        #expect(other.verify(token, now: 0) == nil)
        #expect(SignedLinks(secret: "a-secret-of-at-least-thirty-two-bytes", purpose: "other").verify(token, now: 0) == nil)
        let parts = token.split(separator: ".")
        let longer = other.sign(resource: "crash-report:c1", id: "share-1", expiresAt: 9_999).split(separator: ".")
        #expect(links.verify(longer[0] + "." + parts[1], now: 0) == nil)
        for bad in ["", ".", "x.y", token + "x", "a.b.c", String(repeating: "A", count: 5000) + ".x"] {
            #expect(links.verify(bad, now: 0) == nil, "\(bad.prefix(20))")
        }
    }
}
