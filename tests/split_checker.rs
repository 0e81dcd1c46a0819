//! The independent split checker against hand-broken splits: each broken
//! rule is reported, and clean splits (generated programs, hand-written
//! ones, the pipeline's allocated modules) pass.

#![allow(clippy::unwrap_used)]

use lncsim_model::ir::{self, *};
use lncsim_model::pipeline::{PipelineOptions, compile};
use lncsim_model::program::{GenConfig, SizeClass, generate};
use lncsim_model::split::{SplitViolation, check_split, split};

/// Core 0 writes `t` (read on cores 1 and 2) and `u` (its own); core 1
/// depends on `i2` of core 0 by an edge.
const PROGRAM: &str = "module s lnc 3
loc x dram input i32[16]
loc t dram internal i32[16]
loc u dram internal i32[16]
loc v dram internal i32[16]
loc y dram output i32[16]
loc z dram output i32[16]
func main
  args x, y, z
  block entry
    i0 = act relu x[0..16] -> t[0..16] core 0
    i1 = act relu t[0..16] -> u[0..16] core 0 after i0
    i2 = dve relu u[0..16] -> v[0..16] core 0 after i1
    i3 = dve add t[0..16], x[0..16] -> y[0..16] core 1 after i2
  block tail
    i4 = pool relu t[4..12] -> z[0..8] core 2
";

fn program() -> Module {
    ir::parse(PROGRAM).unwrap()
}

fn clean() -> (Module, Vec<Module>) {
    let p = program();
    let ms = split(&p).unwrap();
    assert_eq!(check_split(&p, &ms), vec![], "the clean split passes");
    (p, ms)
}

fn inst<'a>(m: &'a mut Module, name: &str) -> &'a mut Inst {
    let f = &mut m.functions[0];
    let id = f.inst_by_name(name).unwrap();
    &mut f.insts[id.index()]
}

fn has(v: &[SplitViolation], core: u32, needle: &str) -> bool {
    v.iter().any(|x| x.core == Some(core) && x.msg.contains(needle))
}

#[test]
fn clean_splits_of_generated_programs_pass_before_and_after_allocation() {
    for seed in 0..24u64 {
        let cores = 1 + (seed % 8) as u32;
        let size = if seed % 3 == 0 { SizeClass::Medium } else { SizeClass::Small };
        let p = generate(&GenConfig::new(seed, cores, size));
        let ms = split(&p).unwrap();
        assert_eq!(check_split(&p, &ms), vec![], "seed {seed}");
        let allocated = compile(&p, &PipelineOptions::default()).unwrap().per_core;
        assert_eq!(check_split(&p, &allocated), vec![], "seed {seed}, allocated (anti-dependency edges added)");
    }
}

#[test]
fn a_missing_a_duplicated_and_a_misplaced_instruction_are_reported() {
    let (p, ms) = clean();
    let mut missing = ms.clone();
    let f = &mut missing[1].functions[0];
    let id = f.inst_by_name("i3").unwrap();
    f.blocks.iter_mut().for_each(|b| b.insts.retain(|&i| i != id));
    f.insts[id.index()].name = "gone".into();
    f.canonicalize();
    let v = check_split(&p, &missing);
    assert!(has(&v, 1, "instruction `i3` is missing"), "{v:#?}");
    // Core 2 also computes `i1` (core 0's), into its own copy of `u`.
    let mut twice = ms.clone();
    let u = twice[2].add_loc(MemoryLocation::dram("u", Usage::Internal, 16));
    let t = twice[2].loc_by_name("t_in2").unwrap();
    let mut dup = Inst::new(
        "i1",
        Engine::Act,
        Op::Compute {
            kind: ComputeKind::Relu,
            srcs: [AccessPattern { loc: t, offset: 0, len: 16 }].into_iter().collect(),
            dst: AccessPattern { loc: u, offset: 0, len: 16 },
        },
    );
    dup.core = Some(2);
    twice[2].functions[0].push_inst(BlockId(0), dup);
    let v = check_split(&p, &twice);
    assert!(has(&v, 2, "instruction `i1` of core 0 is here too"), "{v:#?}");
    assert!(has(&v, 2, "location `u` is touched by no instruction of this core"), "{v:#?}");
    // `i4` moved to block `entry` of core 2.
    let mut moved = ms;
    let f = &mut moved[2].functions[0];
    let id = f.inst_by_name("i4").unwrap();
    f.blocks.iter_mut().for_each(|b| b.insts.retain(|&i| i != id));
    f.blocks[0].insts.push(id);
    f.canonicalize();
    let v = check_split(&p, &moved);
    assert!(has(&v, 2, "instruction `i4` is in block Some(\"entry\"), the program's in Some(\"tail\")"), "{v:#?}");
}

