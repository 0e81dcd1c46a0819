//! A minimal stager standing in for the loader (seed 002 S4/S5, as far as
//! execution needs it): allocates every var (inputs, outputs and weights one
//! buffer per name for all cores, the shared scratch once per load, a private
//! scratch per core), writes weights, expands `PseudoAddN` + `Ext` into `Add`
//! chains, relocates memory operands to physical addresses (FLAG_RELOCATED),
//! writes each engine's records and its absolute DMA descriptor ring, and
//! returns the [`CoreImage`]s with the debug info the simulator checks with.

use std::collections::BTreeMap;

use lncsim_model::codegen::record::{
    DeviceDescriptor, FLAG_COLLECTIVE, FLAG_RELOCATED, FLAG_SIGNAL, Opcode, Operand, Record,
};
use lncsim_model::codegen::{CoreCode, VarKind};
use lncsim_model::ir::init_value;
use lncsim_model::load::{CoreImage, Device, DeviceError, Isa, StreamImage, VarImage};
use lncsim_model::neff::manifest::VarType;

/// Why staging failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    /// The device refused an allocation or a copy.
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    /// The code is malformed (a bad pseudo-instruction, a bad var reference).
    #[error("bad code on core {core}: {why}")]
    BadCode {
        /// The core.
        core: u32,
        /// What is wrong.
        why: String,
    },
}

/// The `def.json` type the packager writes for a var of `kind`.
fn var_type(kind: &VarKind) -> VarType {
    match kind {
        VarKind::Input => VarType::Input,
        VarKind::Output => VarType::Output,
        VarKind::File { .. } => VarType::File,
        VarKind::Scratch | VarKind::SharedScratch => VarType::TmpBuf,
        VarKind::Virtual { .. } => VarType::Virtual,
    }
}

/// Memory operand slots of an opcode.
fn mem_slots(op: Opcode) -> usize {
    match op {
        Opcode::Add | Opcode::Mul | Opcode::MatMul => 3,
        Opcode::Relu | Opcode::Reduce => 2,
        _ => 0,
    }
}

