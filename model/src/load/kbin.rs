//! S2/S3 per subgraph: `construct_kbin` = `kelf_load_from_neff` (def.json,
//! engine JSON and streams, weights, tables -> [`MlaResources`]) then
//! `gen_kbin` (-> the [`Kbin`] record staging consumes). No device here: the
//! seed's "stages 0-3 are IOCTL-free".
//!
//! The KBIN is the compiler's section table for one core: the var table with
//! each var's placement (the relocation source), queues, engine streams
//! (decoded and validated for lncsim's ISA, opaque bytes for the real one),
//! relative DMA descriptors, tables, and the carve-out layout. Layout of the
//! carve-out, in this order, each piece aligned: `file` vars (weights, at
//! `max(alignment, 64)`), private `tmp-buf`s (4 KiB), the implicit scratchpad
//! of backing-less `virtual` vars (4 KiB), engine streams after pseudo
//! expansion (64), DMA rings (64), tables (64); size rounded to 4 KiB.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{LoadError, Stage};
use super::image::Isa;
use super::relocate::{RelativeDescriptor, memory_operands, translate_pseudo_instrs};
use crate::codegen::record::{DESCRIPTOR_SIZE, Opcode, Operand, RECORD_SIZE, Record};
use crate::codegen::{PAGE, VarKind};
use crate::ir::Engine;
use crate::marks;
use crate::neff::manifest::VarType;
use crate::neff::npy::{NPY_MAGIC, parse_header};
use crate::neff::pack::{BARRIER_GROUPS_KEY, QUEUE_INDEX_KEY, SEMAPHORES_KEY, VNC_SHARED_KEY};
use crate::neff::{MemberTable, Subgraph};

/// The `backing` of a `virtual` var with no `backing_variable`: the core's implicit scratchpad.
pub const IMPLICIT_SCRATCHPAD: u32 = u32::MAX;
/// Alignment of streams, rings and tables in the carve-out.
pub const STREAM_ALIGN: u64 = 64;

/// Where a var lives once staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The load's buffer for this input/output name.
    Io,
    /// At this offset in the core's carve-out.
    Carveout(u64),
    /// At this offset in the load's shared region.
    Shared(u64),
    /// Not in HBM (state buffer, tables, pointers, unknown types, var_id gaps).
    NotInHbm,
}

/// One var of the KBIN's table (`mem_ref_set`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KbinVar {
    /// The def.json name.
    pub name: String,
    /// The def.json type.
    pub var_type: VarType,
    /// Its kind for the image (see [`super::image::VarImage::var_type`]).
    pub kind: VarKind,
    /// Bytes.
    pub size: u64,
    /// Required alignment (>= 1).
    pub align: u64,
    /// Placement.
    pub place: Place,
    /// `file` vars: the bytes to copy in (the `.npy` payload).
    pub data: Option<Vec<u8>>,
}

/// One engine's stream in a KBIN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KbinEngine {
    /// The engine.
    pub engine: Engine,
    /// The stream's bytes as in the NEFF (`load_bin_file`).
    pub stream: Vec<u8>,
    /// The decoded records ([`Isa::Lncsim`] only).
    pub records: Option<Vec<Record>>,
    /// Records in the device stream (after pseudo expansion).
    pub device_records: u64,
    /// The engine's DMA descriptors, relative.
    pub dma: Vec<RelativeDescriptor>,
    /// Offset of the device stream in the carve-out.
    pub stream_off: u64,
    /// Offset of the DMA ring in the carve-out.
    pub ring_off: u64,
}

/// An opaque table staged as is (activation / DVE tables of real NEFFs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KbinTable {
    /// The member it came from.
    pub member: String,
    /// Its bytes.
    pub data: Vec<u8>,
    /// Offset in the carve-out.
    pub off: u64,
}

