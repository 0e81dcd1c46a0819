//! S4 on one core and the per-load shared state (seed 002, "Stage 3+4 — KBL
//! Build and Device-DRAM Stage"), with S5's relocation inside the build.
//!
//! [`vtpb_info_shared_init_vtpb`] allocates what every core of a load
//! shares: the shared region (sized by the largest `vnc_shared` tmp-buf) and
//! one buffer per input/output name. [`kbl_model_add`] builds one core, in
//! the seed's order as far as it applies here:
//!
//! | seed step | here |
//! |---|---|
//! | `calloc(0x1E40) model_t` | the [`Model`] under construction |
//! | `dbtc_storage_init`, `dma_queue_bundle_instance_lut_init`, `dve_dynamic_config_init`, `ucode_stage_libs`, `hw_exec_queue_count_descs` | no counterpart on the simulated device |
//! | `dmem_alloc` (MEM_ALLOC_V2MT64) | the carve-out, one allocation |
//! | `io_init_mr_to_name_map` / `mr_pointer_init_pointer_vars` | each var's physical address |
//! | `io_create_queues` | the queue table |
//! | `drs_create_data_refill_rings` | `dmem_buf_copyin` of every `file` var (weights) |
//! | `act_local_storage_tbls_init` | `dmem_buf_copyin` of the engines' tables |
//! | `sequencer_setup_instr` | S5 (a): relocate each stream, `dmem_buf_copyin` it |
//! | `dma_ring_setup_queue_bundles` | S5 (b): `imcpy_load_vring`, `dmem_buf_copyin` each ring |
//! | `add_model` | insert into the tdrv db under `(tpb, h_model)` |
//!
//! Any failure after the carve-out runs `model_free` (frees it), so a failed
//! core leaves nothing behind; its siblings are the fan-out's business.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::device::Device;
use super::error::{LoadError, Stage};
use super::graph::KelfNn;
use super::image::{CoreImage, Isa, StreamImage, VarImage};
use super::kbin::{Kbin, KbinVar, Place};
use super::mem_ref::operand_in_var;
use super::records::{HModel, IoTensor, Model, Region};
use super::registry::TdrvDb;
use super::relocate::{KbinPatch, imcpy_load_vring, translate_pseudo_instrs};
use super::trace::LoadTrace;
use crate::codegen::PAGE;
use crate::codegen::record::{Operand, RECORD_SIZE};
use crate::marks;

/// `vtpb_get_virtual_core`: a logical core and its physical cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualCore {
    /// The vnc index.
    pub idx: u32,
    /// Its physical cores present on the device (fewer than `core_size` on a short device).
    pub tpbs: Vec<u32>,
    /// `vtpb_get_vtpb_core_size`: the load's vnc size (1 unless the NEFF has the LNC feature bit).
    pub core_size: u32,
}

/// `vtpb_info_shared`: what every core of one load shares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedInfo {
    /// The shared region, if any subgraph has a `vnc_shared` tmp-buf.
    pub shared: Option<Region>,
    /// One buffer per input/output name.
    pub io: BTreeMap<String, IoTensor>,
}

impl SharedInfo {
    /// The device allocations it holds, in a fixed order.
    pub fn regions(&self) -> Vec<Region> {
        self.shared.iter().copied().chain(self.io.values().map(|t| t.region)).collect()
    }
}

fn dev_err(e: &super::device::DeviceError) -> LoadError {
    LoadError::device(Stage::S4Stage, e)
}

/// Frees the regions of a [`SharedInfo`]; the first error is returned, every region is tried.
pub fn vtpb_info_shared_free<D: Device + ?Sized>(dev: &D, info: &SharedInfo) -> Result<(), LoadError> {
    let mut first = Ok(());
    for r in info.regions() {
        if let Err(e) = dev.mem_free(r.pa) {
            first = first.and(Err(dev_err(&e)));
        }
    }
    first
}

/// `vtpb_info_shared_init_vtpb`: allocates the shared region and the IO
/// buffers on `tpb` (the vcore's first core); on failure frees what it allocated.
pub fn vtpb_info_shared_init_vtpb<D: Device + ?Sized>(dev: &D, tpb: u32, kg: &KelfNn) -> Result<SharedInfo, LoadError> {
    let mut info = SharedInfo::default();
    let step = |info: &mut SharedInfo| -> Result<(), LoadError> {
        if kg.shared_size > 0 {
            let pa = dev.mem_alloc(tpb, kg.shared_size, PAGE).map_err(|e| dev_err(&e))?;
            info.shared = Some(Region { pa, size: kg.shared_size });
        }
        for (name, v) in &kg.io {
            let pa = dev.mem_alloc(tpb, v.size.max(1), v.align.max(64)).map_err(|e| dev_err(&e))?;
            info.io
                .insert(name.clone(), IoTensor { var_type: v.var_type.clone(), region: Region { pa, size: v.size } });
        }
        Ok(())
    };
    match step(&mut info) {
        Ok(()) => Ok(info),
        Err(e) => {
            marks::hit("load.s4.shared_init_failed");
            // The allocation error is the one to report; freeing our own allocations cannot fail.
            let _ = vtpb_info_shared_free(dev, &info);
            Err(e)
        }
    }
}

