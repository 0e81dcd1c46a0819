//! The KBIN's var table (`mem_ref_set`) and the other def.json reads of
//! `gen_kbin`: var placement, virtual vars in their backing region, queue
//! order, DMA descriptors, stream decoding and validation, semaphores and
//! barrier groups. Every malformed input is an `NRT_INVALID` naming the
//! def.json member.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::LoadError;
use super::mla::{IMPLICIT_SCRATCHPAD, KbinVar, Place, bad};
use super::relocate::{RelativeDescriptor, count_pseudo_instrs};
use super::var_table::VarTable;
use crate::codegen::VarKind;
use crate::codegen::record::{Opcode, Operand, RECORD_SIZE, Record};
use crate::ir::Engine;
use crate::marks;
use crate::neff::Subgraph;
use crate::neff::manifest::VarType;
use crate::neff::pack::{BARRIER_GROUPS_KEY, QUEUE_INDEX_KEY, SEMAPHORES_KEY, VNC_SHARED_KEY};

/// def.json var ids by var name: a hash index, looked up only, never
/// iterated (so its order reaches nothing). O(n) to build, O(1) a lookup.
pub(super) type VarIds<'a> = std::collections::HashMap<&'a str, u32>;

/// Queue names by index: the `queue_index` keys when every queue has a
/// distinct one in `0..n`, else def.json's (name) order. Choice: def.json
/// keys its queues by name, so without `queue_index` the compiler's queue
/// numbering is not recoverable and name order is the documented fallback.
pub(super) fn queue_order(sg: &Subgraph) -> Result<Vec<String>, LoadError> {
    let q = &sg.def.dma_queue;
    let mut slots: Vec<Option<String>> = vec![None; q.len()];
    for (name, dq) in q {
        let Some(i) = dq.extra.get(QUEUE_INDEX_KEY).and_then(Value::as_u64) else {
            return Ok(q.keys().cloned().collect());
        };
        match slots.get_mut(i as usize) {
            Some(s @ None) => *s = Some(name.clone()),
            _ => return Err(bad(sg, format!("queue {name:?}: {QUEUE_INDEX_KEY} {i} is out of range or repeated"))),
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// The KBIN's var table: vars keyed by var_id (sparse: a large id costs
/// nothing); HBM vars get `Place::Carveout(0)` / `Shared(0)` / `Io` until
/// laid out. Every number from def.json is bounded here, before it sizes or
/// places anything: var ids ([`var_id_limit`]), sizes and offsets
/// ([`MAX_FILE_BYTES`]), alignments (a power of two up to [`MAX_ALIGN`]);
/// two vars may not share an id. O(n log n) in vars (a sort by id; lookups
/// are O(1) in the dense [`VarTable`]). `file` payloads move out of `files` into their vars.
pub(super) fn var_table<'m>(sg: &Subgraph, files: &mut BTreeMap<String, &'m [u8]>) -> Result<VarTable<'m>, LoadError> {
    let limit = var_id_limit(sg.def.var.len());
    let mut vars = VarTable::with_capacity(sg.def.var.len());
    for (rank, (name, v)) in sg.def.var.iter().enumerate() {
        if v.var_id >= limit {
            marks::hit("load.s3.absurd_var_id");
            return Err(absurd_var_id(sg, name, v.var_id, limit));
        }
        let (size, align) = var_numbers(sg, name, v)?;
        let shared = v.extra.get(VNC_SHARED_KEY).and_then(Value::as_bool) == Some(true);
        let (kind, place, size, data) = match &v.var_type {
            VarType::Input => (VarKind::Input, Place::Io, size, None),
            VarType::Output => (VarKind::Output, Place::Io, size, None),
            VarType::File => {
                let data: &[u8] = files.remove(name).unwrap_or_default();
                if v.size.is_some_and(|s| (data.len() as u64) > s) {
                    return Err(bad(sg, format!("file var {name:?}: {} bytes of data for size {size}", data.len())));
                }
                let size = if v.size.is_some() { size } else { bounded(sg, name, "size", data.len() as u64)? };
                (VarKind::File { init: 0 }, Place::Carveout(0), size, Some(data))
            }
            VarType::TmpBuf if shared => (VarKind::SharedScratch, Place::Shared(0), size, None),
            VarType::TmpBuf => (VarKind::Scratch, Place::Carveout(0), size, None),
            VarType::Virtual => {
                (VarKind::Virtual { backing: IMPLICIT_SCRATCHPAD, offset: 0 }, Place::NotInHbm, size, None)
            }
            _ => (VarKind::Scratch, Place::NotInHbm, 0, None),
        };
        // Below the var_id limit (a u32) since the table holds at most that many vars.
        let name_rank = u32::try_from(rank).unwrap_or(u32::MAX);
        let var =
            KbinVar { name: name.clone(), var_type: v.var_type.clone(), kind, size, align, place, data, name_rank };
        if let Err(other) = vars.insert_new(v.var_id, var) {
            return Err(field(sg, name, "var_id", format!("{} is also the id of {:?}", v.var_id, other.name)));
        }
    }
    vars.finish();
    if vars.max_id().is_some_and(|m| m as usize + 1 > vars.len()) {
        marks::hit("load.s3.var_id_gap");
    }
    Ok(vars)
}

fn absurd_var_id(sg: &Subgraph, name: &str, id: u32, limit: u32) -> LoadError {
    let n = sg.def.var.len();
    field(sg, name, "var_id", format!("{id} is absurd: a table of {n} vars takes ids below {limit}"))
}

/// A var's bounded size and alignment (the number rules of [`var_table`]).
fn var_numbers(sg: &Subgraph, name: &str, v: &crate::neff::manifest::Var) -> Result<(u64, u64), LoadError> {
    let size = bounded(sg, name, "size", v.size.unwrap_or(0))?;
    bounded(sg, name, "backing_variable_off", v.backing_variable_off.unwrap_or(0))?;
    let align = v.alignment.unwrap_or(1).max(1);
    if !align.is_power_of_two() || align > MAX_ALIGN {
        return Err(field(sg, name, "alignment", format!("{align} is not a power of two up to {MAX_ALIGN}")));
    }
    Ok((size, align))
}

/// The loader's refusal of a subgraph's var numbers, without loading: the
/// first var id, size, offset or alignment [`var_table`] would refuse, with
/// the same message (for `lncsim neff inspect`). O(n) in vars.
pub fn refuse_absurd_numbers(sg: &Subgraph) -> Result<(), LoadError> {
    let limit = var_id_limit(sg.def.var.len());
    for (name, v) in &sg.def.var {
        if v.var_id >= limit {
            return Err(absurd_var_id(sg, name, v.var_id, limit));
        }
        var_numbers(sg, name, v)?;
    }
    Ok(())
}

/// Bytes any one size or offset read from a file may have (256 TiB): far
/// past any HBM, and small enough that a few hundred thousand of them add up
/// without overflowing a u64 (the layout still adds with checked arithmetic).
pub const MAX_FILE_BYTES: u64 = 1 << 48;
/// The largest alignment a var may ask for (4 GiB).
pub const MAX_ALIGN: u64 = 1 << 32;
/// The ids any table may use whatever its size (a small table may number its vars freely below this).
pub const VAR_ID_SLACK: u32 = 4096;

/// The exclusive bound on var ids for a table of `n` vars: `2 n + 4096`
/// (saturating). A table numbered densely from 0, as compilers do (the real
/// NEFF's are), loads at any size (1.4M vars on one core included), and so
/// does one with up to half its ids unused, or any numbering below 4096.
/// The per-core image is indexed by var_id (80 bytes an entry), so this bound
/// keeps it within a constant multiple of the def.json that declared the
/// vars: at most `2 n + 4096` entries. (A wider slack, e.g. `64 n`, let a
/// 16,320-var table span 2^20 ids: 80 MiB of image per core from under 1 MB
/// of JSON.)
pub fn var_id_limit(n: usize) -> u32 {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    n.saturating_mul(2).saturating_add(VAR_ID_SLACK)
}

/// An `NRT_INVALID` naming the subgraph (its def.json), the var and the field.
pub(super) fn field(sg: &Subgraph, var: &str, field: &str, msg: impl std::fmt::Display) -> LoadError {
    bad(sg, format!("var {var:?} field {field}: {msg}"))
}

/// `x` if it is at most [`MAX_FILE_BYTES`], else an error naming the var and field.
pub(super) fn bounded(sg: &Subgraph, var: &str, name: &str, x: u64) -> Result<u64, LoadError> {
    if x > MAX_FILE_BYTES {
        marks::hit("load.s3.absurd_number");
        return Err(field(sg, var, name, format!("{x:#x} is absurd (at most {MAX_FILE_BYTES:#x})")));
    }
    Ok(x)
}

/// Places `virtual` vars inside their backing var (which must be a
/// non-virtual HBM var) or, with no backing, in the implicit scratchpad at
/// `pad_off`; returns the scratchpad's size. Every offset is checked: a view
/// must lie inside its backing var, and no address computation may overflow.
///
/// Choice: views may overlap each other, backed or backing-less alike. A
/// backing-less var's `backing_variable_off` is an offset into the core's
/// scratchpad (seed 002, S5 (a): `relocate_instructions(eng, model_mr_set,
/// scratchpad)`, `mem_ref_to_addr`: addr = offset + physical_address), placed
/// by the compiler's allocator, which reuses the addresses of tensors whose
/// live intervals do not meet; the scratchpad is one piece of the carve-out.
pub(super) fn resolve_virtuals(
    sg: &Subgraph,
    ids: &VarIds<'_>,
    vars: &mut VarTable<'_>,
    pad_off: u64,
) -> Result<u64, LoadError> {
    let mut pad_end = 0u64;
    // The virtual vars with their def.json entries, in var_id order (one sort, no name lookups).
    let mut virtuals: Vec<(u32, &str, &crate::neff::manifest::Var)> = sg
        .def
        .var
        .iter()
        .filter(|(_, d)| vars.get(d.var_id).is_some_and(|v| v.var_type == VarType::Virtual))
        .map(|(name, d)| (d.var_id, name.as_str(), d))
        .collect();
    virtuals.sort_unstable_by_key(|&(id, ..)| id);
    let mut last_backing: Option<(&str, Option<u32>)> = None;
    for (id, name, def) in virtuals {
        let size = match vars.get(id) {
            Some(v) => v.size,
            None => continue,
        };
        let off = def.backing_variable_off.unwrap_or(0);
        let overflow = || field(sg, name, "backing_variable_off", format!("{off:#x} + size {size:#x} overflows"));
        let end = off.checked_add(size).ok_or_else(overflow)?;
        let Some(backing) = &def.backing_variable else {
            marks::hit("load.s3.implicit_scratchpad");
            pad_end = pad_end.max(end);
            let at = pad_off.checked_add(off).ok_or_else(overflow)?;
            if let Some(v) = vars.get_mut(id) {
                v.kind = VarKind::Virtual { backing: IMPLICIT_SCRATCHPAD, offset: off };
                v.place = Place::Carveout(at);
            }
            continue;
        };
        // Views name few distinct backings: the last one looked up is remembered.
        let b = match last_backing {
            Some((n, id)) if n == backing.as_str() => id,
            _ => {
                let id = ids.get(backing.as_str()).copied();
                last_backing = Some((backing.as_str(), id));
                id
            }
        };
        let bv = b
            .and_then(|b| vars.get(b))
            .ok_or_else(|| bad(sg, format!("virtual var {name:?}: no backing {backing:?}")))?;
        if bv.var_type == VarType::Virtual {
            return Err(bad(sg, format!("virtual var {name:?}: backing {backing:?} is itself virtual")));
        }
        if end > bv.size {
            return Err(bad(
                sg,
                format!("virtual var {name:?} [{off}, {end}) exceeds {backing:?} ({} bytes)", bv.size),
            ));
        }
        let place = match bv.place {
            Place::Carveout(o) => Place::Carveout(o.checked_add(off).ok_or_else(overflow)?),
            Place::Shared(o) => {
                marks::hit("load.s3.shared_virtual");
                Place::Shared(o.checked_add(off).ok_or_else(overflow)?)
            }
            Place::Io | Place::NotInHbm => {
                return Err(bad(sg, format!("virtual var {name:?}: backing {backing:?} is not a scratch region")));
            }
        };
        if let Some(v) = vars.get_mut(id) {
            v.kind = VarKind::Virtual { backing: b.unwrap_or(IMPLICIT_SCRATCHPAD), offset: off };
            v.place = place;
        }
    }
    Ok(pad_end)
}

/// The engine's relative descriptors, by var_id and queue index, bounds-checked.
pub(super) fn descriptors(
    sg: &Subgraph,
    e: Engine,
    ids: &VarIds<'_>,
    vars: &VarTable<'_>,
    queues: &[String],
) -> Result<Vec<RelativeDescriptor>, LoadError> {
    let Some(j) = sg.engines.iter().find(|s| s.engine == e).and_then(|s| s.json.as_ref()) else {
        return Ok(Vec::new());
    };
    let var = |name: &str, off: u64, size: u64, i: usize| -> Result<u32, LoadError> {
        let id = ids.get(name).copied().ok_or_else(|| bad(sg, format!("dma[{i}]: no var {name:?}")))?;
        let v = vars.get(id).ok_or_else(|| bad(sg, format!("dma[{i}]: var {name:?} is not in the table")))?;
        if v.place == Place::NotInHbm || off.checked_add(size).is_none_or(|end| end > v.size) {
            return Err(bad(sg, format!("{} dma[{i}]: [{off}, +{size}) is not inside HBM var {name:?}", e.key())));
        }
        Ok(id)
    };
    j.dma
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let queue =
                queues.iter().position(|q| *q == d.queue).ok_or_else(|| bad(sg, format!("dma[{i}]: no queue")))?;
            Ok(RelativeDescriptor {
                queue: queue as u32,
                from: var(&d.from, d.from_off, d.size, i)?,
                from_off: d.from_off,
                to: var(&d.to, d.to_off, d.size, i)?,
                to_off: d.to_off,
                size: d.size,
            })
        })
        .collect()
}

