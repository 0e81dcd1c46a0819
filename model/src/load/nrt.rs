//! `nrt_load` (seed 002, S0..S5) on a [`Runtime`]: [`Runtime::nrt_load`]
//! composes the phases of a [`PendingLoad`] with the TNC cache and the
//! real-thread staging driver, exactly as a simulator can compose them itself
//! with a stepped [`lncsim_tnc::TncState`] and [`StageFanout::step`]:
//!
//! ```text
//! nrt_load_begin (S0 guard, header, vnc claim)  -> PendingLoad
//!   TNC enter (CREATOR / REUSE / wait / INDEPENDENT); CREATOR or INDEPENDENT: neff_parse (S1)
//!   parse_graph (S2 + S3)
//!   dlr_kelf_stage (S4 prelude) -> StageFanout: Stage(i).., Join, Rollback(j).. -> finish
//!   register (S5: dlr_model_set, READY, H_NN)
//!   release_neff_load_info (S5 tail: the TNC reference or the own parse)
//! into_nrt_model (S0 tail: nrt_model_t; the asymmetric edge's fault point)
//! ```
//!
//! Dropping a [`PendingLoad`] before `into_nrt_model` succeeds releases its
//! vnc claim (`nrt_vnc_usage_dec` on every error path).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lncsim_tnc::{Entry, HolderGuard, Release, TncPath};

use super::device::Device;
use super::error::{LoadError, Stage};
use super::fanout::{StageFanout, StageStep, dlr_kelf_stage, lock_db};
use super::graph::{KelfNn, NeffLoadInfo, neff_parse, parse_graph};
use super::records::{DlrKelfModel, DlrModel, DlrState, HModel, HNn, KblModelParam, NrtModel, Region, Uuid};
use super::runtime::Runtime;
use super::trace::LoadTrace;
use crate::marks;
use crate::neff::header::FEATURE_VNC;
use crate::neff::manifest::{Arch, Target, VarType};
use crate::neff::{NeffHeader, NrtStatus};

/// The kelf target's name (`*`, `sunda`, `cayman`, `mariana`).
fn target_name(t: Target) -> &'static str {
    match t {
        Target::Any => "*",
        Target::Arch(Arch::V2) => "sunda",
        Target::Arch(Arch::V3) => "cayman",
        Target::Arch(Arch::V4) => "mariana",
    }
}

/// A staging driver: runs a [`StageFanout`] to its end.
type Drive<'a, D> = dyn FnMut(StageFanout<'_, D>) -> (Result<DlrKelfModel, LoadError>, LoadTrace) + 'a;

/// A load past S0: the vnc is claimed; drive S1..S5 with its methods.
#[derive(Debug)]
pub struct PendingLoad<'r, 'b, D: Device> {
    rt: &'r Runtime<D>,
    buf: &'b [u8],
    header: NeffHeader,
    vnc_idx: u32,
    vnc_size: u32,
    param: KblModelParam,
    io_names: (Vec<String>, Vec<String>),
    trace: LoadTrace,
    claimed: bool,
}

impl<D: Device> Drop for PendingLoad<'_, '_, D> {
    fn drop(&mut self) {
        if self.claimed {
            marks::hit("load.s0.vnc_usage_dec");
            self.rt.usage().dec(self.vnc_idx);
        }
    }
}

impl<D: Device> Runtime<D> {
    /// `nrt_load(buf, size, start_nc, nc_count)`: the whole pipeline; `start_nc` -1 picks a vnc.
    pub fn nrt_load(&self, buf: &[u8], start_nc: i32, nc_count: i32) -> Result<NrtModel, LoadError> {
        self.nrt_load_traced(buf, start_nc, nc_count).0
    }

    /// [`Runtime::nrt_load`] and what each stage did.
    pub fn nrt_load_traced(
        &self,
        buf: &[u8],
        start_nc: i32,
        nc_count: i32,
    ) -> (Result<NrtModel, LoadError>, LoadTrace) {
        self.nrt_load_with(buf, start_nc, nc_count, &mut |fan| fan.run_threads())
    }

