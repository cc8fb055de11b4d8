import Foundation
import GRDB
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaServices

/// The Automagic car-rental app's backend as a domain: email accounts with activation
/// and reset mails, cars on a live map cut into cell channels, and planned rentals.
public struct RentalsDomain: Domain {
    public let name = "rentals"
    public var namespaces: Set<String> { [CarCell.namespace] }

    /// `bcrypt_cost` (4–31, 12 by default); `account_link_base` (`automagic://`), the start
    /// of the app links in mails; `public_url`, the hub's address for the web link of the
    /// activation mail; `account_activated_url`, where that link redirects once done (a page
    /// of the hub's when empty); `smtp_url` (mails go to `.eml` files in `var/mail/` when
    /// empty); `mail_from`; `fleets`, the folder of fleet files (`demo.json` for `--demo`);
    /// `rental_service_areas`, a GeoJSON file of the served areas.
    public let settingKeys = [
        "bcrypt_cost", "account_link_base", "public_url", "account_activated_url", "smtp_url", "mail_from", "fleets",
        "rental_service_areas",
    ]
    let settings: DomainSettings
    /// The hub's own address, the `public_url` when none is configured.
    let listenURL: String

    public init(settings: DomainSettings, listenURL: String) {
        self.settings = settings
        self.listenURL = listenURL
    }

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        RentalsSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        RentalsPostgresSchema.register(in: &migrator)
    }

    /// The settings' values, checked (the SMTP URL parsed; nothing opened).
    private func checkedSettings() throws(DomainSetupError) -> RentalsSettings {
        let cost = try settings.integer("bcrypt_cost", default: 12, in: 4...31)
        let linkBase = try settings.string("account_link_base", default: "automagic://")
        guard linkBase.contains(":") else { throw DomainSetupError("'account_link_base' expected a URL start like automagic:// , got '\(linkBase)'") }
        let smtpURL = try settings.string("smtp_url", default: "")
        let smtp: SMTPMailer?
        do {
            smtp = smtpURL.isEmpty ? nil : try SMTPMailer(url: smtpURL)
        } catch {
            throw DomainSetupError("mail: \(error)")
        }
        return RentalsSettings(
            cost: cost, linkBase: linkBase, publicURL: try Self.httpURL("public_url", try settings.string("public_url", default: listenURL)),
            activatedURL: try Self.httpURL("account_activated_url", try settings.string("account_activated_url", default: "")),
            sender: try settings.string("mail_from", default: "Automagic <no-reply@automagic.local>"), smtp: smtp,
            fleets: try settings.string("fleets", default: "fleets"), areasFile: try settings.string("rental_service_areas", default: ""))
    }

    public func checkSettings() throws(DomainSetupError) { _ = try checkedSettings() }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let storage = Self.repositories(context.storage)
        let values = try checkedSettings()
        let route: MailRoute
        do {
            route = try values.smtp.map { .smtp($0) } ?? .folder(try MailFolder(folder: context.dataFolder + "/mail"))
        } catch {
            throw DomainSetupError("mail: \(error)")
        }
        let defaultAreas = values.fleets + "/service-areas.geojson"
        let areas =
            !values.areasFile.isEmpty
            ? try ServiceAreas.load(values.areasFile)
            : FileManager.default.fileExists(atPath: defaultAreas) ? try ServiceAreas.load(defaultAreas) : .none

        let outbox = MailOutbox(queue: storage.mails, route: route, logger: context.logger)
        let accounts = AccountService(
            repository: storage.accounts, hasher: PasswordHasher(cost: UInt8(values.cost)),
            mails: try AccountMails(sender: values.sender, linkBase: values.linkBase, publicURL: values.publicURL), outbox: outbox,
            logger: context.logger)
        let rentals: RentalService
        do {
            rentals = try await RentalService(
                node: context.node, repository: storage.rentals, areas: areas,
                fleetsFolder: values.fleets, notices: context.notices, logger: context.logger)
        } catch {
            throw DomainSetupError("cannot load the cars and rentals: \(error)")
        }
        var registrations = NodeRegistrations()
        rentals.follow(in: &registrations)
        rentals.registerRPC(in: &registrations)
        var serverMethods = ServerAPIMethods()
        rentals.registerServerAPI(in: &serverMethods)
        registrations.provide(CarChannel.options, by: CarChannel(rentals: rentals))
        let endpoints = AccountEndpoints(
            accounts: accounts, signIn: context.signIn, authentication: context.authentication, activatedURL: values.activatedURL)
        return InstalledDomain(
            service: rentals,
            registrations: registrations,
            serverMethods: serverMethods,
            routes: { router in endpoints.addRoutes(to: router) },
            background: {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await outbox.run() }
                    group.addTask { await rentals.sweepEveryMinute() }
                }
            })
    }

    /// The repositories of the context's storage: SQLite, or PostgreSQL shared by a cluster.
    static func repositories(_ storage: DomainStorage) -> (accounts: any AccountRepository, mails: any MailQueue, rentals: any RentalRepository) {
        switch storage {
        case let .sqlite(database):
            return (SQLiteAccountRepository(database: database), SQLiteMailQueue(database: database), SQLiteRentalRepository(database: database))
        case let .postgres(pool, _):
            return (PostgresAccountRepository(pool: pool), PostgresMailQueue(pool: pool), PostgresRentalRepository(pool: pool))
        }
    }

    static func httpURL(_ key: String, _ value: String) throws(DomainSetupError) -> String {
        guard value.isEmpty || value.hasPrefix("http://") || value.hasPrefix("https://") else {
            throw DomainSetupError("'\(key)' expected an http(s) URL, got '\(value)'")
        }
        return value.hasSuffix("/") ? String(value.dropLast()) : value
    }
}

