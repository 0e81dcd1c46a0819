//! The load checker: an independent judge of a finished load. It re-derives,
//! from the NEFF (read with the NEFF reader, not the loader) and from device
//! memory (read back through [`Device::copy_out`]), what the loader must have
//! staged, and lists every difference, one line each. It shares no code with
//! the rest of `load` (no kbin, mem_ref, stage or relocate function): only
//! the loader's *outputs* ([`CoreImage`], [`Model`]) and the device.
//!
//! Rules:
//! - one image per subgraph, in order; every def.json var in its image at
//!   its var_id with its name and type; non-HBM types unplaced;
//! - every HBM var at its real size inside one live allocation (a
//!   zero-size var may sit at an allocation's very end); an IO buffer (at
//!   its real size) and the shared region at one address on every core; a
//!   `virtual` var at `backing + backing_variable_off` and inside its backing
//!   var; every backing-less `virtual` var at one base (the core's implicit
//!   scratchpad) + its `backing_variable_off`; a `file` var holding its
//!   payload's bytes;
//! - the image's ISA is the one the NEFF's stream bytes are in, derived
//!   here from the records themselves (every one an lncsim record whose
//!   operands lie in def.json's HBM vars, or not), not from `info.json`;
//!   the records are then compared under the image's ISA, as staged;
//! - every engine the NEFF declares (a description or a stream) has one
//!   stream in the image, no engine has two, and an undeclared engine's is
//!   empty;
//! - every stream and ring: descriptor counts and contents, debug info,
//!   every relocated operand inside the var it names, opaque streams equal to
//!   the NEFF's, lncsim streams relocated record by record;
//! - with the [`Model`]s ([`check_models`]): every private piece (weights,
//!   tmp-bufs, the implicit scratchpad as a whole, streams, rings, tables)
//!   inside its core's carve-out, the carve-out a live allocation; every
//!   engine table the NEFF names staged once, byte for byte;
//! - no two private pieces, IO buffers or the shared region overlap (views
//!   of one backing var, and backing-less views of the implicit scratchpad,
//!   may overlap each other: the compiler reuses addresses of tensors whose
//!   live intervals do not meet); no two live allocations overlap.
//!
//! [`super::checker_registered::check_registered`] adds the rules on what a
//! load hands out beyond the layout (the registry value's IO maps, bridge
//! and shared region; each image's queues, semaphores and barrier groups)
//! and that the device holds nothing the load does not own.
//!
//! Cost: O(n log n) in vars + records + descriptors + tables + live
//! allocations (lookups are by binary search or in ordered maps, and a
//! subgraph's vars by name or id in tables built once per subgraph,
//! [`super::checker_vars`]; overlaps by one sort and a sweep), plus the
//! bytes it reads back. Images are borrowed, never copied; a piece's name is
//! printed only when a finding names it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::checker_vars::{VarsById, ids_by_name};
use super::device::Device;
use super::image::{CoreImage, Isa, VarImage};
use super::records::Model;
use crate::codegen::record::{
    DESCRIPTOR_SIZE, DeviceDescriptor, FLAG_COLLECTIVE, FLAG_RELOCATED, FLAG_SIGNAL, MAX_WAITS, Opcode, RECORD_SIZE,
    Record,
};
use crate::neff::manifest::{DefJson, DmaDesc, VarType};
use crate::neff::npy::{NPY_MAGIC, parse_header};
use crate::neff::{Neff, Subgraph};

/// What a piece is, printed only when a finding names it (no string per var).
#[derive(Clone, Copy)]
enum What<'a> {
    /// A def.json var: `<subgraph> var <name>`.
    Var(&'a str, &'a str),
    /// An engine's stream or ring: `<subgraph> <engine> <stream|ring>`.
    Engine(&'a str, &'static str, &'static str),
    /// An engine table: `<subgraph> table <member>`.
    Table(&'a str, &'a str),
    /// An IO buffer: `io <name>`.
    Io(&'a str),
    /// A core's implicit scratchpad (the extent of its backing-less `virtual` vars).
    Scratchpad(&'a str),
    /// The shared region.
    Shared,
}

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            What::Var(sg, name) => write!(f, "{sg} var {name}"),
            What::Engine(sg, engine, part) => write!(f, "{sg} {engine} {part}"),
            What::Table(sg, member) => write!(f, "{sg} table {member}"),
            What::Io(name) => write!(f, "io {name}"),
            What::Scratchpad(sg) => write!(f, "{sg} implicit scratchpad"),
            What::Shared => f.write_str("the shared region"),
        }
    }
}