/// Decodes an lncsim stream and validates it: every memory operand inside an
/// HBM var, every DMA naming a descriptor that exists and carrying that
/// descriptor's queue and size (a record that disagrees with its descriptor
/// would move other bytes than the compiler planned), pseudo sequences well
/// formed. Returns the records and the device record count.
/// `hot` is [`hbm_sizes`] of `vars`. O(n) in records.
pub(super) fn decode_stream(
    sg: &Subgraph,
    e: Engine,
    stream: &[u8],
    vars: &VarTable<'_>,
    hot: &[u64],
    dma: &[RelativeDescriptor],
) -> Result<(Vec<Record>, u64), LoadError> {
    let file = format!("{}/{}", sg.name, e.file_stem());
    let records = stream
        .chunks(RECORD_SIZE)
        .enumerate()
        .map(|(i, c)| Record::decode(c).map_err(|err| bad(sg, format!("{file}.bin record {i}: {err}"))))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, r) in records.iter().enumerate() {
        if r.opcode != Opcode::Dma {
            continue;
        }
        let (queue, index, size) = (r.ops[0].a, r.ops[0].b, r.ops[0].c);
        match dma.get(index as usize) {
            Some(d) if d.queue == queue && d.size == u64::from(size) => {}
            Some(d) => {
                return Err(bad(
                    sg,
                    format!(
                        "{file}.bin record {i}: DMA on queue {queue} of {size} bytes, but descriptor {index} is queue {} of {} bytes",
                        d.queue, d.size
                    ),
                ));
            }
            None => {
                return Err(bad(
                    sg,
                    format!("{file}.bin record {i}: DMA names descriptor {index} of {} (queue {queue})", dma.len()),
                ));
            }
        }
    }
    let mut check = |op: Operand| -> Result<u64, String> {
        match hot.get(op.a as usize) {
            Some(&size) if size != NOT_HBM && u64::from(op.b) + u64::from(op.c) <= size => Ok(0),
            _ => operand_in_var(vars, op).map(|_| 0),
        }
    };
    let n = count_pseudo_instrs(e, &records, &mut check).map_err(|err| bad(sg, format!("{file}.bin {err}")))?;
    Ok((records, n))
}

