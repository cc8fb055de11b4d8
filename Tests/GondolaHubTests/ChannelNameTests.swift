import GondolaHub
import Testing

/// A channel name is parsed once into its parts, which providers read instead of
/// cutting prefixes off the name again.
@Suite struct ChannelNameTests {
    @Test(
        arguments: [
            ("chat:c1", "chat", "c1", nil),
            ("nearby:#ann", "nearby", "#ann", "ann"),
            ("cars:17421.11489", "cars", "17421.11489", nil),
            ("dm:#ann,bob", "dm", "#ann,bob", nil),
            ("lobby", "", "lobby", nil),
            ("a:b:c", "a", "b:c", nil),
        ] as [(String, String, String, String?)])
    func partsAreReadOnce(_ raw: String, _ namespace: String, _ key: String, _ soleUser: String?) throws {
        let name = try ChannelName(raw)
        #expect(name.raw == raw && name.namespace == namespace && name.key == key && name.soleUser == soleUser)
    }
}