#[test]
fn a_changed_operand_engine_or_lost_edge_is_reported() {
    let (p, ms) = clean();
    let mut range = ms.clone();
    if let Op::Compute { srcs, .. } = &mut inst(&mut range[2], "i4").op {
        srcs[0].offset = 5;
    }
    let v = check_split(&p, &range);
    assert!(has(&v, 2, "instruction `i4`: operand `t_in2[4..12]` became `t_in2[5..13]`"), "{v:#?}");
    let mut kind = ms.clone();
    if let Op::Compute { kind: k, .. } = &mut inst(&mut kind[0], "i1").op {
        *k = ComputeKind::Reduce;
    }
    assert!(has(&check_split(&p, &kind), 0, "instruction `i1`: operation differs"), "a relu became a reduce");
    let mut engine = ms.clone();
    inst(&mut engine[0], "i1").engine = Engine::Pool;
    assert!(has(&check_split(&p, &engine), 0, "engine, collective flag or queue differ"));
    // Core 0's `i1` no longer waits for `i0` (a same-core data edge of the program).
    let mut edge = ms;
    inst(&mut edge[0], "i1").deps.retain(|d| d.kind != EdgeKind::Data);
    let v = check_split(&p, &edge);
    assert!(has(&v, 0, "instruction `i1` lost its Data edge to `i0`"), "{v:#?}");
}

/// A copy that changes only its collective flag, only its queue (to another
/// queue, by name) or only a switch's instance is reported; a clean split with
/// a switch, semaphore operations and a return passes; a changed wait value is reported.
#[test]
fn a_changed_collective_flag_queue_or_switch_instance_alone_is_reported() {
    let text = "module q lnc 1
queue qa static owner sp sems 1 instances 0,1,2
queue qb static owner sp sems 1
loc x dram input i32[16]
loc y dram output i32[16]
func main
  args x, y
  block entry
    i0 = sp dma x[0..16] -> y[0..16] queue qa core 0
    i1 = sp switch_queue qa instance 1 core 0 after i0
    i2 = sp sem_signal 0 core 0 after i1
    i3 = sp sem_wait 0 value 1 core 0 after i2
    i4 = sp return core 0 after i3
";
    let p = ir::parse(text).unwrap();
    let ms = split(&p).unwrap();
    assert_eq!(check_split(&p, &ms), vec![], "the clean split passes (a switch, semaphores and a return included)");
    let mut switch = ms.clone();
    if let Op::SwitchQueueInstance { instance, .. } = &mut inst(&mut switch[0], "i1").op {
        *instance = 2;
    }
    assert!(has(&check_split(&p, &switch), 0, "instruction `i1`: switch_queue differs"));
    // The split may keep only the queues a core uses: core 0 gets `qb` if it lacks it.
    let with_qb = |m: &mut ir::Module| match m.queues.iter().position(|q| q.name == "qb") {
        Some(i) => QueueId::from_index(i),
        None => {
            m.queues.push(p.queues[1].clone());
            QueueId::from_index(m.queues.len() - 1)
        }
    };
    let mut switch_q = ms.clone();
    let qb = with_qb(&mut switch_q[0]);
    if let Op::SwitchQueueInstance { queue, .. } = &mut inst(&mut switch_q[0], "i1").op {
        *queue = qb;
    }
    assert!(has(&check_split(&p, &switch_q), 0, "instruction `i1`: switch_queue differs"));
    let mut wait = ms.clone();
    if let Op::SemWait { value, .. } = &mut inst(&mut wait[0], "i3").op {
        *value = 2;
    }
    assert!(has(&check_split(&p, &wait), 0, "instruction `i3`: operation differs"));
    let mut coll = ms.clone();
    let flag = &mut inst(&mut coll[0], "i0").collective;
    *flag = !*flag;
    assert!(has(&check_split(&p, &coll), 0, "instruction `i0`: engine, collective flag or queue differ"));
    let mut queue = ms;
    let qb = with_qb(&mut queue[0]);
    inst(&mut queue[0], "i0").queue = Some(qb);
    let v = check_split(&p, &queue);
    assert!(has(&v, 0, "instruction `i0`: engine, collective flag or queue differ"), "{v:#?}");
}

