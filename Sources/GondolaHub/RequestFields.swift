import GondolaProtocol

/// Reads an RPC's `data` or a server API body; a bad field answers 107 naming its path.
public typealias RequestFields = JSONFields<HubError>

extension HubError: FieldError {
    public static func invalidField(_ message: String) -> HubError { .badRequest(message) }
}
