//! The device surface the loader stages through: N physical NeuronCores
//! (tpbs) sharing one HBM, behind an IOCTL-shaped API (seed 002, Stage 4:
//! `dmem_alloc` issuing MEM_ALLOC_V2MT64, `dmem_buf_copyin`).
//!
//! Methods take `&self`: the multi-tpb fan-out stages several cores at once,
//! so an implementation synchronises internally. Every method is
//! deterministic for a given sequence of calls.

/// Why a device operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// Not enough free HBM for the request (or an injected allocation fault).
    #[error("MEM_ALLOC_V2MT64 failed on tpb {tpb}: {size} bytes{}", if *.injected { " (injected fault)" } else { "" })]
    OutOfMemory {
        /// The physical core the allocation was for.
        tpb: u32,
        /// Requested bytes.
        size: u64,
        /// True when a fault plan, not real exhaustion, refused it.
        injected: bool,
    },
    /// A copy touched bytes outside every live allocation (or an injected copy fault).
    #[error("dmem_buf_copyin failed at {pa:#x} (+{len} bytes){}", if *.injected { " (injected fault)" } else { "" })]
    BadCopy {
        /// Physical address.
        pa: u64,
        /// Length.
        len: u64,
        /// True when a fault plan, not a bad address, refused it.
        injected: bool,
    },
    /// `mem_free` of an address that is not the start of a live allocation.
    #[error("mem_free of {0:#x}, which is not a live allocation")]
    BadFree(u64),
    /// A tpb index past the device.
    #[error("tpb {0} does not exist")]
    NoSuchTpb(u32),
}

/// The IOCTL-shaped device surface.
pub trait Device: Sync {
    /// Number of physical NeuronCores.
    fn num_tpbs(&self) -> u32;
    /// MEM_ALLOC_V2MT64: allocates `size` bytes of HBM for `tpb`, aligned to `align`; returns the physical address.
    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, DeviceError>;
    /// Frees the allocation starting at `pa`.
    fn mem_free(&self, pa: u64) -> Result<(), DeviceError>;
    /// dmem_buf_copyin: writes `data` at `pa`, which must lie inside one live allocation.
    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), DeviceError>;
    /// Reads `len` bytes at `pa`, which must lie inside one live allocation.
    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, DeviceError>;
    /// Number of live allocations (a test asserts a failed load leaves none).
    fn live_allocations(&self) -> usize;
    /// Every live allocation as `(pa, size)`, in address order (the load
    /// checker's view of the device). Defaults to none: a device that cannot
    /// list them fails every containment rule of [`super::checker`].
    fn allocations(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// Physical cores per logical NeuronCore (vnc): the runtime's
    /// `virtual_core_size` (seed 002, S0). Defaults to 1 (no LNC grouping).
    fn lnc_size(&self) -> u32 {
        1
    }
}

/// A shared reference to a device is a device (so a runtime can borrow one).
impl<T: Device + ?Sized> Device for &T {
    fn num_tpbs(&self) -> u32 {
        (**self).num_tpbs()
    }
    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, DeviceError> {
        (**self).mem_alloc(tpb, size, align)
    }
    fn mem_free(&self, pa: u64) -> Result<(), DeviceError> {
        (**self).mem_free(pa)
    }
    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), DeviceError> {
        (**self).copy_in(tpb, pa, data)
    }
    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        (**self).copy_out(pa, len)
    }
    fn live_allocations(&self) -> usize {
        (**self).live_allocations()
    }
    fn allocations(&self) -> Vec<(u64, u64)> {
        (**self).allocations()
    }
    fn lnc_size(&self) -> u32 {
        (**self).lnc_size()
    }
}

/// A shared device (`Arc`) is a device (so a runtime and a simulator can both hold it).
impl<T: Device + Send + ?Sized> Device for std::sync::Arc<T> {
    fn num_tpbs(&self) -> u32 {
        (**self).num_tpbs()
    }
    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, DeviceError> {
        (**self).mem_alloc(tpb, size, align)
    }
    fn mem_free(&self, pa: u64) -> Result<(), DeviceError> {
        (**self).mem_free(pa)
    }
    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), DeviceError> {
        (**self).copy_in(tpb, pa, data)
    }
    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        (**self).copy_out(pa, len)
    }
    fn live_allocations(&self) -> usize {
        (**self).live_allocations()
    }
    fn allocations(&self) -> Vec<(u64, u64)> {
        (**self).allocations()
    }
    fn lnc_size(&self) -> u32 {
        (**self).lnc_size()
    }
}