#[test]
fn over_sharing_a_wrong_view_and_a_wrong_usage_are_reported() {
    let (p, ms) = clean();
    // `u` is read on core 0 only: marking it shared is wrong.
    let mut over = ms.clone();
    let u = over[0].loc_by_name("u").unwrap();
    over[0].memlocs[u.index()].usage = Usage::Shared;
    let v = check_split(&p, &over);
    assert!(has(&v, 0, "location `u` is Shared, expected Internal"), "{v:#?}");
    // Core 2's view names core 1 as the producer.
    let mut view = ms.clone();
    let t = view[2].loc_by_name("t_in2").unwrap();
    view[2].memlocs[t.index()].remote_local_target = Some(RemoteLocalTarget { name: "t".into(), core: 1 });
    let v = check_split(&p, &view);
    assert!(has(&v, 2, "location `t_in2` has remote Some((\"t\", 1)), expected Some((\"t\", 0))"), "{v:#?}");
    // The producer's own copy of the cross-core `t` left internal.
    let mut owner = ms;
    let t = owner[0].loc_by_name("t").unwrap();
    owner[0].memlocs[t.index()].usage = Usage::Internal;
    assert!(has(&check_split(&p, &owner), 0, "location `t` is Internal, expected Shared"));
}

#[test]
fn an_unfenced_read_and_an_unfenced_edge_are_reported() {
    let (p, ms) = clean();
    // Core 2's `i4` no longer waits at its arrival: it may read `t` before core 0 writes it.
    let mut read = ms.clone();
    inst(&mut read[2], "i4").deps.clear();
    let v = check_split(&p, &read);
    assert!(has(&v, 2, "instruction `i4` reads `t`, written on core 0, but waits at no barrier"), "{v:#?}");
    // Core 0's arrivals no longer wait for their producers: nothing fences anything.
    let mut producer = ms;
    for i in producer[0].functions[0].insts.iter_mut().filter(|i| matches!(i.op, Op::CoreBarrier(_))) {
        i.deps.clear();
    }
    let v = check_split(&p, &producer);
    assert!(has(&v, 1, "instruction `i3` depends on `i2` of core 0 but waits at no barrier"), "{v:#?}");
    assert!(has(&v, 1, "instruction `i3` reads `t`, written on core 0"), "{v:#?}");
    assert!(has(&v, 2, "instruction `i4` reads `t`"), "{v:#?}");
}

