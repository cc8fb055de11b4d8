import GondolaDomain
import Synchronization

/// A notification's words as a phone shows them.
struct RenderedText: Sendable, Equatable {
    let title: String
    let body: String
}

/// The notifications' catalog: for each text key, a title and a body per language, with
/// `{name}` placeholders filled from the notice's values (`{count}` is the number of notices
/// a collapsed notification stands for; a key's `many` form is used when it is above 1).
/// A locale's language picks the texts (`fr-CH` → `fr`); unknown languages get English.
/// Titles and bodies are cut to `maxTitle` and `maxBody` characters: a notification is a
/// glance, and the services limit its size.
enum PushTexts {
    static let maxTitle = 80
    static let maxBody = 180

    private typealias Form = (title: String, body: String)
    private struct Entry {
        let one: Form
        let many: Form?
    }

    private static let catalog: [String: [String: Entry]] = [
        "en": [
            "chat.message": Entry(one: ("{sender}", "{text}"), many: ("{sender}", "{count} new messages · {text}")),
            "trip.broadcast": Entry(one: ("{trip}", "{sender}: {text}"), many: nil),
            "announcement": Entry(one: ("Announcement", "{text}"), many: nil),
            "event.invite": Entry(one: ("{sender} invites you", "{title}"), many: nil),
            "event.going": Entry(one: ("{title}", "{name} is going"), many: nil),
            "event.maybe": Entry(one: ("{title}", "{name} might come"), many: nil),
            "event.declined": Entry(one: ("{title}", "{name} is not going"), many: nil),
            "crash.detected": Entry(one: ("Are you all right?", "A crash was detected. Open the app to complete or discard the report."), many: nil),
            "rental.starting": Entry(one: ("Your rental starts soon", "{car} is yours from {start}"), many: nil),
            "assessment.assigned": Entry(one: ("New questionnaire", "{title}"), many: nil),
            "fence.enter": Entry(one: ("{fence}", "{name} entered {fence}"), many: nil),
            "fence.exit": Entry(one: ("{fence}", "{name} left {fence}"), many: nil),
            "fence.inside": Entry(one: ("{fence}", "{name} is still in {fence}"), many: nil),
            "fence.outside": Entry(one: ("{fence}", "{name} is still away from {fence}"), many: nil),
        ],
        "fr": [
            "chat.message": Entry(one: ("{sender}", "{text}"), many: ("{sender}", "{count} nouveaux messages · {text}")),
            "trip.broadcast": Entry(one: ("{trip}", "{sender} : {text}"), many: nil),
            "announcement": Entry(one: ("Annonce", "{text}"), many: nil),
            "event.invite": Entry(one: ("{sender} vous invite", "{title}"), many: nil),
            "event.going": Entry(one: ("{title}", "{name} vient"), many: nil),
            "event.maybe": Entry(one: ("{title}", "{name} viendra peut-être"), many: nil),
            "event.declined": Entry(one: ("{title}", "{name} ne vient pas"), many: nil),
            "crash.detected": Entry(
                one: ("Tout va bien ?", "Un accident a été détecté. Ouvrez l'app pour compléter ou abandonner le rapport."),
                many: nil),
            "rental.starting": Entry(one: ("Votre location commence bientôt", "{car} est à vous dès {start}"), many: nil),
            "assessment.assigned": Entry(one: ("Nouveau questionnaire", "{title}"), many: nil),
            "fence.enter": Entry(one: ("{fence}", "{name} est entré·e dans {fence}"), many: nil),
            "fence.exit": Entry(one: ("{fence}", "{name} a quitté {fence}"), many: nil),
            "fence.inside": Entry(one: ("{fence}", "{name} est toujours dans {fence}"), many: nil),
            "fence.outside": Entry(one: ("{fence}", "{name} est toujours loin de {fence}"), many: nil),
        ],
        "de": [
            "chat.message": Entry(one: ("{sender}", "{text}"), many: ("{sender}", "{count} neue Nachrichten · {text}")),
            "trip.broadcast": Entry(one: ("{trip}", "{sender}: {text}"), many: nil),
            "announcement": Entry(one: ("Mitteilung", "{text}"), many: nil),
            "event.invite": Entry(one: ("{sender} lädt dich ein", "{title}"), many: nil),
            "event.going": Entry(one: ("{title}", "{name} kommt"), many: nil),
            "event.maybe": Entry(one: ("{title}", "{name} kommt vielleicht"), many: nil),
            "event.declined": Entry(one: ("{title}", "{name} kommt nicht"), many: nil),
            "crash.detected": Entry(
                one: ("Alles in Ordnung?", "Ein Unfall wurde erkannt. Öffne die App, um den Bericht zu ergänzen oder zu verwerfen."),
                many: nil),
            "rental.starting": Entry(one: ("Deine Miete beginnt bald", "{car} gehört dir ab {start}"), many: nil),
            "assessment.assigned": Entry(one: ("Neuer Fragebogen", "{title}"), many: nil),
            "fence.enter": Entry(one: ("{fence}", "{name} hat {fence} betreten"), many: nil),
            "fence.exit": Entry(one: ("{fence}", "{name} hat {fence} verlassen"), many: nil),
            "fence.inside": Entry(one: ("{fence}", "{name} ist noch in {fence}"), many: nil),
            "fence.outside": Entry(one: ("{fence}", "{name} ist noch außerhalb von {fence}"), many: nil),
        ],
    ]

    /// Whether `key` is in the catalog (domains' keys are checked when a notice arrives).
    static func knows(_ key: String) -> Bool { catalog["en"]?[key] != nil }

    /// The text of `key` in `locale`'s language, filled from `values` and `count`.
    static func render(_ key: String, values: [String: String], count: Int, locale: String?) -> RenderedText {
        let language = locale.map { String($0.prefix { $0.isLetter }).lowercased() } ?? "en"
        guard let entry = catalog[language]?[key] ?? catalog["en"]?[key] else {
            return RenderedText(title: "", body: cut(values["text"] ?? "", maxBody))
        }
        let form = count > 1 ? entry.many ?? entry.one : entry.one
        var values = values
        values["count"] = String(count)
        return RenderedText(title: cut(fill(form.title, values), maxTitle), body: cut(fill(form.body, values), maxBody))
    }

    private static func fill(_ template: String, _ values: [String: String]) -> String {
        var result = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            result += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            result += values[name] ?? ""
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// `text` on one line, at most `limit` characters, an ellipsis marking a cut.
    private static func cut(_ text: String, _ limit: Int) -> String {
        let line = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return line.count <= limit ? line : String(line.prefix(limit - 1)) + "…"
    }
}

/// Texts already rendered, by what they are made of: an announcement to thousands of
/// devices is rendered once per language, not once per device. At most `capacity` texts
/// are kept; when it is full the cache is emptied and fills again with what is sent next.
final class RenderedTexts: Sendable {
    static let capacity = 1_024

    private struct Key: Hashable {
        let textKey: String
        let values: [String: String]
        let count: Int
        let locale: String?
    }

    private let texts = Mutex<[Key: RenderedText]>([:])

    /// `content`'s text in its language (`PushTexts.render`).
    func text(of content: PushContent) -> RenderedText {
        let key = Key(textKey: content.textKey, values: content.values, count: content.count, locale: content.locale)
        if let known = texts.withLock({ $0[key] }) { return known }
        let rendered = PushTexts.render(content.textKey, values: content.values, count: content.count, locale: content.locale)
        texts.withLock { texts in
            if texts.count >= Self.capacity { texts.removeAll(keepingCapacity: true) }
            texts[key] = rendered
        }
        return rendered
    }
}
