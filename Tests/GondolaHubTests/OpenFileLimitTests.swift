import Testing

@testable import GondolaHub

#if canImport(Glibc)
    import Glibc
#endif

/// `gondola serve` raises its open-file limit to the hard limit, so the shell's soft limit does
/// not cap how many connections a node holds.
@Suite struct OpenFileLimitTests {
    @Test func theSoftLimitIsRaisedToTheHardLimit() throws {
        let before = try #require(OpenFileLimit.current)
        try #require(before.hard > 4096, "the hard limit leaves room to lower the soft one")
        // One below the hard limit: lower than that could starve the suites running beside this one.
        var lowered = rlimit(rlim_cur: rlim_t(before.hard - 1), rlim_max: rlim_t(before.hard))
        #expect(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered) == 0)
        #expect(OpenFileLimit.current?.soft == before.hard - 1)
        let after = try #require(OpenFileLimit.raiseToHardLimit())
        #expect(after.soft == before.hard && after.hard == before.hard)
        #expect(OpenFileLimit.raiseToHardLimit()?.soft == before.hard, "raising again changes nothing")
    }
}
