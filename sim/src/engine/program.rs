//! Everything static about a run, built once from the device and the core
//! images: each engine's records fetched from device memory at its
//! `StreamImage` address and decoded (DESIGN.md, "Execution": a relocation
//! bug changes what runs), each DMA ring read and decoded, the mirrored HBM,
//! the var table, and for every access its mirror location and its var.
//!
//! Cost: O(n log n) in records and accesses (sorting the mirrored ranges
//! and the semaphore plans; each access's mirror place comes out of the
//! mirror's merge, no search per access); the shadow memory builds its intervals at run
//! time ([`crate::check::shadow`]).

use std::collections::BTreeMap;

use lncsim_model::codegen::record::{DESCRIPTOR_SIZE, DeviceDescriptor, RECORD_SIZE};
use lncsim_model::ir::Engine;
use lncsim_model::load::{CoreImage, Device, Isa};

use crate::SimError;
use crate::check::ownership::outside_var;
use crate::check::unequal::canonical_access;
use crate::engine::cost::CostModel;
use crate::engine::decode::{DecodeCtx, Instr, decode};
use crate::engine::mirror::{Hbm, Place};
use crate::engine::vars::{NONE, VarTable};

/// One engine's decoded stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub core_ix: u32,
    pub engine: Engine,
    pub instrs: Vec<Instr>,
}

/// The values some wait asks of one semaphore, and how many waits ask each.
#[derive(Clone, Debug, Default)]
pub(crate) struct SemPlan {
    pub wanted: Vec<u32>,
    pub waits: Vec<u32>,
}

/// What the run needs to know about one core.
#[derive(Clone, Debug)]
pub(crate) struct CoreInfo {
    pub core: u32,
    pub tpb: u32,
    pub queues: Vec<String>,
    pub semaphores: u32,
    /// Participant cores of each barrier group, sorted.
    pub barrier_groups: BTreeMap<u32, Vec<u32>>,
}

/// The static program of a run.
#[derive(Debug)]
pub(crate) struct Program {
    /// Streams by global engine index (`core_ix * 5 + engine`).
    pub streams: Vec<Stream>,
    pub vars: VarTable,
    pub hbm: Hbm,
    /// Preset vars `(start, end, owner)`: who owns which bytes before the run.
    pub preset: Vec<(u64, u64, u32)>,
    /// Per core, per semaphore.
    pub sems: Vec<Vec<SemPlan>>,
    pub cores: Vec<CoreInfo>,
}

/// Most records or descriptors one stream may have (a corrupt count fails cleanly).
const MAX_ITEMS: u64 = 1 << 26;

fn fetch(device: &dyn Device, pa: u64, count: u64, size: usize, what: &str) -> Result<Vec<u8>, SimError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > MAX_ITEMS {
        return Err(SimError::BadImage(format!("{what}: {count} items")));
    }
    device.copy_out(pa, count * size as u64).map_err(|e| SimError::Device(format!("fetching {what}: {e}")))
}

impl Program {
    /// Fetches, decodes and resolves everything.
    pub(crate) fn build(device: &dyn Device, images: &[CoreImage], cost: &CostModel) -> Result<Program, SimError> {
        let vars = VarTable::new(images);
        let mut streams = Vec::new();
        let mut cores = Vec::new();
        for (ci, img) in images.iter().enumerate() {
            if img.isa != Isa::Lncsim {
                return Err(SimError::BadImage(format!(
                    "core {}: the streams are in the {:?} instruction set, which the simulator does not execute",
                    img.core, img.isa
                )));
            }
            let order: Vec<Engine> = img.engines.iter().map(|s| s.engine).collect();
            if order != Engine::ALL {
                return Err(SimError::BadImage(format!(
                    "core {}: streams {order:?}, expected {:?}",
                    img.core,
                    Engine::ALL
                )));
            }
            let semaphores = img.semaphores.min(256);
            for s in &img.engines {
                let what = format!("core {} {:?}", img.core, s.engine);
                let ring_bytes = fetch(device, s.ring_pa, s.descriptors, DESCRIPTOR_SIZE, &format!("{what} ring"))?;
                let ring: Vec<Option<DeviceDescriptor>> =
                    ring_bytes.chunks_exact(DESCRIPTOR_SIZE).map(DeviceDescriptor::decode).collect();
                let rec_bytes = fetch(device, s.pa, s.records, RECORD_SIZE, &format!("{what} records"))?;
                let ctx = DecodeCtx {
                    semaphores,
                    queues: img.queues.len() as u32,
                    ring: &ring,
                    descriptor_vars: &s.descriptor_vars,
                    cost,
                };
                let instrs = rec_bytes
                    .chunks_exact(RECORD_SIZE)
                    .enumerate()
                    .map(|(k, b)| decode(b, s.operand_vars.get(k).copied().unwrap_or([None; 3]), &ctx))
                    .collect();
                streams.push(Stream { core_ix: ci as u32, engine: s.engine, instrs });
            }
            cores.push(CoreInfo {
                core: img.core,
                tpb: img.tpb,
                queues: img.queues.clone(),
                semaphores,
                barrier_groups: img
                    .barrier_groups
                    .iter()
                    .map(|(&g, p)| {
                        let mut p = p.clone();
                        p.sort_unstable();
                        (g, p)
                    })
                    .collect(),
            });
        }
        let accesses =
            streams.iter().flat_map(|s| s.instrs.iter().flat_map(|i| i.mems().iter().map(|m| (m.pa, m.len))));
        let (hbm, places) = Hbm::mirror(device, images, accesses)?;
        let mut p = Program { streams, vars, hbm, preset: Vec::new(), sems: Vec::new(), cores };
        p.resolve(&places);
        p.presets();
        p.sem_plans();
        Ok(p)
    }

