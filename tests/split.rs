//! lnc_splitter: split modules run in random barrier-respecting orders give the
//! reference interpreter's outputs, and their structure follows DESIGN.md.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use lncsim_model::ir::{self, *};
use lncsim_model::program::interleave::{InterleaveError, run_interleaved, run_linked_interleaved};
use lncsim_model::program::{GenConfig, SizeClass, Values, generate, interpret, seeded_inputs};
use lncsim_model::split::{SplitError, split};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn split_modules_in_any_barrier_order_give_the_interpreters_outputs(
        cfg in common::gen_config(1..=8),
        input_seed in any::<u64>(),
        schedules in proptest::collection::vec(any::<u64>(), 3),
    ) {
        let p = generate(&cfg);
        let inputs = seeded_inputs(&p, input_seed);
        let golden = interpret(&p, &inputs).unwrap();
        let modules = split(&p).unwrap();
        prop_assert_eq!(modules.len(), cfg.cores as usize);
        for s in schedules {
            let got = run_interleaved(&modules, &inputs, s).unwrap();
            prop_assert_eq!(&got, &golden, "schedule seed {}", s);
        }
    }

    #[test]
    fn split_structure_follows_the_design(cfg in common::gen_config(1..=8)) {
        let p = generate(&cfg);
        let modules = split(&p).unwrap();
        let mut groups: BTreeMap<u32, (Vec<u32>, BTreeSet<u32>)> = BTreeMap::new();
        for (c, m) in modules.iter().enumerate() {
            let c = c as u32;
            prop_assert_eq!(&m.name, &p.name);
            prop_assert_eq!(m.attrs.neuron_core_id, Some(c));
            prop_assert!(m.verify().is_ok());
            let f = &m.functions[0];
            prop_assert!(f.insts.iter().all(|i| i.core == Some(c)), "off-core op kept");
            // Local barrier slots 0, 1, 2 ... in order, all flagged.
            let barriers: Vec<&CoreBarrier> = f.order().filter_map(|i| match &f.insts[i.index()].op {
                Op::CoreBarrier(b) => Some(b),
                _ => None,
            }).collect();
            prop_assert!(barriers.iter().all(|b| b.flagged));
            let ids: Vec<u32> = barriers.iter().map(|b| b.id).collect();
            prop_assert_eq!(ids, (0..f.insts.iter().filter(|i| matches!(i.op, Op::CoreBarrier(_))).count() as u32).collect::<Vec<_>>());
            for i in &f.insts {
                if let Op::CoreBarrier(b) = &i.op {
                    let e = groups.entry(b.group).or_insert_with(|| (b.participants.clone(), BTreeSet::new()));
                    prop_assert_eq!(&e.0, &b.participants);
                    prop_assert!(e.1.insert(c), "core {} arrives twice at group {}", c, b.group);
                }
            }
            // Every view names a shared location of its producer.
            for l in &m.memlocs {
                if let Some(r) = &l.remote_local_target {
                    prop_assert_eq!(l.usage, Usage::Shared);
                    let target = &modules[r.core as usize];
                    let t = target.loc_by_name(&r.name).expect("remote target exists");
                    prop_assert_eq!(target.loc(t).usage, Usage::Shared);
                }
            }
        }
        // Every group is complete: each participant arrives exactly once.
        for (g, (parts, seen)) in groups {
            prop_assert_eq!(parts.iter().copied().collect::<BTreeSet<_>>(), seen, "group {}", g);
        }
    }
}

#[test]
fn cross_core_handoffs_and_collectives_occur_in_default_programs() {
    let p = generate(&GenConfig::new(7, 4, SizeClass::Small));
    let modules = split(&p).unwrap();
    let views = modules.iter().flat_map(|m| &m.memlocs).filter(|l| l.remote_local_target.is_some()).count();
    assert!(views > 0, "no handoff in the default program");
    assert!(p.functions[0].insts.iter().any(|i| i.collective), "no all-reduce in the default program");
}

#[test]
fn one_core_split_keeps_the_program() {
    let p = generate(&GenConfig::new(3, 1, SizeClass::Small));
    let [m] = split(&p).unwrap().try_into().unwrap();
    assert_eq!(m.functions[0].insts.len(), p.functions[0].insts.len());
    assert!(m.memlocs.iter().all(|l| l.remote_local_target.is_none()));
}

