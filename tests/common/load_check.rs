//! An independent checker of a finished load: it re-derives, from the NEFF
//! (read with the NEFF reader, not the loader) and from device memory (read
//! back byte by byte), what the loader must have staged, and lists every
//! difference. It shares no code with `lncsim_model::load`.
#![allow(dead_code)]

use std::collections::BTreeMap;

use lncsim_model::codegen::record::{DESCRIPTOR_SIZE, DeviceDescriptor, FLAG_RELOCATED, Opcode, RECORD_SIZE, Record};
use lncsim_model::load::{CoreImage, Device, Isa};
use lncsim_model::neff::Neff;
use lncsim_model::neff::manifest::VarType;
use lncsim_model::neff::npy::{NPY_MAGIC, parse_header};
use lncsim_sim::device::SimDevice;
use serde_json::Value;

/// Every violation found, one line each (empty = the load is right).
pub fn check_load(dev: &SimDevice, neff: &Neff, images: &[CoreImage]) -> Vec<String> {
    let mut bad = Vec::new();
    if images.len() != neff.subgraphs.len() {
        bad.push(format!("{} images for {} subgraphs", images.len(), neff.subgraphs.len()));
        return bad;
    }
    let allocs = dev.allocations();
    let inside = |pa: u64, len: u64| allocs.iter().any(|a| pa >= a.pa && pa + len <= a.pa + a.size);
    let mut io_pa: BTreeMap<&str, u64> = BTreeMap::new();
    let mut shared_base: Option<u64> = None;
    let mut owned: Vec<(u64, u64, String)> = Vec::new();
    for (c, (img, sg)) in images.iter().zip(&neff.subgraphs).enumerate() {
        let def = &sg.def;
        if img.core != c as u32 {
            bad.push(format!("image {c} says core {}", img.core));
        }
        let pa_of = |name: &str| def.var.get(name).and_then(|v| img.vars.get(v.var_id as usize)).map(|v| v.pa);
        for (name, v) in &def.var {
            let Some(iv) = img.vars.get(v.var_id as usize) else {
                bad.push(format!("{}: var {name} (id {}) missing from the image", sg.name, v.var_id));
                continue;
            };
            let at = format!("{} var {name}", sg.name);
            if iv.name != *name || iv.var_type != v.var_type {
                bad.push(format!("{at}: image has {:?} of type {}", iv.name, iv.var_type));
            }
            let size = v.size.unwrap_or(0);
            let in_hbm = matches!(
                v.var_type,
                VarType::Input | VarType::Output | VarType::File | VarType::TmpBuf | VarType::Virtual
            );
            if !in_hbm {
                if (iv.pa, iv.size) != (0, 0) {
                    bad.push(format!("{at}: not an HBM type but placed at {:#x}+{}", iv.pa, iv.size));
                }
                continue;
            }
            if iv.size != size && v.var_type != VarType::File {
                bad.push(format!("{at}: size {} in the image, {size} in def.json", iv.size));
            }
            if !inside(iv.pa, size.max(1)) {
                bad.push(format!("{at}: [{:#x}, +{size}) is not inside a live allocation", iv.pa));
            }
            let io = matches!(v.var_type, VarType::Input | VarType::Output);
            if io && *io_pa.entry(name).or_insert(iv.pa) != iv.pa {
                bad.push(format!("{at}: IO buffer differs from another core's"));
            }
            let shared = v.var_type == VarType::TmpBuf && v.extra.get("vnc_shared") == Some(&Value::Bool(true));
            if shared && *shared_base.get_or_insert(iv.pa) != iv.pa {
                bad.push(format!("{at}: shared region differs from another core's"));
            }
            match v.var_type {
                VarType::TmpBuf if !shared => owned.push((iv.pa, size, at.clone())),
                VarType::File => {
                    owned.push((iv.pa, size, at.clone()));
                    let f = v.file_name.as_deref().unwrap_or("");
                    let raw = neff.members.get(&format!("{}{f}", sg.dir)).unwrap_or(&[]);
                    let data = if raw.starts_with(NPY_MAGIC) {
                        parse_header(raw).map(|h| &raw[h.data_offset..]).unwrap_or(raw)
                    } else {
                        raw
                    };
                    if dev.copy_out(iv.pa, data.len() as u64).ok().as_deref() != Some(data) {
                        bad.push(format!("{at}: device bytes differ from {f}"));
                    }
                }
                VarType::Virtual => {
                    let off = v.backing_variable_off.unwrap_or(0);
                    if let Some(b) = &v.backing_variable
                        && pa_of(b).map(|p| p + off) != Some(iv.pa)
                    {
                        bad.push(format!("{at}: {:#x} is not {b} + {off}", iv.pa));
                    }
                }
                _ => {}
            }
        }
        // The streams and rings.
        let queue_index = queue_indices(def);
        for s in &img.engines {
            let es = sg.engines.iter().find(|e| e.engine == s.engine);
            let file = es.and_then(|e| neff.members.get(&e.instr_member)).unwrap_or(&[]);
            owned.push((s.pa, s.records * RECORD_SIZE as u64, format!("{} {} stream", sg.name, s.engine.key())));
            owned.push((
                s.ring_pa,
                s.descriptors * DESCRIPTOR_SIZE as u64,
                format!("{} {} ring", sg.name, s.engine.key()),
            ));
            let device = dev.copy_out(s.pa, s.records * RECORD_SIZE as u64).unwrap_or_default();
            let descs = es.and_then(|e| e.json.as_ref()).map(|j| j.dma.clone()).unwrap_or_default();
            if s.descriptors != descs.len() as u64 {
                bad.push(format!(
                    "{} {}: {} descriptors, engine json has {}",
                    sg.name,
                    s.engine.key(),
                    s.descriptors,
                    descs.len()
                ));
            }
            let ring = dev.copy_out(s.ring_pa, s.descriptors * DESCRIPTOR_SIZE as u64).unwrap_or_default();
            for (i, d) in descs.iter().enumerate() {
                let want = DeviceDescriptor {
                    src: pa_of(&d.from).unwrap_or(0) + d.from_off,
                    dst: pa_of(&d.to).unwrap_or(0) + d.to_off,
                    size: d.size,
                    queue: queue_index.get(&d.queue).copied().unwrap_or(u32::MAX),
                    flags: 0,
                };
                let got = ring.get(i * DESCRIPTOR_SIZE..).and_then(DeviceDescriptor::decode);
                if got != Some(want) {
                    bad.push(format!("{} {} dma[{i}]: device {got:?}, expected {want:?}", sg.name, s.engine.key()));
                }
            }
            // The debug info: one entry per device record / descriptor, naming the var it touches.
            if s.operand_vars.len() as u64 != s.records || s.descriptor_vars.len() as u64 != s.descriptors {
                bad.push(format!("{} {}: debug info does not match the stream and ring", sg.name, s.engine.key()));
            }
            for (i, d) in descs.iter().enumerate() {
                let ids = (def.var.get(&d.from).map(|v| v.var_id), def.var.get(&d.to).map(|v| v.var_id));
                if s.descriptor_vars.get(i).map(|&(a, b)| (Some(a), Some(b))) != Some(ids) {
                    bad.push(format!(
                        "{} {} dma[{i}]: descriptor_vars do not name {} -> {}",
                        sg.name,
                        s.engine.key(),
                        d.from,
                        d.to
                    ));
                }
            }
            for (ip, (chunk, vars)) in device.chunks(RECORD_SIZE).zip(&s.operand_vars).enumerate() {
                let Ok(r) = Record::decode(chunk) else { continue };
                for (slot, v) in vars.iter().enumerate() {
                    let Some(iv) = v.and_then(|v| img.vars.get(v as usize)) else { continue };
                    let pa = r.ops[slot].pa();
                    if pa < iv.pa || pa + u64::from(r.ops[slot].c) > iv.pa + iv.size {
                        bad.push(format!(
                            "{} {} ip {ip} slot {slot}: {pa:#x} is not inside {}",
                            sg.name,
                            s.engine.key(),
                            iv.name
                        ));
                    }
                }
            }
            match img.isa {
                Isa::Opaque => {
                    if device != file {
                        bad.push(format!("{} {}: opaque stream differs from the NEFF's", sg.name, s.engine.key()));
                    }
                }
                Isa::Lncsim => {
                    let at = format!("{} {}", sg.name, s.engine.key());
                    let var_pa = |id: u32| img.vars.get(id as usize).map(|v| v.pa);
                    bad.extend(check_stream(&at, file, &device, &var_pa, &ring));
                }
            }
        }
    }
    // Views of one shared tensor sit at one address on every core.
    for (c, img) in images.iter().enumerate() {
        for v in &img.vars {
            let Some(t) = v.name.strip_suffix(&format!("_in{c}")) else { continue };
            for (o, other) in images.iter().enumerate() {
                if let Some(ov) = other.vars.iter().find(|x| x.name == t && o != c && x.var_type == VarType::Virtual)
                    && ov.pa != v.pa
                {
                    bad.push(format!("sg{c:02} {} at {:#x} but sg{o:02} {t} at {:#x}", v.name, v.pa, ov.pa));
                }
            }
        }
    }
    // Private pieces, IO buffers and the shared region never overlap.
    owned.extend(io_pa.iter().map(|(n, &pa)| (pa, 1, format!("io {n}"))));
    owned.retain(|o| o.1 > 0);
    for (i, a) in owned.iter().enumerate() {
        for b in &owned[i + 1..] {
            if a.0 < b.0 + b.1 && b.0 < a.0 + a.1 {
                bad.push(format!("{} [{:#x}, +{}) overlaps {} [{:#x}, +{})", a.2, a.0, a.1, b.2, b.0, b.1));
            }
        }
    }
    bad
}