    /// `nrt_load` with the staging fan-out stepped on the calling thread:
    /// `pick` chooses the index of the next step among
    /// [`StageFanout::enabled`] (e.g. a seeded scheduler). The TNC is the
    /// runtime's [`TncCache`](lncsim_tnc::TncCache), which never blocks when
    /// loads run one at a time; a simulator interleaving several loads steps a
    /// [`lncsim_tnc::TncState`] and the [`PendingLoad`] phases itself.
    pub fn nrt_load_stepped(
        &self,
        buf: &[u8],
        start_nc: i32,
        nc_count: i32,
        pick: &mut dyn FnMut(&[StageStep]) -> usize,
    ) -> (Result<NrtModel, LoadError>, LoadTrace) {
        self.nrt_load_with(buf, start_nc, nc_count, &mut |mut fan| {
            loop {
                let steps = fan.enabled();
                if steps.is_empty() {
                    break;
                }
                let s = steps[pick(&steps).min(steps.len() - 1)];
                // An enabled step is never refused.
                let _ = fan.step(s);
            }
            fan.finish()
        })
    }

    fn nrt_load_with(
        &self,
        buf: &[u8],
        start_nc: i32,
        nc_count: i32,
        drive: &mut Drive<'_, D>,
    ) -> (Result<NrtModel, LoadError>, LoadTrace) {
        let mut p = match self.nrt_load_begin(buf, start_nc, nc_count) {
            Ok(p) => p,
            Err(e) => {
                let mut t = LoadTrace::default();
                t.fail("nrt_load", &e);
                return (Err(e), t);
            }
        };
        let h_nn = match self.kmgr_load_nn_nc(&mut p, drive) {
            Ok(h) => h,
            Err(e) => {
                if p.trace.events.last().is_none_or(|ev| ev.ok) {
                    p.trace.fail("kmgr_load_nn_nc", &e);
                }
                return (Err(e), std::mem::take(&mut p.trace));
            }
        };
        p.into_nrt_model(h_nn)
    }

    /// Sets the registry's next H_NN (`dlr_model_set.last_nn_id`), e.g. to
    /// replay a counter that wrapped (after 2^32 loads) onto a live id; the
    /// registry then refuses the occupied H_NN.
    pub fn set_next_h_nn(&self, id: u32) {
        self.set_mut().last_nn_id = id;
    }

    /// `kmgr_load_nn_nc`: S1..S5 with the TNC cache; `drive` runs the staging fan-out.
    fn kmgr_load_nn_nc(&self, p: &mut PendingLoad<'_, '_, D>, drive: &mut Drive<'_, D>) -> Result<HNn, LoadError> {
        let entry = self.tnc.enter(p.uuid());
        p.note_tnc(entry.path());
        let (info, holder) = match entry {
            Entry::Creator(creator) => match p.neff_parse() {
                Ok(info) => {
                    let holder = creator.complete(&info);
                    (info, Some(holder))
                }
                Err(e) => {
                    creator.fail();
                    return Err(e);
                }
            },
            Entry::Reuse { info, holder, .. } => (info, Some(holder)),
            Entry::Independent { .. } => (p.neff_parse()?, None),
        };
        // The TNC reference (`holder`) and the parse result are kept to the
        // S5 tail, as in the seed: `release_tmp_neff_cache` (or
        // `free_neff_load_info`) runs after the model is registered, and on
        // an error edge when `holder` and `info` drop on the way out.
        let kg = p.parse_graph(&info)?;
        let fan = p.dlr_kelf_stage(kg)?;
        let (km, t) = drive(fan);
        p.trace.extend(t);
        let h_nn = p.register(km?)?;
        p.release_neff_load_info(holder, info);
        Ok(h_nn)
    }