#[test]
fn split_rejects_what_it_cannot_split() {
    let unbound = ir::parse("module m lnc 2\nloc x dram input i32[4]\nloc y dram internal i32[4]\nfunc f\n  block b\n    a = dve relu x[0..4] -> y[0..4]\n").unwrap();
    assert_eq!(split(&unbound), Err(SplitError::Unbound("a".into())));
    let two_writers = ir::parse("module m lnc 2\nloc x dram input i32[4]\nloc y dram internal i32[4]\nfunc f\n  block b\n    a = dve relu x[0..4] -> y[0..4] core 0\n    b = dve relu x[0..4] -> y[0..4] core 1\n").unwrap();
    assert_eq!(split(&two_writers), Err(SplitError::MultipleWriters("y".into())));
    let placed = ir::parse("module m lnc 2\nloc x dram input i32[4]\nloc t dram internal i32[4] @0x1000\nloc o dram output i32[4]\nfunc f\n  block b\n    a = dve relu x[0..4] -> t[0..4] core 0\n    b = dve relu t[0..4] -> o[0..4] core 1 after a\n").unwrap();
    let e = split(&placed).unwrap_err();
    assert_eq!(e, SplitError::PlacedCrossCore { loc: "t".into(), address: 0x1000, producer: 0, reader: 1 });
    assert!(e.to_string().contains("drop its `@` address"), "{e}");
    let out_read = ir::parse("module m lnc 2\nloc x dram input i32[4]\nloc o dram output i32[4]\nloc y dram internal i32[4]\nfunc f\n  block b\n    a = dve relu x[0..4] -> o[0..4] core 0\n    b = dve relu o[0..4] -> y[0..4] core 1 after a\n").unwrap();
    assert!(matches!(split(&out_read), Err(SplitError::OutputReadCrossCore { .. })));
}

#[test]
fn the_interleaving_oracle_reports_a_missing_barrier_as_wrong_outputs_or_deadlock() {
    // Remove one consumer's barrier arrival: the group can never complete.
    let p = generate(&GenConfig::new(11, 3, SizeClass::Small));
    let mut modules = split(&p).unwrap();
    let (c, id) = modules
        .iter()
        .enumerate()
        .find_map(|(c, m)| m.functions[0].insts.iter().position(|i| matches!(i.op, Op::CoreBarrier(_))).map(|i| (c, i)))
        .expect("a barrier");
    let f = &mut modules[c].functions[0];
    for b in &mut f.blocks {
        b.insts.retain(|&i| i.index() != id);
    }
    for i in &mut f.insts {
        i.deps.retain(|d| d.inst.index() != id);
    }
    f.canonicalize();
    let inputs = seeded_inputs(&p, 0);
    assert!(matches!(run_interleaved(&modules, &inputs, 0), Err(InterleaveError::Deadlock(_))));
}

/// Core 0 doubles x into t; core 1 copies t (through its view `t_in1`) to out.
const HANDOFF: &str = "module h lnc 2
loc x dram input i32[16]
loc t dram internal i32[16]
loc out dram output i32[16]

func main
  block entry
    i0 = dve add x[0..16], x[0..16] -> t[0..16] core 0
    i1 = act relu t[0..16] -> out[0..16] core 1 after i0
";

fn handoff() -> (Vec<Module>, Values, Values) {
    let p = ir::parse(HANDOFF).unwrap();
    let inputs = seeded_inputs(&p, 1);
    let golden = interpret(&p, &inputs).unwrap();
    let modules = split(&p).unwrap();
    assert_eq!(run_interleaved(&modules, &inputs, 0), Ok(golden.clone()), "the clean split passes");
    (modules, inputs, golden)
}

fn view_mut(m: &mut Module) -> &mut MemoryLocation {
    let id = m.loc_by_name("t_in1").unwrap();
    &mut m.memlocs[id.index()]
}

