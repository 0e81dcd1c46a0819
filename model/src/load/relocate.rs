//! S5 relocation, the two sub-layers (seed 002, "Relocation is two
//! sub-layers, run at stage time"). Pure functions: the caller supplies the
//! var-id -> physical-address resolution, so the same code runs at S3 (to
//! validate and size the stream, with the compiler-relative layout) and at
//! S4 (with the device addresses `dmem_alloc` returned).
//!
//! (a) [`translate_pseudo_instrs`]: every memory operand `(var_id, offset,
//! len)` becomes `(pa, len)` with `pa = var_pa + offset` (the seed's
//! `mem_ref_to_addr`), and the record gets `FLAG_RELOCATED`. A `PseudoAddN`
//! and its `Ext` records expand into a chain of binary `Add`s; when the
//! expansion changes the slot count, a [`KbinPatch`] records the instruction-IP
//! delta (`kbin_patch_append`), which [`kbin_patch_device_ip_to_neff_ip`]
//! inverts. Patches are IP deltas, not address relocations (the seed's
//! CORRECTION). Our encoding only ever grows (an `Ext` carries up to three
//! sources, each becoming one `Add`), so every patch is an INSERT; the DELETE
//! kind exists for completeness and is never produced.
//!
//! (b) [`imcpy_load_vring`]: each relative DMA descriptor `{queue, from +
//! from_off, to + to_off, size}` becomes an absolute [`DeviceDescriptor`].

use crate::codegen::record::{
    DeviceDescriptor, FLAG_COLLECTIVE, FLAG_RELOCATED, FLAG_SIGNAL, MAX_WAITS, Opcode, Operand, Record,
};
use crate::ir::Engine;
use crate::marks;

/// INSERT (a pseudo-instruction grew) or DELETE (it shrank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PatchKind {
    /// The device stream has more slots than the NEFF stream here.
    Insert,
    /// The device stream has fewer slots than the NEFF stream here.
    Delete,
}

/// One `kbin_patch_info` entry: where a pseudo-instruction's expansion changed the slot count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KbinPatch {
    /// The engine whose stream it is.
    pub engine: Engine,
    /// IP (record index) of the pseudo-instruction in the NEFF stream.
    pub neff_ip: u64,
    /// IP of its first expanded record in the device stream.
    pub device_ip: u64,
    /// Slots it took in the NEFF stream (the pseudo plus its `Ext`s).
    pub slots: u64,
    /// Records it became in the device stream.
    pub expanded: u64,
}

impl KbinPatch {
    /// INSERT or DELETE.
    pub fn kind(&self) -> PatchKind {
        if self.expanded > self.slots { PatchKind::Insert } else { PatchKind::Delete }
    }

    /// The absolute IP delta.
    pub fn delta(&self) -> u64 {
        self.expanded.abs_diff(self.slots)
    }
}

/// A relocated stream and its patches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translated {
    /// The device records.
    pub records: Vec<Record>,
    /// For each device record, the var_id each operand slot named before
    /// relocation (`None` for non-memory slots): the simulator's debug info.
    pub operand_vars: Vec<[Option<u32>; 3]>,
    /// The IP deltas, in stream order.
    pub patches: Vec<KbinPatch>,
}

/// How many operand slots of a record are memory operands.
pub fn memory_operands(op: Opcode) -> usize {
    match op {
        Opcode::Add | Opcode::Mul | Opcode::MatMul | Opcode::PseudoAddN => 3,
        Opcode::Relu | Opcode::Reduce => 2,
        _ => 0,
    }
}

/// Resolves one compiler-form operand to its physical address, or says why not.
pub type Resolve<'a> = dyn FnMut(Operand) -> Result<u64, String> + 'a;

fn physical(op: Operand, slot: usize, resolve: &mut Resolve<'_>) -> Result<Operand, String> {
    let pa = resolve(op).map_err(|e| format!("operand {slot}: {e}"))?;
    Ok(Operand::physical(pa, op.c))
}

