//! The independent load-layout checker (`common/load_check.rs`) fed loads
//! broken one rule at a time: each rule reports its own line. (Wrong
//! operands, descriptors, weights and var addresses are in `load_pipeline.rs`.)
#![allow(clippy::unwrap_used)]

#[path = "common/load_check.rs"]
mod load_check;

use lncsim_model::codegen::VarKind;
use lncsim_model::codegen::record::{
    DESCRIPTOR_SIZE, DeviceDescriptor, FLAG_COLLECTIVE, FLAG_RELOCATED, FLAG_SIGNAL, Opcode, Operand, RECORD_SIZE,
    Record, Wait,
};
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{CoreImage, Device, HNn, Isa, Model, Runtime, StreamImage};
use lncsim_model::neff::manifest::VarType;
use lncsim_model::neff::{Neff, ReadOptions};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::SimDevice;
use load_check::{check_load, check_models};

/// A 4-core generated NEFF loaded clean, its parsed form and its images.
fn loaded() -> (Runtime<SimDevice>, Neff, Vec<CoreImage>) {
    let bytes = pack_generated(&GenConfig::new(3, 4, SizeClass::Small)).unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::default()).unwrap();
    let rt = Runtime::new(SimDevice::new(4, 4));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let images = rt.core_images(m.h_nn).unwrap();
    assert_eq!(check_load(rt.device(), &neff, &images), Vec::<String>::new(), "the clean load must pass");
    (rt, neff, images)
}

/// The checker's lines for `images` changed by `edit`; asserts one contains every needle.
fn reports(
    rt: &Runtime<SimDevice>,
    neff: &Neff,
    images: &[CoreImage],
    edit: impl FnOnce(&mut Vec<CoreImage>),
    needles: &[&str],
) {
    let mut broken = images.to_vec();
    edit(&mut broken);
    let bad = check_load(rt.device(), neff, &broken);
    assert!(bad.iter().any(|l| needles.iter().all(|n| l.contains(n))), "no line with {needles:?} in {bad:#?}");
}

#[test]
fn images_that_do_not_match_the_subgraphs_are_reported() {
    let (rt, neff, images) = loaded();
    reports(
        &rt,
        &neff,
        &images,
        |b| {
            b.pop();
        },
        &["3 images for 4 subgraphs"],
    );
    reports(&rt, &neff, &images, |b| b[1].core = 0, &["image 1 says core 0"]);
    reports(
        &rt,
        &neff,
        &images,
        |b| {
            b[2].vars.pop();
        },
        &["sg02: var ", "missing from the image"],
    );
    reports(&rt, &neff, &images, |b| b[0].vars[0].name.push('x'), &["sg00 var ", "image has"]);
    let sized = images[0].vars.iter().position(|v| matches!(v.kind, VarKind::Virtual { .. }) && v.size > 0).unwrap();
    reports(&rt, &neff, &images, |b| b[0].vars[sized].size += 4, &["in the image", "in def.json"]);
}

#[test]
fn io_buffers_and_the_shared_region_must_be_one_address_on_every_core() {
    let (rt, neff, images) = loaded();
    // An input that core 2 declares and core 0 too ("same name, same buffer").
    let input = images[2]
        .vars
        .iter()
        .position(|v| v.kind == VarKind::Input && images[0].vars.iter().any(|x| x.name == v.name))
        .unwrap();
    reports(
        &rt,
        &neff,
        &images,
        |b| b[2].vars[input].pa += 64,
        &["sg02 var ", "IO buffer differs from another core's"],
    );
    let shared = images[1].vars.iter().position(|v| v.kind == VarKind::SharedScratch).unwrap();
    reports(&rt, &neff, &images, |b| b[1].vars[shared].pa += 4096, &["sg01 var ", "shared region differs"]);
}

#[test]
fn a_view_away_from_its_producer_is_reported() {
    let (rt, neff, images) = loaded();
    // A consumer's view `<t>_in<c>` and its producer's `<t>` on another core.
    let (c, v, t) = images
        .iter()
        .enumerate()
        .find_map(|(c, img)| {
            img.vars.iter().enumerate().find_map(|(i, v)| {
                let t = v.name.strip_suffix(&format!("_in{c}"))?;
                images.iter().any(|o| o.core != img.core && o.vars.iter().any(|x| x.name == t)).then_some((c, i, t))
            })
        })
        .unwrap();
    let view = images[c].vars[v].name.clone();
    reports(&rt, &neff, &images, |b| b[c].vars[v].pa += 64, &[&format!("sg{c:02} {view} at "), &format!(" {t} at ")]);
}

#[test]
fn overlapping_pieces_and_wrong_debug_info_are_reported() {
    let (rt, neff, images) = loaded();
    let e = images[0].engines.iter().position(|s| s.records > 0 && s.descriptors > 0).unwrap();
    let key = images[0].engines[e].engine.key();
    // The ring placed over the stream.
    reports(
        &rt,
        &neff,
        &images,
        |b| b[0].engines[e].ring_pa = b[0].engines[e].pa,
        &[&format!("sg00 {key} ring"), "overlaps", &format!("sg00 {key} stream")],
    );
    reports(
        &rt,
        &neff,
        &images,
        |b| {
            b[0].engines[e].operand_vars.pop();
        },
        &["debug info does not match"],
    );
    reports(
        &rt,
        &neff,
        &images,
        |b| {
            let d = &mut b[0].engines[e].descriptor_vars[0];
            *d = (d.1, d.0.wrapping_add(1));
        },
        &["dma[0]: descriptor_vars do not name"],
    );
    // An lncsim stream declared opaque: the relocated device bytes are not the NEFF's.
    reports(&rt, &neff, &images, |b| b[0].isa = Isa::Opaque, &[&format!("sg00 {key}: opaque stream differs")]);
}

#[test]
fn vars_outside_every_allocation_and_placed_non_hbm_vars_are_reported() {
    let (rt, neff, images) = loaded();
    let w = images[0].vars.iter().position(|v| v.name == "w0").unwrap();
    reports(
        &rt,
        &neff,
        &images,
        |b| b[0].vars[w].pa = 0x7000_0000_0000,
        &["sg00 var w0: ", "is not inside a live allocation"],
    );
    // def.json says `t2` is a state-buffer var, yet the image placed it in HBM.
    let mut sb = neff.clone();
    sb.subgraphs[0].def.var.get_mut("t2").unwrap().var_type = VarType::StateBuffer;
    let bad = check_load(rt.device(), &sb, &images);
    assert!(bad.iter().any(|l| l.starts_with("sg00 var t2: not an HBM type but placed at ")), "{bad:#?}");
}

