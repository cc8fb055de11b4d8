import CAllocator
import Testing

/// Every allocation of a binary that links the server goes through jemalloc (`CAllocator` links it
/// in place of glibc's malloc), with background threads returning freed pages, and its figures are
/// what `/metrics` reports as `gondola_heap_bytes`.
@Suite struct AllocatorTests {
    @Test func swiftAllocationsGoThroughJemallocAndShowInItsFigures() throws {
        let block = 64 << 20
        let before = try statistics()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: block, alignment: 64)
        memory.initializeMemory(as: UInt8.self, repeating: 1, count: block)
        let holding = try statistics()
        memory.deallocate()
        let after = try statistics()
        // Other tests allocate and free meanwhile; the block dwarfs what they move in between.
        #expect(holding.allocated >= before.allocated + block / 2, "before \(before.allocated), holding \(holding.allocated)")
        #expect(holding.resident >= holding.allocated)
        #expect(after.allocated + block / 2 <= holding.allocated, "holding \(holding.allocated), after \(after.allocated)")
    }

    @Test func theAllocatorIsJemallocWithBackgroundThreads() {
        #expect(String(cString: gondola_allocator_version()).hasPrefix("5."))
        #expect(gondola_allocator_background_threads())
    }

    private func statistics() throws -> gondola_allocator_statistics {
        var statistics = gondola_allocator_statistics()
        try #require(gondola_read_allocator_statistics(&statistics))
        return statistics
    }
}