/// Sub-layer (a) over one engine stream (the seed's `translate_pseudo_instrs_partial_v2`).
/// Errors name the NEFF IP of the bad record.
pub fn translate_pseudo_instrs(
    engine: Engine,
    records: &[Record],
    resolve: &mut Resolve<'_>,
) -> Result<Translated, String> {
    let mut out = Vec::with_capacity(records.len());
    let mut vars = Vec::with_capacity(records.len());
    let mut patches = Vec::new();
    walk(engine, records, resolve, &mut patches, |r, v| {
        out.push(r);
        vars.push(v);
    })?;
    debug_assert!(out.iter().all(|r| r.waits.iter().flatten().count() <= MAX_WAITS));
    Ok(Translated { records: out, operand_vars: vars, patches })
}

/// A stream relocated straight into its device bytes (no [`Record`] vector between).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The device records, encoded, in order.
    pub bytes: Vec<u8>,
    /// As [`Translated::operand_vars`].
    pub operand_vars: Vec<[Option<u32>; 3]>,
    /// The IP deltas, in stream order.
    pub patches: Vec<KbinPatch>,
    /// Device records with `FLAG_RELOCATED` set.
    pub relocated: u64,
}

/// [`translate_pseudo_instrs`], each device record encoded as it is made:
/// the same records, errors and patches, without holding the device stream
/// twice. O(n) in records.
pub fn translate_pseudo_instrs_encoded(
    engine: Engine,
    records: &[Record],
    resolve: &mut Resolve<'_>,
) -> Result<Encoded, String> {
    let mut bytes = Vec::with_capacity(records.len().saturating_mul(crate::codegen::record::RECORD_SIZE));
    let mut vars = Vec::with_capacity(records.len());
    let mut patches = Vec::new();
    let mut relocated = 0u64;
    walk(engine, records, resolve, &mut patches, |r, v| {
        relocated += u64::from(r.flags & FLAG_RELOCATED != 0);
        bytes.extend_from_slice(&r.encode());
        vars.push(v);
    })?;
    Ok(Encoded { bytes, operand_vars: vars, patches, relocated })
}

/// Sub-layer (a) as a check only: the device record count of one engine
/// stream, with the errors of [`translate_pseudo_instrs`], without building
/// the device stream (the S3 validation, which drops it). O(n) in records,
/// no allocation but the patches.
pub fn count_pseudo_instrs(engine: Engine, records: &[Record], resolve: &mut Resolve<'_>) -> Result<u64, String> {
    let mut patches = Vec::new();
    walk(engine, records, resolve, &mut patches, |_, _| {})
}

/// The walk of sub-layer (a): hands every device record and its operand
/// vars to `emit`, appends the patches, and returns the device record count.
fn walk(
    engine: Engine,
    records: &[Record],
    resolve: &mut Resolve<'_>,
    patches: &mut Vec<KbinPatch>,
    mut emit: impl FnMut(Record, [Option<u32>; 3]),
) -> Result<u64, String> {
    let mut emitted = 0u64;
    let mut ip = 0usize;
    while ip < records.len() {
        let r = records[ip];
        let at = |e: String| format!("record {ip}: {e}");
        match r.opcode {
            Opcode::Ext => return Err(at("Ext record without a preceding PseudoAddN".into())),
            Opcode::PseudoAddN => {
                let exts = r.imm as usize;
                let mut srcs = vec![r.ops[1], r.ops[2]];
                for k in 1..=exts {
                    let e =
                        records.get(ip + k).ok_or_else(|| at(format!("PseudoAddN announces {exts} Ext records")))?;
                    if e.opcode != Opcode::Ext || !(1..=3).contains(&e.imm) {
                        return Err(at(format!("record {} is not an Ext with 1..=3 sources", ip + k)));
                    }
                    srcs.extend_from_slice(&e.ops[..e.imm as usize]);
                }
                let dst = physical(r.ops[0], 0, resolve).map_err(at)?;
                let device_ip = emitted;
                let n = srcs.len();
                for (k, pair) in (1..n).enumerate() {
                    let mut add = Record::new(Opcode::Add, r.debug_id);
                    add.flags = FLAG_RELOCATED;
                    let (lhs, lhs_var) = if k == 0 {
                        (physical(srcs[0], 1, resolve).map_err(at)?, srcs[0].a)
                    } else {
                        (dst, r.ops[0].a)
                    };
                    add.ops = [dst, lhs, physical(srcs[pair], pair + 1, resolve).map_err(at)?];
                    let vars = [Some(r.ops[0].a), Some(lhs_var), Some(srcs[pair].a)];
                    if k == 0 {
                        add.waits = r.waits;
                    }
                    if pair == n - 1 {
                        add.flags |= r.flags & (FLAG_SIGNAL | FLAG_COLLECTIVE);
                        add.signal = r.signal;
                    }
                    emit(add, vars);
                    emitted += 1;
                }
                marks::hit("load.s5.pseudo_expanded");
                let (slots, expanded) = (1 + exts as u64, (n - 1) as u64);
                if slots != expanded {
                    marks::hit("load.s5.kbin_patch_append");
                    patches.push(KbinPatch { engine, neff_ip: ip as u64, device_ip, slots, expanded });
                }
                ip += 1 + exts;
            }
            op => {
                let mut d = r;
                let n = memory_operands(op);
                let mut v = [None; 3];
                for (slot, (dst, var)) in d.ops.iter_mut().zip(v.iter_mut()).enumerate().take(n) {
                    *dst = physical(r.ops[slot], slot, resolve).map_err(at)?;
                    *var = Some(r.ops[slot].a);
                }
                if n > 0 {
                    d.flags |= FLAG_RELOCATED;
                }
                emit(d, v);
                emitted += 1;
                ip += 1;
            }
        }
    }
    Ok(emitted)
}