/// A byte range someone owns, for the overlap sweep.
struct Piece<'a> {
    pa: u64,
    len: u64,
    what: What<'a>,
}

/// Live allocations sorted by address, for O(log n) containment queries.
struct Allocs(Vec<(u64, u64)>);

impl Allocs {
    fn new(mut v: Vec<(u64, u64)>) -> Self {
        v.sort_unstable();
        Allocs(v)
    }

    /// True when `[pa, pa + len)` lies inside one allocation. A zero-length
    /// range is inside when `pa` is in `[start, start + size]`: the end of
    /// an allocation included, as the loader places a zero-size view at the
    /// very end of its backing var.
    fn inside(&self, pa: u64, len: u64) -> bool {
        let Some(end) = pa.checked_add(len) else { return false };
        let i = self.0.partition_point(|&(a, _)| a <= pa);
        i > 0 && self.0[i - 1].0.saturating_add(self.0[i - 1].1) >= end
    }

    /// Whether an allocation starts at `pa` with `size` bytes.
    fn exactly(&self, pa: u64, size: u64) -> bool {
        self.0.binary_search(&(pa, size)).is_ok()
    }
}

/// Every violation of a finished load given its images, one line each (empty = right).
pub fn check_load<D: Device + ?Sized>(dev: &D, neff: &Neff, images: &[CoreImage]) -> Vec<String> {
    let images: Vec<&CoreImage> = images.iter().collect();
    check(dev, neff, &images, None)
}

/// [`check_load`] plus the rules that need each core's [`Model`]: pieces
/// inside their carve-out, every engine table staged.
pub fn check_models<D: Device + ?Sized>(dev: &D, neff: &Neff, models: &[Model]) -> Vec<String> {
    // Borrowed, never cloned: an image holds every var and every record's debug info.
    let images: Vec<&CoreImage> = models.iter().map(|m| &m.image).collect();
    check(dev, neff, &images, Some(models))
}

