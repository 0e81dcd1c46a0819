//! The runtime's status codes (`nrt_status.h`, `NRT_STATUS`), with their numeric values.
//!
//! The NEFF reader and the loader (seed 002) return these so a caller can compare
//! the model's verdict with the real runtime's, code for code.

use std::fmt;

/// One `NRT_STATUS` value; `as u32` gives the runtime's numeric code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum NrtStatus {
    /// `NRT_SUCCESS`: the operation completed.
    Success = 0,
    /// `NRT_FAILURE`: a non-specific failure.
    Failure = 1,
    /// `NRT_INVALID`: invalid input (a bad NEFF, a bad argument).
    Invalid = 2,
    /// `NRT_INVALID_HANDLE`: an unknown handle.
    InvalidHandle = 3,
    /// `NRT_RESOURCE`: a resource could not be allocated.
    Resource = 4,
    /// `NRT_TIMEOUT`: the operation timed out.
    Timeout = 5,
    /// `NRT_HW_ERROR`: the hardware reported an error.
    HwError = 6,
    /// `NRT_QUEUE_FULL`: a submission queue is full.
    QueueFull = 7,
    /// `NRT_LOAD_NOT_ENOUGH_NC`: not enough NeuronCores for the load.
    LoadNotEnoughNc = 9,
    /// `NRT_UNSUPPORTED_NEFF_VERSION`: the NEFF's version or feature bits are not supported.
    UnsupportedNeffVersion = 10,
    /// `NRT_FAIL_HOST_MEM_ALLOC`: a host allocation failed.
    FailHostMemAlloc = 11,
    /// `NRT_UNINITIALIZED`: the runtime is not initialised.
    Uninitialized = 13,
    /// `NRT_CLOSED`: the runtime is closed.
    Closed = 14,
    /// `NRT_QUEUE_EMPTY`: a queue is empty.
    QueueEmpty = 15,
}

impl NrtStatus {
    /// The runtime's numeric code.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The runtime's enumerator name, e.g. `NRT_INVALID`.
    pub fn name(self) -> &'static str {
        match self {
            NrtStatus::Success => "NRT_SUCCESS",
            NrtStatus::Failure => "NRT_FAILURE",
            NrtStatus::Invalid => "NRT_INVALID",
            NrtStatus::InvalidHandle => "NRT_INVALID_HANDLE",
            NrtStatus::Resource => "NRT_RESOURCE",
            NrtStatus::Timeout => "NRT_TIMEOUT",
            NrtStatus::HwError => "NRT_HW_ERROR",
            NrtStatus::QueueFull => "NRT_QUEUE_FULL",
            NrtStatus::LoadNotEnoughNc => "NRT_LOAD_NOT_ENOUGH_NC",
            NrtStatus::UnsupportedNeffVersion => "NRT_UNSUPPORTED_NEFF_VERSION",
            NrtStatus::FailHostMemAlloc => "NRT_FAIL_HOST_MEM_ALLOC",
            NrtStatus::Uninitialized => "NRT_UNINITIALIZED",
            NrtStatus::Closed => "NRT_CLOSED",
            NrtStatus::QueueEmpty => "NRT_QUEUE_EMPTY",
        }
    }
}

impl fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_nrt_status_h() {
        let table = [
            (NrtStatus::Success, 0),
            (NrtStatus::Failure, 1),
            (NrtStatus::Invalid, 2),
            (NrtStatus::InvalidHandle, 3),
            (NrtStatus::Resource, 4),
            (NrtStatus::Timeout, 5),
            (NrtStatus::HwError, 6),
            (NrtStatus::QueueFull, 7),
            (NrtStatus::LoadNotEnoughNc, 9),
            (NrtStatus::UnsupportedNeffVersion, 10),
            (NrtStatus::FailHostMemAlloc, 11),
            (NrtStatus::Uninitialized, 13),
            (NrtStatus::Closed, 14),
            (NrtStatus::QueueEmpty, 15),
        ];
        for (s, c) in table {
            assert_eq!(s.code(), c, "{}", s.name());
        }
        assert_eq!(NrtStatus::Invalid.to_string(), "NRT_INVALID(2)");
    }
}
