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
        expired = try fields.noting("closes the connections with 3005 `expired` (the SDK reconnects and asks for a new token)").bool(
            "expired", default: false)
        expireAt = try fields.noting("Unix seconds when the connections expire; 0 or absent: never").optionalInteger("expire_at", in: 0...Int64(1e12))
            .flatMap { $0 == 0 ? nil : Date(timeIntervalSince1970: Double($0)) }
        info = try ConnectionTokens.json(fields.noting("the connections' new info, kept byte for byte"), raw: "info", base64: "b64info")
    }
}
