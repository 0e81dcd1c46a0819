//! The runtime's tables: `dlr_model_set` (H_NN -> [`DlrModel`]), the tdrv
//! device db ((tpb, H_MODEL) -> [`Model`]) and the vnc usage counts. Two
//! independent monotone allocators: `last_nn_id++` here, and
//! `tdrv_get_unique_h_model()` in the db (seed 002, "The two handles").

use std::collections::BTreeMap;

use super::error::{LoadError, Stage};
use super::records::{DlrModel, DlrState, HModel, HNn, Model};
use crate::marks;
use crate::neff::NrtStatus;

/// `dlr_model_set`: the userspace registry.
#[derive(Debug, Default)]
pub struct DlrModelSet {
    /// The next H_NN to hand out (`last_nn_id++`); starts at 1.
    pub last_nn_id: u32,
    /// Registered models.
    pub models: BTreeMap<HNn, DlrModel>,
}

impl DlrModelSet {
    /// An empty registry whose first H_NN is 1.
    pub fn new() -> Self {
        DlrModelSet { last_nn_id: 1, models: BTreeMap::new() }
    }

    /// Allocates an H_NN and registers `m` under it (the S5 tail, under the
    /// write lock). O(log n) in registered models.
    ///
    /// The seed's `models[id] = dlr_model` would silently replace an entry
    /// if `last_nn_id` ever came back to a live id (it wraps after 2^32
    /// loads); here an occupied H_NN is refused with `NRT_FAILURE`, the
    /// registry untouched except for the consumed id, and `m` handed back in
    /// the error so the caller can unstage it.
    pub fn register(&mut self, mut m: DlrModel) -> Result<HNn, (LoadError, Box<DlrModel>)> {
        let id = HNn(self.last_nn_id);
        self.last_nn_id = self.last_nn_id.wrapping_add(1);
        if let Some(old) = self.models.get(&id) {
            marks::hit("load.s5.h_nn_occupied");
            let e = LoadError::new(
                NrtStatus::Failure,
                Stage::S5Register,
                format!("H_NN {} is already registered (model {:?}); not replacing it", id.0, old.name),
            );
            return Err((e, Box::new(m)));
        }
        m.h_nn = id;
        self.models.insert(id, m);
        Ok(id)
    }

    /// `kmgr_unload_nn`'s guard and erase: the model must be READY
    /// (`state == 4`) with no execution in flight (`ref_count == 0`); then
    /// its entry is removed and returned. A refused model stays registered,
    /// unchanged. O(log n).
    pub fn unload(&mut self, h_nn: HNn) -> Result<DlrModel, LoadError> {
        let m = self.models.get(&h_nn).ok_or_else(|| unknown(h_nn))?;
        if m.state != DlrState::READY {
            marks::hit("load.unload.not_ready");
            return Err(LoadError::new(
                NrtStatus::Failure,
                Stage::Unload,
                format!(
                    "model {} is {} ({}), not READY ({}); not unloaded",
                    h_nn.0,
                    m.state.name(),
                    m.state.value(),
                    DlrState::READY.value()
                ),
            ));
        }
        if m.ref_count != 0 {
            marks::hit("load.unload.busy");
            return Err(LoadError::new(
                NrtStatus::Failure,
                Stage::Unload,
                format!("model {} has {} executions in flight; not unloaded", h_nn.0, m.ref_count),
            ));
        }
        self.models.remove(&h_nn).ok_or_else(|| unknown(h_nn))
    }

    /// Takes one execution reference on a READY model (`ref_count += 1`). O(log n).
    pub fn acquire(&mut self, h_nn: HNn) -> Result<(), LoadError> {
        let m = self.models.get_mut(&h_nn).ok_or_else(|| unknown(h_nn))?;
        if m.state != DlrState::READY {
            return Err(LoadError::new(
                NrtStatus::Failure,
                Stage::Unload,
                format!("model {} is {}, not READY; no execution", h_nn.0, m.state.name()),
            ));
        }
        m.ref_count = m.ref_count.checked_add(1).ok_or_else(|| {
            LoadError::new(NrtStatus::Failure, Stage::Unload, format!("model {}: too many executions", h_nn.0))
        })?;
        Ok(())
    }
}

