import Foundation
import GondolaProtocol

/// What the server API's `refresh` does to a connection, as Centrifugo's: `expired` closes it
/// with 3005; otherwise it expires at `expireAt` (never when nil; a time already past closes it
/// with 3005 too) and its `info` becomes `info` when one is given. A connection it prolongs is
/// told with a refresh push (`expires`, `ttl`).
public struct ConnectionRefresh: Sendable, Equatable {
    public var expired: Bool
    public var expireAt: Date?
    public var info: RawJSON?

    public init(expired: Bool = false, expireAt: Date? = nil, info: RawJSON? = nil) {
        self.expired = expired
        self.expireAt = expireAt
        self.info = info
    }

    /// Reads the server API's request: `expired`, `expire_at` (Unix seconds, 0: never) and
    /// `info` or `b64info` (base64 of JSON); a field of the wrong shape answers 107 naming it.
    public init(request fields: RequestFields) throws(HubError) {
        expired = fields.has("expired") ? try fields.bool("expired") : false
        expireAt = try fields.optionalInteger("expire_at", in: 0...Int64(1e12)).flatMap { $0 == 0 ? nil : Date(timeIntervalSince1970: Double($0)) }
        info = try ConnectionTokens.json(fields, raw: "info", base64: "b64info")
    }
}