fn check<'a, D: Device + ?Sized>(
    dev: &D,
    neff: &'a Neff,
    images: &[&'a CoreImage],
    models: Option<&'a [Model]>,
) -> Vec<String> {
    let mut bad = Vec::new();
    if images.len() != neff.subgraphs.len() {
        bad.push(format!("{} images for {} subgraphs", images.len(), neff.subgraphs.len()));
        return bad;
    }
    let isa = stream_isa(neff);
    let allocs = Allocs::new(dev.allocations());
    for w in allocs.0.windows(2) {
        if w[0].0.saturating_add(w[0].1) > w[1].0 {
            bad.push(format!(
                "live allocations [{:#x}, +{:#x}) and [{:#x}, +{:#x}) overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            ));
        }
    }
    let mut io: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut shared: Option<(u64, u64)> = None;
    let mut owned: Vec<Piece<'a>> = Vec::new();
    for (c, (img, sg)) in images.iter().zip(&neff.subgraphs).enumerate() {
        if img.core != c as u32 {
            bad.push(format!("image {c} says core {}", img.core));
        }
        let model = models.and_then(|m| m.get(c));
        if let Some(m) = model
            && !allocs.exactly(m.carveout.pa, m.carveout.size)
        {
            bad.push(format!(
                "{}: carve-out {:#x}+{:#x} is not a live allocation",
                sg.name, m.carveout.pa, m.carveout.size
            ));
        }
        let in_carve = |pa: u64, len: u64| {
            model.is_none_or(|m| {
                pa >= m.carveout.pa
                    && pa.checked_add(len).is_some_and(|e| e <= m.carveout.pa.saturating_add(m.carveout.size))
            })
        };
        let mut private = |bad: &mut Vec<String>, pa: u64, len: u64, what: What<'a>| {
            if !in_carve(pa, len) {
                bad.push(format!("{what}: [{pa:#x}, +{len:#x}) is outside its core's carve-out"));
            }
            owned.push(Piece { pa, len, what });
        };
        check_vars(dev, neff, img, sg, &allocs, &mut bad, &mut |bad, kind, pa, len, what| match kind {
            Owner::Private => private(bad, pa, len, what),
            Owner::Io(name) => {
                let first = *io.entry(name).or_insert((pa, len));
                if first != (pa, len) {
                    bad.push(format!(
                        "{what}: IO buffer differs from another core's ({pa:#x}+{len:#x}, not {:#x}+{:#x})",
                        first.0, first.1
                    ));
                }
            }
            Owner::Shared => {
                let first = *shared.get_or_insert((pa, len));
                if first.0 != pa {
                    bad.push(format!("{what}: shared region differs from another core's"));
                }
            }
        });
        for s in &img.engines {
            let stream_len = s.records.saturating_mul(RECORD_SIZE as u64);
            let ring_len = s.descriptors.saturating_mul(DESCRIPTOR_SIZE as u64);
            private(&mut bad, s.pa, stream_len, What::Engine(&sg.name, s.engine.key(), "stream"));
            private(&mut bad, s.ring_pa, ring_len, What::Engine(&sg.name, s.engine.key(), "ring"));
        }
        if isa.is_some_and(|i| i != img.isa) {
            bad.push(format!(
                "{}: the image says the {:?} ISA, but the NEFF's streams are {:?} ({})",
                sg.name,
                img.isa,
                isa.unwrap_or(img.isa),
                if isa == Some(Isa::Lncsim) {
                    "every record decodes as an lncsim record whose operands lie in def.json's HBM vars"
                } else {
                    "some record is no lncsim record inside def.json's HBM vars"
                }
            ));
        }
        bad.extend(check_engines(img, sg));
        bad.extend(check_streams(dev, neff, img, sg));
        if let Some(m) = model {
            for t in &m.tables {
                private(&mut bad, t.pa, t.len, What::Table(&sg.name, &t.member));
            }
            bad.extend(check_tables(dev, neff, sg, m));
        }
    }
    bad.extend(check_views(neff, images));
    // Private pieces, IO buffers (at their real size) and the shared region never overlap.
    owned.extend(io.iter().map(|(n, &(pa, len))| Piece { pa, len, what: What::Io(n) }));
    owned.extend(shared.map(|(pa, len)| Piece { pa, len, what: What::Shared }));
    bad.extend(overlaps(owned));
    bad
}

/// Who owns a var's bytes.
enum Owner<'n> {
    /// The core alone (weights, tmp-bufs, scratchpad views).
    Private,
    /// The load's buffer for this IO name.
    Io(&'n str),
    /// The load's shared region.
    Shared,
}

type Own<'a, 'n> = dyn FnMut(&mut Vec<String>, Owner<'n>, u64, u64, What<'n>) + 'a;

fn check_vars<'n, D: Device + ?Sized>(
    dev: &D,
    neff: &Neff,
    img: &CoreImage,
    sg: &'n Subgraph,
    allocs: &Allocs,
    bad: &mut Vec<String>,
    own: &mut Own<'_, 'n>,
) {
    let def = &sg.def;
    // Views name few distinct backings: the last one looked up is remembered.
    let mut last_backing: Option<(&str, Option<&VarImage>)> = None;
    let mut image_var = |name: &'n str| match last_backing {
        Some((n, v)) if n == name => v,
        _ => {
            let v = def.var.get(name).and_then(|v| img.vars.get(v.var_id as usize));
            last_backing = Some((name, v));
            v
        }
    };
    // The implicit scratchpad: (base, end offset) once its first view is seen.
    let mut pad: Option<(u64, u64)> = None;
    for (name, v) in &def.var {
        let Some(iv) = img.vars.get(v.var_id as usize) else {
            bad.push(format!("{}: var {name} (id {}) missing from the image", sg.name, v.var_id));
            continue;
        };
        let at = What::Var(&sg.name, name);
        if iv.name != *name || iv.var_type != v.var_type {
            bad.push(format!("{at}: image has {:?} of type {}", iv.name, iv.var_type));
        }
        let size = v.size.unwrap_or(0);
        let in_hbm =
            matches!(v.var_type, VarType::Input | VarType::Output | VarType::File | VarType::TmpBuf | VarType::Virtual);
        if !in_hbm {
            if (iv.pa, iv.size) != (0, 0) {
                bad.push(format!("{at}: not an HBM type but placed at {:#x}+{}", iv.pa, iv.size));
            }
            continue;
        }
        let data = (v.var_type == VarType::File).then(|| file_payload(neff, sg, v.file_name.as_deref()));
        let want = match &data {
            Some(d) if v.size.is_none() => d.len() as u64,
            _ => size,
        };
        if iv.size != want {
            bad.push(format!("{at}: size {} in the image, {want} in def.json", iv.size));
        }
        if !allocs.inside(iv.pa, want) {
            bad.push(format!("{at}: [{:#x}, +{want}) is not inside a live allocation", iv.pa));
        }
        let vnc_shared = v.extra.get("vnc_shared") == Some(&Value::Bool(true));
        match v.var_type {
            VarType::Input | VarType::Output => own(bad, Owner::Io(name), iv.pa, want, at),
            VarType::TmpBuf if vnc_shared => own(bad, Owner::Shared, iv.pa, want, at),
            VarType::TmpBuf => own(bad, Owner::Private, iv.pa, want, at),
            VarType::File => {
                let data = data.unwrap_or_default();
                if dev.copy_out(iv.pa, data.len() as u64).ok().as_deref() != Some(&data[..]) {
                    bad.push(format!("{at}: device bytes differ from {}", v.file_name.as_deref().unwrap_or("")));
                }
                own(bad, Owner::Private, iv.pa, want, at);
            }
            VarType::Virtual => {
                let off = v.backing_variable_off.unwrap_or(0);
                match &v.backing_variable {
                    Some(b) => {
                        let bv = image_var(b);
                        if bv.and_then(|p| p.pa.checked_add(off)) != Some(iv.pa) {
                            bad.push(format!("{at}: {:#x} is not {b} + {off}", iv.pa));
                        }
                        if bv.is_none_or(|p| off.checked_add(want).is_none_or(|e| e > p.size)) {
                            bad.push(format!("{at}: [{off}, +{want}) is not inside its backing {b}"));
                        }
                    }
                    // A view of the core's implicit scratchpad, at its base + offset.
                    None => match iv.pa.checked_sub(off) {
                        Some(base) if pad.is_none_or(|(b, _)| b == base) => {
                            let end = off.saturating_add(want);
                            pad = Some((base, pad.map_or(end, |(_, e)| e.max(end))));
                        }
                        _ => bad.push(format!(
                            "{at}: {:#x} is not the implicit scratchpad's base {:#x} + {off}",
                            iv.pa,
                            pad.map_or(0, |p| p.0)
                        )),
                    },
                }
            }
            _ => {}
        }
    }
    // The scratchpad is the core's own, one piece: its views may overlap each
    // other (like views of one backing var), never anything else.
    if let Some((base, end)) = pad {
        own(bad, Owner::Private, base, end, What::Scratchpad(&sg.name));
    }
}

