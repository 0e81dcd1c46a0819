//! The simulated device: N physical NeuronCores (tpbs) grouped into logical
//! cores (vnc) of `lnc_size`, sharing one HBM, behind the IOCTL-shaped
//! [`Device`] surface the loader stages through (seed 002, Stage 4).
//!
//! Deterministic: the first-fit allocator ([`hbm`]) walks allocations in
//! address order, each tpb in its own slice of the one HBM address space (so
//! concurrent staging on different cores gives the same addresses in any
//! thread order), counters are plain integers under one mutex, faults come
//! from a [`FaultPlan`] indexed by those counters. Interior mutability (a
//! `Mutex`) makes it `Sync`, as the loader's staging fan-out needs.
//!
//! Loader operations (`mem_alloc`, `copy_in`) are counted and can be faulted;
//! the simulator's own accesses ([`SimDevice::read`], [`SimDevice::write`],
//! [`SimDevice::with_bytes`], [`SimDevice::with_bytes_mut`]) are neither.
//!
//! ```
//! use lncsim_model::load::Device;
//! use lncsim_sim::device::{Fault, FaultPlan, SimDevice};
//! let dev = SimDevice::new(8, 2);
//! let pa = dev.mem_alloc(0, 4096, 64)?;
//! dev.copy_in(0, pa, &[1, 2, 3])?;
//! // Bytes never written read as a poison pattern, not zero.
//! assert_eq!(dev.copy_out(pa, 4)?, vec![1, 2, 3, lncsim_sim::device::hbm::POISON]);
//! dev.set_fault_plan(FaultPlan::one(Fault::Alloc(1)));
//! assert!(dev.mem_alloc(1, 64, 64).is_err()); // the second mem_alloc fails
//! dev.mem_free(pa)?;
//! assert_eq!(dev.live_allocations(), 0);
//! # Ok::<(), lncsim_model::load::DeviceError>(())
//! ```

pub mod faults;
pub mod fuzz;
pub mod hbm;
pub mod io;

use std::sync::{Mutex, MutexGuard, PoisonError};

use lncsim_model::load::{Device, DeviceError};

pub use faults::{Fault, FaultPlan, FiredFault, OpIndex, OpKind, keyed};
pub use hbm::{AllocationInfo, Hbm, SlicedHbm};

/// Where HBM starts by default: above 4 GiB, so physical addresses use the
/// high word of a relocated operand.
pub const DEFAULT_HBM_BASE: u64 = 0x1_0000_0000;
/// Default HBM size: 96 GiB of address space, split evenly between the tpbs (bytes are materialised on use).
pub const DEFAULT_HBM_SIZE: u64 = 96 << 30;
/// The most bytes one allocation may have. An allocation is materialised in
/// host memory chunk by chunk as it is written, up to all of it, so a larger
/// request (a NEFF's var sizes come from its file) is refused like exhausted
/// HBM instead of aborting the process when the host cannot allocate it.
pub const MAX_ALLOC_BYTES: u64 = 4 << 30;

/// The device's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Physical NeuronCores.
    pub num_tpbs: u32,
    /// Physical cores per vnc (the runtime's `virtual_core_size`).
    pub lnc_size: u32,
    /// First HBM physical address.
    pub hbm_base: u64,
    /// HBM bytes.
    pub hbm_size: u64,
}

impl DeviceConfig {
    /// `num_tpbs` cores in vncs of `lnc_size`, default HBM.
    pub fn new(num_tpbs: u32, lnc_size: u32) -> Self {
        DeviceConfig { num_tpbs, lnc_size: lnc_size.max(1), hbm_base: DEFAULT_HBM_BASE, hbm_size: DEFAULT_HBM_SIZE }
    }
}

/// Counts of the loader-visible operations so far (failed ones included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// `mem_alloc` calls.
    pub mem_alloc: u64,
    /// `copy_in` calls.
    pub copy_in: u64,
    /// `mem_free` calls.
    pub mem_free: u64,
}