#[test]
fn stream_and_ring_lengths_that_differ_from_the_neff_are_reported() {
    let (rt, neff, images) = loaded();
    let e = images[0].engines.iter().position(|s| s.records > 1 && s.descriptors > 0).unwrap();
    let key = images[0].engines[e].engine.key();
    reports(
        &rt,
        &neff,
        &images,
        |b| b[0].engines[e].descriptors -= 1,
        &[&format!("sg00 {key}: "), "descriptors, engine json has"],
    );
    let n = images[0].engines[e].records;
    reports(
        &rt,
        &neff,
        &images,
        |b| b[0].engines[e].records -= 1,
        &[&format!("sg00 {key}: device record {} missing or undecodable", n - 1)],
    );
    reports(
        &rt,
        &neff,
        &images,
        |b| {
            let s = &mut b[0].engines[e];
            s.records += 1;
            s.operand_vars.push([None; 3]);
        },
        &[&format!("sg00 {key}: {} device records, expected {n}", n + 1)],
    );
}

/// Rewrites device record `ip` of stream `s`; returns the original bytes.
fn rewrite(rt: &Runtime<SimDevice>, s: &StreamImage, ip: u64, edit: impl FnOnce(&mut Record)) -> (u64, Vec<u8>) {
    let pa = s.pa + ip * RECORD_SIZE as u64;
    let orig = rt.device().copy_out(pa, RECORD_SIZE as u64).unwrap();
    let mut r = Record::decode(&orig).unwrap();
    edit(&mut r);
    rt.device().write(pa, &r.encode()).unwrap();
    (pa, orig)
}

/// The first device record of any stream that `pick` accepts: (core, stream, ip).
fn find(rt: &Runtime<SimDevice>, images: &[CoreImage], pick: impl Fn(&Record) -> bool) -> (usize, StreamImage, u64) {
    for (c, img) in images.iter().enumerate() {
        for s in &img.engines {
            for ip in 0..s.records {
                let r = Record::decode(&rt.device().copy_out(s.pa + ip * RECORD_SIZE as u64, 64).unwrap()).unwrap();
                if pick(&r) {
                    return (c, s.clone(), ip);
                }
            }
        }
    }
    panic!("no record picked");
}

#[test]
fn records_changed_on_the_device_are_reported() {
    let (rt, neff, images) = loaded();
    let check = |needles: &[&str]| {
        let bad = check_load(rt.device(), &neff, &images);
        assert!(bad.iter().any(|l| needles.iter().all(|n| l.contains(n))), "no line with {needles:?} in {bad:#?}");
    };
    let restore = |(pa, orig): (u64, Vec<u8>)| {
        rt.device().write(pa, &orig).unwrap();
        assert_eq!(check_load(rt.device(), &neff, &images), Vec::<String>::new());
    };
    // A record without memory operands must arrive unchanged; a DMA on its descriptor's queue.
    let (c, s, ip) = find(&rt, &images, |r| r.opcode == Opcode::Dma);
    let at = format!("sg{c:02} {} ip ", s.engine.key());
    restore({
        let old = rewrite(&rt, &s, ip, |r| r.imm += 1);
        check(&[&at, ": Dma changed"]);
        old
    });
    let rec = Record::decode(&rt.device().copy_out(s.pa + ip * RECORD_SIZE as u64, 64).unwrap()).unwrap();
    let d_pa = s.ring_pa + u64::from(rec.ops[0].b) * DESCRIPTOR_SIZE as u64;
    let orig = rt.device().copy_out(d_pa, DESCRIPTOR_SIZE as u64).unwrap();
    let mut d = DeviceDescriptor::decode(&orig).unwrap();
    d.queue += 1;
    rt.device().write(d_pa, &d.encode()).unwrap();
    let dma_line = format!(": DMA on queue {} of {} bytes but its descriptor says", rec.ops[0].a, rec.ops[0].c);
    check(&[&at, &dma_line]);
    restore((d_pa, orig.clone()));
    // ... and of its descriptor's size.
    let mut d = DeviceDescriptor::decode(&orig).unwrap();
    d.size += 4;
    rt.device().write(d_pa, &d.encode()).unwrap();
    check(&[&at, &dma_line]);
    restore((d_pa, orig));
    // A compute record keeps its opcode.
    let (c, s, ip) = find(&rt, &images, |r| r.opcode == Opcode::Relu);
    let at = format!("sg{c:02} {} ip ", s.engine.key());
    restore({
        let old = rewrite(&rt, &s, ip, |r| r.opcode = Opcode::Reduce);
        check(&[&at, ": Relu became Reduce"]);
        old
    });
    // ... and every field but its memory operands: signal, debug id, the unused slot.
    for edit in [(|r: &mut Record| r.signal ^= 1) as fn(&mut Record), |r| r.debug_id += 1, |r| r.ops[2].c += 1] {
        restore({
            let old = rewrite(&rt, &s, ip, edit);
            check(&[&at, ": Relu became Relu"]);
            old
        });
    }
    // A pseudo-add's expansion is a chain of Adds.
    let models = rt.models(HNn(1)).unwrap();
    let (sg, p) = models.iter().find_map(|m| m.kbin_patch_info.first().map(|p| (m.sg as usize, *p))).unwrap();
    let s = images[sg].engines[p.engine.index()].clone();
    restore({
        let old = rewrite(&rt, &s, p.device_ip, |r| r.opcode = Opcode::Mul);
        check(&[&format!("sg{sg:02} {} ip {}: expansion record 1 is Mul", s.engine.key(), p.neff_ip)]);
        old
    });
    // ... whose first Add takes the pseudo's waits, whose last takes its signal,
    // and each of which keeps its debug id and carries no immediate.
    let at = format!("sg{sg:02} {} ip {}: expansion record", s.engine.key(), p.neff_ip);
    let (first, last) = (p.device_ip, p.device_ip + p.expanded - 1);
    assert!(p.expanded >= 2, "a patch grows the stream");
    type Edit = (u64, fn(&mut Record));
    let edits: [Edit; 5] = [
        (first, |r| r.waits = Default::default()),
        (last, |r| r.waits = [Some(Wait { sem: 0, value: 1 }), None]),
        (first, |r| r.signal ^= 1),
        (last, |r| r.debug_id += 1),
        (last, |r| r.imm = 7),
    ];
    let waits_of = Record::decode(&rt.device().copy_out(s.pa + first * RECORD_SIZE as u64, 64).unwrap()).unwrap().waits;
    for (k, (ip, edit)) in edits.into_iter().enumerate() {
        if k == 0 && waits_of.iter().all(Option::is_none) {
            continue; // this pseudo waits for nothing: no wait to drop
        }
        restore({
            let old = rewrite(&rt, &s, ip, edit);
            check(&[&at, " of ", "(expected waits"]);
            old
        });
    }
    // Flags: the signal flag on the last Add only.
    restore({
        let old = rewrite(&rt, &s, first, |r| r.flags |= FLAG_SIGNAL);
        check(&[&at, " 1 is Add flags"]);
        old
    });
}

