//! The runtime object: one simulated process's loader state over one
//! [`Device`]: the registry (`dlr_model_set`), the tdrv device db, the vnc
//! usage counts, the TNC cache, and the host-side fault point of the seed's
//! asymmetric edge. Every method takes `&self`, so many threads may load and
//! unload at once; `nrt_load` lives in [`super::nrt`].
//!
//! Unload (seed 002, "Error and Cleanup Paths"): `nrt_unload` ->
//! `kmgr_unload_nn` (state READY and ref count 0, erase) ->
//! `kmgr_unstage_kelf_model` -> `dlr_kelf_unstage` (per tpb
//! `kbl_model_remove`) -> `dlr_kelf_unload` (the shared region and IO
//! buffers) -> the vnc claim is released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use lncsim_tnc::TncCache;

use super::device::Device;
use super::error::{LoadError, Stage};
use super::fanout::lock_db;
use super::graph::NeffLoadInfo;
use super::image::CoreImage;
use super::records::{DlrKelfModel, DlrModel, HModel, HNn, KblModelParam, Model, NrtModel};
use super::registry::{DlrModelSet, TdrvDb, VncUsage, unknown};
use super::stage::{SharedInfo, VirtualCore, kbl_model_remove, vtpb_info_shared_free};
use crate::marks;
use crate::neff::NrtStatus;
use crate::neff::manifest::Arch;

/// `nrt_config`: what the runtime was initialised with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// The device architecture (the kelf arch gate); `cayman` (v3) by default.
    pub arch: Arch,
    /// `nrt_config_parse_model_config`'s result for every load.
    pub model: KblModelParam,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig { arch: Arch::V3, model: KblModelParam::default() }
    }
}

/// The NEFF loader of one (simulated) process (see the module docs).
#[derive(Debug)]
pub struct Runtime<D: Device> {
    pub(super) device: D,
    pub(super) config: RuntimeConfig,
    pub(super) closed: AtomicBool,
    pub(super) tnc: TncCache<Arc<NeffLoadInfo>>,
    pub(super) dlr_model_set: RwLock<DlrModelSet>,
    pub(super) tdrv: Mutex<TdrvDb>,
    pub(super) vnc_usage: Mutex<VncUsage>,
    pub(super) fail_nrt_model_alloc: AtomicBool,
    pub(super) plant_handle_rollback: AtomicBool,
}

/// One execution's hold on a READY model (`dlr_model.ref_count`); dropping it releases.
#[derive(Debug)]
pub struct ExecRef<'r, D: Device> {
    rt: &'r Runtime<D>,
    h_nn: HNn,
}

impl<D: Device> Drop for ExecRef<'_, D> {
    fn drop(&mut self) {
        if let Some(m) = self.rt.set_mut().models.get_mut(&self.h_nn) {
            m.ref_count = m.ref_count.saturating_sub(1);
        }
    }
}

impl<D: Device> ExecRef<'_, D> {
    /// The model held.
    pub fn h_nn(&self) -> HNn {
        self.h_nn
    }
}

impl<D: Device> Runtime<D> {
    /// `nrt_init` on `device` with the default config.
    pub fn new(device: D) -> Self {
        Self::with_config(device, RuntimeConfig::default())
    }

    /// `nrt_init` on `device` with `config`.
    pub fn with_config(device: D, config: RuntimeConfig) -> Self {
        let lnc = device.lnc_size().max(1);
        let vncs = device.num_tpbs().div_ceil(lnc);
        Runtime {
            device,
            config,
            closed: AtomicBool::new(false),
            tnc: TncCache::new(),
            dlr_model_set: RwLock::new(DlrModelSet::new()),
            tdrv: Mutex::new(TdrvDb::default()),
            vnc_usage: Mutex::new(VncUsage::new(vncs)),
            fail_nrt_model_alloc: AtomicBool::new(false),
            plant_handle_rollback: AtomicBool::new(false),
        }
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The config.
    pub fn config(&self) -> RuntimeConfig {
        self.config
    }

    /// The process's TNC parse cache.
    pub fn tnc(&self) -> &TncCache<Arc<NeffLoadInfo>> {
        &self.tnc
    }

    /// `nrt_close`: later loads fail with `NRT_CLOSED` (loaded models stay).
    pub fn nrt_close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Fault point of the seed's asymmetric edge: the next S0 `nrt_model_t`
    /// allocation fails *after* S5 registered the model.
    pub fn fail_next_nrt_model_alloc(&self) {
        self.fail_nrt_model_alloc.store(true, Ordering::SeqCst);
    }

    /// A planted bug (`lncsim run --plant handle-rollback`), never on by
    /// default: on the asymmetric S0 edge the registry takes back the H_NN
    /// and H_MODEL of the load that failed, although that model stays
    /// registered, so the next load is handed the same two handles.
    pub fn plant_handle_rollback(&self) {
        self.plant_handle_rollback.store(true, Ordering::SeqCst);
    }

    pub(super) fn set_mut(&self) -> std::sync::RwLockWriteGuard<'_, DlrModelSet> {
        self.dlr_model_set.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self) -> std::sync::RwLockReadGuard<'_, DlrModelSet> {
        self.dlr_model_set.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn usage(&self) -> std::sync::MutexGuard<'_, VncUsage> {
        self.vnc_usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of logical cores: `ceil(num_tpbs / lnc_size)` (the last may be short).
    pub fn num_vncs(&self) -> u32 {
        self.usage().counts.len() as u32
    }

