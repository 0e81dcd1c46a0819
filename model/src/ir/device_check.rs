//! What the simulated device can run, checked before any stage works on a
//! program: `lnc` in `1..=256`, every location in DRAM (the device models
//! HBM only; SBUF and PSUM exist in the IR for the seeds' sake), and every
//! compute op on an engine that runs it (matmul on PE only, PE runs nothing
//! but matmul, SP computes nothing: it triggers DMA and synchronises), and
//! every instruction within the 64-byte record's encoding (matmul dimensions
//! up to 1023, semaphore indices within the semaphore file, no n-ary add
//! over one of its sources), and no `remote` view in a program (a module
//! with no NeuronCoreId on it or its functions: views are the split's).
//! Errors carry the source position when a [`SourceMap`] is given.
//!
//! It also warns, without failing, about cross-engine data hazards: two
//! accesses to overlapping elements of one location from different engines
//! (or cores), at least one a write, that no chain of dependency edges and
//! same-engine program order orders. Each access is compared with the
//! latest [`TRACKED`] overlapping accesses of its location, so a hazard can
//! be missed but is never invented; a function with semaphore waits or core
//! barriers (hand-synchronised) is not judged. Cost: O(n * S) time and
//! memory for n instructions on S (core, engine) streams, skipped (and said
//! so) above [`MAX_CLOCK_CELLS`].

use std::collections::BTreeMap;
use std::fmt;

use super::{ComputeKind, Engine, MemType, Module, Op, SourceMap};

/// The most cores a program may target (the splitter's limit).
pub const MAX_LNC: u32 = 256;
/// Accesses remembered per location for the hazard warning.
pub const TRACKED: usize = 8;
/// Vector-clock cells (instructions x streams) above which the hazard warning is skipped.
pub const MAX_CLOCK_CELLS: u64 = 64_000_000;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The device cannot run it: commands refuse the program.
    Error,
    /// It runs, but probably not as meant.
    Warning,
}

/// One finding, with where it was written when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFinding {
    /// Error or warning.
    pub severity: Severity,
    /// (line, column), 1-based.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for DeviceFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((l, c)) => write!(f, "{l}:{c}: {}", self.msg),
            None => write!(f, "{}", self.msg),
        }
    }
}

/// The engines that can run a compute op.
pub fn engines_for(kind: &ComputeKind) -> &'static [Engine] {
    match kind {
        ComputeKind::MatMul { .. } => &[Engine::Pe],
        ComputeKind::Add | ComputeKind::Mul | ComputeKind::Relu => &[Engine::Act, Engine::Dve, Engine::Pool],
        ComputeKind::Reduce => &[Engine::Dve, Engine::Pool],
    }
}

fn kind_name(kind: &ComputeKind) -> &'static str {
    match kind {
        ComputeKind::Add => "add",
        ComputeKind::Mul => "mul",
        ComputeKind::Relu => "relu",
        ComputeKind::Reduce => "reduce",
        ComputeKind::MatMul { .. } => "matmul",
    }
}

/// Every error and warning of `m`, errors first, each group in source order.
pub fn device_check(m: &Module, map: Option<&SourceMap>) -> Vec<DeviceFinding> {
    let mut out = Vec::new();
    let err = |at, msg| DeviceFinding { severity: Severity::Error, at, msg };
    if m.attrs.lnc_size == 0 || m.attrs.lnc_size > MAX_LNC {
        out.push(err(
            map.map(|s| s.lnc),
            format!("lnc {} is out of range: the device has 1 to {MAX_LNC} cores", m.attrs.lnc_size),
        ));
    }
    // A program (no NeuronCoreId on the module or any function) is what the split
    // starts from: a `remote` view is the split's to make, and the reference
    // interpreter of a program has no other core to read it from.
    let program = m.attrs.neuron_core_id.is_none() && m.functions.iter().all(|f| f.attrs.neuron_core_id.is_none());
    for (i, l) in m.memlocs.iter().enumerate() {
        if program && let Some(r) = &l.remote_local_target {
            out.push(err(
                map.and_then(|s| s.locs.get(i).copied()),
                format!(
                    "location `{}` is a view of `{}` on core {}: views exist only in per-core modules (a program names the tensor itself; the split makes the views)",
                    l.name, r.name, r.core
                ),
            ));
        }
        if l.mem_type != MemType::Dram {
            let what = super::mem_word(l.mem_type);
            out.push(err(
                map.and_then(|s| s.locs.get(i).copied()),
                format!("location `{}` is in {what}: the device models DRAM (HBM) only", l.name),
            ));
        }
    }
    for (fi, f) in m.functions.iter().enumerate() {
        for (ii, inst) in f.insts.iter().enumerate() {
            let at = || map.and_then(|s| s.insts.get(fi)).and_then(|v| v.get(ii).copied());
            if let Some(why) = encoding_limit(inst) {
                out.push(err(at(), format!("instruction `{}`: {why}", inst.name)));
            }
            if let Op::Compute { kind, .. } = &inst.op
                && !engines_for(kind).contains(&inst.engine)
            {
                let can: Vec<&str> = engines_for(kind).iter().map(|e| super::engine_word(*e)).collect();
                out.push(err(
                    map.and_then(|s| s.insts.get(fi)).and_then(|v| v.get(ii).copied()),
                    format!(
                        "instruction `{}`: {} cannot run `{}` (it runs on {})",
                        inst.name,
                        super::engine_word(inst.engine),
                        kind_name(kind),
                        can.join(", ")
                    ),
                ));
            }
        }
    }
    for (fi, _) in m.functions.iter().enumerate() {
        out.extend(hazards(m, fi, map));
    }
    out
}

