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
use super::records::{HModel, IoTensor, Model, Region, StagedTable};
use super::registry::TdrvDb;
use super::relocate::{KbinPatch, imcpy_load_vring, translate_pseudo_instrs_encoded};
use super::trace::LoadTrace;
use crate::codegen::PAGE;
use crate::codegen::record::{DESCRIPTOR_SIZE, Operand, RECORD_SIZE};
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
pub fn vtpb_info_shared_init_vtpb<D: Device + ?Sized>(
    dev: &D,
    tpb: u32,
    kg: &KelfNn<'_>,
) -> Result<SharedInfo, LoadError> {
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

/// The physical address of a var of this core, once the carve-out is at
/// `carve` (`None` when it is not in HBM or the address would overflow).
pub fn var_pa(v: &KbinVar<'_>, carve: u64, shared: &SharedInfo) -> Option<u64> {
    var_home(v, Region { pa: carve, size: 0 }, shared).and_then(|(r, o)| r.pa.checked_add(o))
}

/// A `hot` entry of a var with no home (or an id that is no var).
const NO_HOME: u64 = u64::MAX;

/// The address an operand resolves to when its var's `hot` entry says it is
/// in HBM and the operand lies inside it; `None` sends it to the full check
/// (which then gives the same address or names the error). O(1).
fn hot_pa(hot: &[(u64, u64)], op: Operand) -> Option<u64> {
    let &(pa, size) = hot.get(op.a as usize)?;
    (pa != NO_HOME && u64::from(op.b) + u64::from(op.c) <= size).then_some(())?;
    pa.checked_add(u64::from(op.b))
}

/// The allocation a var lives in and its offset there: the carve-out, the
/// shared region, or its IO buffer.
fn var_home(v: &KbinVar<'_>, carve: Region, shared: &SharedInfo) -> Option<(Region, u64)> {
    match v.place {
        Place::Io => shared.io.get(&v.name).map(|t| (t.region, 0)),
        Place::Carveout(o) => Some((carve, o)),
        Place::Shared(o) => shared.shared.map(|r| (r, o)),
        Place::NotInHbm => None,
    }
}

/// `[off, off + len)` inside `region`, as a physical address; else an `NRT_INVALID` naming the core and `what`:
/// staging never writes a byte outside the allocation it means, so it never
/// writes over another live allocation.
fn inside(kbin: &Kbin<'_>, region: Region, off: u64, len: u64, what: &dyn Fn() -> String) -> Result<u64, LoadError> {
    let end = off.checked_add(len);
    let pa = region.pa.checked_add(off);
    match (pa, end) {
        (Some(pa), Some(end)) if end <= region.size => Ok(pa),
        _ => {
            marks::hit("load.s4.staged_outside");
            Err(LoadError::invalid(
                Stage::S4Stage,
                format!(
                    "{}: {} [{off:#x}, +{len:#x}) is outside its allocation {:#x}+{:#x}",
                    kbin.name,
                    what(),
                    region.pa,
                    region.size
                ),
            ))
        }
    }
}

/// `kbl_model_add` for subgraph `pcore` on `vcore.tpbs[pcore]` (see the module docs).
pub fn kbl_model_add<D: Device + ?Sized>(
    dev: &D,
    db: &Mutex<TdrvDb>,
    kbin: &Kbin<'_>,
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
    kbin: &Kbin<'_>,
    tpb: u32,
    carve: Region,
    ctx: &StageCtx<'_>,
    trace: &mut LoadTrace,
) -> Result<(), LoadError> {
    let copy = |pa: u64, data: &[u8]| dev.copy_in(tpb, pa, data).map_err(|e| dev_err(&e));
    // io_init_mr_to_name_map / mr_pointer_init_pointer_vars: every HBM var
    // inside its allocation, before anything is copied.
    let pa_of = |v: &KbinVar<'_>| var_pa(v, carve.pa, ctx.shared);
    // The image is indexed by var_id (the simulator's layout); gaps are not in HBM.
    // var_table bounds the ids, so this is a small multiple of the table.
    let n = kbin.vars.max_id().map_or(0, |m| m as usize + 1);
    let mut homes: Vec<Option<u64>> = vec![None; n];
    // (address, size) of every HBM var by id, 16 bytes each: what relocation
    // probes per operand, instead of the var table's full entries (a cache,
    // not a judge: any miss takes the checked path below).
    let mut hot: Vec<(u64, u64)> = vec![(NO_HOME, 0); n];
    for (id, v) in kbin.vars.iter() {
        if let Some((region, off)) = var_home(v, carve, ctx.shared) {
            let pa = inside(kbin, region, off, v.size, &|| format!("var {:?} (id {id})", v.name))?;
            homes[id as usize] = Some(pa);
            hot[id as usize] = (pa, v.size);
        } else if v.place != Place::NotInHbm {
            return Err(LoadError::invalid(
                Stage::S4Stage,
                format!("{}: var {:?} has no allocation", kbin.name, v.name),
            ));
        }
    }
    // Every table, stream and ring inside the carve-out, before anything is copied.
    let mut table_pas = Vec::with_capacity(kbin.tables.len());
    for t in &kbin.tables {
        table_pas.push(inside(kbin, carve, t.off, t.data.len() as u64, &|| format!("table {}", t.member))?);
    }
    let mut engine_pas = Vec::with_capacity(kbin.engines.len());
    for e in &kbin.engines {
        let len = e.device_records.saturating_mul(RECORD_SIZE as u64);
        let pa = inside(kbin, carve, e.stream_off, len, &|| format!("the {} stream", e.engine.key()))?;
        let ring_len = (e.dma.len() as u64).saturating_mul(DESCRIPTOR_SIZE as u64);
        let ring_pa = inside(kbin, carve, e.ring_off, ring_len, &|| format!("the {} DMA ring", e.engine.key()))?;
        engine_pas.push((pa, len, ring_pa));
    }
    let vars: Vec<VarImage> = (0..n as u32)
        .map(|id| match kbin.vars.get(id) {
            Some(v) => {
                let pa = homes[id as usize];
                VarImage {
                    name: v.name.clone(),
                    kind: v.kind.clone(),
                    pa: pa.unwrap_or(0),
                    size: if pa.is_some() { v.size } else { 0 },
                    var_type: v.var_type.clone(),
                }
            }
            None => VarImage {
                name: String::new(),
                kind: crate::codegen::VarKind::Scratch,
                pa: 0,
                size: 0,
                var_type: crate::neff::manifest::VarType::Other(String::new()),
            },
        })
        .collect();
    // io_create_queues.
    let queues = kbin.queues.clone();
    // drs_create_data_refill_rings: the weights, each inside its var.
    let mut weights = 0;
    for (id, v) in kbin.vars.iter() {
        if let Some(data) = v.data.filter(|d| !d.is_empty()) {
            let (Some((region, off)), true) = (var_home(v, carve, ctx.shared), data.len() as u64 <= v.size) else {
                return Err(LoadError::invalid(
                    Stage::S4Stage,
                    format!("{}: var {:?} (id {id}): {} bytes of data do not fit it", kbin.name, v.name, data.len()),
                ));
            };
            let pa = inside(kbin, region, off, data.len() as u64, &|| format!("weights of var {:?}", v.name))?;
            copy(pa, data)?;
            weights += 1;
        }
    }
    // act_local_storage_tbls_init: engine tables, opaque, each inside the carve-out.
    let mut tables = Vec::with_capacity(kbin.tables.len());
    for (t, &pa) in kbin.tables.iter().zip(&table_pas) {
        copy(pa, t.data)?;
        tables.push(StagedTable { member: t.member.clone(), pa, len: t.data.len() as u64 });
    }
    // sequencer_setup_instr: S5 sub-layer (a), then stage each stream.
    let mut engines = Vec::new();
    let mut patches: Vec<KbinPatch> = Vec::new();
    let mut relocated = 0u64;
    for (e, &(pa, len, ring_pa)) in kbin.engines.iter().zip(&engine_pas) {
        let (bytes, operand_vars): (std::borrow::Cow<'_, [u8]>, _) = match &e.records {
            Some(records) => {
                let mut resolve = |op: Operand| -> Result<u64, String> {
                    if let Some(pa) = hot_pa(&hot, op) {
                        return Ok(pa);
                    }
                    let v = operand_in_var(&kbin.vars, op)?;
                    pa_of(v)
                        .and_then(|base| base.checked_add(u64::from(op.b)))
                        .ok_or_else(|| format!("var {:?} has no address", v.name))
                };
                let t = translate_pseudo_instrs_encoded(e.engine, records, &mut resolve).map_err(|m| {
                    LoadError::invalid(Stage::S5Register, format!("{}/{}.bin {m}", kbin.name, e.engine.file_stem()))
                })?;
                relocated += t.relocated;
                patches.extend(t.patches);
                (t.bytes.into(), t.operand_vars)
            }
            None => (e.stream.into(), vec![[None; 3]; e.device_records as usize]),
        };
        if bytes.len() as u64 != len {
            return Err(LoadError::invalid(
                Stage::S5Register,
                format!("{}/{}.bin: {} bytes staged for {len} reserved", kbin.name, e.engine.file_stem(), bytes.len()),
            ));
        }
        if !bytes.is_empty() {
            copy(pa, &bytes)?;
        }
        engines.push(StreamImage {
            engine: e.engine,
            pa,
            records: e.device_records,
            ring_pa,
            descriptors: e.dma.len() as u64,
            operand_vars,
            descriptor_vars: e.dma.iter().map(|d| (d.from, d.to)).collect(),
        });
    }
    // dma_ring_setup_queue_bundles: S5 sub-layer (b).
    let mut descriptors = 0;
    for (e, &(_, _, ring_pa)) in kbin.engines.iter().zip(&engine_pas) {
        let mut base = |id: u32| -> Result<u64, String> {
            kbin.vars.get(id).and_then(pa_of).ok_or_else(|| format!("var_id {id} has no address"))
        };
        let ring = imcpy_load_vring(&e.dma, &mut base)
            .map_err(|m| LoadError::invalid(Stage::S5Register, format!("{} {} {m}", kbin.name, e.engine.key())))?;
        if !ring.is_empty() {
            marks::hit("load.s5.dma_ring_relocated");
            let mut bytes = Vec::with_capacity(ring.len().saturating_mul(DESCRIPTOR_SIZE));
            ring.iter().for_each(|d| bytes.extend_from_slice(&d.encode()));
            // The ring was checked for the descriptor count; the encoding is that many descriptors.
            if bytes.len() as u64 != (e.dma.len() as u64).saturating_mul(DESCRIPTOR_SIZE as u64) {
                return Err(LoadError::invalid(
                    Stage::S5Register,
                    format!("{} {}: ring size mismatch", kbin.name, e.engine.key()),
                ));
            }
            copy(ring_pa, &bytes)?;
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
        tables,
        relocated_records: relocated,
        opaque_records: if kbin.isa == Isa::Opaque { records } else { 0 },
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

#[cfg(test)]
mod hot_tests {
    use super::*;

    #[test]
    fn the_hot_table_resolves_only_operands_inside_a_homed_var() {
        let hot = [(0x1000, 16), (NO_HOME, 0), (u64::MAX - 4, 8)];
        assert_eq!(hot_pa(&hot, Operand::var(0, 0, 16)), Some(0x1000));
        assert_eq!(hot_pa(&hot, Operand::var(0, 12, 4)), Some(0x100c));
        // One byte past the var, a var with no home, an id past the table: the checked path decides.
        assert_eq!(hot_pa(&hot, Operand::var(0, 12, 5)), None);
        assert_eq!(hot_pa(&hot, Operand::var(0, 17, 0)), None);
        assert_eq!(hot_pa(&hot, Operand::var(1, 0, 0)), None);
        assert_eq!(hot_pa(&hot, Operand::var(3, 0, 1)), None);
        // An address that would wrap is never handed out.
        assert_eq!(hot_pa(&hot, Operand::var(2, 5, 0)), None);
    }
}
