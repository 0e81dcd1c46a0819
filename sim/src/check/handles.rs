//! Handles handed out once per run (seed 002, "The two handles"): H_NN
//! (`last_nn_id++` in the registry) and H_MODEL (`tdrv_get_unique_h_model()`
//! in the device db) are two independent monotone allocators, and neither
//! may hand the same handle out twice in one runtime's life, also not around
//! the asymmetric S0 edge (a load that fails after S5 registered its model,
//! which stays registered). [`reload_sequence`] drives the loads through the
//! runtime's public API; [`check_handles`] judges the handles it saw, read
//! from the runtime's public tables (`registered`, `models`), never from the
//! registry's counters.
//!
//! Cost: O(n log n) in the loads of a run.

use std::collections::{BTreeMap, BTreeSet};

use lncsim_model::load::{Device, HNn, NrtModel, Runtime};

/// The handles one load was handed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handed {
    /// Which load, in words (`load 1`, `load 2 (faulted at S0, left registered)`).
    pub load: String,
    /// Its H_NN.
    pub h_nn: u32,
    /// Its H_MODEL(s), one per distinct value over its cores' models.
    pub h_model: Vec<u32>,
}

/// The handles of the registered model `h_nn`, read from the runtime's tables.
pub fn handed<D: Device>(rt: &Runtime<D>, h_nn: HNn, load: String) -> Result<Handed, String> {
    let models = rt.models(h_nn).map_err(|e| format!("{load}: the model's records: {e}"))?;
    let h_model: BTreeSet<u32> = models.iter().map(|m| m.h_model.0).collect();
    Ok(Handed { load, h_nn: h_nn.0, h_model: h_model.into_iter().collect() })
}

/// Ok when no H_NN and no H_MODEL appears in two loads; else one line per repeated handle.
pub fn check_handles(loads: &[Handed]) -> Result<(), Vec<String>> {
    let mut nn: BTreeMap<u32, &str> = BTreeMap::new();
    let mut model: BTreeMap<u32, &str> = BTreeMap::new();
    let mut errs = Vec::new();
    for l in loads {
        if let Some(first) = nn.insert(l.h_nn, &l.load) {
            errs.push(format!("H_NN {} handed out twice: to {first} and to {}", l.h_nn, l.load));
            nn.insert(l.h_nn, first);
        }
        for &h in &l.h_model {
            if let Some(first) = model.insert(h, &l.load) {
                errs.push(format!("H_MODEL {h} handed out twice: to {first} and to {}", l.load));
                model.insert(h, first);
            }
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

/// After the run's own load (`first`, already unloaded), the same runtime
/// loads again twice: once with the asymmetric S0 edge faulted (the load
/// fails and its model stays registered; it is then unloaded by H_NN, as a
/// caller that read the error would), then plainly (then unloaded). Returns
/// every load's handles, or the first step that went wrong.
pub fn reload_sequence<D: Device>(
    rt: &Runtime<D>,
    first: Handed,
    load: &mut dyn FnMut(&Runtime<D>) -> Result<NrtModel, String>,
) -> Result<Vec<Handed>, String> {
    let mut loads = vec![first];
    let before: BTreeSet<HNn> = rt.registered().into_iter().collect();
    rt.fail_next_nrt_model_alloc();
    let what = "load 2 (faulted at S0, left registered)".to_owned();
    match load(rt) {
        Ok(m) => {
            rt.nrt_unload(&m).map_err(|e| format!("{what}: succeeded, and its unload failed: {e}"))?;
            return Err(format!("{what}: the asymmetric S0 fault never fired, the load succeeded"));
        }
        Err(_) => {
            let leaked: Vec<HNn> = rt.registered().into_iter().filter(|h| !before.contains(h)).collect();
            let [h] = leaked[..] else {
                return Err(format!("{what}: {} models left registered, the seed leaves exactly 1", leaked.len()));
            };
            loads.push(handed(rt, h, what.clone())?);
            rt.kmgr_unload_nn(h).map_err(|e| format!("{what}: kmgr_unload_nn({}) failed: {e}", h.0))?;
        }
    }
    let what = "load 3".to_owned();
    let m = load(rt).map_err(|e| format!("{what} (after the faulted one was unloaded) failed: {e}"))?;
    let h = handed(rt, m.h_nn, what.clone());
    rt.nrt_unload(&m).map_err(|e| format!("{what}: unload failed: {e}"))?;
    loads.push(h?);
    Ok(loads)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::device::SimDevice;
    use lncsim_model::load::testkit::pack_generated;
    use lncsim_model::program::{GenConfig, SizeClass};

    fn run(plant: bool) -> Result<Vec<Handed>, String> {
        let neff = pack_generated(&GenConfig::new(9, 2, SizeClass::Small)).unwrap();
        let rt = Runtime::new(SimDevice::new(2, 2));
        if plant {
            rt.plant_handle_rollback();
        }
        let m = rt.nrt_load(&neff, -1, -1).unwrap();
        let first = handed(&rt, m.h_nn, "load 1".into()).unwrap();
        rt.nrt_unload(&m).unwrap();
        reload_sequence(&rt, first, &mut |rt| rt.nrt_load(&neff, -1, -1).map_err(|e| e.to_string()))
    }

    #[test]
    fn three_loads_get_three_pairs_of_handles() {
        let loads = run(false).unwrap();
        let pairs: Vec<(u32, Vec<u32>)> = loads.iter().map(|l| (l.h_nn, l.h_model.clone())).collect();
        assert_eq!(pairs, vec![(1, vec![1]), (2, vec![2]), (3, vec![3])]);
        assert_eq!(check_handles(&loads), Ok(()));
    }

    #[test]
    fn a_registry_that_takes_handles_back_at_the_s0_edge_is_reported() {
        let loads = run(true).unwrap();
        assert_eq!(
            check_handles(&loads),
            Err(vec![
                "H_NN 2 handed out twice: to load 2 (faulted at S0, left registered) and to load 3".into(),
                "H_MODEL 2 handed out twice: to load 2 (faulted at S0, left registered) and to load 3".into(),
            ])
        );
    }

    #[test]
    fn repeated_handles_are_reported_each_against_its_first_holder() {
        let l = |load: &str, h_nn, h_model: &[u32]| Handed { load: load.into(), h_nn, h_model: h_model.to_vec() };
        let loads = [l("a", 1, &[1]), l("b", 1, &[2]), l("c", 1, &[2, 3])];
        assert_eq!(
            check_handles(&loads),
            Err(vec![
                "H_NN 1 handed out twice: to a and to b".into(),
                "H_NN 1 handed out twice: to a and to c".into(),
                "H_MODEL 2 handed out twice: to b and to c".into(),
            ])
        );
    }
}