/// Expands `PseudoAddN` + its `Ext` records into a chain of `Add`s on the destination.
fn expand(core: u32, recs: &[Record]) -> Result<Vec<Record>, StageError> {
    let bad = |why: String| StageError::BadCode { core, why };
    let mut out = Vec::with_capacity(recs.len());
    let mut i = 0;
    while i < recs.len() {
        let r = recs[i];
        match r.opcode {
            Opcode::PseudoAddN => {
                let k = r.imm as usize;
                let exts =
                    recs.get(i + 1..i + 1 + k).ok_or_else(|| bad(format!("record {i}: {k} Ext records missing")))?;
                let mut srcs = vec![r.ops[1], r.ops[2]];
                for e in exts {
                    if e.opcode != Opcode::Ext || e.imm > 3 {
                        return Err(bad(format!("record {i}: expected Ext, got {:?}", e.opcode)));
                    }
                    srcs.extend_from_slice(&e.ops[..e.imm as usize]);
                }
                let dst = r.ops[0];
                let n = srcs.len() - 1;
                for (j, pair) in
                    std::iter::once([srcs[0], srcs[1]]).chain(srcs[2..].iter().map(|&s| [dst, s])).enumerate()
                {
                    let mut a = Record::new(Opcode::Add, r.debug_id);
                    a.ops = [dst, pair[0], pair[1]];
                    if j == 0 {
                        a.waits = r.waits;
                    }
                    if j + 1 == n {
                        a.flags = r.flags & (FLAG_SIGNAL | FLAG_COLLECTIVE);
                        a.signal = r.signal;
                    }
                    out.push(a);
                }
                i += 1 + k;
            }
            Opcode::Ext => return Err(bad(format!("record {i}: Ext without PseudoAddN"))),
            _ => {
                out.push(r);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Stages `codes` (one per core, core `i` on tpb `i`) on `device`.
pub fn stage(device: &dyn Device, codes: &[CoreCode]) -> Result<Vec<CoreImage>, StageError> {
    // One buffer per name for inputs, outputs and weights; one shared scratch.
    let mut named: BTreeMap<String, u64> = BTreeMap::new();
    let shared_size =
        codes.iter().flat_map(|c| &c.vars).filter(|v| v.kind == VarKind::SharedScratch).map(|v| v.size).max();
    let shared = match shared_size {
        Some(s) => Some(device.mem_alloc(0, s, 4096)?),
        None => None,
    };
    let mut images = Vec::new();
    for (tpb, code) in codes.iter().enumerate() {
        let tpb = tpb as u32;
        let bad = |why: String| StageError::BadCode { core: code.core, why };
        let mut pas = vec![0u64; code.vars.len()];
        for (id, v) in code.vars.iter().enumerate() {
            pas[id] = match &v.kind {
                VarKind::Input | VarKind::Output | VarKind::File { .. } => match named.get(&v.name) {
                    Some(&pa) => pa,
                    None => {
                        let pa = device.mem_alloc(tpb, v.size, 4096)?;
                        if let VarKind::File { init } = v.kind {
                            let vals: Vec<u8> =
                                (0..v.size / 4).flat_map(|i| init_value(init, i).to_le_bytes()).collect();
                            device.copy_in(tpb, pa, &vals)?;
                        }
                        named.insert(v.name.clone(), pa);
                        pa
                    }
                },
                VarKind::SharedScratch => shared.unwrap_or(0),
                VarKind::Scratch => device.mem_alloc(tpb, v.size, 4096)?,
                VarKind::Virtual { .. } => 0,
            };
        }
        for (id, v) in code.vars.iter().enumerate() {
            if let VarKind::Virtual { backing, offset } = v.kind {
                let base =
                    pas.get(backing as usize).copied().ok_or_else(|| bad(format!("var {id}: no backing {backing}")))?;
                pas[id] = base + offset;
            }
        }
        let mut engines = Vec::new();
        for ec in &code.engines {
            let mut recs = expand(code.core, &ec.records)?;
            let mut operand_vars = Vec::with_capacity(recs.len());
            for r in &mut recs {
                let mut vars = [None; 3];
                let n = mem_slots(r.opcode);
                for (slot, var) in r.ops.iter_mut().zip(vars.iter_mut()).take(n) {
                    let pa = pas.get(slot.a as usize).ok_or_else(|| bad(format!("operand names var {}", slot.a)))?;
                    *var = Some(slot.a);
                    *slot = Operand::physical(pa + u64::from(slot.b), slot.c);
                }
                if mem_slots(r.opcode) > 0 {
                    r.flags |= FLAG_RELOCATED;
                }
                operand_vars.push(vars);
            }
            let bytes: Vec<u8> = recs.iter().flat_map(|r| r.encode()).collect();
            let pa = device.mem_alloc(tpb, bytes.len() as u64, 64)?;
            device.copy_in(tpb, pa, &bytes)?;
            let mut ring = Vec::new();
            let mut descriptor_vars = Vec::new();
            for d in &ec.dma {
                let at = |r: lncsim_model::codegen::VarRef| pas.get(r.var as usize).map(|p| p + r.offset);
                let (src, dst) =
                    at(d.src).zip(at(d.dst)).ok_or_else(|| bad("descriptor names a missing var".into()))?;
                ring.extend(DeviceDescriptor { src, dst, size: d.size, queue: d.queue, flags: 0 }.encode());
                descriptor_vars.push((d.src.var, d.dst.var));
            }
            let ring_pa = device.mem_alloc(tpb, ring.len() as u64, 64)?;
            device.copy_in(tpb, ring_pa, &ring)?;
            engines.push(StreamImage {
                engine: ec.engine,
                pa,
                records: recs.len() as u64,
                ring_pa,
                descriptors: ec.dma.len() as u64,
                operand_vars,
                descriptor_vars,
            });
        }
        let vars = code
            .vars
            .iter()
            .zip(&pas)
            .map(|(v, &pa)| VarImage {
                name: v.name.clone(),
                kind: v.kind.clone(),
                pa,
                size: v.size,
                var_type: var_type(&v.kind),
            })
            .collect();
        images.push(CoreImage {
            core: code.core,
            tpb,
            engines,
            vars,
            queues: code.queues.iter().map(|q| q.name.clone()).collect(),
            semaphores: code.semaphores,
            barrier_groups: code.barrier_groups.clone(),
            isa: Isa::Lncsim,
        });
    }
    Ok(images)
}
