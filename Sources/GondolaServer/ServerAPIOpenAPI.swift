import GondolaHub
import GondolaProtocol

/// The HTTP server API as an OpenAPI 3.1 document, made from the methods' contracts (the
/// hub's and every installed domain's): one `POST /api/<method>` per method, its body's schema
/// from the request's members (an unlisted member is refused, so none is allowed), its answer's
/// from the answer's members, and the error object. Served at `GET /swagger/openapi.json` when
/// `swagger` is on; the conformance tests check it with `openapi-spec-validator` and call the
/// live API with Schemathesis against it.
public enum ServerAPIOpenAPI {
    /// Where the document is served, beside the server API.
    public static let path = "/swagger/openapi.json"

    /// The document for `contracts`, the server API methods.
    public static func document(_ contracts: [MethodContract], version: String) -> JSON {
        let paths = contracts.filter { $0.surface == .serverAPI }.sorted { $0.name < $1.name }.map { method in
            ("/api/\(method.name)", JSON.object([("post", operation(method))]))
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "Gondola server API", "version": .string(version),
                "description":
                    "Centrifugo's HTTP server API and the domains' administration methods. Every method is `POST /api/<method>` with a JSON object; it answers `{\"result\": …}` or `{\"error\": {\"code\", \"message\"}}` with status 200 (or, with `X-Centrifugo-Error-Mode: transport`, the error object with its HTTP status).",
            ],
            "paths": .object(paths),
            "components": [
                "securitySchemes": [
                    "apiKey": ["type": "apiKey", "in": "header", "name": "X-API-Key"],
                    "authorizationApiKey": [
                        "type": "apiKey", "in": "header", "name": "Authorization", "description": "`apikey <key>`, as Centrifugo takes it",
                    ],
                ],
                "schemas": ["Error": errorSchema],
            ],
            "security": [["apiKey": []], ["authorizationApiKey": []]],
        ]
    }

    private static let errorSchema: JSON = [
        "type": "object", "required": ["code", "message"],
        "properties": ["code": ["type": "integer", "description": "the protocol's error code"], "message": ["type": "string"]],
    ]

    private static let errorAnswer: JSON = [
        "type": "object", "required": ["error"], "properties": ["error": ["$ref": "#/components/schemas/Error"]], "additionalProperties": false,
    ]

    private static func operation(_ method: MethodContract) -> JSON {
        // `batch` answers its replies as they are; every other method inside `result`.
        let answer: JSON =
            method.name == ServerAPI.batchContract.name
            ? object(method.answerFields, closed: false)
            : [
                "type": "object", "required": ["result"], "properties": ["result": object(method.answerFields, closed: false)],
                "additionalProperties": false,
            ]
        func error(_ description: String) -> JSON { ["description": .string(description), "content": ["application/json": ["schema": errorAnswer]]] }
        return [
            "operationId": .string(method.name), "tags": [.string(method.owner)], "description": .string(method.answer),
            "requestBody": ["required": true, "content": ["application/json": ["schema": object(method.fields, closed: true)]]],
            "responses": [
                "200": [
                    "description": "the answer, or the method's error",
                    "content": ["application/json": ["schema": ["oneOf": [answer, errorAnswer]]]],
                ],
                "400": error("the body is not a JSON object"),
                "401": error("no key, or the wrong one"),
                "413": error("the body is larger than 1 MiB"),
            ],
        ]
    }

    /// An object with `members`; `closed` refuses any other member (a request's rule). Free
    /// members (nil) take anything.
    private static func object(_ members: [FieldContract]?, closed: Bool) -> JSON {
        guard let members else { return ["type": "object"] }
        var schema: JSON = ["type": "object", "properties": .object(members.map { ($0.name, field($0, closed: closed)) })]
        let required = members.filter(\.required).map { JSON.string($0.name) }
        if !required.isEmpty { schema = schema.adding("required", .array(required)) }
        return closed ? schema.adding("additionalProperties", false) : schema
    }

    /// One member's schema: its JSON type, null too when it may be null, and its rule.
    private static func field(_ field: FieldContract, closed: Bool) -> JSON {
        let type: String
        var schema: JSON
        switch field.kind {
        case .any: return field.rule.isEmpty ? [:] : ["description": .string(field.rule)]
        case .string: (type, schema) = ("string", [:])
        case .integer: (type, schema) = ("integer", [:])
        case .number: (type, schema) = ("number", [:])
        case .boolean: (type, schema) = ("boolean", [:])
        case .object: (type, schema) = ("object", object(field.members, closed: closed))
        case .stringArray: (type, schema) = ("array", ["items": ["type": "string"]])
        case .numberArray: (type, schema) = ("array", ["items": ["type": "number"]])
        case .objectArray: (type, schema) = ("array", ["items": object(field.members, closed: closed)])
        }
        schema = schema.adding("type", field.nullable ? [.string(type), "null"] : .string(type))
        return field.rule.isEmpty ? schema : schema.adding("description", .string(field.rule))
    }
}
