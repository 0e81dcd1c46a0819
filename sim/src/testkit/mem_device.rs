//! A plain in-memory device for tests: a bump allocator over a flat address
//! space starting at 0x1000_0000, one zeroed buffer per allocation.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lncsim_model::load::{Device, DeviceError};

/// The first address handed out (so a zero address is never valid).
const BASE: u64 = 0x1000_0000;

#[derive(Debug, Default)]
struct State {
    next: u64,
    allocs: BTreeMap<u64, Vec<u8>>,
}

/// The contents of a [`MemDevice`] at one moment.
#[derive(Clone, Debug)]
pub struct MemSnapshot {
    next: u64,
    allocs: BTreeMap<u64, Vec<u8>>,
}

/// An in-memory device with `tpbs` physical cores and unbounded HBM.
#[derive(Debug)]
pub struct MemDevice {
    tpbs: u32,
    state: Mutex<State>,
}

impl MemDevice {
    /// A device with `tpbs` cores and nothing allocated.
    pub fn new(tpbs: u32) -> MemDevice {
        MemDevice { tpbs, state: Mutex::new(State { next: BASE, allocs: BTreeMap::new() }) }
    }

    /// A copy of every allocation (to [`MemDevice::restore`] later).
    pub fn snapshot(&self) -> MemSnapshot {
        let s = self.lock();
        MemSnapshot { next: s.next, allocs: s.allocs.clone() }
    }

    /// Puts the device back to `snap`.
    pub fn restore(&self, snap: &MemSnapshot) {
        let mut s = self.lock();
        s.next = snap.next;
        s.allocs.clone_from(&snap.allocs);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn find(allocs: &BTreeMap<u64, Vec<u8>>, pa: u64, len: u64) -> Option<(u64, usize)> {
    let (&start, buf) = allocs.range(..=pa).next_back()?;
    let off = pa - start;
    (off.checked_add(len)? <= buf.len() as u64).then_some((start, off as usize))
}

impl Device for MemDevice {
    fn num_tpbs(&self) -> u32 {
        self.tpbs
    }

    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, DeviceError> {
        if tpb >= self.tpbs {
            return Err(DeviceError::NoSuchTpb(tpb));
        }
        let mut s = self.lock();
        let align = align.max(64);
        let pa = s.next.div_ceil(align).saturating_mul(align);
        let len = usize::try_from(size.max(1)).map_err(|_| DeviceError::OutOfMemory { tpb, size, injected: false })?;
        s.next = pa.saturating_add(len as u64);
        s.allocs.insert(pa, vec![0; len]);
        Ok(pa)
    }

    fn mem_free(&self, pa: u64) -> Result<(), DeviceError> {
        self.lock().allocs.remove(&pa).map(|_| ()).ok_or(DeviceError::BadFree(pa))
    }

    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), DeviceError> {
        if tpb >= self.tpbs {
            return Err(DeviceError::NoSuchTpb(tpb));
        }
        let mut s = self.lock();
        let (start, off) = find(&s.allocs, pa, data.len() as u64).ok_or(DeviceError::BadCopy {
            pa,
            len: data.len() as u64,
            injected: false,
        })?;
        if let Some(buf) = s.allocs.get_mut(&start) {
            buf[off..off + data.len()].copy_from_slice(data);
        }
        Ok(())
    }

    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        let s = self.lock();
        let (start, off) = find(&s.allocs, pa, len).ok_or(DeviceError::BadCopy { pa, len, injected: false })?;
        Ok(s.allocs[&start][off..off + len as usize].to_vec())
    }

    fn live_allocations(&self) -> usize {
        self.lock().allocs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_stay_inside_one_allocation() {
        let d = MemDevice::new(2);
        let a = d.mem_alloc(0, 100, 64).unwrap();
        let b = d.mem_alloc(1, 10, 4096).unwrap();
        assert_eq!(b % 4096, 0);
        d.copy_in(0, a + 10, &[1, 2, 3]).unwrap();
        assert_eq!(d.copy_out(a + 10, 3).unwrap(), vec![1, 2, 3]);
        assert!(d.copy_out(a + 99, 2).is_err());
        assert!(d.copy_in(2, a, &[0]).is_err());
        assert_eq!(d.live_allocations(), 2);
        d.mem_free(a).unwrap();
        assert!(d.mem_free(a).is_err());
    }
}
