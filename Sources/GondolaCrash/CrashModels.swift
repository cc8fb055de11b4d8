import GondolaHub
import GondolaProtocol

/// Who was hurt in a crash, as the app offers it.
public enum InjuredParty: String, Sendable, CaseIterable {
    case myself
    case myPassengers = "my_passengers"
    case otherDriver = "other_driver"
    case otherDriverPassengers = "other_driver_passengers"
    case noOne = "no_one"
    case unsure

    /// `no_one` and `unsure` each stand alone in a selection.
    var standsAlone: Bool { self == .noOne || self == .unsure }

    /// A selection checked: known values, `no_one` and `unsure` alone; in the order offered.
    static func selection(_ values: [String]) throws(HubError) -> [InjuredParty] {
        var chosen = Set<InjuredParty>()
        for value in values {
            guard let party = InjuredParty(rawValue: value) else {
                throw .badRequest("injured: unknown value '\(value)' (one of \(allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            chosen.insert(party)
        }
        if chosen.count > 1, let alone = chosen.first(where: \.standsAlone) {
            throw .badRequest("injured: '\(alone.rawValue)' stands alone and cannot be combined with other values")
        }
        return allCases.filter(chosen.contains)
    }
}

/// The photo sections of the crash info screens.
public enum PhotoSection: String, Sendable, CaseIterable {
    case licenseInsurance = "license_insurance"
    case licencePlate = "licence_plate"
    case otherVehicleDamage = "other_vehicle_damage"
    case yourVehicleDamage = "your_vehicle_damage"
    case crashScene = "crash_scene"

    /// The heading the report gives the section.
    var title: String {
        switch self {
        case .licenseInsurance: return "Other driver: licence / insurance"
        case .licencePlate: return "Other driver: licence plate"
        case .otherVehicleDamage: return "Other driver: vehicle damage"
        case .yourVehicleDamage: return "Your vehicle damage"
        case .crashScene: return "Crash scene"
        }
    }

    static func named(_ name: String) throws(HubError) -> PhotoSection {
        guard let section = PhotoSection(rawValue: name) else {
            throw .badRequest("section: unknown section '\(name)' (one of \(allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return section
    }
}

/// How a crash came to be recorded.
public enum CrashSource: String, Sendable {
    /// Reported by the telematics backend (`crash_detected`).
    case detected
    /// Started by the user in the app (`crash.start`).
    case manual
}

/// Where a crash happened.
public struct CrashPlace: Sendable, Equatable {
    public var lat: Double
    public var lon: Double
}

/// A crash and what the user collected about it; a draft until a report is made.
public struct Crash: Sendable, Equatable {
    public var id: String
    public var owner: String
    public var source: CrashSource
    /// Unix milliseconds.
    public var occurredAt: Int64
    public var place: CrashPlace?
    public var injured: [InjuredParty]
    public var note: String
    public var createdAt: Int64
    public var updatedAt: Int64
    /// When the last report was made; nil for a draft.
    public var reportedAt: Int64?
    /// The file store hash of the last report's PDF.
    public var reportHash: String?
    /// The share link in force (its id and expiry), if any.
    public var shareID: String?
    public var shareExpiresAt: Int64?

    /// Whether anything has been given yet: injuries, a note or a photo.
    func hasInformation(photoCount: Int) -> Bool { !injured.isEmpty || !note.isEmpty || photoCount > 0 }
}

/// A stored photo of a crash.
public struct CrashPhoto: Sendable, Equatable {
    public var id: String
    public var crash: String
    public var section: PhotoSection
    /// The SHA-256 under which the file store keeps the bytes.
    public var fileHash: String
    public var fileName: String
    public var contentType: String
    public var size: Int
    public var width: Int
    public var height: Int
    public var createdAt: Int64
}