/// The error for an H_NN nothing is registered under.
pub fn unknown(h_nn: HNn) -> LoadError {
    LoadError::new(NrtStatus::InvalidHandle, Stage::Unload, format!("no model with H_NN {}", h_nn.0))
}

/// The tdrv model db: per-core models by `(tpb, h_model)`.
#[derive(Debug, Default)]
pub struct TdrvDb {
    /// The last H_MODEL handed out (0 = none yet).
    pub last_h_model: u32,
    /// Per-core models.
    pub models: BTreeMap<(u32, HModel), Model>,
}

impl TdrvDb {
    /// `tdrv_get_unique_h_model()`: the next H_MODEL, from 1.
    pub fn tdrv_get_unique_h_model(&mut self) -> HModel {
        self.last_h_model = self.last_h_model.wrapping_add(1);
        HModel(self.last_h_model)
    }

    /// `add_model`: registers a staged core's model.
    pub fn add_model(&mut self, m: Model) -> Result<(), LoadError> {
        let key = (m.tpb, m.h_model);
        if self.models.contains_key(&key) {
            return Err(LoadError::new(
                NrtStatus::Failure,
                Stage::S4Stage,
                format!("tpb {} already holds model {}", key.0, key.1.0),
            ));
        }
        self.models.insert(key, m);
        Ok(())
    }
}

/// `nrt_vnc_usage`: how many loaded models claim each logical core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VncUsage {
    /// Claims per vnc index.
    pub counts: Vec<u32>,
}

impl VncUsage {
    /// `n` vncs, none claimed.
    pub fn new(n: u32) -> Self {
        VncUsage { counts: vec![0; n as usize] }
    }

    /// `nrt_vnc_usage_find_and_inc`: claims `start_nc`, or with -1 the
    /// least-claimed vnc (lowest index on ties).
    ///
    /// Choice (the seed names the function only): any other negative value is
    /// `NRT_INVALID`; an index past the device's vncs is `NRT_LOAD_NOT_ENOUGH_NC`.
    pub fn find_and_inc(&mut self, start_nc: i32) -> Result<u32, LoadError> {
        let n = self.counts.len();
        let idx = match start_nc {
            -1 => self.counts.iter().enumerate().min_by_key(|&(i, c)| (*c, i)).map(|(i, _)| i),
            s if s < 0 => {
                return Err(LoadError::invalid(Stage::S0Guard, format!("invalid start_nc {s}")));
            }
            s => Some(s as usize).filter(|&i| i < n),
        };
        let Some(idx) = idx else {
            marks::hit("load.s0.not_enough_nc");
            return Err(LoadError::new(
                NrtStatus::LoadNotEnoughNc,
                Stage::S0Guard,
                format!("start_nc {start_nc} is not a NeuronCore: {n} logical NeuronCores available"),
            ));
        };
        self.counts[idx] += 1;
        Ok(idx as u32)
    }