#[test]
fn the_interleaving_oracle_computes_wrong_outputs_for_a_view_of_the_wrong_tensor() {
    let (mut modules, inputs, golden) = handoff();
    // Core 1's view names core 0's `x` instead of `t`: out = relu(x), not relu(x + x).
    view_mut(&mut modules[1]).remote_local_target = Some(RemoteLocalTarget { name: "x".into(), core: 0 });
    let got = run_interleaved(&modules, &inputs, 0).unwrap();
    let relu_x: Vec<i32> = inputs["x"].iter().map(|&v| v.max(0)).collect();
    assert_eq!(got["out"], relu_x);
    assert_ne!(got["out"], golden["out"]);
    // A view that lost its producer reads a location nobody writes: refused before running.
    view_mut(&mut modules[1]).remote_local_target = None;
    let e = run_interleaved(&modules, &inputs, 0).unwrap_err();
    assert!(matches!(e, InterleaveError::Interp { core: 1, .. }) && e.to_string().contains("t_in1"), "{e}");
}

#[test]
fn the_interleaving_oracle_reports_a_dangling_view_a_barrier_mismatch_and_a_duplicate_output() {
    let (modules, inputs, _) = handoff();
    let mut dangling = modules.clone();
    view_mut(&mut dangling[1]).remote_local_target = Some(RemoteLocalTarget { name: "nope".into(), core: 0 });
    assert_eq!(
        run_interleaved(&dangling, &inputs, 0),
        Err(InterleaveError::MissingRemote { core: 1, view: "t_in1".into(), name: "nope".into(), target: 0 })
    );
    // Core 1's arrival claims it is alone at the barrier; core 0's lists both.
    let mut alone = modules.clone();
    let group = alone[1].functions[0]
        .insts
        .iter_mut()
        .find_map(|i| match &mut i.op {
            Op::CoreBarrier(b) => {
                b.participants = vec![1];
                Some(b.group)
            }
            _ => None,
        })
        .unwrap();
    for seed in 0..8 {
        assert_eq!(run_interleaved(&alone, &inputs, seed), Err(InterleaveError::BarrierMismatch(group)), "seed {seed}");
    }
    // Core 0 declares `out` as an output too and writes it: two cores write one output.
    let mut twice = modules;
    let out = twice[1].loc(twice[1].loc_by_name("out").unwrap()).clone();
    let out0 = twice[0].add_loc(out);
    let f = &mut twice[0].functions[0];
    let t = f.insts[0].write().unwrap();
    let mut w = Inst::new(
        "w_out",
        Engine::Act,
        Op::Compute {
            kind: ComputeKind::Relu,
            srcs: [t].into_iter().collect(),
            dst: AccessPattern { loc: out0, offset: 0, len: 16 },
        },
    );
    w.core = Some(0);
    w.deps = [Dep { inst: InstId(0), kind: EdgeKind::Data }].into_iter().collect();
    let entry = BlockId(0);
    f.push_inst(entry, w);
    assert_eq!(run_interleaved(&twice, &inputs, 0), Err(InterleaveError::DuplicateOutput("out".into())));
}

#[test]
fn the_interleaving_oracle_takes_an_output_from_the_core_that_writes_it() {
    // Core 0 declares `out` too (hand-written modules sharing one header) but only core 1 writes it.
    let (mut modules, inputs, golden) = handoff();
    let out = modules[1].loc(modules[1].loc_by_name("out").unwrap()).clone();
    modules[0].add_loc(out);
    assert_eq!(run_interleaved(&modules, &inputs, 0), Ok(golden));
}

#[test]
fn the_interleaving_oracle_finds_a_views_target_by_core_id_in_any_module_order() {
    let (mut modules, inputs, golden) = handoff();
    modules.reverse();
    for seed in 0..4 {
        assert_eq!(run_interleaved(&modules, &inputs, seed), Ok(golden.clone()), "seed {seed}");
    }
    // Core 1's view (listed first) naming a tensor core 0 lacks is still dangling.
    let id = modules[0].loc_by_name("t_in1").unwrap();
    modules[0].memlocs[id.index()].remote_local_target = Some(RemoteLocalTarget { name: "nope".into(), core: 0 });
    assert_eq!(
        run_interleaved(&modules, &inputs, 0),
        Err(InterleaveError::MissingRemote { core: 0, view: "t_in1".into(), name: "nope".into(), target: 0 })
    );
}