#[test]
fn headers_and_refused_programs_are_reported() {
    let (p, ms) = clean();
    assert_eq!(check_split(&p, &ms[..2])[0].to_string(), "2 modules for lnc_size 3");
    let mut renamed = ms;
    renamed[1].attrs.neuron_core_id = Some(2);
    assert!(has(&check_split(&p, &renamed), 1, "expected `s` lnc 3 core 1"));
    // A program the split must refuse: `t` written on cores 0 and 1.
    let two = ir::parse(&PROGRAM.replace("-> u[0..16] core 0", "-> t[0..16] core 1")).unwrap();
    let v = check_split(&two, &renamed);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(v[0].to_string(), "program location `t` is written on cores 0 and 1");
}

/// A chain of `n` relus on two cores, handing off every 16 ops.
fn chain(n: usize) -> String {
    let mut s = String::from("module chain lnc 2\nloc x dram input i32[64]\nloc y dram output i32[64]\n");
    for k in 0..n {
        s.push_str(&format!("loc t{k} dram internal i32[64]\n"));
    }
    s.push_str("func main\n  args x, y\n  block entry\n");
    let mut prev = "x".to_string();
    for k in 0..n {
        let after = if k > 0 { format!(" after i{}", k - 1) } else { String::new() };
        s.push_str(&format!("    i{k} = dve relu {prev}[0..64] -> t{k}[0..64] core {}{after}\n", (k / 16) % 2));
        prev = format!("t{k}");
    }
    s.push_str(&format!("    i{n} = sp dma {prev}[0..64] -> y[0..64] core 0 after i{}\n", n - 1));
    s
}

#[test]
fn an_unfenced_handoff_at_instruction_99990_of_a_100k_chain_is_the_only_violation() {
    let p = ir::parse(&chain(100_000)).unwrap();
    let mut ms = split(&p).unwrap();
    assert_eq!(check_split(&p, &ms), vec![]);
    // The first op of the block of 16 holding op 99,990: it reads the other core's last tensor.
    let k = (99_990 / 16) * 16;
    let c = ((k / 16) % 2) as u32;
    let name = format!("i{k}");
    let x = inst(&mut ms[c as usize], &name);
    x.deps.retain(|d| d.kind != EdgeKind::Control);
    let v = check_split(&p, &ms);
    assert_eq!(v.len(), 2, "the read and the edge of `{name}`: {v:#?}");
    assert!(has(&v, c, &format!("instruction `{name}` depends on `i{}` of core {}", k - 1, 1 - c)), "{v:#?}");
    assert!(has(&v, c, &format!("instruction `{name}` reads `t{}`", k - 1)), "{v:#?}");
}

#[test]
fn a_copy_held_twice_on_its_own_core_is_reported() {
    let (p, mut ms) = clean();
    // Core 0 holds `i1` a second time (a second instruction of that name).
    let f = &mut ms[0].functions[0];
    let id = f.inst_by_name("i1").unwrap();
    let again = f.insts[id.index()].clone();
    f.push_inst(BlockId(0), again);
    let v = check_split(&p, &ms);
    assert!(has(&v, 0, "instruction `i1` is there more than once"), "{v:#?}");
}

#[test]
fn a_copy_lost_deep_in_a_large_split_is_reported() {
    // 8 cores x 20k instructions: the last program instruction of core 5
    // goes missing from core 5's module, and every other copy still matches.
    let mut cfg = GenConfig::new(3, 8, SizeClass::Small);
    cfg.ops = 160_000;
    cfg.max_elems = 64;
    let p = generate(&cfg);
    let mut ms = split(&p).unwrap();
    assert_eq!(check_split(&p, &ms), vec![], "the clean large split passes");
    let func = &p.functions[0];
    let last = func.insts.iter().rev().find(|x| x.core == Some(5)).unwrap().name.clone();
    let f = &mut ms[5].functions[0];
    let id = f.inst_by_name(&last).unwrap();
    f.insts[id.index()].name = "renamed".into();
    let v = check_split(&p, &ms);
    assert!(has(&v, 5, &format!("instruction `{last}` is missing")), "{v:#?}");
    assert!(has(&v, 5, "instruction `renamed` is neither the program's nor a barrier arrival"), "{v:#?}");
}