/// The bytes a `file` var must hold: the `.npy` payload, or the raw member.
fn file_payload(neff: &Neff, sg: &Subgraph, file: Option<&str>) -> Vec<u8> {
    let raw = neff.members.get(&format!("{}{}", sg.dir, file.unwrap_or(""))).unwrap_or(&[]);
    let data = if raw.starts_with(NPY_MAGIC) {
        parse_header(raw).ok().and_then(|h| raw.get(h.data_offset..)).unwrap_or(raw)
    } else {
        raw
    };
    data.to_vec()
}

fn check_streams<D: Device + ?Sized>(dev: &D, neff: &Neff, img: &CoreImage, sg: &Subgraph) -> Vec<String> {
    let mut bad = Vec::new();
    let def = &sg.def;
    let ids = ids_by_name(def);
    let id_of = |name: &str| ids.get(name).copied();
    let pa_of = |id: Option<u32>| id.and_then(|id| img.vars.get(id as usize)).map(|v| v.pa);
    let queue_index = queue_indices(def);
    for s in &img.engines {
        let at = format!("{} {}", sg.name, s.engine.key());
        let es = sg.engines.iter().find(|e| e.engine == s.engine);
        let file = es.and_then(|e| neff.members.get(&e.instr_member)).unwrap_or(&[]);
        let device = dev.copy_out(s.pa, s.records.saturating_mul(RECORD_SIZE as u64)).unwrap_or_default();
        let descs: &[DmaDesc] = es.and_then(|e| e.json.as_ref()).map_or(&[], |j| j.dma.as_slice());
        if s.descriptors != descs.len() as u64 {
            bad.push(format!("{at}: {} descriptors, engine json has {}", s.descriptors, descs.len()));
        }
        let ring = dev.copy_out(s.ring_pa, s.descriptors.saturating_mul(DESCRIPTOR_SIZE as u64)).unwrap_or_default();
        // Each descriptor's (from, to) var ids, looked up by name once.
        let ids: Vec<(Option<u32>, Option<u32>)> = descs.iter().map(|d| (id_of(&d.from), id_of(&d.to))).collect();
        for (i, (d, &(from, to))) in descs.iter().zip(&ids).enumerate() {
            let want = DeviceDescriptor {
                src: pa_of(from).unwrap_or(0).wrapping_add(d.from_off),
                dst: pa_of(to).unwrap_or(0).wrapping_add(d.to_off),
                size: d.size,
                queue: queue_index.get(&d.queue).copied().unwrap_or(u32::MAX),
                flags: 0,
            };
            let got = ring.get(i * DESCRIPTOR_SIZE..).and_then(DeviceDescriptor::decode);
            if got != Some(want) {
                bad.push(format!("{at} dma[{i}]: device {got:?}, expected {want:?}"));
            }
        }
        // The debug info: one entry per device record / descriptor, naming the var it touches.
        if s.operand_vars.len() as u64 != s.records || s.descriptor_vars.len() as u64 != s.descriptors {
            bad.push(format!("{at}: debug info does not match the stream and ring"));
        }
        for (i, (d, &ids)) in descs.iter().zip(&ids).enumerate() {
            if s.descriptor_vars.get(i).map(|&(a, b)| (Some(a), Some(b))) != Some(ids) {
                bad.push(format!("{at} dma[{i}]: descriptor_vars do not name {} -> {}", d.from, d.to));
            }
        }
        for (ip, (chunk, vars)) in device.chunks(RECORD_SIZE).zip(&s.operand_vars).enumerate() {
            let Ok(r) = Record::decode(chunk) else { continue };
            for (slot, v) in vars.iter().enumerate() {
                let Some(iv) = v.and_then(|v| img.vars.get(v as usize)) else { continue };
                let pa = r.ops[slot].pa();
                if pa < iv.pa || pa.saturating_add(u64::from(r.ops[slot].c)) > iv.pa.saturating_add(iv.size) {
                    bad.push(format!("{at} ip {ip} slot {slot}: {pa:#x} is not inside {}", iv.name));
                }
            }
        }
        match img.isa {
            Isa::Opaque => {
                if device != file {
                    bad.push(format!("{at}: opaque stream differs from the NEFF's"));
                }
            }
            Isa::Lncsim => {
                let var_pa = |id: u32| img.vars.get(id as usize).map(|v| v.pa);
                bad.extend(check_stream(&at, file, &device, &var_pa, &ring));
            }
        }
    }
    bad
}