/// The checker's lines for `models` changed by `edit`; asserts one contains every needle.
fn reports_models(
    dev: &SimDevice,
    neff: &Neff,
    models: &[Model],
    edit: impl FnOnce(&mut Vec<Model>),
    needles: &[&str],
) {
    let mut broken = models.to_vec();
    edit(&mut broken);
    let bad = check_models(dev, neff, &broken);
    assert!(bad.iter().any(|l| needles.iter().all(|n| l.contains(n))), "no line with {needles:?} in {bad:#?}");
}

#[test]
fn io_buffers_are_checked_at_their_real_size() {
    let (rt, neff, images) = loaded();
    // Two IO buffers of core 0; the second moved one byte into the first. At one byte
    // each (the old checker's view) they would not overlap; at their real sizes they do.
    let io: Vec<usize> = images[0]
        .vars
        .iter()
        .enumerate()
        .filter(|(_, v)| v.kind == VarKind::Input && v.size > 1)
        .map(|(i, _)| i)
        .collect();
    let (a, b) = (io[0], io[1]);
    let (a_name, b_name) = (images[0].vars[a].name.clone(), images[0].vars[b].name.clone());
    let target = images[0].vars[a].pa + 1;
    reports(
        &rt,
        &neff,
        &images,
        |imgs| {
            for img in imgs.iter_mut() {
                for v in img.vars.iter_mut().filter(|v| v.name == b_name) {
                    v.pa = target;
                }
            }
        },
        &[&format!("io {a_name}"), "overlaps", &format!("io {b_name}")],
    );
    // An IO buffer whose real size runs past its allocation.
    reports(
        &rt,
        &neff,
        &images,
        |imgs| imgs[0].vars[a].pa += 1,
        &[&format!("sg00 var {a_name}: "), "is not inside a live allocation"],
    );
}

#[test]
fn a_view_outside_its_backing_var_is_reported() {
    let (rt, neff, images) = loaded();
    // def.json grows a view past its backing var; the image agrees with def.json.
    let (name, backing) = neff.subgraphs[0]
        .def
        .var
        .iter()
        .find_map(|(n, v)| {
            (v.var_type == VarType::Virtual).then(|| v.backing_variable.clone().map(|b| (n.clone(), b))).flatten()
        })
        .unwrap();
    let mut grown = neff.clone();
    let bsize = grown.subgraphs[0].def.var[&backing].size.unwrap();
    let v = grown.subgraphs[0].def.var.get_mut(&name).unwrap();
    v.size = Some(bsize + 64);
    let id = v.var_id as usize;
    let mut imgs = images.clone();
    imgs[0].vars[id].size = bsize + 64;
    let bad = check_load(rt.device(), &grown, &imgs);
    assert!(
        bad.iter().any(|l| l.contains(&format!("sg00 var {name}: "))
            && l.contains(&format!("is not inside its backing {backing}"))),
        "{bad:#?}"
    );
}

#[test]
fn pieces_outside_their_carve_out_and_a_wrong_carve_out_are_reported() {
    let (rt, neff, _) = loaded();
    let models = rt.models(HNn(1)).unwrap();
    assert_eq!(check_models(rt.device(), &neff, &models), Vec::<String>::new());
    // Core 0's stream placed in core 1's carve-out.
    let e = models[0].image.engines.iter().position(|s| s.records > 0).unwrap();
    let key = models[0].image.engines[e].engine.key();
    let elsewhere = models[1].carveout.pa;
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[0].image.engines[e].pa = elsewhere,
        &[&format!("sg00 {key} stream"), "is outside its core's carve-out"],
    );
    // A private weight moved into core 1's carve-out (inside a live allocation, wrong one).
    let w = models[0].image.vars.iter().position(|v| v.name == "w0").unwrap();
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[0].image.vars[w].pa = elsewhere,
        &["sg00 var w0", "is outside its core's carve-out"],
    );
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[2].carveout.size += 4096,
        &["sg02: carve-out", "is not a live allocation"],
    );
}

/// A device that lists one extra allocation overlapping a real one.
struct Overlapping<'a>(&'a SimDevice);

impl Device for Overlapping<'_> {
    fn num_tpbs(&self) -> u32 {
        self.0.num_tpbs()
    }
    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, lncsim_model::load::DeviceError> {
        self.0.mem_alloc(tpb, size, align)
    }
    fn mem_free(&self, pa: u64) -> Result<(), lncsim_model::load::DeviceError> {
        self.0.mem_free(pa)
    }
    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), lncsim_model::load::DeviceError> {
        self.0.copy_in(tpb, pa, data)
    }
    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, lncsim_model::load::DeviceError> {
        self.0.copy_out(pa, len)
    }
    fn live_allocations(&self) -> usize {
        self.0.live_allocations() + 1
    }
    fn allocations(&self) -> Vec<(u64, u64)> {
        let mut a = Device::allocations(self.0);
        let (pa, size) = a[0];
        a.push((pa + size / 2, size));
        a.sort_unstable();
        a
    }
}

#[test]
fn overlapping_live_allocations_are_reported() {
    let (rt, neff, images) = loaded();
    let bad = lncsim_model::load::checker::check_load(&Overlapping(rt.device()), &neff, &images);
    assert!(bad.iter().any(|l| l.starts_with("live allocations [") && l.ends_with(") overlap")), "{bad:#?}");
}