    /// `vtpb_get_virtual_core`: vnc `idx`'s physical cores, with the load's `core_size`.
    pub fn vtpb_get_virtual_core(&self, idx: u32, core_size: u32) -> VirtualCore {
        let lnc = self.device.lnc_size().max(1);
        let n = self.device.num_tpbs();
        let first = idx.saturating_mul(lnc).min(n);
        let end = first.saturating_add(lnc).min(n);
        VirtualCore { idx, tpbs: (first..end).collect(), core_size }
    }

    /// Claims per vnc.
    pub fn vnc_usage(&self) -> Vec<u32> {
        self.usage().counts.clone()
    }

    /// Registered H_NNs, in order.
    pub fn registered(&self) -> Vec<HNn> {
        self.set().models.keys().copied().collect()
    }

    /// A copy of the registry value under `h_nn`.
    pub fn dlr_model(&self, h_nn: HNn) -> Option<DlrModel> {
        self.set().models.get(&h_nn).cloned()
    }

    /// The device db's keys, in order.
    pub fn device_models(&self) -> Vec<(u32, HModel)> {
        lock_db(&self.tdrv).models.keys().copied().collect()
    }

    /// The per-core models of `h_nn`, in subgraph order, found the only way
    /// there is: `h_nn -> dlr_model -> kelf_model.h_model -> (tpb, h_model)`.
    pub fn models(&self, h_nn: HNn) -> Result<Vec<Model>, LoadError> {
        let km = self.set().models.get(&h_nn).map(|m| m.kelf_model.clone()).ok_or_else(|| unknown(h_nn))?;
        let db = lock_db(&self.tdrv);
        km.tpbs
            .iter()
            .map(|&tpb| {
                db.models.get(&(tpb, km.h_model)).cloned().ok_or_else(|| {
                    LoadError::new(NrtStatus::Failure, Stage::Unload, format!("tpb {tpb} lost model {}", km.h_model.0))
                })
            })
            .collect()
    }

    /// What the simulator executes: one [`CoreImage`] per subgraph of `h_nn`, in subgraph order.
    pub fn core_images(&self, h_nn: HNn) -> Result<Vec<CoreImage>, LoadError> {
        Ok(self.models(h_nn)?.into_iter().map(|m| m.image).collect())
    }

    /// Takes one execution reference on a READY model (unload waits for none to be held).
    pub fn kmgr_model_acquire(&self, h_nn: HNn) -> Result<ExecRef<'_, D>, LoadError> {
        self.set_mut().acquire(h_nn)?;
        Ok(ExecRef { rt: self, h_nn })
    }

    /// `nrt_unload`: `kmgr_unload_nn`, then the vnc claim is released.
    pub fn nrt_unload(&self, model: &NrtModel) -> Result<(), LoadError> {
        self.kmgr_unload_nn(model.h_nn)?;
        self.usage().dec(model.vnc_idx);
        Ok(())
    }

    /// `kmgr_unload_nn`: guards READY and ref count 0, erases the registry
    /// entry, unstages every core and frees the load's shared state. Does not
    /// touch the vnc claim (that is `nrt_unload`'s), so it also cleans up a
    /// model left registered by the asymmetric edge.
    ///
    /// The guard is [`DlrModelSet::unload`]. Choice (the seed says "guards"
    /// and "ref-drain spin"): a model with executions in flight is refused
    /// with `NRT_FAILURE` instead of spinning.
    pub fn kmgr_unload_nn(&self, h_nn: HNn) -> Result<(), LoadError> {
        let km = self.set_mut().unload(h_nn)?.kelf_model;
        marks::hit("load.unload.ok");
        self.kmgr_unstage_kelf_model(&km)
    }

    /// `kmgr_unstage_kelf_model`: `dlr_kelf_unstage` then `dlr_kelf_unload`; every step is tried, the first error returned.
    pub(super) fn kmgr_unstage_kelf_model(&self, km: &DlrKelfModel) -> Result<(), LoadError> {
        let mut first = Ok(());
        for &tpb in &km.tpbs {
            first = first.and(kbl_model_remove(&self.device, &self.tdrv, tpb, km.h_model));
        }
        let shared = SharedInfo { shared: km.shared, io: km.io.clone() };
        first.and(vtpb_info_shared_free(&self.device, &shared))
    }
}
