#![allow(clippy::unwrap_used)]
//! Every checker fed a broken input reports it.

mod support;

use lncsim_model::codegen::record::{FLAG_SIGNAL, Opcode};
use lncsim_model::ir::Engine;
use lncsim_model::marks::Recorder;
use lncsim_sim::testkit::PlaceOptions;
use lncsim_sim::{Illegal, Outcome, RaceKind, SimConfig, Violation, WaitFor};
use support::*;

#[test]
fn two_live_tensors_placed_over_each_other_are_a_clobber() {
    // b (relu of a) is placed over a, which the matmul still reads.
    let opts = PlaceOptions { overlap: Some(("b".into(), "a".into())), ..PlaceOptions::default() };
    let s = stage_with(&module(ONE_CORE), 3, &opts);
    let rec = Recorder::start();
    let (report, out) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.ownership.clobber") > 0);
    let clobbers: Vec<&Violation> = report.of_kind("clobber").collect();
    assert!(!clobbers.is_empty(), "{report}");
    let Violation::Clobber { reader, owner, writer, .. } = clobbers[0] else { unreachable!() };
    assert_eq!((reader.engine, reader.var.as_deref()), (Engine::Pe, Some("a")), "{report}");
    assert_eq!(owner, "core0:b");
    let writer = writer.as_ref().unwrap();
    assert_eq!((writer.engine, writer.var.as_deref()), (Engine::Act, Some("b")));
    assert_ne!(out, s.golden, "the clobber also corrupts the output");
    assert!(clobbers[0].to_string().starts_with("clobber at 0x"));
}

#[test]
fn a_barrier_id_duplicated_across_cores_is_a_slot_collision() {
    let opts = PlaceOptions { skip_barrier_renumbering: true, ..PlaceOptions::default() };
    let s = stage_with(&module(HANDOFF), 1, &opts);
    let rec = Recorder::start();
    let (report, _) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.barrier.slot_collision") > 0);
    let v: Vec<&Violation> = report.of_kind("slot-collision").collect();
    assert_eq!(v.len(), 1, "{report}");
    let Violation::SlotCollision { slot, holder, arrival } = v[0] else { unreachable!() };
    assert_eq!(*slot, 0);
    assert_ne!(holder.core, arrival.core);
    assert_eq!((holder.opcode, arrival.opcode), (Some(Opcode::Barrier), Some(Opcode::Barrier)));
    // Renumbered, the same program is clean.
    let (clean, _) = stage(&module(HANDOFF), 1).run(SimConfig::seeded(0));
    assert!(clean.passed(), "{clean}");
}

#[test]
fn a_shared_tensor_unequal_across_cores_is_reported() {
    let opts = PlaceOptions { unsync_shared: Some(("t".into(), 64)), ..PlaceOptions::default() };
    let s = stage_with(&module(HANDOFF), 1, &opts);
    let rec = Recorder::start();
    let (report, out) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.equalize.unequal_var") > 0);
    assert!(rec.hits("sim.equalize.unequal_access") > 0);
    let v: Vec<&Violation> = report.of_kind("unequal").collect();
    assert_eq!(v.len(), 1, "{report}");
    let Violation::Unequal { name, first, other } = v[0] else { unreachable!() };
    assert_eq!(name, "t");
    assert_eq!((first.0, other.0), (0, 1));
    assert_eq!(other.1, first.1 + 64);
    let access: Vec<&Violation> = report.of_kind("unequal-access").collect();
    assert!(
        matches!(access[0], Violation::UnequalAccess { site, .. } if site.core == 1 && site.var.as_deref() == Some("t"))
    );
    assert_ne!(out, s.golden);
}

