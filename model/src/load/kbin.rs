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

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::error::LoadError;
use super::image::Isa;
use super::mem_ref::{
    VarIds, barrier_groups, decode_stream, descriptors, hbm_sizes, queue_order, resolve_virtuals, semaphores, var_table,
};
use super::mla::bad;
pub use super::mla::{IMPLICIT_SCRATCHPAD, KbinVar, MlaResources, Place};
use super::relocate::RelativeDescriptor;
use super::var_table::VarTable;
use crate::codegen::record::{DESCRIPTOR_SIZE, RECORD_SIZE, Record};
use crate::codegen::{PAGE, VarKind};
use crate::ir::Engine;
use crate::marks;
use crate::neff::manifest::VarType;
use crate::neff::npy::{NPY_MAGIC, parse_header};
use crate::neff::{MemberTable, Subgraph};

/// Alignment of streams, rings and tables in the carve-out.
pub const STREAM_ALIGN: u64 = 64;

/// One engine's stream in a KBIN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KbinEngine<'m> {
    /// The engine.
    pub engine: Engine,
    /// The stream's bytes as in the NEFF (`load_bin_file`), borrowed from the member table.
    pub stream: &'m [u8],
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
pub struct KbinTable<'m> {
    /// The member it came from.
    pub member: String,
    /// Its bytes, borrowed from the member table.
    pub data: &'m [u8],
    /// Offset in the carve-out.
    pub off: u64,
}

/// `kbin` (424 B): one subgraph, ready to stage. Borrows the NEFF's member
/// table (`'m`) for every payload, stream and table: building it copies none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kbin<'m> {
    /// Subgraph index (its NeuronCoreId).
    pub sg: u32,
    /// Subgraph name (`sg00`).
    pub name: String,
    /// The streams' instruction set.
    pub isa: Isa,
    /// Vars by var_id (sparse: ids need not be dense).
    pub vars: VarTable<'m>,
    /// Queue names by queue index.
    pub queues: Vec<String>,
    /// Streams in [`Engine::ALL`] order.
    pub engines: Vec<KbinEngine<'m>>,
    /// Tables staged opaque.
    pub tables: Vec<KbinTable<'m>>,
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

/// `x` rounded up to a multiple of `a` (>= 1), or `None` on overflow.
pub(super) fn align_up(x: u64, a: u64) -> Option<u64> {
    x.div_ceil(a.max(1)).checked_mul(a.max(1))
}

/// The carve-out as it is laid out: a cursor that only moves forward through
/// checked arithmetic, so no number from the file can wrap it back over an
/// earlier piece.
struct Layout<'s> {
    sg: &'s Subgraph,
    off: u64,
}

impl Layout<'_> {
    /// Places `len` bytes at the next multiple of `align`; returns their offset.
    fn place(&mut self, align: u64, len: u64, what: &dyn Fn() -> String) -> Result<u64, LoadError> {
        let at = align_up(self.off, align);
        let end = at.and_then(|a| a.checked_add(len)).filter(|&e| e <= super::mem_ref::MAX_FILE_BYTES);
        match (at, end) {
            (Some(at), Some(end)) => {
                self.off = end;
                Ok(at)
            }
            _ => {
                marks::hit("load.s3.carveout_overflow");
                Err(bad(self.sg, format!("{}: the carve-out overflows ({:#x} + {len:#x})", what(), self.off)))
            }
        }
    }
}

/// `construct_kbin` (per kelf graph): `kelf_load_from_neff` then `gen_kbin`.
pub fn construct_kbin<'m>(
    members: &'m MemberTable,
    sg: u32,
    subgraph: &Subgraph,
    isa: Isa,
) -> Result<Kbin<'m>, LoadError> {
    let mla = kelf_load_from_neff(members, sg, subgraph)?;
    gen_kbin(mla, isa)
}

/// The tables a subgraph stages: every member its engine descriptions name
/// as a table ([`table_members`]) that exists, once per subgraph however
/// many engines name it (the first naming engine places it), in engine
/// order, with its bytes (borrowed). O(t log t) in table names.
pub fn subgraph_tables<'m>(members: &'m MemberTable, subgraph: &Subgraph) -> Vec<(String, &'m [u8])> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut tables = Vec::new();
    for es in &subgraph.engines {
        if let Some(j) = &es.json {
            for t in table_members(&j.extra) {
                let member = format!("{}{t}", subgraph.dir);
                if let Some(b) = members.get(&member)
                    && seen.insert(member.clone())
                {
                    tables.push((member, b));
                }
            }
        }
    }
    tables
}

/// The most bytes one load may reference: `file` payloads, engine tables and
/// instruction streams of every subgraph, each counted once per reference
/// (a member named by two vars counts twice), 4 GiB: as much as a NEFF may
/// inflate to, so a real NEFF that stages each of its members once (an LNC=2
/// NEFF carries a weight copy per subgraph) is never refused. Checked by
/// [`load_bytes`] before any subgraph is built, so a small NEFF whose vars,
/// engines and graphs name one large member many times is one `NRT_INVALID`
/// line instead of gigabytes of staging (what the loader holds and the
/// device materialises is at most a constant multiple of this).
pub const MAX_LOAD_BYTES: u64 = 4 << 30;