#[test]
fn the_real_neffs_tables_are_checked_member_by_member() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(path) = lncsim_model::testdata::require(root, "real-neff/matmul_small.neff") else { return };
    let bytes = std::fs::read(path).unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::default()).unwrap();
    let rt = Runtime::new(SimDevice::new(2, 2));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    assert_eq!(models[0].tables.len(), 6);
    assert_eq!(check_models(rt.device(), &neff, &models), Vec::<String>::new());
    let member = models[0].tables[0].member.clone();
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| {
            m[0].tables.remove(0);
        },
        &[&format!("sg00: table {member} was not staged")],
    );
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| {
            let t = m[0].tables[0].clone();
            m[0].tables.push(t);
        },
        &[&format!("table {member} staged 2 times")],
    );
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[0].tables[0].pa += 4,
        &[&format!("sg00: table {member} differs")],
    );
    let out = models[1].carveout.pa;
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[0].tables[0].pa = out,
        &[&format!("sg00 table {member}"), "is outside its core's carve-out"],
    );
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[1].tables[1].member = "sg01/ghost.bin".to_owned(),
        &["sg01: staged table sg01/ghost.bin is not one the NEFF names"],
    );
    rt.nrt_unload(&m).unwrap();
}

// Edges found untested by the mutation run of `load/checker.rs` (docs/mutants.md).

#[test]
fn a_var_below_every_allocation_is_reported() {
    let (rt, neff, images) = loaded();
    let lowest = Device::allocations(rt.device()).iter().map(|a| a.0).min().unwrap();
    assert!(lowest > 0, "the simulated device allocates above address 0");
    let w = images[0].vars.iter().position(|v| v.name == "w0").unwrap();
    reports(&rt, &neff, &images, |b| b[0].vars[w].pa = 0, &["sg00 var w0: ", "is not inside a live allocation"]);
}

#[test]
fn a_weight_has_its_declared_size_or_else_its_payloads() {
    let (rt, neff, images) = loaded();
    let w = images[0].vars.iter().position(|v| v.name == "w0").unwrap();
    let size = images[0].vars[w].size;
    assert!(size > 0);
    // No size in def.json: the payload's length is the size, and the clean image has it.
    let mut no_size = neff.clone();
    no_size.subgraphs[0].def.var.get_mut("w0").unwrap().size = None;
    assert_eq!(check_load(rt.device(), &no_size, &images), Vec::<String>::new());
    // A declared size past the payload: the image must have the declared size.
    let mut padded = neff.clone();
    padded.subgraphs[0].def.var.get_mut("w0").unwrap().size = Some(size + 8);
    let mut grown = images.clone();
    grown[0].vars[w].size = size + 8;
    let bad = check_load(rt.device(), &padded, &grown);
    assert!(!bad.iter().any(|l| l.contains("in def.json")), "{bad:#?}");
    let bad = check_load(rt.device(), &padded, &images);
    let want = format!("sg00 var w0: size {size} in the image, {} in def.json", size + 8);
    assert!(bad.contains(&want), "{bad:#?}");
}

#[test]
fn a_tmp_buf_over_a_weight_is_an_overlap() {
    let (rt, neff, images) = loaded();
    let w = images[0].vars.iter().position(|v| v.name == "w0").unwrap();
    let s = images[0].vars.iter().position(|v| v.kind == VarKind::Scratch && v.size > 0).unwrap();
    assert_eq!(neff.subgraphs[0].def.var[&images[0].vars[s].name].var_type, VarType::TmpBuf);
    let scratch = images[0].vars[s].name.clone();
    let at = images[0].vars[w].pa;
    reports(&rt, &neff, &images, |b| b[0].vars[s].pa = at, &[&format!("sg00 var {scratch} ["), "overlaps", "w0"]);
}

#[test]
fn a_zero_length_var_overlaps_nothing() {
    let (rt, neff, images) = loaded();
    let w = images[0].vars.iter().position(|v| v.name == "w0").unwrap();
    let s = images[0].vars.iter().position(|v| v.kind == VarKind::Scratch && v.size > 8).unwrap();
    let mut empty = neff.clone();
    empty.subgraphs[0].def.var.get_mut("w0").unwrap().size = Some(0);
    let mut imgs = images.clone();
    imgs[0].vars[w].size = 0;
    imgs[0].vars[w].pa = images[0].vars[s].pa + 8;
    let bad = check_load(rt.device(), &empty, &imgs);
    assert!(bad.iter().any(|l| l.contains("sg00 var w0: device bytes differ")), "the move is seen: {bad:#?}");
    assert!(!bad.iter().any(|l| l.contains("overlaps") && l.contains("var w0")), "{bad:#?}");
}

#[test]
fn a_view_that_ends_where_its_backing_ends_is_inside_it() {
    let (rt, neff, images) = loaded();
    let (name, backing, off) = neff.subgraphs[0]
        .def
        .var
        .iter()
        .find_map(|(n, v)| {
            let b = v.backing_variable.clone().filter(|_| v.var_type == VarType::Virtual)?;
            Some((n.clone(), b, v.backing_variable_off.unwrap_or(0)))
        })
        .unwrap();
    let mut exact = neff.clone();
    let bsize = exact.subgraphs[0].def.var[&backing].size.unwrap();
    let v = exact.subgraphs[0].def.var.get_mut(&name).unwrap();
    v.size = Some(bsize - off);
    let id = v.var_id as usize;
    let mut imgs = images.clone();
    imgs[0].vars[id].size = bsize - off;
    let bad = check_load(rt.device(), &exact, &imgs);
    assert!(!bad.iter().any(|l| l.contains("is not inside its backing")), "{bad:#?}");
    // One byte more is outside.
    exact.subgraphs[0].def.var.get_mut(&name).unwrap().size = Some(bsize - off + 1);
    imgs[0].vars[id].size = bsize - off + 1;
    let bad = check_load(rt.device(), &exact, &imgs);
    assert!(bad.iter().any(|l| l.contains(&format!("sg00 var {name}: ")) && l.contains("is not inside its backing")));
}