/// The image's streams are the engines the NEFF declares for `sg` (an
/// engine with a description or an instruction stream), each once; an
/// engine the NEFF does not declare may appear only empty (no record, no
/// descriptor: the loader lays out every engine). O(e log e) in engines.
fn check_engines(img: &CoreImage, sg: &Subgraph) -> Vec<String> {
    let mut bad = Vec::new();
    let mut seen: BTreeMap<crate::ir::Engine, u32> = BTreeMap::new();
    for s in &img.engines {
        *seen.entry(s.engine).or_default() += 1;
        let declared = sg.engines.iter().any(|e| e.engine == s.engine);
        if !declared && (s.records > 0 || s.descriptors > 0) {
            bad.push(format!(
                "{} {}: {} records and {} descriptors staged for an engine the NEFF does not declare",
                sg.name,
                s.engine.key(),
                s.records,
                s.descriptors
            ));
        }
    }
    for (e, n) in &seen {
        if *n > 1 {
            bad.push(format!("{} {}: the image has {n} streams for the engine", sg.name, e.key()));
        }
    }
    for e in &sg.engines {
        if !seen.contains_key(&e.engine) {
            bad.push(format!(
                "{} {}: the NEFF's stream {} is missing from the image",
                sg.name,
                e.engine.key(),
                e.instr_member
            ));
        }
    }
    bad
}

/// The instruction set of the NEFF's streams, from their bytes alone (not
/// from `info.json`, which is what the loader decides by): lncsim's when
/// every record of every subgraph's streams decodes as an lncsim record and
/// every memory operand of its compute records
/// (`Add`/`Mul`/`MatMul` three, `Relu`/`Reduce` two, `PseudoAddN` three, an
/// `Ext` its `imm` sources) names a def.json var of an HBM type by var_id and
/// lies inside it (a `file` var with no size: inside its payload); else the
/// real one. `None` when the NEFF has no record to judge by. A real stream
/// passing this is vanishingly unlikely (its first opcode byte alone rules
/// most out). O(r + v log v) in records and vars.
fn stream_isa(neff: &Neff) -> Option<Isa> {
    let mut records = 0u64;
    for sg in &neff.subgraphs {
        let by_id = VarsById::new(&sg.def);
        let inside = |op: &crate::codegen::record::Operand| {
            by_id.get(op.a).is_some_and(|(_, v)| {
                let size = match (&v.var_type, v.size) {
                    (VarType::Input | VarType::Output | VarType::TmpBuf | VarType::Virtual, s) => s.unwrap_or(0),
                    (VarType::File, Some(s)) => s,
                    (VarType::File, None) => file_payload(neff, sg, v.file_name.as_deref()).len() as u64,
                    _ => return false,
                };
                u64::from(op.b) + u64::from(op.c) <= size
            })
        };
        for e in &sg.engines {
            let stream = neff.members.get(&e.instr_member).unwrap_or(&[]);
            for chunk in stream.chunks(RECORD_SIZE) {
                records += 1;
                let Ok(r) = Record::decode(chunk) else { return Some(Isa::Opaque) };
                let n = match r.opcode {
                    Opcode::Add | Opcode::Mul | Opcode::MatMul | Opcode::PseudoAddN => 3,
                    Opcode::Relu | Opcode::Reduce => 2,
                    Opcode::Ext => (r.imm as usize).min(3),
                    _ => 0,
                };
                if !r.ops[..n].iter().all(inside) {
                    return Some(Isa::Opaque);
                }
            }
        }
    }
    (records > 0).then_some(Isa::Lncsim)
}

