/// User ids as tokens, channel names (`personal:#<id>`) and the database carry them:
/// 1 to 64 bytes of `[A-Za-z0-9_-.=@]`.
public enum UserID {
    public static func isValid(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "="), UInt8(ascii: "@"):
                    return true
                default:
                    return false
                }
            }
    }
}