    /// S0 up to `kmgr_load_nn_nc`: the `nc_count` guard, the state guard,
    /// `neff_get_header_from_buffer`, the LNC feature gate, the vnc claim and
    /// the model config.
    pub fn nrt_load_begin<'r, 'b>(
        &'r self,
        buf: &'b [u8],
        start_nc: i32,
        nc_count: i32,
    ) -> Result<PendingLoad<'r, 'b, D>, LoadError> {
        if nc_count != -1 && nc_count != 2 {
            marks::hit("load.s0.vnc_count_deprecated");
            return Err(LoadError::invalid(Stage::S0Guard, "vnc_count is deprecated. only use -1."));
        }
        if self.closed.load(Ordering::SeqCst) {
            marks::hit("load.s0.closed");
            return Err(LoadError::new(NrtStatus::Closed, Stage::S0Guard, "nrt_load after nrt_close"));
        }
        let header = NeffHeader::parse(buf).map_err(|e| {
            marks::hit("load.s0.bad_header");
            LoadError::neff(Stage::S0Guard, &e)
        })?;
        let vnc_size = if header.feature_bits & FEATURE_VNC != 0 {
            marks::hit("load.s0.vnc_feature");
            self.device.lnc_size().max(1)
        } else {
            1
        };
        let vnc_idx = self.usage().find_and_inc(start_nc)?;
        let mut trace = LoadTrace::default();
        trace.ok(
            Stage::S0Guard,
            "nrt_load",
            format!(
                "nc_count {nc_count}; header ok: {:?}, uuid {}, lnc {}, features {:#x} (vnc size {vnc_size}); vnc {vnc_idx} claimed",
                header.name_str(),
                header.uuid_hex(),
                header.lnc_size,
                header.feature_bits
            ),
        );
        Ok(PendingLoad {
            rt: self,
            buf,
            header,
            vnc_idx,
            vnc_size,
            param: self.config.model,
            io_names: (Vec::new(), Vec::new()),
            trace,
            claimed: true,
        })
    }
}