#[test]
fn a_dropped_semaphore_signal_is_a_deadlock_naming_the_waiter() {
    let s = stage(&module(ONE_CORE), 3);
    // DVE's first signalling record (the add chain's last Add) loses its signal.
    patch_record(&s.device, &s.images[0], Engine::Dve, |r| r.flags & FLAG_SIGNAL != 0, |r| r.flags &= !FLAG_SIGNAL);
    let rec = Recorder::start();
    let (report, _) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.deadlock") > 0);
    assert_eq!(report.outcome, Outcome::Deadlock);
    let Some(Violation::Deadlock { waiters }) = report.of_kind("deadlock").next() else { panic!("{report}") };
    let act = waiters.iter().find(|w| w.site.engine == Engine::Act).unwrap();
    assert_eq!(act.waits_for, WaitFor::Semaphore { sem: Engine::Dve.index() as u8, value: 1, count: 0 });
    assert!(act.could_signal.iter().any(|c| c.site.engine == Engine::Dve), "{act}");
    let line = report.of_kind("deadlock").next().unwrap().to_string();
    // Engine semaphore 2 is DVE's dependency signal, named so (not `sem 2`).
    assert!(line.contains("core 0 Act") && line.contains("waits for dve's dependency signal >= 1 (is 0)"), "{line}");
}

/// A core stuck before its barrier: the other core's wait names the group,
/// who arrived, who is missing, and the stuck core's engine that still holds
/// the arrival (and what it waits for itself).
#[test]
fn a_barrier_nobody_reaches_names_the_missing_core_and_its_stuck_arriver() {
    let s = stage(&module(HANDOFF), 1);
    // Core 0's add loses its signal, so core 0 never reaches the handoff barrier.
    patch_record(&s.device, &s.images[0], Engine::Dve, |r| r.flags & FLAG_SIGNAL != 0, |r| r.flags &= !FLAG_SIGNAL);
    let (report, _) = s.run(SimConfig::seeded(0));
    assert_eq!(report.outcome, Outcome::Deadlock, "{report}");
    let Some(Violation::Deadlock { waiters }) = report.of_kind("deadlock").next() else { panic!("{report}") };
    let at_barrier: Vec<_> = waiters.iter().filter(|w| matches!(w.waits_for, WaitFor::Barrier { .. })).collect();
    assert_eq!(at_barrier.len(), 1, "{report}");
    let w = at_barrier[0];
    assert_eq!(w.site.core, 1, "{report}");
    let WaitFor::Barrier { arrived, missing, .. } = &w.waits_for else { unreachable!() };
    assert_eq!((arrived.as_slice(), missing.as_slice()), (&[1][..], &[0][..]), "{report}");
    // Core 0's arriving engine is still there, itself waiting on a semaphore.
    assert_eq!(w.could_signal.len(), 1, "{report}");
    let arriver = &w.could_signal[0];
    assert_eq!(arriver.site.core, 0, "{report}");
    assert!(matches!(arriver.doing, lncsim_sim::Doing::WaitSem { .. }), "{report}");
    assert_eq!(arriver.signals_left, None);
    assert!(!w.is_root(), "{report}");
}

#[test]
fn a_signal_nobody_can_send_says_so() {
    let s = stage(&module(ONE_CORE), 3);
    // SP's last DMA waits for POOL's reduce; POOL's only signal is dropped.
    patch_record(&s.device, &s.images[0], Engine::Pool, |r| r.flags & FLAG_SIGNAL != 0, |r| r.flags &= !FLAG_SIGNAL);
    let (report, _) = s.run(SimConfig::seeded(0));
    let Some(Violation::Deadlock { waiters }) = report.of_kind("deadlock").next() else { panic!("{report}") };
    assert_eq!(waiters.len(), 1, "{report}");
    assert_eq!(waiters[0].site.engine, Engine::Sp);
    assert!(waiters[0].could_signal.is_empty());
    assert!(waiters[0].to_string().contains("nobody left could signal it"));
}