/// A [`hbm_sizes`] entry of an id that is no HBM var (sizes are at most [`MAX_FILE_BYTES`]).
const NOT_HBM: u64 = u64::MAX;

/// The size of every HBM var by id, 8 bytes each: what [`decode_stream`]'s
/// per-operand check probes instead of the table's full entries (a cache: a
/// miss takes [`operand_in_var`], which names the error). O(n) in var ids.
pub(super) fn hbm_sizes(vars: &VarTable<'_>) -> Vec<u64> {
    let mut hot = vec![NOT_HBM; vars.max_id().map_or(0, |m| m as usize + 1)];
    for (id, v) in vars.iter().filter(|(_, v)| v.place != Place::NotInHbm) {
        hot[id as usize] = v.size;
    }
    hot
}

/// The var a compiler-form operand names, if the operand lies inside it and it is in HBM.
pub fn operand_in_var<'t, 'm>(vars: &'t VarTable<'m>, op: Operand) -> Result<&'t KbinVar<'m>, String> {
    let v = vars.get(op.a).ok_or_else(|| format!("var_id {} is not a variable", op.a))?;
    if v.place == Place::NotInHbm {
        return Err(format!("var {:?} ({}) is not in HBM", v.name, v.var_type));
    }
    if u64::from(op.b) + u64::from(op.c) > v.size {
        return Err(format!("[{}, +{}) exceeds var {:?} ({} bytes)", op.b, op.c, v.name, v.size));
    }
    Ok(v)
}