/// What subgraph `subgraph` references, in bytes (see [`MAX_LOAD_BYTES`]):
/// its streams, tables and `file` members (whole members: an `.npy` header
/// is counted too). Reads only member lengths, allocates nothing but the
/// table names. O(v + t log t) in vars and table names.
pub fn load_bytes(members: &MemberTable, subgraph: &Subgraph) -> u64 {
    let len = |m: &str| members.get(m).map_or(0, |b| b.len() as u64);
    let streams = subgraph.engines.iter().map(|e| len(&e.instr_member));
    let tables = subgraph_tables(members, subgraph).into_iter().map(|(_, b)| b.len() as u64);
    let files = subgraph
        .def
        .var
        .values()
        .filter(|v| v.var_type == VarType::File)
        .map(|v| v.file_name.as_deref().map_or(0, |f| len(&format!("{}{f}", subgraph.dir))));
    streams.chain(tables).chain(files).fold(0u64, u64::saturating_add)
}

/// `kelf_load_from_neff`: def.json vars + engine streams (`load_bin_file`) +
/// `file` payloads (`.npy` data, or raw bytes) + engine tables, every byte
/// borrowed from `members` (O(1) per reference, whatever its size).
pub fn kelf_load_from_neff<'s, 'm>(
    members: &'m MemberTable,
    sg: u32,
    subgraph: &'s Subgraph,
) -> Result<MlaResources<'s, 'm>, LoadError> {
    let dir = &subgraph.dir;
    let member =
        |name: &str| members.get(&format!("{dir}{name}")).ok_or_else(|| bad(subgraph, format!("{name} missing")));
    let mut streams = BTreeMap::new();
    for es in &subgraph.engines {
        let bytes =
            members.get(&es.instr_member).ok_or_else(|| bad(subgraph, format!("{} missing", es.instr_member)))?;
        streams.insert(es.engine, bytes);
    }
    let tables = subgraph_tables(members, subgraph);
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
        files.insert(name.clone(), payload);
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
/// Every offset is computed with checked arithmetic ([`Layout`]); an
/// overflow is an `NRT_INVALID` naming the piece. O(n log n) in vars plus
/// linear in stream records and descriptors. Takes `mla` by value: its
/// borrowed streams, payloads and tables move into the KBIN (no copy).
pub fn gen_kbin<'m>(mut mla: MlaResources<'_, 'm>, isa: Isa) -> Result<Kbin<'m>, LoadError> {
    let sg = mla.subgraph;
    let queues = queue_order(sg)?;
    let mut vars = var_table(sg, &mut mla.files)?;
    let mut lay = Layout { sg, off: 0 };
    let mut carveout_align = PAGE;
    // File vars, then private tmp-bufs, in var_id order.
    for pass in [VarType::File, VarType::TmpBuf] {
        for v in vars.values_mut().filter(|v| v.var_type == pass && v.place == Place::Carveout(0)) {
            let a = if pass == VarType::File { v.align.max(STREAM_ALIGN) } else { PAGE };
            carveout_align = carveout_align.max(a);
            let at = lay.place(a, v.size, &|| format!("var {:?}", v.name))?;
            v.place = Place::Carveout(at);
        }
    }
    let scratchpad_off = lay.place(PAGE, 0, &|| "the implicit scratchpad".to_owned())?;
    // Var ids by name, for the name references of views and descriptors (looked up, never iterated).
    let ids: VarIds<'_> = sg.def.var.iter().map(|(n, v)| (n.as_str(), v.var_id)).collect();
    let scratchpad_size = resolve_virtuals(sg, &ids, &mut vars, scratchpad_off)?;
    lay.place(1, scratchpad_size, &|| "the implicit scratchpad".to_owned())?;
    let mut engines = Vec::new();
    let hot = if isa == Isa::Lncsim { hbm_sizes(&vars) } else { Vec::new() };
    for e in Engine::ALL {
        let stream: &[u8] = mla.streams.remove(&e).unwrap_or_default();
        let dma = descriptors(sg, e, &ids, &vars, &queues)?;
        let (records, device_records) = match isa {
            Isa::Lncsim => {
                let (recs, n) = decode_stream(sg, e, stream, &vars, &hot, &dma)?;
                (Some(recs), n)
            }
            Isa::Opaque => {
                if !stream.len().is_multiple_of(RECORD_SIZE) {
                    return Err(bad(
                        sg,
                        format!(
                            "{}/{}.bin: {} bytes is not a whole number of {RECORD_SIZE}-byte records",
                            sg.name,
                            e.file_stem(),
                            stream.len()
                        ),
                    ));
                }
                (None, stream.len() as u64 / RECORD_SIZE as u64)
            }
        };
        engines.push(KbinEngine { engine: e, stream, records, device_records, dma, stream_off: 0, ring_off: 0 });
    }
    for e in &mut engines {
        let len = e.device_records.saturating_mul(RECORD_SIZE as u64);
        e.stream_off = lay.place(STREAM_ALIGN, len, &|| format!("the {} stream", e.engine.key()))?;
    }
    for e in &mut engines {
        let len = (e.dma.len() as u64).saturating_mul(DESCRIPTOR_SIZE as u64);
        e.ring_off = lay.place(STREAM_ALIGN, len, &|| format!("the {} DMA ring", e.engine.key()))?;
    }
    let mut tables = Vec::new();
    for (member, data) in mla.tables {
        let off = lay.place(STREAM_ALIGN, data.len() as u64, &|| format!("table {member}"))?;
        tables.push(KbinTable { member, data, off });
    }
    lay.place(PAGE, 0, &|| "the carve-out's end".to_owned())?;
    let carveout_size = lay.off;
    let shared: Vec<u64> = vars.values().filter(|v| v.kind == VarKind::SharedScratch).map(|v| v.size).collect();
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
        carveout_size: carveout_size.max(PAGE),
        carveout_align,
        shared_size: shared.first().copied().unwrap_or(0),
    })
}