#[test]
fn an_operand_that_starts_before_its_var_is_reported() {
    let (rt, neff, images) = loaded();
    let (e, ip, slot, v) = images[0]
        .engines
        .iter()
        .enumerate()
        .find_map(|(e, s)| {
            s.operand_vars
                .iter()
                .enumerate()
                .find_map(|(ip, ops)| ops.iter().enumerate().find_map(|(slot, v)| v.map(|v| (e, ip, slot, v as usize))))
        })
        .unwrap();
    let s = &images[0].engines[e];
    let r = Record::decode(&rt.device().copy_out(s.pa + ip as u64 * RECORD_SIZE as u64, 64).unwrap()).unwrap();
    let name = images[0].vars[v].name.clone();
    // The var moved one byte past the operand's start; the operand still ends inside it.
    let to = r.ops[slot].pa() + 1;
    reports(
        &rt,
        &neff,
        &images,
        |b| b[0].vars[v].pa = to,
        &[&format!("sg00 {} ip {ip} slot {slot}: ", s.engine.key()), &format!("is not inside {name}")],
    );
}

#[test]
fn a_shared_view_is_one_backed_by_a_vnc_shared_tmp_buf() {
    let (rt, neff, images) = loaded();
    // Core c's view `<t>_in<c>` of another core's `t`, and the shared tmp-buf backing it.
    let (c, v, backing) = images
        .iter()
        .enumerate()
        .find_map(|(c, img)| {
            img.vars.iter().enumerate().find_map(|(i, v)| {
                let t = v.name.strip_suffix(&format!("_in{c}"))?;
                let b = neff.subgraphs[c].def.var[&v.name].backing_variable.clone()?;
                images.iter().any(|o| o.core != img.core && o.vars.iter().any(|x| x.name == t)).then_some((c, i, b))
            })
        })
        .unwrap();
    let view = images[c].vars[v].name.clone();
    let mut moved = images.clone();
    moved[c].vars[v].pa += 64;
    assert!(check_load(rt.device(), &neff, &moved).iter().any(|l| l.contains(&format!("sg{c:02} {view} at "))));
    // Once the backing is a private tmp-buf, the view is the core's own: no cross-core rule.
    let mut private = neff.clone();
    private.subgraphs[c].def.var.get_mut(&backing).unwrap().extra.remove("vnc_shared");
    let bad = check_load(rt.device(), &private, &moved);
    assert!(!bad.iter().any(|l| l.contains(&format!("sg{c:02} {view} at "))), "{bad:#?}");
}

/// Rewrites device record `ip` of `s` by `edit`, asserts a line has every
/// needle, then puts the record back and asserts the load is clean again.
fn reported_until_restored(
    (rt, neff, images): (&Runtime<SimDevice>, &Neff, &[CoreImage]),
    s: &StreamImage,
    ip: u64,
    edit: impl FnOnce(&mut Record),
    needles: &[&str],
) {
    let (pa, orig) = rewrite(rt, s, ip, edit);
    let bad = check_load(rt.device(), neff, images);
    assert!(bad.iter().any(|l| needles.iter().all(|n| l.contains(n))), "no line with {needles:?} in {bad:#?}");
    rt.device().write(pa, &orig).unwrap();
    assert_eq!(check_load(rt.device(), neff, images), Vec::<String>::new());
}

#[test]
fn relocated_records_changed_field_by_field_are_reported() {
    let (rt, neff, images) = loaded();
    let load = (&rt, &neff, &images[..]);
    let (c, s, ip) = find(&rt, &images, |r| r.opcode == Opcode::Relu);
    let at = format!("sg{c:02} {} ip ", s.engine.key());
    // One field at a time: the operand's address (its length kept), imm, a wait, a flag.
    let moved = |r: &mut Record| r.ops[0] = Operand::physical(r.ops[0].pa() + 64, r.ops[0].c);
    reported_until_restored(load, &s, ip, moved, &[&at, " slot 0: ", "is not var "]);
    reported_until_restored(load, &s, ip, |r| r.imm ^= 1, &[&at, ": Relu became Relu"]);
    let waits = |r: &mut Record| {
        r.waits[0] = match r.waits[0] {
            Some(_) => None,
            None => Some(Wait { sem: 1, value: 1 }),
        }
    };
    reported_until_restored(load, &s, ip, waits, &[&at, ": Relu became Relu"]);
    reported_until_restored(load, &s, ip, |r| r.flags ^= FLAG_COLLECTIVE, &[&at, ": Relu became Relu"]);
    // A pseudo-add's expansion record that lost its relocated flag.
    let models = rt.models(HNn(1)).unwrap();
    let (sg, p) = models.iter().find_map(|m| m.kbin_patch_info.first().map(|p| (m.sg as usize, *p))).unwrap();
    let s = images[sg].engines[p.engine.index()].clone();
    let needle = format!("sg{sg:02} {} ip {}: expansion record 1 is Add flags", s.engine.key(), p.neff_ip);
    reported_until_restored(load, &s, p.device_ip, |r| r.flags &= !FLAG_RELOCATED, &[&needle]);
}

#[test]
fn a_neff_record_already_flagged_relocated_keeps_the_flag() {
    let (rt, mut neff, images) = loaded();
    // The first compute record of a stream before any pseudo-add: its device index is its NEFF index.
    let (sg, member, ip) = neff
        .subgraphs
        .iter()
        .enumerate()
        .flat_map(|(sg, x)| x.engines.iter().map(move |e| (sg, e.instr_member.clone())))
        .find_map(|(sg, member)| {
            let file = neff.members.get(&member)?;
            let records: Vec<Record> = file.chunks(RECORD_SIZE).map_while(|c| Record::decode(c).ok()).collect();
            let upto = records.iter().position(|r| r.opcode == Opcode::PseudoAddN).unwrap_or(records.len());
            let ip = records[..upto].iter().position(|r| matches!(r.opcode, Opcode::Add | Opcode::Relu))?;
            Some((sg, member, ip))
        })
        .unwrap();
    let mut file = neff.members.get(&member).unwrap().to_vec();
    let at = ip * RECORD_SIZE;
    let mut r = Record::decode(&file[at..at + RECORD_SIZE]).unwrap();
    assert_eq!(r.flags & FLAG_RELOCATED, 0);
    r.flags |= FLAG_RELOCATED;
    file[at..at + RECORD_SIZE].copy_from_slice(&r.encode());
    assert!(neff.members.set(&member, file));
    // The loader ORs the flag in, so the device record (already flagged) is what this NEFF wants.
    assert_eq!(check_load(rt.device(), &neff, &images), Vec::<String>::new(), "sg{sg:02} ip {ip}");
}