/// What one core's staging needs besides its KBIN.
#[derive(Clone, Copy, Debug)]
pub struct StageCtx<'a> {
    /// The logical core.
    pub vcore: &'a VirtualCore,
    /// The load's device-side key.
    pub h_model: HModel,
    /// The per-load shared state.
    pub shared: &'a SharedInfo,
}

/// One core's staging outcome and its trace events.
#[derive(Clone, Debug)]
pub struct CoreOutcome {
    /// Ok once the core's model is in the db.
    pub result: Result<(), LoadError>,
    /// What it did.
    pub trace: LoadTrace,
}

/// The physical address of a var of this core, once the carve-out is at `carve`.
pub fn var_pa(v: &KbinVar, carve: u64, shared: &SharedInfo) -> Option<u64> {
    match v.place {
        Place::Io => shared.io.get(&v.name).map(|t| t.region.pa),
        Place::Carveout(o) => Some(carve + o),
        Place::Shared(o) => shared.shared.map(|r| r.pa + o),
        Place::NotInHbm => None,
    }
}

/// `kbl_model_add` for subgraph `pcore` on `vcore.tpbs[pcore]` (see the module docs).
pub fn kbl_model_add<D: Device + ?Sized>(
    dev: &D,
    db: &Mutex<TdrvDb>,
    kbin: &Kbin,
    pcore: u32,
    ctx: &StageCtx<'_>,
) -> CoreOutcome {
    let mut trace = LoadTrace::default();
    let Some(&tpb) = ctx.vcore.tpbs.get(pcore as usize) else {
        let e = LoadError::invalid(Stage::S4Stage, format!("no physical core for subgraph {pcore}"));
        trace.fail("kbl_model_add", &e);
        return CoreOutcome { result: Err(e), trace };
    };
    let carve = match dev.mem_alloc(tpb, kbin.carveout_size, kbin.carveout_align) {
        Ok(pa) => Region { pa, size: kbin.carveout_size },
        Err(e) => {
            let e = dev_err(&e);
            trace.fail("kbl_model_add", &e);
            return CoreOutcome { result: Err(e), trace };
        }
    };
    let result = build(dev, db, kbin, tpb, carve, ctx, &mut trace);
    if let Err(e) = &result {
        marks::hit("load.s4.model_free");
        // model_free: the build error is the one to report; freeing our own carve-out cannot fail.
        let _ = dev.mem_free(carve.pa);
        trace.fail("kbl_model_add", e);
    }
    CoreOutcome { result, trace }
}

