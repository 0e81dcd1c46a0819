//! The simulator's view of HBM: a mirror of the device's bytes over the
//! address range of every var of every loaded core, taken through
//! [`Device::copy_out`] when the simulation is built and written back through
//! [`Device::copy_in`] when it ends (so a host reads outputs from the device).
//!
//! Ranges are merged into disjoint regions (a shared region declared by every
//! core is one region; overlapping vars from a bad placement stay one region,
//! so their bytes really alias). Every access is resolved once, at decode
//! time, to (region, offset); executing a record then touches a plain slice.

use lncsim_model::load::{CoreImage, Device};

use crate::SimError;

/// One device range the mirror was filled from (and is written back to).
#[derive(Clone, Copy, Debug)]
struct Source {
    tpb: u32,
    pa: u64,
    len: u64,
}

/// A contiguous mirrored range.
#[derive(Debug)]
struct Region {
    start: u64,
    data: Vec<u8>,
    dirty: bool,
}

/// The mirrored HBM.
#[derive(Debug, Default)]
pub(crate) struct Hbm {
    regions: Vec<Region>,
    sources: Vec<Source>,
}

/// Largest single var the simulator mirrors (4 GiB), so a corrupt image fails cleanly.
const MAX_VAR: u64 = 1 << 32;

impl Hbm {
    /// Mirrors every var of every image from `device`.
    pub(crate) fn mirror(device: &dyn Device, images: &[CoreImage]) -> Result<Hbm, SimError> {
        let mut ranges: Vec<Source> = Vec::new();
        for img in images {
            for v in &img.vars {
                if v.size == 0 {
                    continue;
                }
                if v.size > MAX_VAR || v.pa.checked_add(v.size).is_none() {
                    return Err(SimError::BadImage(format!("core {}: var `{}` has size {}", img.core, v.name, v.size)));
                }
                ranges.push(Source { tpb: img.tpb, pa: v.pa, len: v.size });
            }
        }
        // Sort by start, longest first, and keep only ranges not inside the previous kept one.
        ranges.sort_by(|a, b| a.pa.cmp(&b.pa).then(b.len.cmp(&a.len)));
        let mut sources: Vec<Source> = Vec::new();
        for r in ranges {
            match sources.last() {
                Some(k) if r.pa + r.len <= k.pa + k.len => {}
                _ => sources.push(r),
            }
        }
        let mut regions: Vec<Region> = Vec::new();
        for s in &sources {
            let bytes = device.copy_out(s.pa, s.len).map_err(|e| SimError::Device(e.to_string()))?;
            match regions.last_mut() {
                Some(r) if s.pa <= r.start + r.data.len() as u64 => {
                    let off = (s.pa - r.start) as usize;
                    let end = off + bytes.len();
                    if end > r.data.len() {
                        r.data.resize(end, 0);
                    }
                    r.data[off..end].copy_from_slice(&bytes);
                }
                _ => regions.push(Region { start: s.pa, data: bytes, dirty: false }),
            }
        }
        Ok(Hbm { regions, sources })
    }

    /// The region and offset holding `[pa, pa + len)` entirely, if one does.
    pub(crate) fn locate(&self, pa: u64, len: u64) -> Option<(u32, usize)> {
        let i = self.regions.partition_point(|r| r.start <= pa).checked_sub(1)?;
        let r = &self.regions[i];
        let off = pa - r.start;
        (off.checked_add(len)? <= r.data.len() as u64).then_some((i as u32, off as usize))
    }

    /// The bytes at a located range.
    pub(crate) fn slice(&self, region: u32, off: usize, len: usize) -> &[u8] {
        &self.regions[region as usize].data[off..off + len]
    }

    /// Overwrites a located range with `data`.
    pub(crate) fn write(&mut self, region: u32, off: usize, data: &[u8]) {
        let r = &mut self.regions[region as usize];
        r.dirty = true;
        r.data[off..off + data.len()].copy_from_slice(data);
    }

    /// Copies `len` bytes between two located ranges (they may overlap).
    pub(crate) fn copy(&mut self, src: (u32, usize), dst: (u32, usize), len: usize, buf: &mut Vec<u8>) {
        if src.0 == dst.0 {
            let r = &mut self.regions[src.0 as usize];
            r.dirty = true;
            r.data.copy_within(src.1..src.1 + len, dst.1);
            return;
        }
        buf.clear();
        buf.extend_from_slice(self.slice(src.0, src.1, len));
        self.write(dst.0, dst.1, buf);
    }

    /// Writes every dirty region back to the device, range by range.
    pub(crate) fn write_back(&self, device: &dyn Device) -> Result<(), SimError> {
        for s in &self.sources {
            let Some((r, off)) = self.locate(s.pa, s.len) else { continue };
            if !self.regions[r as usize].dirty {
                continue;
            }
            let bytes = self.slice(r, off, s.len as usize);
            device.copy_in(s.tpb, s.pa, bytes).map_err(|e| SimError::Device(e.to_string()))?;
        }
        Ok(())
    }

    /// Number of mirrored bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.regions.iter().map(|r| r.data.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::MemDevice;
    use lncsim_model::codegen::VarKind;
    use lncsim_model::load::VarImage;

    fn image(vars: Vec<(u64, u64)>) -> CoreImage {
        CoreImage {
            core: 0,
            tpb: 0,
            engines: Vec::new(),
            vars: vars
                .into_iter()
                .map(|(pa, size)| VarImage { name: "v".into(), kind: VarKind::Scratch, pa, size })
                .collect(),
            queues: Vec::new(),
            semaphores: 5,
            barrier_groups: Default::default(),
        }
    }

    #[test]
    fn mirrors_merge_overlapping_vars_and_write_back_dirty_ones() {
        let d = MemDevice::new(1);
        let a = d.mem_alloc(0, 256, 64).unwrap();
        let b = d.mem_alloc(0, 64, 4096).unwrap();
        d.copy_in(0, a + 100, &[7]).unwrap();
        // A var, another inside it, one straddling its end, and one elsewhere.
        let img = image(vec![(a, 128), (a + 16, 16), (a + 120, 136), (b, 64)]);
        let mut h = Hbm::mirror(&d, &[img]).unwrap();
        assert_eq!(h.bytes(), 256 + 64);
        let (r, off) = h.locate(a + 100, 1).unwrap();
        assert_eq!(h.slice(r, off, 1), &[7]);
        assert!(h.locate(a + 250, 10).is_none(), "past the region");
        assert!(h.locate(b - 8, 16).is_none(), "between regions");
        let (rb, ob) = h.locate(b, 4).unwrap();
        h.write(rb, ob, &[1, 2, 3, 4]);
        let mut buf = Vec::new();
        h.copy((rb, ob), (r, off), 4, &mut buf);
        h.write_back(&d).unwrap();
        assert_eq!(d.copy_out(b, 4).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(d.copy_out(a + 100, 4).unwrap(), vec![1, 2, 3, 4]);
        // A var outside every allocation cannot be mirrored.
        assert!(Hbm::mirror(&d, &[image(vec![(0x10, 8)])]).is_err());
    }
}
