//! Faults planted deep in programs of real size (issue 11 item 1): 2 cores x
//! 50k instructions, the fault within the last few percent of a core's work.
//! Each checker must report exactly the planted fault, not a sample of the
//! program nor its first findings only. (The IR checker's, the MiniMalloc
//! checker's, the link checker's, the anti-dependency pass's and the
//! simulator's deep tests live beside their other tests.)
#![allow(clippy::unwrap_used)]

use lncsim_model::codegen::record::{Opcode, RECORD_SIZE, Record};
use lncsim_model::ir::{AccessPattern, MemLocId, Module, Op, Usage};
use lncsim_model::load::checker::check_load;
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, Runtime};
use lncsim_model::neff::{Neff, ReadOptions};
use lncsim_model::program::interleave::{InterleaveError, run_interleaved};
use lncsim_model::program::{GenConfig, generate, interpret, seeded_inputs};
use lncsim_model::split::split;
use lncsim_sim::device::SimDevice;

/// Instructions per core of the deep tests' programs.
const OPS: u32 = 50_000;

fn config() -> GenConfig {
    GenConfig::with_ops(11, 2, OPS, 16).unwrap()
}

/// The deepest compute of `m`'s first function whose result a DMA then copies to an
/// output: (instruction, its source 0's length).
fn deepest_output_producer(m: &Module) -> Option<(usize, u64)> {
    let insts = &m.functions[0].insts;
    let dmas = (0..insts.len()).filter_map(|i| match &insts[i].op {
        Op::DmaCopy { src, dst } if m.loc(dst.loc).usage == Usage::Output => Some((i, src.loc)),
        _ => None,
    });
    let producer = |(i, loc)| {
        let j = (0..i).rev().find(|&j| matches!(&insts[j].op, Op::Compute { dst, .. } if dst.loc == loc))?;
        let Op::Compute { srcs, .. } = &insts[j].op else { return None };
        Some((j, srcs[0].len))
    };
    dmas.filter_map(producer).max()
}

#[test]
fn a_wrong_operand_near_the_end_of_a_100k_split_is_seen_by_the_split_order_oracle() {
    let p = generate(&config());
    let inputs = seeded_inputs(&p, 5);
    let golden = interpret(&p, &inputs).unwrap();
    let mut modules = split(&p).unwrap();
    assert_eq!(run_interleaved(&modules, &inputs, 3).unwrap(), golden, "the clean split passes");
    let (core, (at, len0)) = (0..modules.len())
        .filter_map(|c| Some((c, deepest_output_producer(&modules[c])?)))
        .max_by_key(|x| x.1)
        .unwrap();
    let m = &mut modules[core];
    let n = m.functions[0].insts.len();
    assert!(at * 100 >= n * 95, "the planted fault is deep: {at} of {n}");
    // Its first source becomes a program input or weight (seeded values, not the tensor's).
    let input = (0..m.memlocs.len())
        .map(MemLocId::from_index)
        .find(|&l| matches!(m.loc(l).usage, Usage::Input | Usage::Weight) && m.loc(l).elem_count >= len0)
        .unwrap();
    let Op::Compute { srcs, dst, .. } = &mut m.functions[0].insts[at].op else { unreachable!() };
    srcs[0] = AccessPattern { loc: input, offset: 0, len: len0 };
    let dst = dst.loc;
    let out = m.loc(dst).name.clone();
    let got = run_interleaved(&modules, &inputs, 3).unwrap();
    let wrong: Vec<&String> = golden.keys().filter(|k| got[*k] != golden[*k]).collect();
    assert!(
        !wrong.is_empty(),
        "instruction {at} of {n} on core {core} (into `{out}`) reads an input or weight instead"
    );
}

#[test]
fn a_barrier_dropped_near_the_end_of_a_100k_split_is_a_deadlock() {
    let p = generate(&config());
    let inputs = seeded_inputs(&p, 5);
    let mut modules = split(&p).unwrap();
    let insts = &mut modules[1].functions[0].insts;
    let at = (0..insts.len()).rev().find(|&i| matches!(insts[i].op, Op::CoreBarrier(_))).unwrap();
    assert!(at * 100 >= insts.len() * 95, "the last barrier is deep: {at} of {}", insts.len());
    let Op::CoreBarrier(b) = &mut insts[at].op else { unreachable!() };
    // Core 1 arrives at a group of its own; core 0 waits at one core 1 never reaches.
    b.group = u32::MAX;
    match run_interleaved(&modules, &inputs, 3) {
        Err(InterleaveError::Deadlock(cores)) => assert!(cores.contains(&0), "{cores:?}"),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// The device record `ip` of a stream at `pa`.
fn record(rt: &Runtime<SimDevice>, pa: u64, ip: u64) -> Record {
    Record::decode(&rt.device().copy_out(pa + ip * RECORD_SIZE as u64, RECORD_SIZE as u64).unwrap()).unwrap()
}

#[test]
fn a_record_changed_near_the_end_of_a_100k_load_is_the_only_layout_finding() {
    let bytes = pack_generated(&config()).unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::default()).unwrap();
    let rt = Runtime::new(SimDevice::new(2, 2));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let images = rt.core_images(m.h_nn).unwrap();
    assert_eq!(check_load(rt.device(), &neff, &images), Vec::<String>::new(), "the clean load passes");
    // Core 1's last Relu or Mul, by depth in its stream, becomes a Reduce or an Add.
    let (depth, s, ip, from, to) = images[1]
        .engines
        .iter()
        .filter_map(|s| {
            let ops: Vec<Opcode> = (0..s.records).map(|ip| record(&rt, s.pa, ip).opcode).collect();
            let ip = ops.iter().rposition(|&o| matches!(o, Opcode::Relu | Opcode::Mul))? as u64;
            let (from, to) =
                if ops[ip as usize] == Opcode::Relu { ("Relu", Opcode::Reduce) } else { ("Mul", Opcode::Add) };
            Some((ip * 1000 / s.records, s.clone(), ip, from, to))
        })
        .max_by_key(|x| x.0)
        .unwrap();
    assert!(depth >= 950, "the planted record is deep: {ip} of {}", s.records);
    let mut r = record(&rt, s.pa, ip);
    r.opcode = to;
    rt.device().write(s.pa + ip * RECORD_SIZE as u64, &r.encode()).unwrap();
    let bad = check_load(rt.device(), &neff, &images);
    assert_eq!(bad.len(), 1, "only the planted record: {bad:#?}");
    let at = format!("sg01 {} ip ", s.engine.key());
    let became = format!(": {from} became {to:?}");
    assert!(bad[0].contains(&at) && bad[0].contains(&became), "{bad:?}");
}