impl OpCounts {
    /// `mem_alloc + copy_in`: the operations a [`Fault::Op`] index counts.
    pub fn faultable(&self) -> u64 {
        self.mem_alloc + self.copy_in
    }
}

#[derive(Debug)]
struct State {
    hbm: SlicedHbm,
    counts: OpCounts,
    /// Per physical core: (`mem_alloc`, `copy_in`) calls, for the keyed faults.
    per_tpb: Vec<(u64, u64)>,
    plan: FaultPlan,
    fired: Vec<FiredFault>,
    log: Option<Vec<(OpKind, u32)>>,
}

/// The simulated device (see the module docs).
#[derive(Debug)]
pub struct SimDevice {
    config: DeviceConfig,
    state: Mutex<State>,
}

impl SimDevice {
    /// `num_tpbs` physical cores in vncs of `lnc_size`, default HBM, no faults.
    pub fn new(num_tpbs: u32, lnc_size: u32) -> Self {
        Self::with_config(DeviceConfig::new(num_tpbs, lnc_size))
    }

    /// A device of the given shape, no faults.
    pub fn with_config(config: DeviceConfig) -> Self {
        let state = State {
            hbm: SlicedHbm::new(config.hbm_base, config.hbm_size, config.num_tpbs),
            counts: OpCounts::default(),
            per_tpb: vec![(0, 0); config.num_tpbs as usize],
            plan: FaultPlan::none(),
            fired: Vec::new(),
            log: None,
        };
        SimDevice { config, state: Mutex::new(state) }
    }

    /// The device's shape.
    pub fn config(&self) -> DeviceConfig {
        self.config
    }

    /// The lock; no method panics while holding it, so a poisoned state is still consistent.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the fault plan (counters keep running; see [`SimDevice::reset_counts`]).
    pub fn set_fault_plan(&self, plan: FaultPlan) {
        self.lock().plan = plan;
    }

    /// Zeroes the operation counters and forgets fired faults, so fault indices count from the next operation.
    pub fn reset_counts(&self) {
        let mut s = self.lock();
        s.counts = OpCounts::default();
        s.per_tpb.iter_mut().for_each(|c| *c = (0, 0));
        s.fired.clear();
    }

    /// Operation counts since creation or the last [`SimDevice::reset_counts`].
    pub fn counts(&self) -> OpCounts {
        self.lock().counts
    }

    /// Faults that fired since creation or the last reset, in firing order.
    pub fn fired(&self) -> Vec<FiredFault> {
        self.lock().fired.clone()
    }

    /// Starts (or restarts) logging each faultable operation's kind and core, in call order.
    pub fn start_log(&self) {
        self.lock().log = Some(Vec::new());
    }

    /// The operations logged since [`SimDevice::start_log`], and stops logging.
    pub fn take_log(&self) -> Vec<(OpKind, u32)> {
        self.lock().log.take().unwrap_or_default()
    }

    /// Every live allocation, in address order.
    pub fn allocations(&self) -> Vec<AllocationInfo> {
        self.lock().hbm.allocations()
    }

    /// Reads `buf.len()` bytes at `pa` (simulator access: not counted, never faulted).
    pub fn read(&self, pa: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let len = buf.len() as u64;
        self.with_bytes(pa, len, |b| buf.copy_from_slice(b))
    }

    /// Writes `data` at `pa` (simulator access: not counted, never faulted).
    pub fn write(&self, pa: u64, data: &[u8]) -> Result<(), DeviceError> {
        let len = data.len() as u64;
        self.lock().hbm.write(pa, data).ok_or(DeviceError::BadCopy { pa, len, injected: false })
    }

    /// Zeros `[pa, pa + len)` (host access: not counted, never faulted), with no buffer of zeros.
    pub fn zero(&self, pa: u64, len: u64) -> Result<(), DeviceError> {
        self.lock().hbm.zero(pa, len).ok_or(DeviceError::BadCopy { pa, len, injected: false })
    }