/// Review finding 2 (t1_dup_table.py): a table named by two engines of one
/// subgraph is staged once (it was staged once per naming engine, which the
/// checker reports as "staged 2 times"); the load is READY and passes.
#[test]
fn a_table_named_by_two_engines_is_staged_once() {
    let b = pack_generated(&GenConfig::new(3, 2, SizeClass::Small)).unwrap();
    let parsed = Neff::parse(&b, &ReadOptions::default()).unwrap();
    let jsons: Vec<String> = parsed.subgraphs[0].engines.iter().filter_map(|e| e.json_member.clone()).take(2).collect();
    assert_eq!(jsons.len(), 2, "sg00 has two engine descriptions");
    let table: Vec<u8> = (0..1000u32).map(|i| if i < 900 { (i % 251) as u8 + 1 } else { 0 }).collect();
    let bytes = lncsim_model::load::fuzz::repack(&b, |m, _| {
        for j in &jsons {
            let mut v: serde_json::Value = serde_json::from_slice(m.get(j).unwrap()).unwrap();
            v["extra_table"] = serde_json::json!("shared_tbl.bin");
            assert!(m.set(j, serde_json::to_vec(&v).unwrap()));
        }
        m.insert("sg00/shared_tbl.bin".to_owned(), table.clone()).unwrap();
    })
    .unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::default()).unwrap();
    let rt = Runtime::new(SimDevice::new(2, 2));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    let staged: Vec<_> = models[0].tables.iter().filter(|t| t.member == "sg00/shared_tbl.bin").collect();
    assert_eq!(staged.len(), 1, "{:?}", models[0].tables);
    assert_eq!(rt.device().copy_out(staged[0].pa, staged[0].len).unwrap(), table);
    assert_eq!(check_models(rt.device(), &neff, &models), Vec::<String>::new());
    rt.nrt_unload(&m).unwrap();
}

/// A NEFF of one subgraph per def.json in `defs` (no engines, no IO), as the
/// review's `mini.py` builds them.
fn mini(defs: &[serde_json::Value]) -> Vec<u8> {
    let mut t = lncsim_model::neff::MemberTable::new();
    let nodes = serde_json::json!({"nodes": [
        {"op": "tvm_op", "name": "k", "attrs": {"func_name": "__kelf", "kelf": "kelf-0.json"}, "inputs": [], "output_names": []}
    ]});
    t.insert("neff.json".into(), serde_json::to_vec(&nodes).unwrap()).unwrap();
    let graphs: Vec<_> = (0..defs.len())
        .map(|i| serde_json::json!({"definition": format!("sg{i:02}/def.json"), "name": format!("sg{i:02}")}))
        .collect();
    let kelf = serde_json::json!({"graphs": graphs, "version": "0.5", "target": "cayman"});
    t.insert("kelf-0.json".into(), serde_json::to_vec(&kelf).unwrap()).unwrap();
    for (i, d) in defs.iter().enumerate() {
        t.insert(format!("sg{i:02}/def.json"), serde_json::to_vec(d).unwrap()).unwrap();
    }
    lncsim_model::neff::NeffWriter::new("mini", defs.len() as u32).write(&t).unwrap()
}

/// `bytes` loaded READY on a fresh device: the runtime, the parse and the models.
fn load_ready(bytes: &[u8], cores: u32) -> (Runtime<SimDevice>, Neff, Vec<Model>) {
    let neff = Neff::parse(bytes, &ReadOptions::default()).unwrap();
    let rt = Runtime::new(SimDevice::new(cores, cores));
    let m = rt.nrt_load(bytes, -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    (rt, neff, models)
}

/// Review finding 3(a) (t5_implicit_views_overlap.py): backing-less
/// `virtual` vars are views of the core's implicit scratchpad and may overlap
/// each other (the loader places them so); the checker judges the scratchpad
/// as one private piece, and still reports a view off the scratchpad's base
/// and a scratchpad over another piece.
#[test]
fn overlapping_views_of_the_implicit_scratchpad_are_one_piece() {
    let def = serde_json::json!({"var": {
        "a": {"type": "virtual", "size": 256, "backing_variable_off": 0, "var_id": 0},
        "b": {"type": "virtual", "size": 256, "backing_variable_off": 128, "var_id": 1},
        "t": {"type": "tmp-buf", "size": 64, "var_id": 2},
    }, "dma_queue": {}});
    let (rt, neff, models) = load_ready(&mini(&[def]), 1);
    assert_eq!(check_models(rt.device(), &neff, &models), Vec::<String>::new());
    let img = &models[0].image;
    let (a, t) = (img.vars[0].pa, img.vars[2].pa);
    assert_eq!(img.vars[1].pa, a + 128);
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| m[0].image.vars[1].pa += 8,
        &["sg00 var b: ", &format!("is not the implicit scratchpad's base {a:#x} + 128")],
    );
    // The scratchpad moved over the tmp-buf: one piece overlaps the other.
    reports_models(
        rt.device(),
        &neff,
        &models,
        |m| {
            m[0].image.vars[0].pa = t;
            m[0].image.vars[1].pa = t + 128;
        },
        &["sg00 implicit scratchpad", "overlaps", "sg00 var t"],
    );
}

/// Review finding 3(b) (t4_zero_view_at_end.py): a zero-size view at the very
/// end of its backing tmp-buf, the last piece of the carve-out, is inside its
/// allocation for the checker as for the loader; one byte further is not.
#[test]
fn a_zero_size_view_at_the_end_of_an_allocation_is_inside_it() {
    let def = serde_json::json!({"var": {
        "t": {"type": "tmp-buf", "size": 4096, "var_id": 0},
        "v": {"type": "virtual", "backing_variable": "t", "backing_variable_off": 4096, "size": 0, "var_id": 1},
    }, "dma_queue": {}});
    let (rt, neff, models) = load_ready(&mini(&[def]), 1);
    let c = models[0].carveout;
    assert_eq!(models[0].image.vars[1].pa, c.pa + c.size, "the view sits at the carve-out's end");
    assert_eq!(check_models(rt.device(), &neff, &models), Vec::<String>::new());
    let lines = |pa: u64| {
        let mut m = models.clone();
        m[0].image.vars[1].pa = pa;
        check_models(rt.device(), &neff, &m)
    };
    let past = lines(c.pa + c.size + 1);
    assert!(
        past.iter().any(|l| l.starts_with("sg00 var v: ") && l.ends_with("is not inside a live allocation")),
        "{past:#?}"
    );
}