fn build<D: Device + ?Sized>(
    dev: &D,
    db: &Mutex<TdrvDb>,
    kbin: &Kbin,
    tpb: u32,
    carve: Region,
    ctx: &StageCtx<'_>,
    trace: &mut LoadTrace,
) -> Result<(), LoadError> {
    let copy = |pa: u64, data: &[u8]| dev.copy_in(tpb, pa, data).map_err(|e| dev_err(&e));
    // io_init_mr_to_name_map / mr_pointer_init_pointer_vars.
    let pa_of = |v: &KbinVar| var_pa(v, carve.pa, ctx.shared);
    let vars: Vec<VarImage> = kbin
        .vars
        .iter()
        .map(|v| {
            let pa = pa_of(v);
            VarImage {
                name: v.name.clone(),
                kind: v.kind.clone(),
                pa: pa.unwrap_or(0),
                size: if pa.is_some() { v.size } else { 0 },
                var_type: v.var_type.clone(),
            }
        })
        .collect();
    // io_create_queues.
    let queues = kbin.queues.clone();
    // drs_create_data_refill_rings: the weights.
    let mut weights = 0;
    for (v, img) in kbin.vars.iter().zip(&vars) {
        if let Some(data) = v.data.as_deref().filter(|d| !d.is_empty()) {
            copy(img.pa, data)?;
            weights += 1;
        }
    }
    // act_local_storage_tbls_init: engine tables, opaque.
    for t in &kbin.tables {
        copy(carve.pa + t.off, &t.data)?;
    }
    // sequencer_setup_instr: S5 sub-layer (a), then stage each stream.
    let mut engines = Vec::new();
    let mut patches: Vec<KbinPatch> = Vec::new();
    let mut relocated = 0u64;
    for e in &kbin.engines {
        let pa = carve.pa + e.stream_off;
        let (bytes, operand_vars) = match &e.records {
            Some(records) => {
                let mut resolve = |op: Operand| -> Result<u64, String> {
                    let v = operand_in_var(&kbin.vars, op)?;
                    pa_of(v)
                        .map(|base| base + u64::from(op.b))
                        .ok_or_else(|| format!("var {:?} has no address", v.name))
                };
                let t = translate_pseudo_instrs(e.engine, records, &mut resolve).map_err(|m| {
                    LoadError::invalid(Stage::S5Register, format!("{}/{}.bin {m}", kbin.name, e.engine.file_stem()))
                })?;
                relocated +=
                    t.records.iter().filter(|r| r.flags & crate::codegen::record::FLAG_RELOCATED != 0).count() as u64;
                patches.extend(t.patches);
                (t.records.iter().flat_map(|r| r.encode()).collect::<Vec<u8>>(), t.operand_vars)
            }
            None => (e.stream.clone(), vec![[None; 3]; e.device_records as usize]),
        };
        debug_assert_eq!(bytes.len() as u64, e.device_records * RECORD_SIZE as u64);
        if !bytes.is_empty() {
            copy(pa, &bytes)?;
        }
        engines.push(StreamImage {
            engine: e.engine,
            pa,
            records: e.device_records,
            ring_pa: carve.pa + e.ring_off,
            descriptors: e.dma.len() as u64,
            operand_vars,
            descriptor_vars: e.dma.iter().map(|d| (d.from, d.to)).collect(),
        });
    }
    // dma_ring_setup_queue_bundles: S5 sub-layer (b).
    let mut descriptors = 0;
    for e in &kbin.engines {
        let mut base = |id: u32| -> Result<u64, String> {
            kbin.vars.get(id as usize).and_then(pa_of).ok_or_else(|| format!("var_id {id} has no address"))
        };
        let ring = imcpy_load_vring(&e.dma, &mut base)
            .map_err(|m| LoadError::invalid(Stage::S5Register, format!("{} {} {m}", kbin.name, e.engine.key())))?;
        if !ring.is_empty() {
            marks::hit("load.s5.dma_ring_relocated");
            let bytes: Vec<u8> = ring.iter().flat_map(|d| d.encode()).collect();
            copy(carve.pa + e.ring_off, &bytes)?;
            descriptors += ring.len();
        }
    }
    let records: u64 = engines.iter().map(|s| s.records).sum();
    trace.ok(
        Stage::S4Stage,
        "kbl_model_add",
        format!(
            "{} on tpb {tpb}: carve-out {:#x}+{:#x}, {weights} weights, {} tables, {records} records staged",
            kbin.name,
            carve.pa,
            carve.size,
            kbin.tables.len()
        ),
    );
    let reloc = match kbin.isa {
        Isa::Lncsim => {
            marks::hit("load.s5.relocated");
            format!("{relocated} records var-id -> PA, {} kbin_patch_info IP deltas", patches.len())
        }
        Isa::Opaque => {
            marks::hit("load.s5.opaque_streams");
            format!("{records} records of the real ISA staged opaque, not relocated")
        }
    };
    trace.ok(
        Stage::S5Register,
        "relocate",
        format!("{}: {reloc}; {descriptors} DMA descriptors made absolute", kbin.name),
    );
    let image = CoreImage {
        core: kbin.sg,
        tpb,
        engines,
        vars,
        queues,
        semaphores: kbin.semaphores,
        barrier_groups: kbin.barrier_groups.clone(),
        isa: kbin.isa,
    };
    let model = Model {
        tpb,
        h_model: ctx.h_model,
        sg: kbin.sg,
        sg_name: kbin.name.clone(),
        carveout: carve,
        kbin_patch_info: patches,
        image,
    };
    db.lock().unwrap_or_else(PoisonError::into_inner).add_model(model)
}

/// `kbl_model_remove`: takes `(tpb, h_model)` out of the db and frees its carve-out (`model_free`).
pub fn kbl_model_remove<D: Device + ?Sized>(
    dev: &D,
    db: &Mutex<TdrvDb>,
    tpb: u32,
    h_model: HModel,
) -> Result<(), LoadError> {
    let m = db.lock().unwrap_or_else(PoisonError::into_inner).models.remove(&(tpb, h_model));
    let m = m.ok_or_else(|| {
        LoadError::new(
            crate::neff::NrtStatus::InvalidHandle,
            Stage::Unload,
            format!("no model {} on tpb {tpb}", h_model.0),
        )
    })?;
    dev.mem_free(m.carveout.pa).map_err(|e| LoadError::device(Stage::Unload, &e))
}
