import GondolaHub
import Testing

@Suite struct RandomIDTests {
    @Test(arguments: [1, 12, 15, 16, 17, 32])
    func prefixAndHexDigits(digits: Int) {
        let id = RandomID.make("m", hexDigits: digits)
        #expect(id.hasPrefix("m") && id.utf8.count == 1 + digits)
        #expect(id.dropFirst().allSatisfy { "0123456789abcdef".contains($0) })
        #expect(UserID.isValid(id))
    }

    @Test func idsDiffer() {
        let ids = (0..<10_000).map { _ in RandomID.make("", hexDigits: 16) }
        #expect(Set(ids).count == ids.count)
        // Every hex digit turns up in every position of 10,000 ids.
        for position in 0..<16 {
            let digits = Set(ids.map { $0[$0.index($0.startIndex, offsetBy: position)] })
            #expect(digits.count == 16, "position \(position): \(digits.sorted())")
        }
    }
}
