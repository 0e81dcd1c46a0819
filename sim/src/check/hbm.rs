//! HBM accounting against the device (seed 004 QUIRK "shared DRAM is counted
//! once"; DESIGN.md invariant 3): the allocator's reported footprint (each
//! core's private bytes plus the shared region's bytes once) must equal what
//! the loaded program's compiler-placed tensors occupy in device HBM. It
//! reads only the loaded [`CoreImage`]s (physical addresses the loader
//! staged), never the allocator's accounting: a shared view and its owner sit
//! at one physical address, so a footprint that counts shared bytes per core
//! shows as a larger report than the device holds.
//!
//! Cost: O(v log v) for v vars over all cores (one sort per region kind).

use lncsim_model::codegen::VarKind;
use lncsim_model::load::CoreImage;

/// The granule a tensor's footprint is rounded up to (the DRAM allocator's page).
pub const PAGE: u64 = 4096;

/// What the device holds: bytes of private and of shared tensors, each region's footprint a union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceFootprint {
    /// Bytes of tensors placed in the cores' private scratch regions.
    pub private: u64,
    /// Bytes of tensors placed in the shared scratch region, once.
    pub shared: u64,
    /// Tensors seen in all.
    pub tensors: usize,
}

/// Length of the union of half-open ranges. Written again on purpose: the
/// model's `dram::shared` has its own, and this check judges that figure.
fn union_len(mut r: Vec<(u64, u64)>) -> u64 {
    r.sort_unstable();
    let (mut total, mut reach) = (0u64, 0u64);
    for (s, e) in r {
        let s = s.max(reach);
        if e > s {
            total = total.saturating_add(e - s);
            reach = e;
        }
    }
    total
}

/// The footprint of every compiler-placed tensor (a virtual var over a scratch region) of `images`.
pub fn device_footprint(images: &[CoreImage]) -> DeviceFootprint {
    let (mut private, mut shared) = (Vec::new(), Vec::new());
    for img in images {
        for v in &img.vars {
            let VarKind::Virtual { backing, .. } = v.kind else { continue };
            let Some(b) = img.vars.get(backing as usize) else { continue };
            let end = v.pa.saturating_add(v.size.div_ceil(PAGE).saturating_mul(PAGE));
            match b.kind {
                VarKind::Scratch => private.push((v.pa, end)),
                VarKind::SharedScratch => shared.push((v.pa, end)),
                _ => {}
            }
        }
    }
    let tensors = private.len() + shared.len();
    DeviceFootprint { private: union_len(private), shared: union_len(shared), tensors }
}

/// The number of loaded compiler-placed tensors compared (0: nothing was
/// placed, nothing to check) when the reported (total, shared) bytes equal the
/// device's footprint; else one line.
pub fn check_hbm(images: &[CoreImage], reported_total: u64, reported_shared: u64) -> Result<usize, String> {
    let d = device_footprint(images);
    let device_total = d.private.saturating_add(d.shared);
    if (reported_total, reported_shared) == (device_total, d.shared) {
        return Ok(d.tensors);
    }
    let hint = if reported_total > device_total && d.shared > 0 && reported_total - device_total >= d.shared {
        " (shared bytes counted more than once?)"
    } else {
        ""
    };
    Err(format!(
        "HBM accounting reports {reported_total} B ({reported_shared} B shared) but the loaded tensors occupy \
         {device_total} B ({} B shared, counted once){hint}",
        d.shared
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::load::Isa;
    use lncsim_model::load::image::VarImage;
    use lncsim_model::neff::manifest::VarType;

    fn var(name: &str, kind: VarKind, pa: u64, size: u64) -> VarImage {
        VarImage { name: name.into(), kind, pa, size, var_type: VarType::Virtual }
    }

    fn core(vars: Vec<VarImage>) -> CoreImage {
        let (engines, queues, barrier_groups) = (Vec::new(), Vec::new(), Default::default());
        CoreImage { core: 0, tpb: 0, engines, vars, queues, semaphores: 0, barrier_groups, isa: Isa::Lncsim }
    }

    /// Two cores: each a private tensor, and one shared tensor both see at one physical address.
    fn two_cores() -> Vec<CoreImage> {
        let shared = |pa| var("t", VarKind::Virtual { backing: 1, offset: 0 }, pa, 100);
        vec![
            core(vec![
                var("scratch", VarKind::Scratch, 0x10000, 0x4000),
                var("shared", VarKind::SharedScratch, 0x80000, 0x2000),
                var("p0", VarKind::Virtual { backing: 0, offset: 0 }, 0x10000, 5000),
                shared(0x80000),
            ]),
            core(vec![
                var("scratch", VarKind::Scratch, 0x20000, 0x4000),
                var("shared", VarKind::SharedScratch, 0x80000, 0x2000),
                var("p1", VarKind::Virtual { backing: 0, offset: 0 }, 0x20000, 10),
                shared(0x80000),
            ]),
        ]
    }

    #[test]
    fn shared_bytes_count_once_and_private_bytes_per_core() {
        let d = device_footprint(&two_cores());
        assert_eq!(d, DeviceFootprint { private: 2 * PAGE + PAGE, shared: PAGE, tensors: 4 });
        assert_eq!(check_hbm(&two_cores(), 4 * PAGE, PAGE), Ok(4));
        assert_eq!(check_hbm(&[core(Vec::new())], 0, 0), Ok(0), "nothing placed: nothing compared");
    }

    /// Tensors are counted per kind and summed: three private and one shared make four.
    #[test]
    fn every_compiler_placed_tensor_is_counted_once() {
        let mut cores = two_cores();
        cores[0].vars.push(var("p2", VarKind::Virtual { backing: 0, offset: 0 }, 0x11000, 8));
        cores[1].vars.pop();
        assert_eq!(device_footprint(&cores).tensors, 4);
    }

    /// The hint names double-counted shared bytes only when the excess covers
    /// them, and never when nothing is shared.
    #[test]
    fn the_double_count_hint_needs_an_excess_of_at_least_the_shared_bytes() {
        // 100 B too many, less than the shared page: no hint.
        let e = check_hbm(&two_cores(), 4 * PAGE + 100, PAGE).unwrap_err();
        assert!(e.starts_with("HBM accounting reports 16484 B") && !e.contains("counted more than once?"), "{e}");
        // No shared tensor at all: a larger report gets no hint either.
        let private_only: Vec<CoreImage> = two_cores()
            .into_iter()
            .map(|mut c| {
                c.vars.pop();
                c
            })
            .collect();
        assert_eq!(device_footprint(&private_only).shared, 0);
        let e = check_hbm(&private_only, 4 * PAGE, 0).unwrap_err();
        assert!(e.contains("occupy 12288 B (0 B shared") && !e.contains("counted more than once?"), "{e}");
    }

    #[test]
    fn a_report_that_counts_shared_bytes_per_core_is_refused() {
        let e = check_hbm(&two_cores(), 5 * PAGE, 2 * PAGE).unwrap_err();
        assert_eq!(
            e,
            "HBM accounting reports 20480 B (8192 B shared) but the loaded tensors occupy 16384 B (4096 B shared, \
             counted once) (shared bytes counted more than once?)"
        );
        // Too little is as wrong as too much.
        assert!(check_hbm(&two_cores(), 3 * PAGE, PAGE).unwrap_err().starts_with("HBM accounting reports 12288 B"));
    }
}
