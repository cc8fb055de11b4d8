import Foundation
import Hummingbird
import HummingbirdCore

extension URI {
    /// The query parameter `name` decoded as `application/x-www-form-urlencoded`, as browsers
    /// (`URLSearchParams`, HTML forms) and Go's `URL.Query` read a query: `+` is a space and
    /// `%XX` a byte. The first pair named `name` wins; a pair whose escapes are broken is passed
    /// over as Go passes it over. Nil when the query has no such pair. Hummingbird's
    /// `queryParameters` keeps `+`, so every query the hub reads goes through here.
    public func formParameter(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard Self.formDecoded(parts[0]) == name else { continue }
            guard parts.count > 1 else { return "" }
            if let value = Self.formDecoded(parts[1]) { return value }
        }
        return nil
    }

    private static func formDecoded(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