/// Engine tables the NEFF names for `sg`: every string ending in `.bin` in
/// an engine description's other keys, and `<set>_bkt.bin` / `<set>_ctrl.bin`
/// per ACT `activation_function_sets` entry; the ones present as members.
fn expected_tables(neff: &Neff, sg: &Subgraph) -> BTreeMap<String, Vec<u8>> {
    fn strings<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(o) => o.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut want = BTreeMap::new();
    for e in &sg.engines {
        let Some(j) = &e.json else { continue };
        let mut names: Vec<String> = Vec::new();
        let mut found = Vec::new();
        j.extra.values().for_each(|v| strings(v, &mut found));
        names.extend(found.iter().filter(|s| s.ends_with(".bin")).map(|s| (*s).to_owned()));
        if let Some(Value::Array(sets)) = j.extra.get("activation_function_sets") {
            for set in sets.iter().filter_map(Value::as_str) {
                names.push(format!("{set}_bkt.bin"));
                names.push(format!("{set}_ctrl.bin"));
            }
        }
        for n in names {
            let member = format!("{}{n}", sg.dir);
            if let Some(b) = neff.members.get(&member) {
                want.insert(member, b.to_vec());
            }
        }
    }
    want
}

fn check_tables<D: Device + ?Sized>(dev: &D, neff: &Neff, sg: &Subgraph, m: &Model) -> Vec<String> {
    let mut bad = Vec::new();
    let want = expected_tables(neff, sg);
    let mut staged: BTreeMap<&str, u32> = BTreeMap::new();
    for t in &m.tables {
        *staged.entry(t.member.as_str()).or_default() += 1;
        match want.get(&t.member) {
            None => bad.push(format!("{}: staged table {} is not one the NEFF names", sg.name, t.member)),
            Some(b) => {
                if t.len != b.len() as u64 || dev.copy_out(t.pa, t.len).ok().as_deref() != Some(&b[..]) {
                    bad.push(format!(
                        "{}: table {} differs from the NEFF's ({} bytes at {:#x})",
                        sg.name, t.member, t.len, t.pa
                    ));
                }
            }
        }
    }
    for member in want.keys() {
        match staged.get(member.as_str()) {
            None => bad.push(format!("{}: table {member} was not staged", sg.name)),
            Some(&n) if n > 1 => bad.push(format!("{}: table {member} staged {n} times", sg.name)),
            Some(_) => {}
        }
    }
    bad
}

/// Views of one shared tensor sit at one address on every core: a
/// `virtual` var `<t>_in<c>` of core `c` in the shared region (backed by a
/// `vnc_shared` tmp-buf) and a shared `virtual` var `t` of another core.
fn check_views(neff: &Neff, images: &[&CoreImage]) -> Vec<String> {
    let mut bad = Vec::new();
    let pa = |img: &CoreImage, id: u32| img.vars.get(id as usize).map(|v| v.pa);
    // Each subgraph's shared views, found once.
    let views: Vec<Vec<(&str, u32)>> = neff.subgraphs.iter().map(shared_views).collect();
    // (name, core, pa) of every shared view, sorted by (name, core): one flat
    // array, no per-name heap object; a name's views are a binary-searched run
    // in core order (findings follow the cores' order). O(n log n).
    let mut by_name: Vec<(&str, usize, u64)> = Vec::with_capacity(views.iter().map(Vec::len).sum());
    for (c, (img, vs)) in images.iter().zip(&views).enumerate() {
        by_name.extend(vs.iter().filter_map(|&(n, id)| pa(img, id).map(|p| (n, c, p))));
    }
    by_name.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let named = |t: &str| {
        let first = by_name.partition_point(|e| e.0 < t);
        let n = by_name[first..].partition_point(|e| e.0 == t);
        &by_name[first..first + n]
    };
    for (c, (img, vs)) in images.iter().zip(&views).enumerate() {
        let suffix = format!("_in{c}");
        for &(name, id) in vs {
            let (Some(t), Some(at)) = (name.strip_suffix(&suffix), pa(img, id)) else { continue };
            for &(_, o, opa) in named(t) {
                if o != c && opa != at {
                    bad.push(format!("sg{c:02} {name} at {at:#x} but sg{o:02} {t} at {opa:#x}"));
                }
            }
        }
    }
    bad
}