impl<'r, D: Device> PendingLoad<'r, '_, D> {
    /// The NEFF's UUID (the TNC key).
    pub fn uuid(&self) -> Uuid {
        self.header.uuid
    }

    /// The NEFF's header.
    pub fn header(&self) -> &NeffHeader {
        &self.header
    }

    /// The claimed vnc.
    pub fn vnc_idx(&self) -> u32 {
        self.vnc_idx
    }

    /// The events so far.
    pub fn trace(&self) -> &LoadTrace {
        &self.trace
    }

    /// Takes the events so far (e.g. before dropping a failed load).
    pub fn take_trace(&mut self) -> LoadTrace {
        std::mem::take(&mut self.trace)
    }

    /// Appends events (a stepped fan-out's, from [`StageFanout::finish`]).
    pub fn absorb(&mut self, t: LoadTrace) {
        self.trace.extend(t);
    }

    /// Records the TNC branch this loader took (its coverage mark and trace line).
    pub fn note_tnc(&mut self, path: TncPath) {
        if matches!(path, TncPath::UsingCacheAfterWait | TncPath::CreationFailedDoMyOwn) {
            marks::hit(TncPath::Waiting.mark());
        }
        marks::hit(path.mark());
        let role = path.role().map_or("WAIT".to_owned(), |r| format!("{r:?}").to_uppercase());
        self.trace.ok(Stage::S1Parse, "tnc_enter", format!("{role}: {}", path.message()));
    }

    /// S1 `neff_parse` (the CREATOR's or an INDEPENDENT loader's own parse).
    pub fn neff_parse(&mut self) -> Result<Arc<NeffLoadInfo>, LoadError> {
        match neff_parse(self.buf, self.param.verify_hash) {
            Ok(info) => {
                let n = info.container.members.len();
                self.trace.ok(Stage::S1Parse, "neff_parse", format!("{n} members"));
                Ok(Arc::new(info))
            }
            Err(e) => {
                self.trace.fail("neff_parse", &e);
                Err(e)
            }
        }
    }

    /// S2 + S3: `parse_neff_json`, `dlr_kelf_load` (`kelf_load`, `construct_kbin`
    /// / `gen_kbin` per graph, `kelf_resolve_vtpb_remote_variables`).
    pub fn parse_graph<'i>(&mut self, info: &'i NeffLoadInfo) -> Result<KelfNn<'i>, LoadError> {
        let nn = self.header.name_str();
        match parse_graph(info, &nn, self.rt.config.arch, self.vnc_size) {
            Ok(kg) => {
                self.trace.ok(
                    Stage::S2Graph,
                    "dlr_kelf_load",
                    format!(
                        "Loaded mlaop on {} NeuronCores (target {}, {:?} ISA); {} IO tensors, {} remote variables",
                        kg.kbins.len(),
                        target_name(kg.target),
                        kg.isa,
                        kg.io.len(),
                        kg.remote_vars.len()
                    ),
                );
                for k in &kg.kbins {
                    let records: u64 = k.engines.iter().map(|e| e.device_records).sum();
                    self.trace.ok(
                        Stage::S3Build,
                        "gen_kbin",
                        format!(
                            "{}: {} vars, {} queues, {records} device records, carve-out {:#x} bytes",
                            k.name,
                            k.vars.len(),
                            k.queues.len(),
                            k.carveout_size
                        ),
                    );
                }
                self.io_names = (kg.inputs.clone(), kg.outputs.clone());
                Ok(kg)
            }
            Err(e) => {
                self.trace.fail("parse_graph", &e);
                Err(e)
            }
        }
    }

    /// S4 prelude: `tdrv_get_unique_h_model`, `vtpb_get_virtual_core`, the
    /// bridge, then [`dlr_kelf_stage`]; returns the staging machine to drive
    /// (it lives as long as the parse `kg` borrows).
    pub fn dlr_kelf_stage<'k>(&mut self, kg: KelfNn<'k>) -> Result<StageFanout<'k, D>, LoadError>
    where
        'r: 'k,
    {
        let h_model: HModel = lock_db(&self.rt.tdrv).tdrv_get_unique_h_model();
        let vcore = self.rt.vtpb_get_virtual_core(self.vnc_idx, self.vnc_size);
        let km = DlrKelfModel {
            h_model,
            vcore: vcore.idx,
            tpbs: Vec::new(),
            sg_count: 0,
            uuid: self.header.uuid,
            params: self.param,
            shared: None,
            io: Default::default(),
        };
        match dlr_kelf_stage(&self.rt.device, &self.rt.tdrv, kg, vcore, km) {
            Ok(fan) => {
                let sh = fan.shared();
                let shared = sh.shared.map_or("none".to_owned(), |r| format!("{:#x}+{:#x}", r.pa, r.size));
                self.trace.ok(
                    Stage::S4Stage,
                    "dlr_kelf_stage",
                    format!(
                        "H_MODEL {}; vtpb_info_shared_init_vtpb: shared region {shared}, {} IO buffers; {} kbins",
                        h_model.0,
                        sh.io.len(),
                        fan.nkbin()
                    ),
                );
                Ok(fan)
            }
            Err(e) => {
                self.trace.fail("dlr_kelf_stage", &e);
                Err(e)
            }
        }
    }

    /// The S5 tail: the `dlr_model` (allocated [`DlrState::INIT`], then the
    /// bridge, uuid and IO maps attached and the state set to READY),
    /// registered under a fresh H_NN. An occupied H_NN is refused
    /// ([`super::registry::DlrModelSet::register`]): the staged cores and
    /// buffers are then unstaged, so the failed load leaves nothing behind.
    pub fn register(&mut self, km: DlrKelfModel) -> Result<HNn, LoadError> {
        let io = |names: &[String], t: VarType| -> std::collections::BTreeMap<String, Region> {
            names
                .iter()
                .filter_map(|n| km.io.get(n).filter(|b| b.var_type == t).map(|b| (n.clone(), b.region)))
                .collect()
        };
        let input_info = io(&self.io_names.0, VarType::Input);
        let output_info = io(&self.io_names.1, VarType::Output);
        let mut m = DlrModel {
            h_nn: HNn(0),
            name: self.header.name_str(),
            uuid: [0; 16],
            vnc_idx: self.vnc_idx,
            state: DlrState::INIT,
            ref_count: 0,
            input_info: Default::default(),
            output_info: Default::default(),
            kelf_model: km,
        };
        m.uuid = self.header.uuid;
        m.input_info = input_info;
        m.output_info = output_info;
        m.state = DlrState::READY;
        let h_model = m.kelf_model.h_model;
        let registered = self.rt.set_mut().register(m);
        let id = match registered {
            Ok(id) => id,
            Err((e, m)) => {
                self.trace.fail("dlr_model_set", &e);
                if let Err(u) = self.rt.kmgr_unstage_kelf_model(&m.kelf_model) {
                    self.trace.fail("kmgr_unstage_kelf_model", &u);
                }
                return Err(e);
            }
        };
        marks::hit("load.s5.registered");
        self.trace.ok(
            Stage::S5Register,
            "dlr_model_set",
            format!("Loaded NN {:?} ID: {} (READY, H_MODEL {})", self.header.name_str(), id.0, h_model.0),
        );
        Ok(id)
    }

    /// The S5 tail's last step, after [`PendingLoad::register`]: a loader
    /// that holds a TNC reference (CREATOR or REUSE) drops it
    /// (`release_tmp_neff_cache`; the last one returns the slot to UNINIT),
    /// an INDEPENDENT loader frees its own parse (`free_neff_load_info`).
    pub fn release_neff_load_info(&mut self, holder: Option<HolderGuard<Arc<NeffLoadInfo>>>, info: Arc<NeffLoadInfo>) {
        drop(info);
        let (func, detail) = match holder {
            Some(h) => match h.release() {
                Release::Held => ("release_tmp_neff_cache", "reference dropped, slot still held"),
                Release::Freed => ("release_tmp_neff_cache", "last reference, slot UNINIT"),
            },
            None => ("free_neff_load_info", "own parse freed"),
        };
        marks::hit("load.s5.neff_load_info_released");
        self.trace.ok(Stage::S5Register, func, detail);
    }

    /// The S0 tail: `calloc(0x11C)` of the `nrt_model_t`. Its failure (the
    /// [`Runtime::fail_next_nrt_model_alloc`] fault point) is the seed's one
    /// asymmetric edge: the vnc claim is released and `NRT_FAIL_HOST_MEM_ALLOC`
    /// returned (the seed writes `NRT_OOM`, which `nrt_status.h` does not
    /// have), but the model S5 registered stays registered and staged.
    pub fn into_nrt_model(mut self, h_nn: HNn) -> (Result<NrtModel, LoadError>, LoadTrace) {
        let mut trace = std::mem::take(&mut self.trace);
        if self.rt.fail_nrt_model_alloc.swap(false, Ordering::SeqCst) {
            marks::hit("load.s0.nrt_model_alloc_failed_after_register");
            if self.rt.plant_handle_rollback.load(Ordering::SeqCst) {
                self.rt.set_mut().last_nn_id = h_nn.0;
                let mut db = super::fanout::lock_db(&self.rt.tdrv);
                db.last_h_model = db.last_h_model.wrapping_sub(1);
            }
            let e = LoadError::new(
                NrtStatus::FailHostMemAlloc,
                Stage::S0Guard,
                format!(
                    "failed to allocate nrt_model_t; model {} stays registered (seed: no unload on this edge)",
                    h_nn.0
                ),
            );
            trace.fail("nrt_load", &e);
            return (Err(e), trace);
        }
        self.claimed = false;
        let m = NrtModel { vnc_idx: self.vnc_idx, name: self.header.name_str(), uuid: self.header.uuid, h_nn };
        trace.ok(Stage::S0Guard, "nrt_load", format!("NN: {}, loaded successfully (H_NN {})", m.name, h_nn.0));
        (Ok(m), trace)
    }
}