pub(super) fn semaphores(sg: &Subgraph) -> Result<u32, LoadError> {
    match sg.def.extra.get(SEMAPHORES_KEY) {
        None => Ok(0),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad(sg, format!("{SEMAPHORES_KEY} is not a u32"))),
    }
}

pub(super) fn barrier_groups(sg: &Subgraph) -> Result<BTreeMap<u32, Vec<u32>>, LoadError> {
    let Some(v) = sg.def.extra.get(BARRIER_GROUPS_KEY) else {
        return Ok(BTreeMap::new());
    };
    let err = || bad(sg, format!("{BARRIER_GROUPS_KEY} is not an object of u32 -> [u32]"));
    let obj = v.as_object().ok_or_else(err)?;
    obj.iter()
        .map(|(k, v)| {
            let g = k.parse::<u32>().map_err(|_| err())?;
            let p = v.as_array().ok_or_else(err)?;
            let p: Result<Vec<u32>, LoadError> =
                p.iter().map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(err)).collect();
            Ok((g, p?))
        })
        .collect()
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn hbm_sizes_hold_the_sizes_of_hbm_vars_only() {
        let var = |place, size| KbinVar {
            name: "v".into(),
            var_type: VarType::TmpBuf,
            kind: VarKind::Scratch,
            size,
            align: 1,
            place,
            data: None,
            name_rank: 0,
        };
        let mut t = VarTable::with_capacity(3);
        t.insert_new(0, var(Place::Carveout(0), 64)).unwrap();
        t.insert_new(2, var(Place::NotInHbm, 8)).unwrap();
        t.insert_new(3, var(Place::Io, 4)).unwrap();
        t.finish();
        assert_eq!(hbm_sizes(&t), [64, NOT_HBM, NOT_HBM, 4]);
        assert!(hbm_sizes(&VarTable::with_capacity(0)).is_empty());
    }

    #[test]
    fn var_ids_are_bounded_linearly_in_the_table() {
        assert_eq!(var_id_limit(0), 4096);
        assert_eq!(var_id_limit(10), 4116);
        // The reviewed case: 16,320 vars may not span 2^20 ids (80 MiB of image per core).
        assert_eq!(var_id_limit(16_320), 36_736);
        assert!(var_id_limit(16_320) < (1 << 20) - 1);
        // 1.4M vars numbered densely load: they take ids below 2.8M + 4096.
        assert_eq!(var_id_limit(1_400_004), 2 * 1_400_004 + 4096);
        assert!(var_id_limit(1_400_004) > 1_400_004);
        // A hostile count cannot overflow.
        assert_eq!(var_id_limit(usize::MAX), u32::MAX);
    }
}