/// The `virtual` vars of `sg` backed by a `vnc_shared` tmp-buf, with their
/// var_ids, in name order. O(n) in vars plus one compare per view with each
/// `vnc_shared` tmp-buf's name (a subgraph has at most a few).
fn shared_views(sg: &Subgraph) -> Vec<(&str, u32)> {
    let shared: Vec<&str> = sg
        .def
        .var
        .iter()
        .filter(|(_, b)| b.var_type == VarType::TmpBuf && b.extra.get("vnc_shared") == Some(&Value::Bool(true)))
        .map(|(n, _)| n.as_str())
        .collect();
    if shared.is_empty() {
        return Vec::new();
    }
    sg.def
        .var
        .iter()
        .filter(|(_, v)| v.var_type == VarType::Virtual)
        .filter(|(_, v)| v.backing_variable.as_deref().is_some_and(|b| shared.contains(&b)))
        .map(|(n, v)| (n.as_str(), v.var_id))
        .collect()
}

/// One line per piece that starts before the furthest-reaching earlier piece ends (one sort, one sweep).
fn overlaps(mut owned: Vec<Piece>) -> Vec<String> {
    owned.retain(|o| o.len > 0);
    // Ties on (pa, len) are overlaps, hence rare: only they print their names to order them.
    owned.sort_by(|a, b| (a.pa, a.len).cmp(&(b.pa, b.len)).then_with(|| a.what.to_string().cmp(&b.what.to_string())));
    let mut bad = Vec::new();
    let mut reach: Option<usize> = None;
    for i in 0..owned.len() {
        if let Some(r) = reach {
            let (a, b) = (&owned[r], &owned[i]);
            if b.pa < a.pa.saturating_add(a.len) {
                bad.push(format!("{} [{:#x}, +{}) overlaps {} [{:#x}, +{})", a.what, a.pa, a.len, b.what, b.pa, b.len));
            }
        }
        let end = |p: &Piece| p.pa.saturating_add(p.len);
        if reach.is_none_or(|r| end(&owned[i]) > end(&owned[r])) {
            reach = Some(i);
        }
    }
    bad
}

/// Queue indices by name: `queue_index` when every queue has one, else name order.
pub(super) fn queue_indices(def: &DefJson) -> BTreeMap<String, u32> {
    let explicit: Option<BTreeMap<String, u32>> = def
        .dma_queue
        .iter()
        .map(|(n, q)| {
            q.extra
                .get("queue_index")
                .and_then(Value::as_u64)
                .and_then(|i| u32::try_from(i).ok())
                .map(|i| (n.clone(), i))
        })
        .collect();
    explicit.unwrap_or_else(|| def.dma_queue.keys().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect())
}