fn queue_indices(def: &lncsim_model::neff::manifest::DefJson) -> BTreeMap<String, u32> {
    let explicit: Option<BTreeMap<String, u32>> = def
        .dma_queue
        .iter()
        .map(|(n, q)| q.extra.get("queue_index").and_then(Value::as_u64).map(|i| (n.clone(), i as u32)))
        .collect();
    explicit.unwrap_or_else(|| def.dma_queue.keys().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect())
}

/// One lncsim stream: the device records are the NEFF's with every memory
/// operand at `var pa + offset` (FLAG_RELOCATED), every `PseudoAddN` + `Ext`s
/// a chain of `Add`s, everything else unchanged; every DMA names its ring
/// descriptor's queue.
fn check_stream(at: &str, file: &[u8], device: &[u8], var_pa: &dyn Fn(u32) -> Option<u64>, ring: &[u8]) -> Vec<String> {
    let mut bad = Vec::new();
    let neff: Vec<Record> = file.chunks(RECORD_SIZE).filter_map(|c| Record::decode(c).ok()).collect();
    let dev: Vec<Option<Record>> = device.chunks(RECORD_SIZE).map(|c| Record::decode(c).ok()).collect();
    let mut d = 0usize;
    let mut i = 0usize;
    let mut take = |bad: &mut Vec<String>| {
        let r = dev.get(d).copied().flatten();
        if r.is_none() {
            bad.push(format!("{at}: device record {d} missing or undecodable"));
        }
        d += 1;
        r
    };
    let expect_op = |bad: &mut Vec<String>, r: &Record, slot: usize, var: u32, off: u32, len: u32, ip: usize| {
        let want = var_pa(var).map(|p| p + u64::from(off));
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
            let exts = &neff[i + 1..(i + 1 + r.imm as usize).min(neff.len())];
            let mut srcs = vec![r.ops[1], r.ops[2]];
            for e in exts {
                srcs.extend_from_slice(&e.ops[..e.imm as usize]);
            }
            for k in 1..srcs.len() {
                let Some(a) = take(&mut bad) else { continue };
                if a.opcode != Opcode::Add || a.flags & FLAG_RELOCATED == 0 {
                    bad.push(format!("{at} ip {i}: expansion record {k} is {:?} flags {:#x}", a.opcode, a.flags));
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
                    let desc = ring.get(r.ops[0].b as usize * DESCRIPTOR_SIZE..).and_then(DeviceDescriptor::decode);
                    if desc.map(|x| x.queue) != Some(r.ops[0].a) {
                        bad.push(format!("{at} ip {i}: DMA on queue {} but its descriptor says {desc:?}", r.ops[0].a));
                    }
                }
            } else {
                if g.opcode != r.opcode || g.flags != r.flags | FLAG_RELOCATED || g.waits != r.waits || g.imm != r.imm {
                    bad.push(format!("{at} ip {i}: {:?} became {:?} flags {:#x}", r.opcode, g.opcode, g.flags));
                }
                for slot in 0..n {
                    expect_op(&mut bad, &g, slot, r.ops[slot].a, r.ops[slot].b, r.ops[slot].c, i);
                }
            }
        }
        i += 1;
    }
    if d != dev.len() {
        bad.push(format!("{at}: {} device records, expected {d}", dev.len()));
    }
    bad
}