#[test]
fn a_linked_module_runs_in_dependency_respecting_orders_and_a_lost_edge_shows() {
    use lncsim_model::link::link;
    use lncsim_model::link::pipeline::per_core_modules;
    let p = generate(&GenConfig::new(3, 4, SizeClass::Small));
    let inputs = seeded_inputs(&p, 1);
    let golden = interpret(&p, &inputs).unwrap();
    let linked = link(&per_core_modules(&p).unwrap()).unwrap();
    for seed in 0..16 {
        assert_eq!(run_linked_interleaved(&linked, &inputs, seed).unwrap(), golden, "seed {seed}");
    }
    // The linker "forgets" every dependency edge of the core functions.
    let mut dropped = linked.clone();
    for f in dropped.functions.iter_mut().filter(|f| f.attrs.neuron_core_id.is_some()) {
        f.insts.iter_mut().for_each(|i| i.deps.clear());
    }
    // Running each core function in program order (the sequential interpreter) is blind to it.
    assert_eq!(interpret(&dropped, &inputs).unwrap(), interpret(&linked, &inputs).unwrap());
    let differs = (0..32).filter(|&seed| run_linked_interleaved(&dropped, &inputs, seed).unwrap() != golden).count();
    assert!(differs > 0, "no seed out of 32 exposed the lost edges");
}

#[test]
fn a_linked_barrier_group_that_never_completes_is_a_deadlock() {
    use lncsim_model::link::link;
    use lncsim_model::link::pipeline::per_core_modules;
    let p = generate(&GenConfig::new(3, 4, SizeClass::Small));
    let mut linked = link(&per_core_modules(&p).unwrap()).unwrap();
    // Core 3's completion barrier moves to a group core 2 never arrives at.
    let f = linked.functions.iter_mut().find(|f| f.attrs.neuron_core_id == Some(3)).unwrap();
    for i in &mut f.insts {
        if let Op::CoreBarrier(b) = &mut i.op
            && i.name.starts_with("cb_return_")
        {
            b.group = 999;
            b.participants = vec![2, 3];
        }
    }
    let r = run_linked_interleaved(&linked, &seeded_inputs(&p, 1), 0);
    assert!(matches!(&r, Err(InterleaveError::Deadlock(c)) if c.contains(&3)), "{r:?}");
}

#[test]
fn linked_generated_programs_give_the_interpreters_outputs_in_seeded_orders() {
    use lncsim_model::link::link;
    use lncsim_model::link::pipeline::per_core_modules;
    for seed in 0..24u64 {
        let cores = 1 + (seed % 8) as u32;
        let p = generate(&GenConfig::new(seed, cores, SizeClass::Small));
        let inputs = seeded_inputs(&p, seed);
        let golden = interpret(&p, &inputs).unwrap();
        let linked = link(&per_core_modules(&p).unwrap()).unwrap();
        for s in 0..3 {
            assert_eq!(run_linked_interleaved(&linked, &inputs, s).unwrap(), golden, "program seed {seed}, order {s}");
        }
    }
}

/// A return ends its core's run, as it ends the interpreter's: what follows it never runs.
#[test]
fn the_interleaving_oracle_stops_a_core_at_its_return() {
    let p = ir::parse(
        "module r lnc 2
loc x dram input i32[16]
loc out dram output i32[16]
loc out2 dram output i32[16]

func main
  block entry
    i0 = act relu x[0..16] -> out[0..16] core 0
    i1 = act relu x[0..16] -> out2[0..16] core 1
    r0 = sp return core 0
    i2 = dve add x[0..16], x[0..16] -> out[0..16] core 0
",
    )
    .unwrap();
    let inputs = seeded_inputs(&p, 3);
    let golden = interpret(&p, &inputs).unwrap();
    let modules = split(&p).unwrap();
    assert_eq!(golden["out"], inputs["x"].iter().map(|&v| v.max(0)).collect::<Vec<i32>>(), "i2 never runs");
    for seed in 0..4 {
        assert_eq!(run_interleaved(&modules, &inputs, seed), Ok(golden.clone()), "seed {seed}");
    }
}

/// More cores than one 64-bit word of arrival bits: every group still counts
/// each core's arrival in its own bit (an allreduce over all 70 cores).
#[test]
fn the_interleaving_oracle_counts_arrivals_past_64_cores() {
    for seed in 0..2 {
        let p = generate(&GenConfig::new(seed, 70, SizeClass::Small));
        let inputs = seeded_inputs(&p, seed);
        let golden = interpret(&p, &inputs).unwrap();
        let modules = split(&p).unwrap();
        assert!(
            modules
                .iter()
                .flat_map(|m| &m.functions[0].insts)
                .any(|i| matches!(&i.op, Op::CoreBarrier(b) if b.participants.len() == 70)),
            "seed {seed}: a barrier over all 70 cores"
        );
        assert_eq!(run_interleaved(&modules, &inputs, seed), Ok(golden), "seed {seed}");
    }
}