/// `kbin` (424 B): one subgraph, ready to stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kbin {
    /// Subgraph index (its NeuronCoreId).
    pub sg: u32,
    /// Subgraph name (`sg00`).
    pub name: String,
    /// The streams' instruction set.
    pub isa: Isa,
    /// Vars by var_id.
    pub vars: Vec<KbinVar>,
    /// Queue names by queue index.
    pub queues: Vec<String>,
    /// Streams in [`Engine::ALL`] order.
    pub engines: Vec<KbinEngine>,
    /// Tables staged opaque.
    pub tables: Vec<KbinTable>,
    /// `runtime_semaphore_count`.
    pub semaphores: u32,
    /// `barrier_groups`.
    pub barrier_groups: BTreeMap<u32, Vec<u32>>,
    /// Bytes of the carve-out.
    pub carveout_size: u64,
    /// Alignment of the carve-out (the largest var alignment, at least 4 KiB).
    pub carveout_align: u64,
    /// Bytes of this subgraph's `vnc_shared` tmp-buf (0 when none).
    pub shared_size: u64,
}

/// `mla_resources` (440 B): what `kelf_load_from_neff` collects for one subgraph.
#[derive(Clone, Debug)]
pub struct MlaResources<'a> {
    /// Subgraph index.
    pub sg: u32,
    /// The subgraph.
    pub subgraph: &'a Subgraph,
    /// Engine streams by engine (bytes), from the members.
    pub streams: BTreeMap<Engine, Vec<u8>>,
    /// `file` var payloads by var name.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Tables: (member, bytes).
    pub tables: Vec<(String, Vec<u8>)>,
}

fn bad(sg: &Subgraph, msg: impl std::fmt::Display) -> LoadError {
    LoadError::invalid(Stage::S2Graph, format!("{}: {msg}", sg.def_member))
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a.max(1)).saturating_mul(a.max(1))
}

/// `construct_kbin` (per kelf graph): `kelf_load_from_neff` then `gen_kbin`.
pub fn construct_kbin(members: &MemberTable, sg: u32, subgraph: &Subgraph, isa: Isa) -> Result<Kbin, LoadError> {
    let mla = kelf_load_from_neff(members, sg, subgraph)?;
    gen_kbin(&mla, isa)
}

/// `kelf_load_from_neff`: def.json vars + engine streams (`load_bin_file`) +
/// `file` payloads (`.npy` data, or raw bytes) + engine tables.
pub fn kelf_load_from_neff<'a>(
    members: &MemberTable,
    sg: u32,
    subgraph: &'a Subgraph,
) -> Result<MlaResources<'a>, LoadError> {
    let dir = &subgraph.dir;
    let member =
        |name: &str| members.get(&format!("{dir}{name}")).ok_or_else(|| bad(subgraph, format!("{name} missing")));
    let mut streams = BTreeMap::new();
    let mut tables = Vec::new();
    for es in &subgraph.engines {
        let bytes =
            members.get(&es.instr_member).ok_or_else(|| bad(subgraph, format!("{} missing", es.instr_member)))?;
        streams.insert(es.engine, bytes.to_vec());
        if let Some(j) = &es.json {
            for t in table_members(&j.extra) {
                if let Some(b) = members.get(&format!("{dir}{t}")) {
                    tables.push((format!("{dir}{t}"), b.to_vec()));
                }
            }
        }
    }
    let mut files = BTreeMap::new();
    for (name, v) in &subgraph.def.var {
        if v.var_type != VarType::File {
            continue;
        }
        let fname =
            v.file_name.as_deref().ok_or_else(|| bad(subgraph, format!("file var {name:?} has no file_name")))?;
        let raw = member(fname)?;
        let payload = if raw.starts_with(NPY_MAGIC) {
            let h = parse_header(raw).map_err(|e| bad(subgraph, format!("{fname}: {e}")))?;
            &raw[h.data_offset..]
        } else {
            raw
        };
        files.insert(name.clone(), payload.to_vec());
    }
    Ok(MlaResources { sg, subgraph, streams, files, tables })
}