/// Review finding 4 (t6_isa_from_loader.py): the checker derives the ISA
/// from the NEFF's stream bytes, not from the loader's image (nor from
/// `info.json`, which is what the loader decides by): an image whose ISA was
/// flipped is reported. An lncsim NEFF whose `tool_version` was changed would
/// stage its streams opaque, unrelocated: the loader refuses it (the nrt_load
/// fuzz target found it reaching READY), and leaves nothing behind.
#[test]
fn the_isa_is_derived_from_the_streams_not_taken_from_the_image() {
    let b = pack_generated(&GenConfig::new(3, 2, SizeClass::Small)).unwrap();
    let retooled = lncsim_model::load::fuzz::repack(&b, |m, _| {
        let mut info: serde_json::Value = serde_json::from_slice(m.get("info.json").unwrap()).unwrap();
        info["tool_version"] = serde_json::json!("neuronx-cc 2.23");
        assert!(m.set("info.json", serde_json::to_vec(&info).unwrap()));
    })
    .unwrap();
    let rt = Runtime::new(SimDevice::new(2, 2));
    let err = rt.nrt_load(&retooled, -1, -1).unwrap_err().to_string();
    assert!(err.contains("names another tool, but all") && err.contains("refusing to stage them unrelocated"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    assert_eq!(rt.device().live_allocations(), 0);
    // The clean load, with one image's ISA flipped.
    let (rt, neff, images) = loaded();
    reports(
        &rt,
        &neff,
        &images,
        |i| i[1].isa = Isa::Opaque,
        &["sg01: the image says the Opaque ISA, but the NEFF's streams are Lncsim"],
    );
    // The real NEFF's streams are not lncsim records: an image claiming they are is reported.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(path) = lncsim_model::testdata::require(root, "real-neff/matmul_small.neff") else { return };
    let (rt, neff, models) = load_ready(&std::fs::read(path).unwrap(), 2);
    assert_eq!(check_models(rt.device(), &neff, &models), Vec::<String>::new());
    let images: Vec<CoreImage> = models.into_iter().map(|m| m.image).collect();
    reports(
        &rt,
        &neff,
        &images,
        |i| i[0].isa = Isa::Lncsim,
        &["sg00: the image says the Lncsim ISA, but the NEFF's streams are Opaque"],
    );
}

/// A device that copies one byte short whenever a copy is one of `lens` long
/// (a planted short copy), and is otherwise the simulated device.
struct ShortCopy<'a>(&'a SimDevice, &'a [usize]);

impl Device for ShortCopy<'_> {
    fn num_tpbs(&self) -> u32 {
        self.0.num_tpbs()
    }
    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, lncsim_model::load::DeviceError> {
        self.0.mem_alloc(tpb, size, align)
    }
    fn mem_free(&self, pa: u64) -> Result<(), lncsim_model::load::DeviceError> {
        self.0.mem_free(pa)
    }
    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), lncsim_model::load::DeviceError> {
        let short = if self.1.contains(&data.len()) { &data[..data.len() - 1] } else { data };
        self.0.copy_in(tpb, pa, short)
    }
    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, lncsim_model::load::DeviceError> {
        self.0.copy_out(pa, len)
    }
    fn live_allocations(&self) -> usize {
        self.0.live_allocations()
    }
    fn allocations(&self) -> Vec<(u64, u64)> {
        Device::allocations(self.0)
    }
    fn lnc_size(&self) -> u32 {
        self.0.lnc_size()
    }
}

/// Review finding 5: device memory is not zeroed for a new allocation (the
/// simulated HBM reads unwritten bytes as a poison pattern), so a copy one
/// byte short of a table or a weight whose last bytes are zeros is reported;
/// on zeroed memory the missing zero read back as the expected one.
#[test]
fn a_short_copy_of_bytes_ending_in_zeros_is_reported() {
    let b = pack_generated(&GenConfig::new(3, 1, SizeClass::Small)).unwrap();
    let parsed = Neff::parse(&b, &ReadOptions::default()).unwrap();
    let json = parsed.subgraphs[0].engines.iter().find_map(|e| e.json_member.clone()).unwrap();
    // A table of 1000 bytes and a weight of 776, each ending in 100 zeros.
    let tail = |n: usize| -> Vec<u8> { (0..n).map(|i| if i + 100 < n { (i % 250) as u8 + 1 } else { 0 }).collect() };
    let bytes = lncsim_model::load::fuzz::repack(&b, |m, _| {
        let mut v: serde_json::Value = serde_json::from_slice(m.get(&json).unwrap()).unwrap();
        v["zero_tail_table"] = serde_json::json!("zt.bin");
        assert!(m.set(&json, serde_json::to_vec(&v).unwrap()));
        let mut d: serde_json::Value = serde_json::from_slice(m.get("sg00/def.json").unwrap()).unwrap();
        let id = d["var"].as_object().unwrap().values().map(|v| v["var_id"].as_u64().unwrap()).max().unwrap() + 1;
        d["var"]["w_tail"] = serde_json::json!({"type": "file", "file_name": "w_tail.bin", "size": 776, "var_id": id});
        assert!(m.set("sg00/def.json", serde_json::to_vec(&d).unwrap()));
        m.insert("sg00/zt.bin".to_owned(), tail(1000)).unwrap();
        m.insert("sg00/w_tail.bin".to_owned(), tail(776)).unwrap();
    })
    .unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::default()).unwrap();
    let sim = SimDevice::new(1, 1);
    let dev = ShortCopy(&sim, &[1000, 776]);
    let rt = Runtime::new(&dev);
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    let bad = lncsim_model::load::checker::check_models(&dev, &neff, &models);
    assert!(bad.iter().any(|l| l.starts_with("sg00: table sg00/zt.bin differs from the NEFF's")), "{bad:#?}");
    assert!(bad.iter().any(|l| l == "sg00 var w_tail: device bytes differ from w_tail.bin"), "{bad:#?}");
    assert_eq!(bad.len(), 2, "{bad:#?}");
    // The same load copied whole passes.
    let whole = Runtime::new(SimDevice::new(1, 1));
    let m = whole.nrt_load(&bytes, -1, -1).unwrap();
    assert_eq!(check_models(whole.device(), &neff, &whole.models(m.h_nn).unwrap()), Vec::<String>::new());
}

