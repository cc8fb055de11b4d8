import GondolaProtocol
import Logging

/// How a session refuses: what it logs of a refused command or connection (rate-limited by
/// the node's `RefusalLog`, so that the log says who was refused, for what and why without
/// flooding), and the disconnect a unidirectional connection's failed connect ends with.
extension ClientSession {
    /// Closes with 3501 and logs why (rate-limited, `RefusalLog`), so that a client sending
    /// garbage can be found.
    public func closeForBadRequest(_ reason: String) {
        node.refusals.log(
            "bad request", "closing client: bad request", level: .notice,
            metadata: [
                "client": "\(id)", "user": "\(user ?? "")", "encoding": "\(encoding.rawValue)", "code": "\(DisconnectCode.badRequest.code)",
                "reason": "\(reason)",
            ])
        close(DisconnectCode.badRequest.with(reason: "bad request: \(reason)"))
    }

    /// Logs a command refused with the error or disconnect `code` (rate-limited per command and
    /// code, `RefusalLog`): who (user, client), what (command, channel, RPC method) and why.
    func logRefusal(_ command: Command, code: Int, reason: String) {
        var metadata: Logger.Metadata = [
            "user": "\(user ?? "")", "client": "\(id)", "command": "\(command.methodName)", "code": "\(code)", "reason": "\(reason)",
        ]
        if let channel = command.channel { metadata["channel"] = "\(channel)" }
        if case let .rpc(method, _) = command.method { metadata["method"] = "\(method)" }
        node.refusals.log("\(command.methodName) \(code)", "command refused", metadata: metadata)
    }

    /// The disconnect that ends a unidirectional connection whose connect failed with `error`.
    static func unidirectionalDisconnect(for error: ProtocolError) -> DisconnectCode {
        switch error.code {
        case ProtocolError.expired.code, ProtocolError.tokenExpired.code: .expired
        case ProtocolError.tooManyRequests.code: .tooManyRequests
        case ProtocolError.permissionDenied.code: .permissionDenied
        default: .internalError
        }
    }
}