/// One lncsim stream: the device records are the NEFF's with every memory
/// operand at `var pa + offset` (FLAG_RELOCATED), every other field (flags,
/// signal, waits, debug id, immediate, unused operand slots) unchanged; every
/// `PseudoAddN` + `Ext`s a chain of `Add`s (`dst = src0 + src1`, then
/// `dst = dst + src_k`), each with the pseudo's debug id and no immediate,
/// the first with its waits and the others with none, the last with its
/// signal and its signal and collective flags and the others with neither;
/// every DMA names its ring descriptor's queue and size. Linear in records.
fn check_stream(at: &str, file: &[u8], device: &[u8], var_pa: &dyn Fn(u32) -> Option<u64>, ring: &[u8]) -> Vec<String> {
    let mut bad = Vec::new();
    let neff: Vec<Record> = file.chunks(RECORD_SIZE).filter_map(|c| Record::decode(c).ok()).collect();
    // The device records are read in order, one decode each where they lie
    // (no decoded copy of the stream): `dev_len` chunks, the last maybe short.
    let dev_len = device.len().div_ceil(RECORD_SIZE);
    let mut d = 0usize;
    let mut i = 0usize;
    let mut take = |bad: &mut Vec<String>| {
        let r = d
            .checked_mul(RECORD_SIZE)
            .and_then(|o| device.get(o..o.saturating_add(RECORD_SIZE).min(device.len())))
            .filter(|c| !c.is_empty())
            .and_then(|c| Record::decode(c).ok());
        if r.is_none() {
            bad.push(format!("{at}: device record {d} missing or undecodable"));
        }
        d += 1;
        r
    };
    let expect_op = |bad: &mut Vec<String>, r: &Record, slot: usize, var: u32, off: u32, len: u32, ip: usize| {
        let want = var_pa(var).and_then(|p| p.checked_add(u64::from(off)));
        if Some(r.ops[slot].pa()) != want || r.ops[slot].c != len {
            bad.push(format!(
                "{at} ip {ip} slot {slot}: {:#x}+{} is not var {var}+{off} ({want:x?})",
                r.ops[slot].pa(),
                r.ops[slot].c
            ));
        }
    };
    while i < neff.len() {
        let r = neff[i];
        if r.opcode == Opcode::PseudoAddN {
            let exts = &neff[i + 1..(i + 1).saturating_add(r.imm as usize).min(neff.len())];
            let mut srcs = vec![r.ops[1], r.ops[2]];
            for e in exts {
                srcs.extend_from_slice(&e.ops[..(e.imm as usize).min(e.ops.len())]);
            }
            let last = srcs.len().saturating_sub(1);
            for k in 1..srcs.len() {
                let Some(a) = take(&mut bad) else { continue };
                let flags = FLAG_RELOCATED | if k == last { r.flags & (FLAG_SIGNAL | FLAG_COLLECTIVE) } else { 0 };
                if a.opcode != Opcode::Add || a.flags != flags {
                    bad.push(format!("{at} ip {i}: expansion record {k} is {:?} flags {:#x}", a.opcode, a.flags));
                }
                let waits = if k == 1 { r.waits } else { [None; MAX_WAITS] };
                let signal = if k == last { r.signal } else { 0 };
                if a.waits != waits || a.signal != signal || a.debug_id != r.debug_id || a.imm != 0 {
                    bad.push(format!(
                        "{at} ip {i}: expansion record {k} of {last} has waits {:?}, signal {}, debug id {}, imm {} \
                         (expected waits {waits:?}, signal {signal}, debug id {}, imm 0)",
                        a.waits, a.signal, a.debug_id, a.imm, r.debug_id
                    ));
                }
                expect_op(&mut bad, &a, 0, r.ops[0].a, r.ops[0].b, r.ops[0].c, i);
                if k == 1 {
                    expect_op(&mut bad, &a, 1, srcs[0].a, srcs[0].b, srcs[0].c, i);
                } else {
                    expect_op(&mut bad, &a, 1, r.ops[0].a, r.ops[0].b, r.ops[0].c, i);
                }
                expect_op(&mut bad, &a, 2, srcs[k].a, srcs[k].b, srcs[k].c, i);
            }
            i += 1 + exts.len();
            continue;
        }
        let n = match r.opcode {
            Opcode::Add | Opcode::Mul | Opcode::MatMul => 3,
            Opcode::Relu | Opcode::Reduce => 2,
            _ => 0,
        };
        if let Some(g) = take(&mut bad) {
            if n == 0 {
                if g != r {
                    bad.push(format!("{at} ip {i}: {:?} changed", r.opcode));
                }
                if r.opcode == Opcode::Dma {
                    let desc = (r.ops[0].b as usize)
                        .checked_mul(DESCRIPTOR_SIZE)
                        .and_then(|o| ring.get(o..))
                        .and_then(DeviceDescriptor::decode);
                    if desc.map(|x| (x.queue, x.size)) != Some((r.ops[0].a, u64::from(r.ops[0].c))) {
                        bad.push(format!(
                            "{at} ip {i}: DMA on queue {} of {} bytes but its descriptor says {desc:?}",
                            r.ops[0].a, r.ops[0].c
                        ));
                    }
                }
            } else {
                if g.opcode != r.opcode
                    || g.flags != r.flags | FLAG_RELOCATED
                    || g.waits != r.waits
                    || g.imm != r.imm
                    || g.signal != r.signal
                    || g.debug_id != r.debug_id
                    || g.ops[n..] != r.ops[n..]
                {
                    bad.push(format!(
                        "{at} ip {i}: {:?} became {:?} (flags {:#x} -> {:#x}, signal {} -> {}, debug id {} -> {})",
                        r.opcode, g.opcode, r.flags, g.flags, r.signal, g.signal, r.debug_id, g.debug_id
                    ));
                }
                for slot in 0..n {
                    expect_op(&mut bad, &g, slot, r.ops[slot].a, r.ops[slot].b, r.ops[slot].c, i);
                }
            }
        }
        i += 1;
    }
    if d != dev_len {
        bad.push(format!("{at}: {dev_len} device records, expected {d}"));
    }
    bad
}
