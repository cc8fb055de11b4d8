/// A first-in first-out queue on an array: what is taken stays in the array until as much as
/// waits (and at least 4,096) has been taken, then goes at once, so taking costs nothing and
/// the array holds at most about twice what waits.
struct FIFO<Element> {
    private var elements: [Element] = []
    private var head = 0

    /// How many wait.
    var count: Int { elements.count - head }

    /// The next element, without taking it.
    var first: Element? { head < elements.count ? elements[head] : nil }

    mutating func append(_ element: Element) { elements.append(element) }

    /// Takes the next element, or nil when none waits.
    mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let element = elements[head]
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 4096, head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }
}