/// `kbin_patch_device_ip_to_neff_ip`: the NEFF IP of a device IP (an IP
/// inside an expansion maps to its pseudo-instruction). `patches` are one
/// engine's, in stream order. Saturating: no IP wraps. O(patches).
pub fn kbin_patch_device_ip_to_neff_ip(patches: &[KbinPatch], device_ip: u64) -> u64 {
    let (mut grown, mut shrunk) = (0u64, 0u64);
    for p in patches {
        if device_ip < p.device_ip {
            break;
        }
        if device_ip < p.device_ip.saturating_add(p.expanded) {
            return p.neff_ip;
        }
        grown = grown.saturating_add(p.expanded.saturating_sub(p.slots));
        shrunk = shrunk.saturating_add(p.slots.saturating_sub(p.expanded));
    }
    device_ip.saturating_add(shrunk).saturating_sub(grown)
}

/// One relative DMA descriptor, its variables already resolved to var_ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelativeDescriptor {
    /// Queue index on its core.
    pub queue: u32,
    /// Source var_id.
    pub from: u32,
    /// Byte offset in the source.
    pub from_off: u64,
    /// Destination var_id.
    pub to: u32,
    /// Byte offset in the destination.
    pub to_off: u64,
    /// Bytes to move.
    pub size: u64,
}