    /// Runs `f` on the device bytes `[pa, pa + len)`, borrowed in place when
    /// they lie in one 64 KiB storage chunk (else on a copy). `f` must not
    /// call back into the device (it runs under its lock).
    pub fn with_bytes<R>(&self, pa: u64, len: u64, f: impl FnOnce(&[u8]) -> R) -> Result<R, DeviceError> {
        self.lock().hbm.with_bytes(pa, len, f).ok_or(DeviceError::BadCopy { pa, len, injected: false })
    }

    /// Runs `f` on the device bytes `[pa, pa + len)` mutably (in place in one chunk, else on a copy written back). Same rule as [`SimDevice::with_bytes`].
    pub fn with_bytes_mut<R>(&self, pa: u64, len: u64, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, DeviceError> {
        self.lock().hbm.with_bytes_mut(pa, len, f).ok_or(DeviceError::BadCopy { pa, len, injected: false })
    }

    fn check_tpb(&self, tpb: u32) -> Result<(), DeviceError> {
        if tpb < self.config.num_tpbs { Ok(()) } else { Err(DeviceError::NoSuchTpb(tpb)) }
    }
}

impl State {
    /// Counts one faultable operation and reports whether the plan fails it.
    fn count(&mut self, kind: OpKind, tpb: u32) -> bool {
        let op_index = self.counts.faultable();
        // check_tpb ran first, so the core has a counter slot.
        let mut dummy = (0, 0);
        let mine = self.per_tpb.get_mut(tpb as usize).unwrap_or(&mut dummy);
        let (kind_index, on_tpb) = match kind {
            OpKind::MemAlloc => (self.counts.mem_alloc, mine.0),
            OpKind::CopyIn => (self.counts.copy_in, mine.1),
        };
        match kind {
            OpKind::MemAlloc => {
                self.counts.mem_alloc += 1;
                mine.0 += 1;
            }
            OpKind::CopyIn => {
                self.counts.copy_in += 1;
                mine.1 += 1;
            }
        }
        if let Some(log) = &mut self.log {
            log.push((kind, tpb));
        }
        let at = OpIndex { op: op_index, kind: kind_index, on_tpb };
        match self.plan.matches(kind, tpb, at) {
            Some(fault) => {
                self.fired.push(FiredFault { fault, kind, op_index, tpb });
                true
            }
            None => false,
        }
    }
}

impl Device for SimDevice {
    fn num_tpbs(&self) -> u32 {
        self.config.num_tpbs
    }

    fn lnc_size(&self) -> u32 {
        self.config.lnc_size
    }

    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, DeviceError> {
        self.check_tpb(tpb)?;
        let mut s = self.lock();
        if s.count(OpKind::MemAlloc, tpb) {
            return Err(DeviceError::OutOfMemory { tpb, size, injected: true });
        }
        if size > MAX_ALLOC_BYTES {
            lncsim_model::marks::hit("device.alloc.too_large");
            return Err(DeviceError::OutOfMemory { tpb, size, injected: false });
        }
        s.hbm.alloc(tpb, size, align).ok_or(DeviceError::OutOfMemory { tpb, size, injected: false })
    }

