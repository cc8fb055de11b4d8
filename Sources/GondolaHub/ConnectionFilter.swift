/// Which of a user's connections a server API call reaches, as Centrifugo's `client` and
/// `session` members pick them: every one, only the connection whose client id is `client`,
/// only the one whose connect result named `session` (an HTTP-streaming, SSE or
/// unidirectional connection has one; a WebSocket has none, so no session picks it), or the
/// one with both. An empty member picks nothing out, as in Centrifugo.
public struct ConnectionFilter: Sendable, Equatable {
    public let client: String?
    public let session: String?

    /// Every connection of the user.
    public static let every = ConnectionFilter()

    public init(client: String? = nil, session: String? = nil) {
        self.client = client.flatMap { $0.isEmpty ? nil : $0 }
        self.session = session.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether the call reaches the connection with client id `id` and session `key`.
    public func admits(client id: String, session key: String) -> Bool {
        (client == nil || client == id) && (session == nil || session == key)
    }

    /// Whether the call reaches `session`.
    func admits(_ session: ClientSession) -> Bool { admits(client: session.id, session: session.key) }
}