/// Sub-layer (b) (the seed's `imcpy_load_vring`): relative descriptors to
/// absolute ones; `var_pa` gives a var's base address.
pub fn imcpy_load_vring(
    descs: &[RelativeDescriptor],
    var_pa: &mut dyn FnMut(u32) -> Result<u64, String>,
) -> Result<Vec<DeviceDescriptor>, String> {
    descs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let at = |e: String| format!("dma[{i}]: {e}");
            let src = var_pa(d.from).map_err(at)?.checked_add(d.from_off).ok_or_else(|| at("overflow".into()))?;
            let dst = var_pa(d.to).map_err(at)?.checked_add(d.to_off).ok_or_else(|| at("overflow".into()))?;
            Ok(DeviceDescriptor { src, dst, size: d.size, queue: d.queue, flags: 0 })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::record::Wait;

    fn base(op: Operand) -> Result<u64, String> {
        if op.a > 9 {
            Err(format!("var_id {} unknown", op.a))
        } else {
            Ok(0x1_0000_0000 * u64::from(op.a + 1) + u64::from(op.b))
        }
    }

    #[test]
    fn plain_records_get_physical_operands_and_the_flag() {
        let mut add = Record::new(Opcode::Add, 0);
        add.ops = [Operand::var(1, 8, 4), Operand::var(2, 0, 4), Operand::var(3, 4, 4)];
        let dma = Record::new(Opcode::Dma, 1);
        let t = translate_pseudo_instrs(Engine::Dve, &[add, dma], &mut base).unwrap();
        assert_eq!(t.records[0].ops[0], Operand::physical(0x2_0000_0008, 4));
        assert_eq!(t.records[0].ops[2].pa(), 0x4_0000_0004);
        assert_eq!(t.records[0].flags, FLAG_RELOCATED);
        assert_eq!(t.records[1], dma, "a DMA record keeps (queue, descriptor, size)");
        assert!(t.patches.is_empty());
        assert_eq!(t.operand_vars, vec![[Some(1), Some(2), Some(3)], [None; 3]]);
        let mut bad = add;
        bad.ops[2].a = 42;
        assert_eq!(
            translate_pseudo_instrs(Engine::Dve, &[dma, bad], &mut base).unwrap_err(),
            "record 1: operand 2: var_id 42 unknown"
        );
    }

    #[test]
    fn a_pseudo_add_expands_into_a_chain_and_records_its_ip_delta() {
        // dst = s1 + s2 + s3 + s4 + s5 (5 sources: pseudo + 1 Ext of 3) -> 4 Adds: INSERT of 2.
        let mut p = Record::new(Opcode::PseudoAddN, 7);
        p.ops = [Operand::var(0, 0, 4), Operand::var(1, 0, 4), Operand::var(2, 0, 4)];
        p.imm = 1;
        p.waits[0] = Some(Wait { sem: 1, value: 3 });
        p.flags = FLAG_SIGNAL;
        p.signal = 2;
        let mut e = Record::new(Opcode::Ext, 7);
        e.ops = [Operand::var(3, 0, 4), Operand::var(4, 0, 4), Operand::var(5, 0, 4)];
        e.imm = 3;
        let ret = Record::new(Opcode::Return, 8);
        let t = translate_pseudo_instrs(Engine::Pool, &[ret, p, e, ret], &mut base).unwrap();
        assert_eq!(t.records.len(), 6);
        let adds = &t.records[1..5];
        assert!(adds.iter().all(|r| r.opcode == Opcode::Add && r.debug_id == 7));
        assert_eq!(adds[0].waits[0], Some(Wait { sem: 1, value: 3 }));
        assert!(adds[1..].iter().all(|r| r.waits == [None; 2]));
        assert_eq!(adds[3].signal(), Some(2));
        assert!(adds[..3].iter().all(|r| r.signal().is_none()));
        let dst = Operand::physical(0x1_0000_0000, 4);
        assert_eq!(adds[0].ops[1], Operand::physical(0x2_0000_0000, 4));
        assert!(adds[1..].iter().all(|r| r.ops[0] == dst && r.ops[1] == dst));
        assert_eq!(adds[3].ops[2], Operand::physical(0x6_0000_0000, 4));
        let want: Vec<[Option<u32>; 3]> = [[None; 3]]
            .into_iter()
            .chain([1, 3, 4, 5].map(|s| [Some(0), Some(if s == 1 { 1 } else { 0 }), Some(if s == 1 { 2 } else { s })]))
            .chain([[None; 3]])
            .collect();
        assert_eq!(t.operand_vars, want);
        let patch = KbinPatch { engine: Engine::Pool, neff_ip: 1, device_ip: 1, slots: 2, expanded: 4 };
        assert_eq!(t.patches, vec![patch]);
        assert_eq!((patch.kind(), patch.delta()), (PatchKind::Insert, 2));
        // Device IPs 0, 1..=4, 5 map back to NEFF IPs 0, 1, 3.
        let back: Vec<u64> = (0..6).map(|d| kbin_patch_device_ip_to_neff_ip(&t.patches, d)).collect();
        assert_eq!(back, vec![0, 1, 1, 1, 1, 3]);
    }

    #[test]
    fn malformed_pseudo_sequences_are_refused() {
        let mut p = Record::new(Opcode::PseudoAddN, 0);
        p.imm = 2;
        let mut e = Record::new(Opcode::Ext, 0);
        e.imm = 1;
        assert!(translate_pseudo_instrs(Engine::Pe, &[p, e], &mut base).unwrap_err().contains("announces 2"));
        e.imm = 0;
        assert!(translate_pseudo_instrs(Engine::Pe, &[p, e, e], &mut base).unwrap_err().contains("not an Ext"));
        assert!(translate_pseudo_instrs(Engine::Pe, &[e], &mut base).unwrap_err().contains("without a preceding"));
    }

    /// A `PseudoAddN` taking three operands and its one `Ext` record of three more, and a `Return`.
    fn add_n_ext_return() -> (Record, Record, Record) {
        let mut p = Record::new(Opcode::PseudoAddN, 7);
        p.ops = [Operand::var(0, 0, 4), Operand::var(1, 0, 4), Operand::var(2, 0, 4)];
        p.imm = 1;
        let mut e = Record::new(Opcode::Ext, 7);
        e.ops = [Operand::var(3, 0, 4), Operand::var(4, 0, 4), Operand::var(5, 0, 4)];
        e.imm = 3;
        let ret = Record::new(Opcode::Return, 8);
        (p, e, ret)
    }

    #[test]
    fn the_count_alone_equals_the_translation_and_refuses_alike() {
        let (p, e, ret) = add_n_ext_return();
        let stream = [ret, p, e, ret, p, e];
        let t = translate_pseudo_instrs(Engine::Pool, &stream, &mut base).unwrap();
        assert_eq!(count_pseudo_instrs(Engine::Pool, &stream, &mut base), Ok(t.records.len() as u64));
        assert_eq!(t.records.len(), 10);
        let mut bad = p;
        bad.ops[2].a = 42;
        let broken = [ret, bad, e];
        let want = translate_pseudo_instrs(Engine::Pool, &broken, &mut base).unwrap_err();
        assert_eq!(count_pseudo_instrs(Engine::Pool, &broken, &mut base), Err(want));
        assert!(count_pseudo_instrs(Engine::Pool, &[e], &mut base).unwrap_err().contains("without a preceding"));
    }

    #[test]
    fn the_encoded_translation_is_the_translation_encoded_and_refuses_alike() {
        let (p, e, ret) = add_n_ext_return();
        let stream = [ret, p, e, ret, p, e];
        let t = translate_pseudo_instrs(Engine::Pool, &stream, &mut base).unwrap();
        let x = translate_pseudo_instrs_encoded(Engine::Pool, &stream, &mut base).unwrap();
        assert_eq!(x.bytes, t.records.iter().flat_map(|r| r.encode()).collect::<Vec<u8>>());
        assert_eq!((x.operand_vars, x.patches), (t.operand_vars, t.patches));
        let flagged = t.records.iter().filter(|r| r.flags & FLAG_RELOCATED != 0).count() as u64;
        assert_eq!(x.relocated, flagged);
        assert!(flagged > 0 && flagged < t.records.len() as u64, "the count is of flagged records only");
        let mut bad = p;
        bad.ops[2].a = 42;
        let want = translate_pseudo_instrs(Engine::Pool, &[ret, bad, e], &mut base).unwrap_err();
        assert_eq!(translate_pseudo_instrs_encoded(Engine::Pool, &[ret, bad, e], &mut base), Err(want));
    }

    #[test]
    fn delete_patches_map_back_too() {
        let d = KbinPatch { engine: Engine::Pe, neff_ip: 2, device_ip: 2, slots: 3, expanded: 1 };
        assert_eq!((d.kind(), d.delta()), (PatchKind::Delete, 2));
        let back: Vec<u64> = (0..4).map(|ip| kbin_patch_device_ip_to_neff_ip(&[d], ip)).collect();
        assert_eq!(back, vec![0, 1, 2, 5]);
    }

    #[test]
    fn descriptors_become_absolute() {
        let descs = [RelativeDescriptor { queue: 1, from: 0, from_off: 16, to: 2, to_off: 4, size: 8 }];
        let mut pa = |v: u32| if v < 3 { Ok(0x1000 * u64::from(v + 1)) } else { Err("no".to_string()) };
        let out = imcpy_load_vring(&descs, &mut pa).unwrap();
        assert_eq!(out, vec![DeviceDescriptor { src: 0x1010, dst: 0x3004, size: 8, queue: 1, flags: 0 }]);
        let bad = [RelativeDescriptor { to: 5, ..descs[0] }];
        assert_eq!(imcpy_load_vring(&bad, &mut pa).unwrap_err(), "dma[0]: no");
    }
}
