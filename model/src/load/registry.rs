//! The runtime's tables: `dlr_model_set` (H_NN -> [`DlrModel`]), the tdrv
//! device db ((tpb, H_MODEL) -> [`Model`]) and the vnc usage counts. Two
//! independent monotone allocators: `last_nn_id++` here, and
//! `tdrv_get_unique_h_model()` in the db (seed 002, "The two handles").

use std::collections::BTreeMap;

use super::error::{LoadError, Stage};
use super::records::{DlrModel, HModel, HNn, Model};
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

    /// Allocates an H_NN and registers `m` under it (the S5 tail, under the write lock).
    pub fn register(&mut self, mut m: DlrModel) -> HNn {
        let id = HNn(self.last_nn_id);
        self.last_nn_id = self.last_nn_id.wrapping_add(1);
        m.h_nn = id;
        self.models.insert(id, m);
        id
    }
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

    #[test]
    fn the_two_allocators_are_independent() {
        let mut db = TdrvDb::default();
        let set = DlrModelSet::new();
        assert_eq!(db.tdrv_get_unique_h_model(), HModel(1));
        assert_eq!(db.tdrv_get_unique_h_model(), HModel(2));
        assert_eq!(set.last_nn_id, 1, "handing out H_MODELs leaves H_NN untouched");
    }
}
