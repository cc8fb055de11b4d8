import Foundation

/// What a user shows to other users. The Telegram id and username are stored in
/// the same row but never part of a profile.
public struct Profile: Sendable, Equatable {
    public var id: String
    public var name: String
    public var bio: String = ""
    public var avatarURL: String?
    /// Social links by platform name (`instagram` → URL).
    public var links: [String: String] = [:]

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// A group trip: travellers and the hosts who look after them.
public struct Trip: Sendable, Equatable {
    public var id: String
    public var name: String
    public var resort: String?
    /// Unix milliseconds.
    public var startsAt: Int64
    public var endsAt: Int64

    public init(id: String, name: String, resort: String?, startsAt: Int64, endsAt: Int64) {
        self.id = id
        self.name = name
        self.resort = resort
        self.startsAt = startsAt
        self.endsAt = endsAt
    }

    /// Whether the trip is under way at `now` (Unix milliseconds).
    public func isRunning(at now: Int64) -> Bool { startsAt <= now && now <= endsAt }
}

/// A member's role in a trip.
public enum TripRole: String, Sendable, CaseIterable {
    case host, traveller
}

/// Who may see a traveller's position on the nearby and friends channels.
public enum Visibility: String, Sendable, CaseIterable {
    case everyone, friends, nobody
}

/// Why two users are friends.
public enum FriendSource: String, Sendable {
    /// They share a trip.
    case trip
    /// Both asked.
    case mutual
}
