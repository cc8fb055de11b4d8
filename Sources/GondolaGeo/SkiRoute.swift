import Foundation

/// Travel speeds used to turn distances into time.
public struct SkiSpeeds: Sendable {
    /// Skiing speed by difficulty, metres per second.
    public var skiing: [Difficulty: Double] = [.novice: 3.5, .easy: 5, .intermediate: 7, .advanced: 8, .expert: 7, .freeride: 5, .extreme: 3]
    /// Lift speed by `aerialway`, metres per second; others use `defaultLift`.
    public var lifts: [String: Double] = [
        "gondola": 5, "cable_car": 8, "chair_lift": 2.5, "drag_lift": 3, "t-bar": 3, "platter": 3, "j-bar": 3, "rope_tow": 2, "magic_carpet": 1,
    ]
    public var defaultLift: Double = 3
    /// Waiting and boarding time added to every lift ride, seconds.
    public var liftBoarding: Double = 60
    public var walking: Double = 1.2
    /// Extra seconds per metre climbed on foot.
    public var walkingClimbPenalty: Double = 6

    /// Travel speed along `way` (riding, skiing or walking), in metres per second.
    public func metresPerSecond(on way: SkiWay) -> Double {
        switch way.kind {
        case .lift: way.aerialway.flatMap { lifts[$0] } ?? defaultLift
        case .piste: skiing[way.difficulty ?? .intermediate] ?? 5
        case .walk: walking
        }
    }

    public init() {}

    /// The fastest speed of any edge: A*'s heuristic divides straight distance by it.
    var fastest: Double { max(skiing.values.max() ?? 0, lifts.values.max() ?? 0, defaultLift, walking) }
}

/// One part of a route: a lift ride, a piste or a walk.
public struct RouteLeg: Sendable, Equatable {
    public let kind: SkiWay.Kind
    public let name: String
    public let difficulty: Difficulty?
    public let color: String?
    public let coordinates: [GeoPoint]
    public let distance: Double
    /// Seconds.
    public let duration: Double
}

/// A route from one place to another across a resort.
public struct Route: Sendable, Equatable {
    public let legs: [RouteLeg]
    public let distance: Double
    public let duration: Double
    public let ascent: Double
    public let descent: Double
}
