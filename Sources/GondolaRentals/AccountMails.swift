import GondolaServices

/// The account mails: activation after registering, and the password-reset key. Each
/// carries the app's link (`<account_link_base>activate?key=…`, `…resetpassword?key=…`)
/// and, for activation, a web link to the hub for people reading mail on a computer.
struct AccountMails: Sendable {
    let templates: MailTemplates
    let sender: String
    let linkBase: String
    let publicURL: String

    init(sender: String, linkBase: String, publicURL: String) throws {
        var templates = MailTemplates()
        try templates.register(
            "activate",
            subject: "Activate your account",
            text: """
                Hello {{name}},

                welcome! Open this link on your phone to activate your account:
                {{app_link}}
                {{#web_link}}

                Or open it in a browser:
                {{web_link}}
                {{/web_link}}

                The link works for 7 days. If you did not register, ignore this mail.
                """,
            html: """
                <p>Hello {{name}},</p>
                <p>welcome! <a href="{{app_link}}">Activate your account</a> on your phone.</p>
                {{#web_link}}<p>Or open <a href="{{web_link}}">this link</a> in a browser.</p>{{/web_link}}
                <p>The link works for 7 days. If you did not register, ignore this mail.</p>
                """)
        try templates.register(
            "reset",
            subject: "Reset your password",
            text: """
                Hello {{name}},

                someone (we hope you) asked to reset your password. Open this link on your phone to choose a new one:
                {{app_link}}

                The link works once, for 24 hours. If you did not ask, ignore this mail: your password stays as it is.
                """,
            html: """
                <p>Hello {{name}},</p>
                <p>someone (we hope you) asked to reset your password. <a href="{{app_link}}">Choose a new password</a> on your phone.</p>
                <p>The link works once, for 24 hours. If you did not ask, ignore this mail: your password stays as it is.</p>
                """)
        self.templates = templates
        self.sender = sender
        self.linkBase = linkBase
        self.publicURL = publicURL
    }

    func activation(to email: String, name: String, key: String) throws -> MailMessage {
        var values = ["name": name, "app_link": linkBase + "activate?key=" + key]
        if !publicURL.isEmpty { values["web_link"] = publicURL + "/api/account/activate?key=" + key }
        return try templates.render("activate", values: values, from: sender, to: email)
    }

    func reset(to email: String, name: String, key: String) throws -> MailMessage {
        try templates.render("reset", values: ["name": name, "app_link": linkBase + "resetpassword?key=" + key], from: sender, to: email)
    }
}
