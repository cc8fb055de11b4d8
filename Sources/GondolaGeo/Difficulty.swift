import Foundation

/// Piste difficulty as OpenStreetMap tags it (`piste:difficulty`), easiest first.
/// `freeride` is off-piste terrain, `extreme` terrain that needs climbing gear.
public enum Difficulty: String, Sendable, CaseIterable, Comparable {
    case novice, easy, intermediate, advanced, expert, freeride, extreme

    /// The hardest difficulty: a route capped at it may take every piste, unrated ones included.
    public static let hardest = Difficulty.extreme

    public static func < (lhs: Difficulty, rhs: Difficulty) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// How a line is drawn over its colour, so that two difficulties sharing a colour
/// (North America's green circle for novice and easy, black for advanced and expert)
/// still look different.
public enum LinePattern: String, Sendable {
    case solid, dashed, dotted
}

/// How the map draws one difficulty.
public struct DifficultyStyle: Sendable, Equatable {
    /// CSS hex colour.
    public let color: String
    public let pattern: LinePattern

    public init(_ color: String, _ pattern: LinePattern = .solid) {
        self.color = color
        self.pattern = pattern
    }
}

/// The styles of the difficulties on a map: a named scheme, each difficulty drawn
/// distinctly by colour or, where the scheme shares a colour, by pattern.
public struct DifficultyColors: Sendable, Equatable {
    /// The scheme's name as resort files give it (`european`, `north_american`).
    public let scheme: String
    public let styles: [Difficulty: DifficultyStyle]

    public init(scheme: String, _ styles: [Difficulty: DifficultyStyle]) {
        self.scheme = scheme
        self.styles = styles
    }

    /// How a piste without a difficulty is drawn.
    public static let unrated = DifficultyStyle("#808080", .dotted)

    public func style(for difficulty: Difficulty?) -> DifficultyStyle { difficulty.flatMap { styles[$0] } ?? Self.unrated }
    public func color(for difficulty: Difficulty) -> String { style(for: difficulty).color }

    /// Europe: green, blue, red, black; expert black dashed; freeride orange dashed; extreme purple dotted.
    public static let european = DifficultyColors(
        scheme: "european",
        [
            .novice: DifficultyStyle("#2e9e44"), .easy: DifficultyStyle("#1f6fd1"), .intermediate: DifficultyStyle("#d42a2a"),
            .advanced: DifficultyStyle("#111111"), .expert: DifficultyStyle("#111111", .dashed),
            .freeride: DifficultyStyle("#f08a24", .dashed), .extreme: DifficultyStyle("#8e24aa", .dotted),
        ])
    /// North America: green circle (novice dotted), blue square, black diamond, double
    /// black dashed; freeride orange dashed; extreme purple dotted.
    public static let northAmerican = DifficultyColors(
        scheme: "north_american",
        [
            .novice: DifficultyStyle("#2e9e44", .dotted), .easy: DifficultyStyle("#2e9e44"), .intermediate: DifficultyStyle("#1f6fd1"),
            .advanced: DifficultyStyle("#111111"), .expert: DifficultyStyle("#111111", .dashed),
            .freeride: DifficultyStyle("#f08a24", .dashed), .extreme: DifficultyStyle("#8e24aa", .dotted),
        ])

    /// The known schemes by name.
    public static let schemes = [european, northAmerican]

    /// The scheme a resort at `point` uses: North America's in the Americas, Europe's elsewhere.
    public static func customary(at point: GeoPoint) -> DifficultyColors { point.lon < -30 ? northAmerican : european }
}