#[test]
fn the_interleaving_oracle_refuses_a_second_arrival_of_one_core() {
    let (modules, inputs, _) = handoff();
    let group_of = |m: &Module| {
        m.functions[0]
            .insts
            .iter()
            .find_map(|i| match &i.op {
                Op::CoreBarrier(b) => Some(b.group),
                _ => None,
            })
            .unwrap()
    };
    let group = group_of(&modules[0]);
    // Core 0 arrives at the group twice: refused whatever the order.
    let mut twice = modules;
    let f = &mut twice[0].functions[0];
    let k = f.insts.iter().position(|i| matches!(i.op, Op::CoreBarrier(_))).unwrap();
    let mut again = f.insts[k].clone();
    again.name = "cb_again".into();
    again.deps.clear();
    f.insts.push(again);
    let id = InstId::from_index(f.insts.len() - 1);
    f.blocks.last_mut().unwrap().insts.push(id);
    f.canonicalize();
    for seed in 0..8 {
        let e = run_interleaved(&twice, &inputs, seed).unwrap_err();
        assert_eq!(e, InterleaveError::BarrierArrival { group, core: 0 }, "seed {seed}");
    }
}

#[test]
fn the_linked_oracle_never_completes_a_group_on_one_core_twice() {
    use lncsim_model::link::link;
    let (modules, inputs, golden) = handoff();
    let linked = link(&modules).unwrap();
    assert_eq!(run_linked_interleaved(&linked, &inputs, 0).unwrap(), golden);
    let core0 = linked.functions.iter().position(|f| f.attrs.neuron_core_id == Some(0)).unwrap();
    let handoff_barrier = |f: &Function| {
        f.insts.iter().position(|i| matches!(i.op, Op::CoreBarrier(_)) && !i.name.starts_with("cb_return_")).unwrap()
    };
    // A second arrival of core 0 at the same group, from another engine: it must not
    // stand in for core 1, so no order completes the group without core 1.
    let mut twice = linked;
    let f = &mut twice.functions[core0];
    let k = handoff_barrier(f);
    let mut again = f.insts[k].clone();
    again.name = "cb_again".into();
    again.engine = Engine::Act;
    again.deps.clear();
    f.insts.push(again);
    let id = InstId::from_index(f.insts.len() - 1);
    f.blocks.last_mut().unwrap().insts.push(id);
    f.canonicalize();
    let mut refused = 0;
    for seed in 0..16 {
        match run_linked_interleaved(&twice, &inputs, seed) {
            Err(InterleaveError::BarrierArrival { core: 0, .. }) => refused += 1,
            Err(InterleaveError::Deadlock(_)) => {} // core 1 came between: the extra arrival waits alone
            other => panic!("seed {seed}: a duplicate arrival passed: {other:?}"),
        }
    }
    assert!(refused > 0, "no order of 16 met the second arrival before core 1");
}

/// A program whose own barrier uses group 0 and whose handoff `t` needs one too.
const OWN_GROUP: &str = "module bg lnc 2
loc x dram input i32[8]
loc t dram internal i32[8]
loc out dram output i32[8]
func main
  args x, out
  block entry
    i0 = act relu x[0..8] -> t[0..8] core 0
    cb1 = sp barrier group 0 cores 0, 1 id 0 flagged core 0
    b1 = sp barrier group 0 cores 0, 1 id 1 flagged core 1
    i1 = dve relu t[0..8] -> out[0..8] core 1 after i0
";

