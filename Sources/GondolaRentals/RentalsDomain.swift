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

    static let bcryptCost = DomainSettingKey.integer(
        "bcrypt_cost", default: 12, in: 4...31, doc: "bcrypt cost of account passwords (each step doubles the time of a login)")
    static let accountLinkBase = DomainSettingKey.text(
        "account_link_base", default: "automagic://",
        doc: "the start of the app links in account mails (`…activate?key=`, `…resetpassword?key=`)"
    ) { base in base.contains(":") ? nil : "expected a URL start like automagic:// , got '\(base)'" }
    static let publicURL = DomainSettingKey.httpURL("public_url", doc: "the hub's public address, for the activation mail's web link")
        .showing(default: "`http://<listen>`")
    static let accountActivatedURL = DomainSettingKey.httpURL(
        "account_activated_url", doc: "where the activation web link redirects (303) once done; a page of the hub's while empty")
    static let smtpURL = DomainSettingKey.text(
        "smtp_url",
        doc: "`smtp://user:password@host:port` (STARTTLS when offered) or `smtps://…`; mails go to `<data folder>/mail/*.eml` while empty")
    static let mailFrom = DomainSettingKey.text("mail_from", default: "Automagic <no-reply@automagic.local>", doc: "the sender of account mails")
    static let fleets = DomainSettingKey.text(
        "fleets", default: "fleets", doc: "the folder of fleet files (`demo.json` for `--demo`, `service-areas.geojson`)")
    static let serviceAreas = DomainSettingKey.text(
        "rental_service_areas", doc: "GeoJSON polygons of the served areas, for the swapped-coordinates check"
    ).showing(default: "`fleets/service-areas.geojson` when it exists")
    public var settingKeys: [ConfigurationKeyInfo] {
        [Self.bcryptCost.info]
            + [Self.accountLinkBase, Self.publicURL, Self.accountActivatedURL, Self.smtpURL, Self.mailFrom, Self.fleets, Self.serviceAreas].map(
                \.info)
    }
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
        let smtpURL = try settings.value(of: Self.smtpURL)
        let smtp: SMTPMailer?
        do {
            smtp = smtpURL.isEmpty ? nil : try SMTPMailer(url: smtpURL)
        } catch {
            throw DomainSetupError("mail: \(error)")
        }
        let publicURL = try settings.value(of: Self.publicURL)
        return RentalsSettings(
            cost: try settings.value(of: Self.bcryptCost), linkBase: try settings.value(of: Self.accountLinkBase),
            publicURL: Self.trimmingSlash(publicURL.isEmpty ? listenURL : publicURL),
            activatedURL: Self.trimmingSlash(try settings.value(of: Self.accountActivatedURL)), sender: try settings.value(of: Self.mailFrom),
            smtp: smtp, fleets: try settings.value(of: Self.fleets), areasFile: try settings.value(of: Self.serviceAreas))
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

    /// A URL without its trailing `/`, so that paths are added with one.
    static func trimmingSlash(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
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
struct CarStored: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("car") { $0.car }]
    let car: Car
}

/// `car_import`'s answer.
struct CarsImported: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.integer("imported", "cars stored") { Int64($0.count) }]
    let count: Int
}

/// `car_remove`'s answer.
struct CarRemoved: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.string("removed", "the car's id") { $0.id }]
    let id: String
}

/// `car_upsert`: one car.
struct CarUpsert: RequestContract {
    let car: Car
    init(_ fields: RequestFields) throws(HubError) { car = try CarInput.car(fields, at: unixMilliseconds()) }
}

/// `car_import`: `{cars: [...]}`, 1 to 2,000 cars with unique ids.
struct CarImport: RequestContract {
    let cars: [Car]
    init(_ fields: RequestFields) throws(HubError) { cars = try CarInput.cars(fields, at: unixMilliseconds()) }
}

/// `car_remove`: `{id}`.
struct CarRemoval: RequestContract {
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