/// What about `inst` the device's 64-byte record cannot hold (codegen's
/// limits, refused here before any stage runs): a matmul dimension above
/// 1023, a semaphore index past the core's semaphore file, an add of more
/// than two sources writing over one of them (the n-ary add reads its
/// sources while it writes).
fn encoding_limit(inst: &super::Inst) -> Option<String> {
    use crate::codegen::USER_SEM_BASE;
    use crate::codegen::record::matmul_imm;
    match &inst.op {
        Op::Compute { kind: ComputeKind::MatMul { m, k, n }, .. } if matmul_imm(*m, *k, *n).is_none() => {
            Some(format!("matmul {m}x{k}x{n}: the device's record holds dimensions up to 1023"))
        }
        Op::Compute { kind: ComputeKind::Add, srcs, dst }
            if srcs.len() > 2
                && srcs.iter().any(|s| {
                    s.loc == dst.loc
                        && s.offset < dst.offset.saturating_add(dst.len)
                        && dst.offset < s.offset.saturating_add(s.len)
                }) =>
        {
            Some("an add of more than two sources may not write over a source on the device".into())
        }
        Op::SemWait { sem, .. } | Op::SemSignal { sem } if u32::from(USER_SEM_BASE).saturating_add(*sem) > 255 => {
            Some(format!(
                "semaphore {sem}: the device's semaphore file holds {} user semaphores (0 to {})",
                256 - u32::from(USER_SEM_BASE),
                255 - u32::from(USER_SEM_BASE)
            ))
        }
        _ => None,
    }
}

/// One access: instruction, element range, write or read.
#[derive(Clone, Copy)]
struct Access {
    inst: usize,
    lo: u64,
    hi: u64,
    write: bool,
}