#[test]
fn a_missing_dependency_between_engines_is_a_race_naming_both_instructions() {
    let s = stage(&module(ONE_CORE), 3);
    // ACT's relu forgets to wait for DVE's add.
    patch_record(&s.device, &s.images[0], Engine::Act, |r| r.opcode == Opcode::Relu, |r| r.waits = [None; 2]);
    for seed in 0..4 {
        let rec = Recorder::start();
        let (report, _) = s.run(SimConfig::seeded(seed).with_jitter());
        assert!(rec.hits("sim.race") > 0);
        let races: Vec<&Violation> = report.of_kind("race").collect();
        let named = races.iter().any(|v| {
            matches!(v, Violation::Race { kind, first, second, .. }
                if matches!(kind, RaceKind::WriteRead | RaceKind::ReadWrite)
                && [first.engine, second.engine].contains(&Engine::Dve)
                && [first.engine, second.engine].contains(&Engine::Act)
                && first.var.as_deref() == Some("a") && second.var.as_deref() == Some("a"))
        });
        assert!(named, "seed {seed}: {report}");
    }
}

/// A return before the end of its stream ends the engine with work left:
/// the execution check reports the records that never ran.
#[test]
fn a_return_with_records_after_it_is_reported() {
    let s = stage(&module(ONE_CORE), 3);
    patch_record(&s.device, &s.images[0], Engine::Dve, |r| r.opcode == Opcode::Add, |r| r.opcode = Opcode::Return);
    let rec = Recorder::start();
    let (report, _) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.unreached") > 0);
    let v = report.of_kind("illegal").next().unwrap_or_else(|| panic!("{report}"));
    assert!(
        matches!(v, Violation::Illegal { site, reason: Illegal::Unreached(n) } if site.engine == Engine::Dve && *n >= 1),
        "{v}"
    );
    assert!(v.to_string().contains("records after it, which never run"), "{v}");
    // The unpatched stream ends in its return: nothing reported.
    let clean = stage(&module(ONE_CORE), 3);
    let (report, _) = clean.run(SimConfig::seeded(0));
    assert_eq!(report.of_kind("illegal").count(), 0, "{report}");
}

