/// The HTTP paths the crash RPCs hand out.
enum CrashHTTPPaths {
    static func report(_ crash: String) -> String { "/api/crash/\(crash)/report.pdf" }
    static func shared(_ token: String) -> String { "/api/shared/crash/\(token)" }
}