/// The hazard warnings of function `fi` (see the module doc).
fn hazards(m: &Module, fi: usize, map: Option<&SourceMap>) -> Vec<DeviceFinding> {
    let f = &m.functions[fi];
    if f.insts.iter().any(|i| matches!(i.op, Op::SemWait { .. } | Op::CoreBarrier(_))) {
        return Vec::new();
    }
    let core = |i: &super::Inst| i.core.or(f.attrs.neuron_core_id).or(m.attrs.neuron_core_id).unwrap_or(0);
    let mut stream_of: BTreeMap<(u32, usize), usize> = BTreeMap::new();
    let streams: Vec<usize> = f
        .insts
        .iter()
        .map(|i| {
            let n = stream_of.len();
            *stream_of.entry((core(i), i.engine.index())).or_insert(n)
        })
        .collect();
    let s = stream_of.len();
    let n = f.insts.len();
    if (n as u64).saturating_mul(s as u64) > MAX_CLOCK_CELLS {
        return vec![DeviceFinding {
            severity: Severity::Warning,
            at: None,
            msg: format!(
                "function `{}`: data hazards not checked ({n} instructions on {s} engine streams is over the check's size)",
                f.name
            ),
        }];
    }
    // clock[i * s + t]: how many records of stream t instruction i is ordered after (itself included).
    let mut clock = vec![0u32; n * s];
    let mut last: Vec<Option<usize>> = vec![None; s];
    let mut seq = vec![0u32; n];
    let mut count = vec![0u32; s];
    for i in 0..n {
        let t = streams[i];
        let (before, row) = clock.split_at_mut(i * s);
        let row = &mut row[..s];
        let preds = f.insts[i].deps.iter().map(|d| d.inst.index()).filter(|&d| d < i).chain(last[t]);
        for p in preds {
            for (c, v) in row.iter_mut().zip(&before[p * s..p * s + s]) {
                *c = (*c).max(*v);
            }
        }
        count[t] += 1;
        seq[i] = count[t];
        row[t] = count[t];
        last[t] = Some(i);
    }
    let ordered = |a: usize, b: usize| clock[b * s + streams[a]] >= seq[a];
    let mut recent: BTreeMap<u32, Vec<Access>> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, inst) in f.insts.iter().enumerate() {
        let mut touches: Vec<(super::AccessPattern, bool)> = inst.reads().into_iter().map(|a| (a, false)).collect();
        touches.extend(inst.write().map(|a| (a, true)));
        for (ap, write) in touches {
            let acc = Access { inst: i, lo: ap.offset, hi: ap.offset.saturating_add(ap.len), write };
            let list = recent.entry(ap.loc.0).or_default();
            if let Some(prev) = list.iter().rev().find(|p| {
                p.inst != i
                    && (p.write || write)
                    && p.lo < acc.hi
                    && acc.lo < p.hi
                    && streams[p.inst] != streams[i]
                    && !ordered(p.inst, i)
            }) {
                let a = &f.insts[prev.inst];
                let kind = match (prev.write, write) {
                    (true, false) => "reads what",
                    (false, true) => "overwrites what",
                    _ => "writes over what",
                };
                let loc = m.memlocs.get(ap.loc.0 as usize).map_or("?", |l| l.name.as_str());
                out.push(DeviceFinding {
                    severity: Severity::Warning,
                    at: map.and_then(|s| s.insts.get(fi)).and_then(|v| v.get(i).copied()),
                    msg: format!(
                        "instruction `{}` ({}) {kind} `{}` ({}) {} `{loc}`, and nothing orders them (add `after {}`)",
                        inst.name,
                        super::engine_word(inst.engine),
                        a.name,
                        super::engine_word(a.engine),
                        if prev.write { "wrote in" } else { "read from" },
                        a.name
                    ),
                });
            }
            list.push(acc);
            if list.len() > TRACKED {
                list.remove(0);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ir::parse_with_map;

    fn findings(text: &str) -> Vec<String> {
        let (m, map) = parse_with_map(text).unwrap();
        device_check(&m, Some(&map)).iter().map(|f| format!("{:?} {f}", f.severity)).collect()
    }

    const HEAD: &str = "module t lnc 1\nloc x dram input i32[16]\nloc y dram internal i32[16]\nloc o dram output i32[16]\nfunc main\n  args x\n  block b\n";

    #[test]
    fn what_the_record_cannot_encode_is_an_error_at_its_line() {
        let f = findings(&format!(
            "{HEAD}    i0 = pe matmul 1x1024x1 x[0..1024], x[0..1024] -> y[0..1]\n    i1 = dve add x[0..4], y[0..4], o[0..4] -> y[2..6]\n    i2 = dve add x[0..4], y[0..4], o[0..4] -> y[4..8]\n    i3 = dve add x[0..4], y[0..4] -> y[0..4]\n    i4 = sp sem_signal 250\n    i5 = sp sem_wait 251 value 1\n    i6 = pe matmul 1x1023x1 x[0..1023], x[0..1023] -> y[0..1]\n"
        ).replace("i32[16]", "i32[2048]"));
        let errors: Vec<&String> = f.iter().filter(|l| l.starts_with("Error")).collect();
        assert_eq!(
            errors,
            vec![
                "Error 8:5: instruction `i0`: matmul 1x1024x1: the device's record holds dimensions up to 1023",
                "Error 9:5: instruction `i1`: an add of more than two sources may not write over a source on the device",
                "Error 13:5: instruction `i5`: semaphore 251: the device's semaphore file holds 251 user semaphores (0 to 250)",
            ]
        );
    }

    #[test]
    fn a_remote_view_is_an_error_in_a_program_only() {
        let view = "loc v dram shared i32[16] remote y core 1\n";
        let program = format!("{HEAD}    i0 = dve relu x[0..16] -> y[0..16]\n").replacen(
            "func main",
            &format!("{view}func main"),
            1,
        );
        let errors: Vec<String> = findings(&program).into_iter().filter(|l| l.starts_with("Error")).collect();
        assert_eq!(
            errors,
            vec![
                "Error 5:1: location `v` is a view of `y` on core 1: views exist only in per-core modules (a program names the tensor itself; the split makes the views)"
            ]
        );
        let per_core = program.replacen("module t lnc 1", "module t lnc 2 core 0", 1);
        assert!(findings(&per_core).iter().all(|l| !l.starts_with("Error")), "{:?}", findings(&per_core));
    }

    #[test]
    fn what_the_device_cannot_run_is_an_error_at_its_line() {
        let f = findings(
            "module t lnc 300\nloc s sbuf internal i32[4]\nloc p psum internal i32[4]\nfunc main\n  block b\n    i0 = dve matmul 2x2x1 s[0..4], s[0..2] -> p[0..2]\n    i1 = sp add s[0..4], s[0..4] -> s[0..4]\n    i2 = pe relu s[0..4] -> s[0..4]\n",
        );
        let errors: Vec<&String> = f.iter().filter(|l| l.starts_with("Error")).collect();
        assert_eq!(
            errors,
            vec![
                "Error 1:14: lnc 300 is out of range: the device has 1 to 256 cores",
                "Error 2:1: location `s` is in sbuf: the device models DRAM (HBM) only",
                "Error 3:1: location `p` is in psum: the device models DRAM (HBM) only",
                "Error 6:5: instruction `i0`: dve cannot run `matmul` (it runs on pe)",
                "Error 7:5: instruction `i1`: sp cannot run `add` (it runs on act, dve, pool)",
                "Error 8:5: instruction `i2`: pe cannot run `relu` (it runs on act, dve, pool)",
            ]
        );
        assert!(findings("module t lnc 0\n").iter().any(|f| f.contains("lnc 0 is out of range")));
    }

    #[test]
    fn an_unordered_cross_engine_hazard_is_a_warning_and_an_edge_silences_it() {
        let racy = format!("{HEAD}    w = act relu x[0..16] -> y[0..16]\n    r = dve relu y[4..8] -> o[0..4]\n");
        assert_eq!(
            findings(&racy),
            vec![
                "Warning 9:5: instruction `r` (dve) reads what `w` (act) wrote in `y`, and nothing orders them (add `after w`)"
            ]
        );
        let fixed =
            format!("{HEAD}    w = act relu x[0..16] -> y[0..16]\n    r = dve relu y[4..8] -> o[0..4] after w\n");
        assert!(findings(&fixed).is_empty());
        // Ordered through a third engine: w -> m (pool, after w) -> r (dve, after m).
        let chain = format!(
            "{HEAD}    w = act relu x[0..16] -> y[0..16]\n    m = pool relu x[0..4] -> o[4..8] after w\n    r = dve relu y[4..8] -> o[0..4] after m\n"
        );
        assert!(findings(&chain).is_empty());
        // Same engine: program order orders them; disjoint elements never conflict.
        let same = format!("{HEAD}    w = act relu x[0..16] -> y[0..16]\n    r = act relu y[4..8] -> o[0..4]\n");
        assert!(findings(&same).is_empty());
        let disjoint = format!("{HEAD}    w = act relu x[0..8] -> y[0..8]\n    r = dve relu y[8..16] -> o[0..8]\n");
        assert!(findings(&disjoint).is_empty());
    }

    #[test]
    fn write_after_read_is_reported_too() {
        let war = format!("{HEAD}    r = dve relu x[0..16] -> o[0..16]\n    w = act relu y[0..16] -> x[0..16]\n");
        let f = findings(&war);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("`w` (act) overwrites what `r` (dve) read from `x`"), "{f:?}");
    }

    #[test]
    fn generated_programs_run_on_the_device_and_carry_no_hazard() {
        for seed in 0..8 {
            for cores in [1, 2, 4] {
                let m = crate::program::generate(&crate::program::GenConfig::new(
                    seed,
                    cores,
                    crate::program::SizeClass::Medium,
                ));
                let f = device_check(&m, None);
                assert!(f.is_empty(), "seed {seed}, {cores} cores: {f:?}");
            }
        }
    }
}