    /// Gives every access its place in the mirror (`places`, in access
    /// order) and attaches its var, owner and equalization status.
    fn resolve(&mut self, places: &[Place]) {
        // Per owner id, the first shared var holding it (owner ids are dense).
        let mut canonical: Vec<u32> = vec![NONE; self.vars.owner_count()];
        for (g, v) in self.vars.vars.iter().enumerate() {
            if v.shared
                && let Some(c) = canonical.get_mut(v.owner as usize)
                && *c == NONE
            {
                *c = g as u32;
            }
        }
        let mut places = places.iter();
        for s in &mut self.streams {
            for i in &mut s.instrs {
                let n = usize::from(i.nmem);
                for m in &mut i.mem[..n] {
                    m.loc = places.next().copied().flatten();
                    let Some(g) = (m.var_id != NONE).then(|| self.vars.global(s.core_ix as usize, m.var_id)).flatten()
                    else {
                        continue;
                    };
                    let v = &self.vars.vars[g as usize];
                    m.var = g;
                    m.owner = v.owner;
                    m.out_of_var = outside_var(m.pa, m.len, v.pa, v.size);
                    if v.shared
                        && let Some(&c) = canonical.get(v.owner as usize).filter(|&&c| c != NONE)
                    {
                        m.unequal = canonical_access(m.pa, v.pa, self.vars.vars[c as usize].pa);
                        m.compared = c != g;
                    }
                }
            }
        }
    }

    /// The preset vars' byte ranges and owners, in var order (the shadow's initial owners).
    fn presets(&mut self) {
        self.preset =
            self.vars.vars.iter().filter(|v| v.preset).map(|v| (v.pa, v.pa.saturating_add(v.size), v.owner)).collect();
    }

    /// Collects, per semaphore, the values waits ask for, and numbers each wait's slot.
    /// Cost: one sort of the w legal waits' (core, semaphore, value), O(w log w),
    /// then a run-length pass (no ordered map per semaphore), and a bisection per wait.
    fn sem_plans(&mut self) {
        let mut keys: Vec<(u32, u8, u32)> = Vec::new();
        for s in &self.streams {
            let semaphores = self.cores.get(s.core_ix as usize).map_or(0, |c| c.semaphores);
            for w in s.instrs.iter().filter(|i| i.illegal.is_none()).flat_map(|i| i.waits.iter().flatten()) {
                if u32::from(w.sem) < semaphores {
                    keys.push((s.core_ix, w.sem, w.value));
                }
            }
        }
        keys.sort_unstable();
        self.sems = self.cores.iter().map(|c| vec![SemPlan::default(); c.semaphores as usize]).collect();
        for run in keys.chunk_by(|a, b| a == b) {
            let (core, sem, value) = run[0];
            if let Some(p) = self.sems.get_mut(core as usize).and_then(|c| c.get_mut(usize::from(sem))) {
                p.wanted.push(value);
                p.waits.push(u32::try_from(run.len()).unwrap_or(u32::MAX));
            }
        }
        for s in &mut self.streams {
            for w in s.instrs.iter_mut().flat_map(|i| i.waits.iter_mut().flatten()) {
                if let Some(p) = self.sems[s.core_ix as usize].get(usize::from(w.sem)) {
                    w.slot = p.wanted.partition_point(|&v| v < w.value) as u32;
                }
            }
        }
    }
}
