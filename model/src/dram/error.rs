//! Typed errors of the DRAM allocator core: one clear line each.

/// Why allocation did not produce a placement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// Nothing fits below the region ceiling (the seed asserts here, dram_select.cpp:70).
    #[error("out of DRAM space: location `{name}` needs {size} bytes, the largest free gap is {largest_gap} bytes")]
    OutOfSpace {
        /// The location that could not be placed.
        name: String,
        /// Its aligned size.
        size: u64,
        /// The largest free gap among its interfering neighbours in the searched regions.
        largest_gap: u64,
    },
    /// A movable location with no live interval (seed: dram_build.cpp:61).
    #[error("location `{name}` has no [def, use] interval and is not pinned")]
    NoIntervals {
        /// The location.
        name: String,
    },
    /// An interval whose def comes after its use.
    #[error("location `{name}` has interval [{def}, {last_use}] with def after use")]
    BadInterval {
        /// The location.
        name: String,
        /// The def time.
        def: u64,
        /// The use time.
        last_use: u64,
    },
    /// A zero alignment or zero address multiple.
    #[error("location `{name}` has a zero alignment")]
    BadAlignment {
        /// The location.
        name: String,
    },
    /// The aligned size does not fit in 64 bits.
    #[error("location `{name}`: aligned size overflows 64 bits")]
    SizeOverflow {
        /// The location.
        name: String,
    },
    /// A pinned location's end address does not fit in 64 bits.
    #[error("location `{name}`: pinned address + size overflows 64 bits")]
    PinnedOverflow {
        /// The location.
        name: String,
    },
    /// `--allreduce-buffer-size` is neither -1 nor a representable MiB count.
    #[error("bad --allreduce-buffer-size {mib}: expected -1 (auto) or a MiB count >= 0")]
    BadAllreduceBufferSize {
        /// The value given.
        mib: i64,
    },
    /// A collective operand names a location that does not exist.
    #[error("collective operand {index} names location {location}, which does not exist")]
    BadCcOperand {
        /// The operand's index.
        index: usize,
        /// The location index it names.
        location: usize,
    },
    /// The auto-sized CC buffer does not fit in 64 bits.
    #[error("the auto-sized CC buffer overflows 64 bits")]
    CcSizeOverflow,
    /// The search page is zero.
    #[error("the page size must be at least 1")]
    BadPage,
    /// More intervals or locations than the tree's 32-bit indices hold.
    #[error("too many intervals or locations ({count}) for 32-bit tree indices")]
    TooMany {
        /// The count.
        count: usize,
    },
}