/// Past `max_violations`, the first violation of each kind is still kept:
/// a flood of one kind cannot hide another from its family's check.
#[test]
fn the_cap_keeps_the_first_violation_of_every_kind() {
    let s = stage(&module(ONE_CORE), 3);
    patch_record(&s.device, &s.images[0], Engine::Act, |r| r.opcode == Opcode::Relu, |r| r.waits = [None; 2]);
    patch_record(
        &s.device,
        &s.images[0],
        Engine::Pool,
        |r| r.opcode == Opcode::Reduce,
        |r| r.opcode = Opcode::PseudoAddN,
    );
    let full = s.run(SimConfig::seeded(0).with_jitter()).0;
    let kinds = |r: &lncsim_sim::SimReport| {
        let mut k: Vec<&str> = r.violations.iter().map(|v| v.kind()).collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    let all = kinds(&full);
    assert!(all.contains(&"race") && all.contains(&"illegal") && all.len() >= 2, "{full}");
    let capped = s.run(SimConfig { max_violations: 1, ..SimConfig::seeded(0).with_jitter() }).0;
    assert_eq!(kinds(&capped), all, "{capped}");
    assert_eq!(capped.violations.len(), all.len());
    assert_eq!(capped.violations.len() as u64 + capped.violations_dropped, full.violations.len() as u64);
    // Cap 2 on illegal, race, race, deadlock: the second race is the only one
    // past the cap of a kind already kept, so it alone is dropped.
    let order: Vec<&str> = full.violations.iter().map(|v| v.kind()).collect();
    assert_eq!(order, ["illegal", "race", "race", "deadlock"], "{full}");
    let two = s.run(SimConfig { max_violations: 2, ..SimConfig::seeded(0).with_jitter() }).0;
    let kept: Vec<&str> = two.violations.iter().map(|v| v.kind()).collect();
    assert_eq!(kept, ["illegal", "race", "deadlock"], "{two}");
    assert_eq!(two.violations_dropped, 1);
}

#[test]
fn an_unexpanded_pseudo_instruction_is_illegal_and_halts_its_engine() {
    let s = stage(&module(ONE_CORE), 3);
    patch_record(
        &s.device,
        &s.images[0],
        Engine::Pool,
        |r| r.opcode == Opcode::Reduce,
        |r| r.opcode = Opcode::PseudoAddN,
    );
    let rec = Recorder::start();
    let (report, _) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.illegal") > 0);
    let v = report.of_kind("illegal").next().unwrap();
    assert!(
        matches!(v, Violation::Illegal { site, reason: Illegal::Pseudo(Opcode::PseudoAddN) } if site.engine == Engine::Pool)
    );
    assert!(report.cores[0].engines[Engine::Pool.index()].halted);
    // SP waited for the reduce: the deadlock names the halted engine as the one that would have signalled.
    let line = report.of_kind("deadlock").next().unwrap().to_string();
    assert!(
        line.contains("core 0 Pool #0") && line.contains("halted on an illegal record; 1 signal(s) left"),
        "{line}"
    );
}

#[test]
fn a_relocation_bug_changes_what_runs() {
    let s = stage(&module(ONE_CORE), 3);
    // The relu's source is relocated 4 bytes too far: outside var `a`.
    patch_record(
        &s.device,
        &s.images[0],
        Engine::Act,
        |r| r.opcode == Opcode::Relu,
        |r| r.ops[1] = lncsim_model::codegen::record::Operand::physical(r.ops[1].pa() + 4, r.ops[1].c),
    );
    let rec = Recorder::start();
    let (report, out) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.ownership.out_of_var") > 0);
    let v: Vec<&Violation> = report.of_kind("out-of-var").collect();
    assert_eq!(v.len(), 1, "{report}");
    assert!(matches!(v[0], Violation::OutOfVar { site, .. } if site.var.as_deref() == Some("a")));
    assert_ne!(out, s.golden);
}

#[test]
fn the_event_budget_fails_a_long_run() {
    let s = stage(&module(ONE_CORE), 3);
    let cfg = SimConfig { events_max: 5, ..SimConfig::seeded(0) };
    let rec = Recorder::start();
    let (report, _) = s.run(cfg);
    assert!(rec.hits("sim.event_budget") > 0);
    assert_eq!(report.outcome, Outcome::EventBudget);
    assert!(matches!(report.violations[..], [Violation::EventBudget { events_max: 5, .. }]));
}

#[test]
fn an_access_outside_every_var_is_unmapped_and_skipped() {
    let s = stage(&module(ONE_CORE), 3);
    patch_record(
        &s.device,
        &s.images[0],
        Engine::Act,
        |r| r.opcode == Opcode::Relu,
        |r| r.ops[0] = lncsim_model::codegen::record::Operand::physical(0x10, r.ops[0].c),
    );
    let rec = Recorder::start();
    let (report, out) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.unmapped") > 0);
    let v: Vec<&Violation> = report.of_kind("unmapped").collect();
    assert!(matches!(v[..], [Violation::Unmapped { pa: 0x10, len: 64, .. }]), "{report}");
    assert_ne!(out, s.golden, "the relu's result went nowhere");
}

#[test]
fn a_barrier_arrival_that_disagrees_with_its_group_is_reported() {
    let s = stage(&module(HANDOFF), 1);
    // Core 1's arrival claims three participants; the group lists two.
    patch_record(&s.device, &s.images[1], Engine::Sp, |r| r.opcode == Opcode::Barrier, |r| r.ops[0].c = 3);
    let rec = Recorder::start();
    let (report, _) = s.run(SimConfig::seeded(0));
    assert!(rec.hits("sim.barrier.mismatch") > 0);
    let v: Vec<&Violation> = report.of_kind("barrier-mismatch").collect();
    assert!(!v.is_empty(), "{report}");
    assert!(v.iter().any(|m| m.to_string().contains("the record says 3 participants")), "{report}");
}

#[test]
fn unlinked_view_names_are_the_same_tensor_and_still_checked() {
    use lncsim_model::program::{GenConfig, SizeClass, generate};
    // Views keep the splitter's `<t>_in<c>` names, as in an unlinked NEFF.
    let keep = PlaceOptions { keep_view_names: true, ..PlaceOptions::default() };
    for seed in 0..20 {
        let s = stage_with(&generate(&GenConfig::new(seed, 3, SizeClass::Small)), seed, &keep);
        let (report, out) = s.run(SimConfig::seeded(seed).with_jitter());
        assert!(report.passed(), "seed {seed}: {report}");
        assert_eq!(out, s.golden);
    }
    let opts = PlaceOptions { unsync_shared: Some(("t".into(), 64)), ..keep };
    let (report, _) = stage_with(&module(HANDOFF), 1, &opts).run(SimConfig::seeded(0));
    let v: Vec<&Violation> = report.of_kind("unequal").collect();
    assert!(matches!(v[..], [Violation::Unequal { name, .. }] if name == "t_in1"), "{report}");
}

#[test]
fn bugs_planted_in_a_loaded_neff_are_caught() {
    use lncsim_model::program::{GenConfig, SizeClass, generate};
    use lncsim_sim::testkit::patch_record;
    let program = generate(&GenConfig::new(2, 3, SizeClass::Small));
    // A dropped signal: the first signalling record of the busiest engine.
    let r = LoadedRun::new(&program, 2);
    let dev = r.loaded.runtime.device();
    let img = &r.loaded.images[0];
    let engine = *Engine::ALL.iter().max_by_key(|e| img.engines[e.index()].records).unwrap();
    patch_record(dev, img, engine, |x| x.flags & FLAG_SIGNAL != 0, |x| x.flags &= !FLAG_SIGNAL).unwrap().unwrap();
    let (report, _) = r.run(SimConfig::seeded(0));
    assert_eq!(report.outcome, Outcome::Deadlock, "{report}");
    // A duplicated barrier slot: core 1's arrival at the group of core 0's first
    // arrival takes core 0's slot (the two are pending together).
    let r = LoadedRun::new(&program, 2);
    let dev = r.loaded.runtime.device();
    let mut first = None;
    patch_record(dev, &r.loaded.images[0], Engine::Sp, |x| x.opcode == Opcode::Barrier, |x| first = Some(x.ops[0]))
        .unwrap()
        .unwrap();
    let first = first.unwrap();
    let same_group = |x: &lncsim_model::codegen::record::Record| x.opcode == Opcode::Barrier && x.ops[0].b == first.b;
    patch_record(dev, &r.loaded.images[1], Engine::Sp, same_group, |x| x.ops[0].a = first.a).unwrap().unwrap();
    let (report, _) = r.run(SimConfig::seeded(0));
    assert!(
        report
            .of_kind("slot-collision")
            .any(|v| matches!(v, Violation::SlotCollision { slot, .. } if *slot == first.a)),
        "{report}"
    );
    // A missing wait: every record loses its waits on one core.
    let r = LoadedRun::new(&program, 2);
    let dev = r.loaded.runtime.device();
    for e in Engine::ALL {
        while patch_record(dev, &r.loaded.images[0], e, |x| x.waits[0].is_some(), |x| x.waits = [None; 2])
            .unwrap()
            .is_some()
        {}
    }
    let (report, _) = r.run(SimConfig::seeded(0).with_jitter());
    assert!(report.of_kind("race").next().is_some(), "{report}");
}

/// One core, `n` ops: a chain alternating DVE adds and ACT relus over small
/// tensors `t<k>`, plus `keep`, written first and read by the last op.
fn long_chain(n: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::from(
        "module deep lnc 1\nqueue q dynamic owner sp sems 1 instances 0\nloc x dram input i32[16] @0x0\n\
         loc w dram weight i32[16] @0x1000 init 7\nloc keep dram internal i32[16]\nloc fin dram internal i32[16]\n\
         loc out dram output i32[16] @0x2000\n",
    );
    for k in 0..n {
        writeln!(s, "loc t{k} dram internal i32[16]").unwrap();
    }
    s.push_str("\nfunc main\n  args x, out\n  block entry\n    kw = dve add x[0..16], w[0..16] -> keep[0..16]\n");
    s.push_str("    i0 = act relu x[0..16] -> t0[0..16]\n");
    for k in 1..n {
        let p = k - 1;
        if k % 2 == 1 {
            writeln!(s, "    i{k} = dve add t{p}[0..16], w[0..16] -> t{k}[0..16] after i{p}").unwrap();
        } else {
            writeln!(s, "    i{k} = act relu t{p}[0..16] -> t{k}[0..16] after i{p}").unwrap();
        }
    }
    let l = n - 1;
    writeln!(s, "    fa = dve add t{l}[0..16], keep[0..16] -> fin[0..16] after i{l}, kw").unwrap();
    s.push_str("    o = sp dma fin[0..16] -> out[0..16] queue q after fa\n");
    s
}

/// Ops of the deep tests' chain (records: about one per op).
const DEEP: usize = 20_000;

#[test]
fn a_long_chain_runs_clean_and_a_race_planted_near_its_end_is_reported() {
    let s = stage(&module(&long_chain(DEEP)), 5);
    let (clean, out) = s.run(SimConfig::seeded(0));
    assert!(clean.passed(), "{clean}");
    assert_eq!(out, s.golden);
    assert!(clean.instructions > DEEP as u64, "{clean}");
    // The last ACT relu (op DEEP - 2, reading t<DEEP - 3> that DVE writes) forgets its wait.
    let last_relu = (DEEP - 2) / 2;
    let seen = std::cell::Cell::new(0usize);
    let pick = |r: &lncsim_model::codegen::record::Record| {
        if r.opcode != Opcode::Relu {
            return false;
        }
        seen.set(seen.get() + 1);
        seen.get() == last_relu + 1
    };
    let pc = patch_record(&s.device, &s.images[0], Engine::Act, pick, |r| r.waits = [None; 2]);
    assert!(pc >= last_relu, "patched ACT record #{pc}");
    let (report, _) = s.run(SimConfig::seeded(0));
    let var = format!("t{}", DEEP - 3);
    let planted = report.of_kind("race").any(|v| {
        matches!(v, Violation::Race { first, second, .. }
            if [first, second].iter().any(|x| x.engine == Engine::Act && x.pc as usize == pc && x.var.as_deref() == Some(var.as_str()))
            && [first, second].iter().any(|x| x.engine == Engine::Dve && x.var.as_deref() == Some(var.as_str())))
    });
    assert!(planted, "{report}");
    assert_eq!(report.of_kind("race").count(), 1, "only the planted race: {report}");
}

#[test]
fn a_clobber_planted_near_the_end_of_a_long_chain_is_reported() {
    // t<DEEP - 10> is placed over `keep`, which the last op still reads.
    let victim = format!("t{}", DEEP - 10);
    let opts = PlaceOptions { overlap: Some((victim.clone(), "keep".into())), ..PlaceOptions::default() };
    let s = stage_with(&module(&long_chain(DEEP)), 5, &opts);
    let (report, out) = s.run(SimConfig::seeded(0));
    let clobbers: Vec<&Violation> = report.of_kind("clobber").collect();
    assert_eq!(clobbers.len(), 1, "{report}");
    let Violation::Clobber { reader, owner, writer, .. } = clobbers[0] else { unreachable!() };
    assert_eq!((reader.engine, reader.var.as_deref()), (Engine::Dve, Some("keep")), "{report}");
    assert_eq!(owner, &format!("core0:{victim}"));
    let writer = writer.as_ref().unwrap();
    assert_eq!(writer.var.as_deref(), Some(victim.as_str()));
    assert_ne!(out, s.golden);
}