/// Members an engine description names as tables: every string ending in
/// `.bin` (DVE `dve_tables`), and `<set>_bkt.bin` / `<set>_ctrl.bin` for each
/// of ACT's `activation_function_sets`. Missing ones are skipped.
fn table_members(extra: &BTreeMap<String, Value>) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) if s.ends_with(".bin") => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for v in extra.values() {
        walk(v, &mut out);
    }
    if let Some(Value::Array(sets)) = extra.get("activation_function_sets") {
        for s in sets.iter().filter_map(Value::as_str) {
            out.push(format!("{s}_bkt.bin"));
            out.push(format!("{s}_ctrl.bin"));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `gen_kbin`: `mla_resources` -> `kbin`: var placement, queues, decoded and
/// validated streams with their device lengths, DMA descriptors, layout.
pub fn gen_kbin(mla: &MlaResources<'_>, isa: Isa) -> Result<Kbin, LoadError> {
    let sg = mla.subgraph;
    let queues = queue_order(sg)?;
    let mut vars = var_table(mla)?;
    let mut off = 0u64;
    let mut carveout_align = PAGE;
    // File vars, then private tmp-bufs, in var_id order.
    for pass in [VarType::File, VarType::TmpBuf] {
        for v in vars.iter_mut().filter(|v| v.var_type == pass && v.place == Place::Carveout(0)) {
            let a = if pass == VarType::File { v.align.max(STREAM_ALIGN) } else { PAGE };
            carveout_align = carveout_align.max(a);
            off = align_up(off, a);
            v.place = Place::Carveout(off);
            off += v.size;
        }
    }
    off = align_up(off, PAGE);
    let scratchpad_off = off;
    let mut scratchpad_end = 0;
    resolve_virtuals(sg, &mut vars, scratchpad_off, &mut scratchpad_end)?;
    off = align_up(off + scratchpad_end, STREAM_ALIGN);
    let mut engines = Vec::new();
    for e in Engine::ALL {
        let stream = mla.streams.get(&e).cloned().unwrap_or_default();
        let dma = descriptors(sg, e, &vars, &queues)?;
        let (records, device_records) = match isa {
            Isa::Lncsim => {
                let (recs, n) = decode_stream(sg, e, &stream, &vars, &queues, dma.len())?;
                (Some(recs), n)
            }
            Isa::Opaque => (None, stream.len() as u64 / RECORD_SIZE as u64),
        };
        engines.push(KbinEngine { engine: e, stream, records, device_records, dma, stream_off: 0, ring_off: 0 });
    }
    for e in &mut engines {
        off = align_up(off, STREAM_ALIGN);
        e.stream_off = off;
        off += e.device_records * RECORD_SIZE as u64;
    }
    for e in &mut engines {
        off = align_up(off, STREAM_ALIGN);
        e.ring_off = off;
        off += e.dma.len() as u64 * DESCRIPTOR_SIZE as u64;
    }
    let mut tables = Vec::new();
    for (member, data) in &mla.tables {
        off = align_up(off, STREAM_ALIGN);
        tables.push(KbinTable { member: member.clone(), data: data.clone(), off });
        off += data.len() as u64;
    }
    let shared: Vec<u64> = vars.iter().filter(|v| v.kind == VarKind::SharedScratch).map(|v| v.size).collect();
    if shared.len() > 1 {
        return Err(bad(sg, format!("{} vnc_shared tmp-bufs; at most one is supported", shared.len())));
    }
    Ok(Kbin {
        sg: mla.sg,
        name: sg.name.clone(),
        isa,
        vars,
        queues,
        engines,
        tables,
        semaphores: semaphores(sg)?,
        barrier_groups: barrier_groups(sg)?,
        carveout_size: align_up(off.max(1), PAGE),
        carveout_align,
        shared_size: shared.first().copied().unwrap_or(0),
    })
}

/// Queue names by index: the `queue_index` keys when every queue has a
/// distinct one in `0..n`, else def.json's (name) order. Choice: def.json
/// keys its queues by name, so without `queue_index` the compiler's queue
/// numbering is not recoverable and name order is the documented fallback.
fn queue_order(sg: &Subgraph) -> Result<Vec<String>, LoadError> {
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

/// Vars by var_id (gaps filled with not-in-HBM placeholders); HBM vars get
/// `Place::Carveout(0)` / `Shared(0)` / `Io` until laid out.
fn var_table(mla: &MlaResources<'_>) -> Result<Vec<KbinVar>, LoadError> {
    let sg = mla.subgraph;
    let max_id = sg.def.var.values().map(|v| v.var_id).max();
    let n = max_id.map_or(0, |m| m as usize + 1);
    if n > sg.def.var.len() {
        marks::hit("load.s3.var_id_gap");
    }
    let gap = || KbinVar {
        name: String::new(),
        var_type: VarType::Other(String::new()),
        kind: VarKind::Scratch,
        size: 0,
        align: 1,
        place: Place::NotInHbm,
        data: None,
    };
    let mut vars: Vec<KbinVar> = (0..n).map(|_| gap()).collect();
    for (name, v) in &sg.def.var {
        let size = v.size.unwrap_or(0);
        let shared = v.extra.get(VNC_SHARED_KEY).and_then(Value::as_bool) == Some(true);
        let (kind, place, size, data) = match &v.var_type {
            VarType::Input => (VarKind::Input, Place::Io, size, None),
            VarType::Output => (VarKind::Output, Place::Io, size, None),
            VarType::File => {
                let data = mla.files.get(name).cloned().unwrap_or_default();
                if v.size.is_some_and(|s| (data.len() as u64) > s) {
                    return Err(bad(sg, format!("file var {name:?}: {} bytes of data for size {size}", data.len())));
                }
                (VarKind::File { init: 0 }, Place::Carveout(0), v.size.unwrap_or(data.len() as u64), Some(data))
            }
            VarType::TmpBuf if shared => (VarKind::SharedScratch, Place::Shared(0), size, None),
            VarType::TmpBuf => (VarKind::Scratch, Place::Carveout(0), size, None),
            VarType::Virtual => {
                (VarKind::Virtual { backing: IMPLICIT_SCRATCHPAD, offset: 0 }, Place::NotInHbm, size, None)
            }
            _ => (VarKind::Scratch, Place::NotInHbm, 0, None),
        };
        let var = KbinVar {
            name: name.clone(),
            var_type: v.var_type.clone(),
            kind,
            size,
            align: v.alignment.unwrap_or(1).max(1),
            place,
            data,
        };
        vars[v.var_id as usize] = var;
    }
    Ok(vars)
}

/// Places `virtual` vars inside their backing var (which must be a
/// non-virtual HBM var) or, with no backing, in the implicit scratchpad.
fn resolve_virtuals(sg: &Subgraph, vars: &mut [KbinVar], pad_off: u64, pad_end: &mut u64) -> Result<(), LoadError> {
    for i in 0..vars.len() {
        if vars[i].var_type != VarType::Virtual {
            continue;
        }
        let (name, size) = (vars[i].name.clone(), vars[i].size);
        let def = &sg.def.var[&name];
        let off = def.backing_variable_off.unwrap_or(0);
        let end = off.checked_add(size).ok_or_else(|| bad(sg, format!("virtual var {name:?}: offset overflows")))?;
        let Some(backing) = &def.backing_variable else {
            marks::hit("load.s3.implicit_scratchpad");
            *pad_end = (*pad_end).max(end);
            vars[i].kind = VarKind::Virtual { backing: IMPLICIT_SCRATCHPAD, offset: off };
            vars[i].place = Place::Carveout(pad_off + off);
            continue;
        };
        let b = sg.def.var.get(backing).map(|v| v.var_id as usize).unwrap_or(usize::MAX);
        let bv = vars.get(b).ok_or_else(|| bad(sg, format!("virtual var {name:?}: no backing {backing:?}")))?;
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
            Place::Carveout(o) => Place::Carveout(o + off),
            Place::Shared(o) => {
                marks::hit("load.s3.shared_virtual");
                Place::Shared(o + off)
            }
            Place::Io | Place::NotInHbm => {
                return Err(bad(sg, format!("virtual var {name:?}: backing {backing:?} is not a scratch region")));
            }
        };
        vars[i].kind = VarKind::Virtual { backing: b as u32, offset: off };
        vars[i].place = place;
    }
    Ok(())
}

/// The engine's relative descriptors, by var_id and queue index, bounds-checked.
fn descriptors(
    sg: &Subgraph,
    e: Engine,
    vars: &[KbinVar],
    queues: &[String],
) -> Result<Vec<RelativeDescriptor>, LoadError> {
    let Some(j) = sg.engines.iter().find(|s| s.engine == e).and_then(|s| s.json.as_ref()) else {
        return Ok(Vec::new());
    };
    let var = |name: &str, off: u64, size: u64, i: usize| -> Result<u32, LoadError> {
        let id = sg.def.var.get(name).map(|v| v.var_id).ok_or_else(|| bad(sg, format!("dma[{i}]: no var {name:?}")))?;
        let v = &vars[id as usize];
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
/// HBM var, every DMA naming a descriptor and queue that exist, pseudo
/// sequences well formed. Returns the records and the device record count.
fn decode_stream(
    sg: &Subgraph,
    e: Engine,
    stream: &[u8],
    vars: &[KbinVar],
    queues: &[String],
    ndesc: usize,
) -> Result<(Vec<Record>, u64), LoadError> {
    let file = format!("{}/{}", sg.name, e.file_stem());
    let records = stream
        .chunks(RECORD_SIZE)
        .enumerate()
        .map(|(i, c)| Record::decode(c).map_err(|err| bad(sg, format!("{file}.bin record {i}: {err}"))))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, r) in records.iter().enumerate() {
        if r.opcode == Opcode::Dma && (r.ops[0].b as usize >= ndesc || r.ops[0].a as usize >= queues.len()) {
            return Err(bad(
                sg,
                format!("{file}.bin record {i}: DMA names descriptor {} queue {}", r.ops[0].b, r.ops[0].a),
            ));
        }
        debug_assert!(memory_operands(r.opcode) <= 3);
    }
    let mut check = |op: Operand| -> Result<u64, String> { operand_in_var(vars, op).map(|_| 0) };
    let t = translate_pseudo_instrs(e, &records, &mut check).map_err(|err| bad(sg, format!("{file}.bin {err}")))?;
    Ok((records, t.records.len() as u64))
}

/// The var a compiler-form operand names, if the operand lies inside it and it is in HBM.
pub fn operand_in_var(vars: &[KbinVar], op: Operand) -> Result<&KbinVar, String> {
    let v = vars.get(op.a as usize).ok_or_else(|| format!("var_id {} is not a variable", op.a))?;
    if v.place == Place::NotInHbm {
        return Err(format!("var {:?} ({}) is not in HBM", v.name, v.var_type));
    }
    if u64::from(op.b) + u64::from(op.c) > v.size {
        return Err(format!("[{}, +{}) exceeds var {:?} ({} bytes)", op.b, op.c, v.name, v.size));
    }
    Ok(v)
}

fn semaphores(sg: &Subgraph) -> Result<u32, LoadError> {
    match sg.def.extra.get(SEMAPHORES_KEY) {
        None => Ok(0),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad(sg, format!("{SEMAPHORES_KEY} is not a u32"))),
    }
}

fn barrier_groups(sg: &Subgraph) -> Result<BTreeMap<u32, Vec<u32>>, LoadError> {
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
