/// Dense `Int32` numbers for user ids, so that the live map's hot paths index
/// arrays and hash integers instead of strings. A slot is never reused: there is
/// one per user that ever sent a position or subscribed, which the user table bounds.
struct UserSlots {
    private var slots: [String: Int32] = [:]
    private var users: [String] = []

    mutating func slot(for user: String) -> Int32 {
        if let slot = slots[user] { return slot }
        let slot = Int32(users.count)
        slots[user] = slot
        users.append(user)
        return slot
    }

    func existingSlot(for user: String) -> Int32? { slots[user] }

    func user(_ slot: Int32) -> String { users[Int(slot)] }

    /// How many slots there are (slots are `0..<count`).
    var count: Int { users.count }
}