    /// `nrt_vnc_usage_dec`.
    pub fn dec(&mut self, idx: u32) {
        if let Some(c) = self.counts.get_mut(idx as usize) {
            *c = c.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::records::{DlrKelfModel, KblModelParam};

    #[test]
    fn vnc_claims_pick_the_least_used_and_refuse_bad_indices() {
        let mut u = VncUsage::new(3);
        assert_eq!(u.find_and_inc(-1).unwrap(), 0);
        assert_eq!(u.find_and_inc(-1).unwrap(), 1);
        assert_eq!(u.find_and_inc(0).unwrap(), 0);
        assert_eq!(u.find_and_inc(-1).unwrap(), 2);
        assert_eq!(u.counts, vec![2, 1, 1]);
        assert_eq!(u.find_and_inc(3).unwrap_err().status, NrtStatus::LoadNotEnoughNc);
        assert_eq!(u.find_and_inc(-2).unwrap_err().status, NrtStatus::Invalid);
        u.dec(0);
        u.dec(9);
        assert_eq!(u.counts, vec![1, 1, 1]);
        assert_eq!(VncUsage::new(0).find_and_inc(-1).unwrap_err().status, NrtStatus::LoadNotEnoughNc);
    }

    fn model(name: &str, state: DlrState) -> DlrModel {
        DlrModel {
            h_nn: HNn(0),
            name: name.to_owned(),
            uuid: [1; 16],
            vnc_idx: 0,
            state,
            ref_count: 0,
            kelf_model: DlrKelfModel {
                h_model: HModel(9),
                vcore: 0,
                tpbs: vec![0],
                sg_count: 1,
                uuid: [1; 16],
                params: KblModelParam::default(),
                shared: None,
                io: BTreeMap::new(),
            },
            input_info: BTreeMap::new(),
            output_info: BTreeMap::new(),
        }
    }

    #[test]
    fn an_occupied_h_nn_is_refused_and_the_entry_kept() {
        let mut set = DlrModelSet::new();
        assert_eq!(set.register(model("a", DlrState::READY)).unwrap(), HNn(1));
        // The counter comes back to a live id (it wraps after 2^32 loads).
        set.last_nn_id = 1;
        let (e, back) = set.register(model("b", DlrState::READY)).unwrap_err();
        assert_eq!((e.status, e.stage), (NrtStatus::Failure, Stage::S5Register));
        assert!(e.message.contains("H_NN 1 is already registered"), "{e}");
        assert_eq!(back.name, "b", "the refused model is handed back for unstaging");
        assert_eq!(set.models.len(), 1);
        assert_eq!(set.models[&HNn(1)].name, "a", "the registered model is not replaced");
        assert_eq!(set.register(model("c", DlrState::READY)).unwrap(), HNn(2), "the refused id is consumed");
    }

    #[test]
    fn h_nn_wraps_to_zero_after_u32_max() {
        let mut set = DlrModelSet { last_nn_id: u32::MAX, models: BTreeMap::new() };
        assert_eq!(set.register(model("a", DlrState::READY)).unwrap(), HNn(u32::MAX));
        assert_eq!(set.register(model("b", DlrState::READY)).unwrap(), HNn(0));
        assert_eq!(set.last_nn_id, 1);
    }

    #[test]
    fn unload_guard_refuses_on_its_state_half_and_on_its_ref_half() {
        let mut set = DlrModelSet::new();
        let h = set.register(model("a", DlrState::INIT)).unwrap();
        let e = set.unload(h).unwrap_err();
        assert_eq!((e.status, e.stage), (NrtStatus::Failure, Stage::Unload));
        assert!(e.message.contains("is INIT (0), not READY (4)"), "{e}");
        assert!(set.models.contains_key(&h), "a refused model stays registered");
        set.models.get_mut(&h).unwrap().state = DlrState(3);
        assert!(set.unload(h).unwrap_err().message.contains("is UNKNOWN (3), not READY (4)"));
        assert!(set.acquire(h).unwrap_err().message.contains("not READY"), "no execution of a model that is not READY");
        set.models.get_mut(&h).unwrap().state = DlrState::READY;
        set.acquire(h).unwrap();
        assert_eq!(set.models[&h].ref_count, 1);
        let e = set.unload(h).unwrap_err();
        assert!(e.message.contains("1 executions in flight"), "{e}");
        assert!(set.models.contains_key(&h));
        set.models.get_mut(&h).unwrap().ref_count = 0;
        assert_eq!(set.unload(h).unwrap().name, "a");
        assert!(set.models.is_empty());
        assert_eq!(set.unload(h).unwrap_err().status, NrtStatus::InvalidHandle);
        assert_eq!(set.acquire(h).unwrap_err().status, NrtStatus::InvalidHandle);
    }

    #[test]
    fn dlr_state_values_are_the_seeds() {
        assert_eq!((DlrState::INIT.value(), DlrState::READY.value()), (0, 4));
        assert_eq!((DlrState::INIT.name(), DlrState::READY.name(), DlrState(9).name()), ("INIT", "READY", "UNKNOWN"));
    }
}