/// The rentals domain's server API methods: `car_upsert`, `car_remove` and `car_import`.
extension RentalService {
    func registerServerAPI(in api: inout ServerAPIMethods) {
        api.register("car_upsert", CarUpsert.self, CarStored.self, rules: "adds the car or changes it (see the car's members above)", carUpsert)
        api.register("car_import", CarImport.self, CarsImported.self, rules: "the batch is stored whole or not at all", carImport)
        api.register("car_remove", CarRemoval.self, CarRemoved.self, rules: "108 while the car has an open rental", carRemove)
    }

    /// Answers `car_upsert`.
    func carUpsert(_ request: CarUpsert) async throws(HubError) -> CarStored {
        try await upsert([request.car])
        return CarStored(car: request.car)
    }

    /// Answers `car_import`.
    func carImport(_ request: CarImport) async throws(HubError) -> CarsImported {
        CarsImported(count: try await upsert(request.cars))
    }

    /// Answers `car_remove`.
    func carRemove(_ request: CarRemoval) async throws(HubError) -> CarRemoved {
        try await remove(request.id)
        return CarRemoved(id: request.id)
    }
}

/// `car_upsert`'s answer: the car as stored.
struct CarStored: ResponseContract {
    static let fields: [FieldContract] = [.required("car", .object, carMembers)]
    let car: Car
    var json: JSON { ["car": car.json] }
}

/// `car_import`'s answer.
struct CarsImported: ResponseContract {
    static let fields: [FieldContract] = [.required("imported", .integer, "cars stored")]
    let count: Int
    var json: JSON { ["imported": .int(Int64(count))] }
}

/// `car_remove`'s answer.
struct CarRemoved: ResponseContract {
    static let fields: [FieldContract] = [.required("removed", .string, "the car's id")]
    let id: String
    var json: JSON { ["removed": .string(id)] }
}

/// `car_upsert`: one car.
struct CarUpsert: RequestContract {
    static let fields = CarInput.fields
    let car: Car
    init(_ fields: RequestFields) throws(HubError) { car = try CarInput.car(fields.json, at: unixMilliseconds()) }
}

/// `car_import`: `{cars: [...]}`, 1 to 2,000 cars with unique ids.
struct CarImport: RequestContract {
    static let fields: [FieldContract] = [.required("cars", .objectArray, "1 to 2,000 cars, ids unique", members: CarInput.fields)]
    let cars: [Car]
    init(_ fields: RequestFields) throws(HubError) { cars = try CarInput.cars(fields.json, at: unixMilliseconds()) }
}

/// `car_remove`: `{id}`.
struct CarRemoval: RequestContract {
    static let fields: [FieldContract] = [.required("id", .string)]
    let id: String
    init(_ fields: RequestFields) throws(HubError) { id = try fields.string("id", maxLength: 64) }
}

/// The rentals domain's settings, as its keys give them.
struct RentalsSettings {
    let cost: Int
    let linkBase: String
    let publicURL: String
    let activatedURL: String
    let sender: String
    /// The SMTP server mails go to; nil: `.eml` files in the data folder.
    let smtp: SMTPMailer?
    let fleets: String
    let areasFile: String
}