#[test]
fn the_splits_handoff_groups_and_names_avoid_the_programs_own() {
    let p = ir::parse(OWN_GROUP).unwrap();
    let modules = split(&p).unwrap();
    let mut groups: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for m in &modules {
        m.verify().unwrap();
        for i in &m.functions[0].insts {
            if let Op::CoreBarrier(b) = &i.op {
                groups.entry(b.group).or_default().push(i.name.to_string());
            }
        }
    }
    // Group 0 is the program's (two arrivals); the handoff's is group 1, named
    // `cb1_1` on both cores, since the program already has a `cb1`.
    assert_eq!(groups.keys().copied().collect::<Vec<_>>(), vec![0, 1], "{groups:?}");
    assert_eq!(groups[&1], vec!["cb1_1".to_string(), "cb1_1".to_string()]);
    let inputs = seeded_inputs(&p, 1);
    let golden = interpret(&p, &inputs).unwrap();
    for seed in 0..4 {
        assert_eq!(run_interleaved(&modules, &inputs, seed), Ok(golden.clone()), "seed {seed}");
    }
}

/// One core: a DMA-free queue declares the semaphore an `act` signal and a
/// `dve` wait share, which orders `r` after `i`.
const SEMS: &str = "module sem lnc 1
queue q dynamic owner sp sems 1
loc x dram input i32[8]
loc t dram internal i32[8]
loc out dram output i32[8]
func main
  args x, out
  block entry
    i = act relu x[0..8] -> t[0..8]
    s = act sem_signal 0
    w = dve sem_wait 0 value 1
    r = dve relu t[0..8] -> out[0..8]
";

#[test]
fn a_core_that_uses_semaphores_keeps_every_queue_of_the_pool() {
    let p = ir::parse(SEMS).unwrap();
    let [m] = split(&p).unwrap().try_into().unwrap();
    assert_eq!(m.queues.iter().map(|q| (q.name.as_str(), q.semaphores)).collect::<Vec<_>>(), vec![("q", 1)]);
}

#[test]
fn the_linked_order_oracle_waits_for_semaphores_and_sees_a_lost_wait() {
    use lncsim_model::link::link;
    use lncsim_model::link::pipeline::per_core_modules;
    let p = ir::parse(SEMS).unwrap();
    let inputs = seeded_inputs(&p, 1);
    let golden = interpret(&p, &inputs).unwrap();
    let linked = link(&per_core_modules(&p).unwrap()).unwrap();
    for seed in 0..32 {
        assert_eq!(run_linked_interleaved(&linked, &inputs, seed).unwrap(), golden, "seed {seed}");
    }
    // The wait lost (a no-op signal in its place): `r` may now run before `i`.
    let mut lost = linked.clone();
    for f in lost.functions.iter_mut() {
        for i in f.insts.iter_mut().filter(|i| i.name == "w") {
            i.op = Op::SemSignal { sem: 0 };
        }
    }
    let differs = (0..32).filter(|&seed| run_linked_interleaved(&lost, &inputs, seed).unwrap() != golden).count();
    assert!(differs > 0, "no seed out of 32 ran `r` before `i`");
    // A wait for a value never reached is a deadlock.
    let mut never = linked;
    for f in never.functions.iter_mut() {
        for i in f.insts.iter_mut().filter(|i| i.name == "w") {
            i.op = Op::SemWait { sem: 0, value: 2 };
        }
    }
    assert!(matches!(run_linked_interleaved(&never, &inputs, 0), Err(InterleaveError::Deadlock(_))));
}

#[test]
fn a_program_group_at_u32_max_splits_when_no_handoff_needs_a_group_and_is_refused_when_one_does() {
    let own = "module g lnc 2\nloc x dram input i32[8]\nloc y dram output i32[8]\nloc z dram output i32[8]\nfunc main\n  args x, y, z\n  block entry\n    a = dve relu x[0..8] -> y[0..8] core 0\n    b0 = sp barrier group 4294967295 cores 0, 1 id 900 core 0 after a\n    b1 = sp barrier group 4294967295 cores 0, 1 id 901 core 1\n    c = dve relu x[0..8] -> z[0..8] core 1 after b1\n";
    let p = ir::parse(own).unwrap();
    assert!(split(&p).is_ok(), "{:?}", split(&p));
    let handoff = own
        .replace("c = dve relu x[0..8] -> z[0..8] core 1 after b1", "c = dve relu y[0..8] -> z[0..8] core 1 after b1")
        .replace("loc y dram output", "loc y dram internal");
    let p = ir::parse(&handoff).unwrap();
    assert!(matches!(split(&p), Err(SplitError::GroupsExhausted { handoffs: 1, .. })), "{:?}", split(&p));
}