    fn mem_free(&self, pa: u64) -> Result<(), DeviceError> {
        let mut s = self.lock();
        s.counts.mem_free += 1;
        if s.hbm.free(pa) { Ok(()) } else { Err(DeviceError::BadFree(pa)) }
    }

    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.check_tpb(tpb)?;
        let mut s = self.lock();
        let len = data.len() as u64;
        if s.count(OpKind::CopyIn, tpb) {
            return Err(DeviceError::BadCopy { pa, len, injected: true });
        }
        s.hbm.write(pa, data).ok_or(DeviceError::BadCopy { pa, len, injected: false })
    }

    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.lock().hbm.read(pa, len).ok_or(DeviceError::BadCopy { pa, len, injected: false })
    }

    fn live_allocations(&self) -> usize {
        self.lock().hbm.live()
    }

    fn allocations(&self) -> Vec<(u64, u64)> {
        self.lock().hbm.allocations().iter().map(|a| (a.pa, a.size)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_counted_logged_and_faulted_by_index() {
        let d = SimDevice::new(4, 2);
        d.start_log();
        d.set_fault_plan(FaultPlan::one(Fault::Op(2)));
        let a = d.mem_alloc(0, 100, 64).unwrap();
        d.copy_in(1, a, &[9; 100]).unwrap();
        let e = d.copy_in(1, a, &[1]).unwrap_err();
        assert_eq!(e, DeviceError::BadCopy { pa: a, len: 1, injected: true });
        assert_eq!(d.copy_out(a, 2).unwrap(), vec![9, 9], "the failed copy wrote nothing");
        assert_eq!(d.counts(), OpCounts { mem_alloc: 1, copy_in: 2, mem_free: 0 });
        assert_eq!(d.fired(), vec![FiredFault { fault: Fault::Op(2), kind: OpKind::CopyIn, op_index: 2, tpb: 1 }]);
        assert_eq!(d.take_log(), vec![(OpKind::MemAlloc, 0), (OpKind::CopyIn, 1), (OpKind::CopyIn, 1)]);
        d.mem_free(a).unwrap();
        assert_eq!(d.mem_free(a), Err(DeviceError::BadFree(a)));
        assert_eq!(d.live_allocations(), 0);
    }

    #[test]
    fn a_faulted_core_fails_every_operation_and_others_do_not() {
        let d = SimDevice::new(4, 1);
        d.set_fault_plan(FaultPlan::one(Fault::Tpb(2)));
        assert_eq!(d.mem_alloc(2, 8, 8), Err(DeviceError::OutOfMemory { tpb: 2, size: 8, injected: true }));
        let a = d.mem_alloc(3, 8, 8).unwrap();
        assert!(d.copy_in(2, a, &[1]).is_err());
        assert!(d.copy_in(3, a, &[1]).is_ok());
        assert_eq!(d.mem_alloc(4, 8, 8), Err(DeviceError::NoSuchTpb(4)));
        assert_eq!(d.lnc_size(), 1);
    }

    #[test]
    fn simulator_accesses_bypass_counters_and_bounds_are_checked() {
        let d = SimDevice::new(1, 1);
        let a = d.mem_alloc(0, 16, 16).unwrap();
        assert_eq!(a, DEFAULT_HBM_BASE);
        d.reset_counts();
        d.write(a, &[0; 16]).unwrap();
        d.write(a + 4, &[7, 8]).unwrap();
        let mut b = [0u8; 4];
        d.read(a + 3, &mut b).unwrap();
        assert_eq!(b, [0, 7, 8, 0]);
        assert_eq!(d.with_bytes(a, 16, |s| s.iter().map(|&x| u32::from(x)).sum::<u32>()).unwrap(), 15);
        assert!(d.write(a + 15, &[1, 2]).is_err());
        assert!(d.copy_out(a + 16, 1).is_err());
        assert_eq!(d.counts(), OpCounts::default());
    }

    #[test]
    fn an_allocation_too_large_to_materialise_is_refused_like_exhausted_hbm() {
        let rec = lncsim_model::marks::Recorder::start();
        let d = SimDevice::new(1, 1);
        let size = MAX_ALLOC_BYTES + 1;
        assert_eq!(d.mem_alloc(0, size, 64), Err(DeviceError::OutOfMemory { tpb: 0, size, injected: false }));
        assert_eq!(rec.hits("device.alloc.too_large"), 1);
        assert_eq!(d.live_allocations(), 0);
        let a = d.mem_alloc(0, MAX_ALLOC_BYTES, 64).unwrap();
        d.mem_free(a).unwrap();
    }
}