/// Review finding 6: the image holds exactly the engines the NEFF declares,
/// each once (the checker derives them from the NEFF; it used to judge only
/// the streams the image happened to have).
#[test]
fn a_missing_duplicated_or_undeclared_engine_stream_is_reported() {
    let (rt, neff, images) = loaded();
    // A declared engine with records on sg00.
    let declared = &neff.subgraphs[0].engines;
    let k =
        declared.iter().position(|d| images[0].engines.iter().any(|s| s.engine == d.engine && s.records > 0)).unwrap();
    let first = declared[k].engine;
    let at = images[0].engines.iter().position(|s| s.engine == first).unwrap();
    reports(
        &rt,
        &neff,
        &images,
        |i| {
            i[0].engines.remove(at);
        },
        &[&format!("sg00 {}: the NEFF's stream {} is missing from the image", first.key(), declared[k].instr_member)],
    );
    reports(
        &rt,
        &neff,
        &images,
        |i| {
            let s = i[0].engines[at].clone();
            i[0].engines.push(s);
        },
        &[&format!("sg00 {}: the image has 2 streams for the engine", first.key())],
    );
    // An engine the NEFF does not declare, holding records.
    let mut undeclared = neff.clone();
    undeclared.subgraphs[0].engines.remove(k);
    let bad = check_load(rt.device(), &undeclared, &images);
    let want = format!("sg00 {}: {} records and", first.key(), images[0].engines[at].records);
    assert!(bad.iter().any(|l| l.starts_with(&want) && l.contains("an engine the NEFF does not declare")), "{bad:#?}");
}

/// A 4-core generated NEFF loaded clean with its registry value.
fn registered() -> (Runtime<SimDevice>, Neff, lncsim_model::load::DlrModel, Vec<Model>) {
    let bytes = pack_generated(&GenConfig::new(3, 4, SizeClass::Small)).unwrap();
    let (rt, neff, models) = load_ready(&bytes, 4);
    let h = rt.registered()[0];
    let dlr = rt.dlr_model(h).unwrap();
    let check = lncsim_model::load::checker_registered::check_registered;
    assert_eq!(check(rt.device(), &neff, &dlr, &models), Vec::<String>::new(), "the clean load must pass");
    assert!(!dlr.input_info.is_empty() && !dlr.output_info.is_empty() && dlr.kelf_model.shared.is_some());
    (rt, neff, dlr, models)
}

/// `check_registered`'s lines for the registry value and models changed by `edit`; one contains every needle.
fn reports_registered(
    edit: impl FnOnce(&mut lncsim_model::load::DlrModel, &mut Vec<Model>, &SimDevice),
    needles: &[&str],
) {
    let (rt, neff, mut dlr, mut models) = registered();
    edit(&mut dlr, &mut models, rt.device());
    let bad = lncsim_model::load::checker_registered::check_registered(rt.device(), &neff, &dlr, &models);
    assert!(bad.iter().any(|l| needles.iter().all(|n| l.contains(n))), "no line with {needles:?} in {bad:#?}");
}

/// Review finding 7: what the load hands out beyond the layout is judged:
/// the IO buffers and maps, the shared region, the bridge, and each image's
/// queues, semaphores and barrier groups.
#[test]
fn the_io_maps_shared_region_bridge_queues_semaphores_and_barriers_are_checked() {
    let first = |m: &std::collections::BTreeMap<String, lncsim_model::load::Region>| m.keys().next().unwrap().clone();
    reports_registered(
        |d, _, _| {
            let n = first(&d.input_info);
            d.input_info.remove(&n);
        },
        &["input_info: neff.json's input", "is missing"],
    );
    reports_registered(
        |d, _, _| {
            let n = first(&d.output_info);
            d.output_info.get_mut(&n).unwrap().pa += 64;
        },
        &["output_info ", "is not its IO buffer"],
    );
    reports_registered(
        |d, _, _| {
            let r = *d.output_info.values().next().unwrap();
            d.input_info.insert("ghost".into(), r);
        },
        &["input_info: ghost is not a input neff.json names"],
    );
    reports_registered(
        |d, _, _| {
            let n = first(&d.input_info);
            d.kelf_model.io.remove(&n);
        },
        &["but the load has no buffer for it"],
    );
    reports_registered(
        |d, _, _| {
            d.kelf_model.io.values_mut().next().unwrap().region.size += 1;
        },
        &["io ", "declared"],
    );
    reports_registered(
        |d, _, _| {
            d.kelf_model.io.values_mut().next().unwrap().region.pa += 4096;
        },
        &["is not a live allocation"],
    );
    reports_registered(|d, _, _| d.kelf_model.shared.as_mut().unwrap().size += 64, &["the shared region is"]);
    reports_registered(|d, _, _| d.kelf_model.shared = None, &["no shared region, but a vnc_shared tmp-buf"]);
    reports_registered(|d, _, _| d.kelf_model.tpbs.reverse(), &["bridge: 4 subgraphs on tpbs [3, 2, 1, 0]"]);
    reports_registered(|d, _, _| d.kelf_model.h_model.0 += 1, &["sg00: H_MODEL"]);
    reports_registered(|d, _, _| d.state = lncsim_model::load::DlrState::INIT, &["state 0 is not READY"]);
    reports_registered(|_, m, _| m[1].image.semaphores += 1, &["sg01: ", "semaphores, def.json says"]);
    reports_registered(
        |_, m, _| {
            m[2].image.barrier_groups.insert(99, vec![2]);
        },
        &["sg02: barrier groups"],
    );
    reports_registered(|_, m, _| m[0].image.queues.reverse(), &["sg00: queues", "def.json's order is"]);
    reports_registered(|_, m, _| m[0].image.queues.push("q_extra".into()), &["sg00: queues"]);
}

/// Review finding 8: at READY every live allocation is a carve-out, an IO
/// buffer or the shared region; a planted extra allocation (a double
/// allocation the loader forgot) is a leak.
#[test]
fn a_live_allocation_the_load_does_not_own_is_a_leak() {
    let mut planted = 0;
    reports_registered(
        |_, _, dev| planted = dev.mem_alloc(1, 4096, 4096).unwrap(),
        &["belongs to no carve-out, IO buffer or the shared region (leaked)"],
    );
    assert!(planted > 0);
    // A second allocation for the same carve-out, with the model pointing at the second.
    reports_registered(
        |_, m, dev| {
            let c = m[0].carveout;
            m[0].carveout.pa = dev.mem_alloc(0, c.size, 4096).unwrap();
        },
        &["leaked"],
    );
}
