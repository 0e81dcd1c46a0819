//! The loader fuzz target (`fuzz/fuzz_targets/nrt_load.rs`) on the simulated
//! device: the first input byte picks one of a few lncsim-packed NEFFs
//! (generated once, deterministically), the rest drives
//! [`lncsim_model::load::fuzz::nrt_load_case`] (edits, device shape, seeded
//! fault plan, staging driver, properties). `tests/corpus.rs` replays
//! `corpus/nrt_load/` through [`nrt_load`] on stable.

use std::sync::OnceLock;

use lncsim_model::load::fuzz::{FuzzDevice, nrt_load_case};
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::program::{GenConfig, SizeClass};

use super::{FaultPlan, SimDevice};

/// Device operations a seeded fault may land on (past a small load's count, so some loads run fault-free).
const FAULT_HORIZON: u64 = 48;

impl FuzzDevice for SimDevice {
    fn fresh(tpbs: u32, lnc: u32, fault_seed: Option<u64>) -> Self {
        let d = SimDevice::new(tpbs, lnc);
        if let Some(seed) = fault_seed {
            d.set_fault_plan(FaultPlan::seeded(seed, FAULT_HORIZON, tpbs));
        }
        d
    }

    fn injected(&self) -> usize {
        self.fired().len()
    }
}

/// The base NEFFs: generated programs on 1, 2 and 4 cores, packed by lncsim.
pub fn bases() -> &'static [Vec<u8>] {
    static BASES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BASES.get_or_init(|| {
        [(41, 1), (41, 2), (7, 4)]
            .iter()
            .filter_map(|&(seed, cores)| pack_generated(&GenConfig::new(seed, cores, SizeClass::Small)).ok())
            .collect()
    })
}

/// One fuzz case: `data[0]` picks the base, the rest drives the case. Panics on a finding.
pub fn nrt_load(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else { return };
    let bases = bases();
    if let Some(base) = bases.get(pick as usize % bases.len().max(1)) {
        nrt_load_case::<SimDevice>(base, rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bases_load_and_unedited_cases_pass() {
        assert_eq!(bases().len(), 3);
        for pick in 0..3u8 {
            // No edits, 8 tpbs, no faults, threads.
            nrt_load(&[pick, 0, 7, 0, 1]);
        }
    }
}
