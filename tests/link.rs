//! bir_linker properties over generated programs (N = 1..8): the independent
//! checker passes on every link, linking is deterministic, and the linked
//! module preserves the program — under the reference interpreter for one
//! core, and for every N when its core functions run in parallel in seeded
//! barrier-respecting interleavings (the executor below, written for this test).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use lncsim_model::ir::*;
use lncsim_model::link::barriers::renumber_core_barriers_in_modules;
use lncsim_model::link::pipeline::per_core_modules;
use lncsim_model::link::{check_link, link};
use lncsim_model::program::interp::{execute, initial_memory, outputs};
use lncsim_model::program::{Values, generate, interpret, seeded_inputs};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Runs the core functions the dispatcher calls, in parallel, in the
/// interleaving chosen by `seed`: a barrier blocks its core until every
/// participant of its group arrived; a return ends the core. Also checks at
/// run time that no two pending arrivals of different groups hold one slot id.
fn run_linked(m: &Module, inputs: &Values, seed: u64) -> Result<Values, String> {
    let mut mem = initial_memory(m, inputs).map_err(|e| e.to_string())?;
    let dispatcher = &m.functions[0];
    let cores: Vec<FuncId> = dispatcher
        .order()
        .filter_map(|i| match dispatcher.insts[i.index()].op {
            Op::Call { callee } => Some(callee),
            _ => None,
        })
        .collect();
    let orders: Vec<Vec<InstId>> = cores.iter().map(|f| m.functions[f.index()].order().collect()).collect();
    let core_id: Vec<u32> = cores.iter().map(|f| m.functions[f.index()].attrs.neuron_core_id.unwrap()).collect();
    let mut pc = vec![0usize; cores.len()];
    let mut waiting: Vec<Option<u32>> = vec![None; cores.len()];
    let mut done = vec![false; cores.len()];
    let mut arrived: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut pending_slot: BTreeMap<u32, u32> = BTreeMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    loop {
        let ready: Vec<usize> = (0..cores.len()).filter(|&c| !done[c] && waiting[c].is_none()).collect();
        if ready.is_empty() {
            if done.iter().all(|&d| d) {
                break;
            }
            return Err(format!("deadlock: waiting {waiting:?}"));
        }
        let c = ready[rng.random_range(0..ready.len())];
        let Some(&id) = orders[c].get(pc[c]) else {
            return Err(format!("core {} ran off its end without a return", core_id[c]));
        };
        pc[c] += 1;
        let inst = &m.functions[cores[c].index()].insts[id.index()];
        match &inst.op {
            Op::CoreBarrier(b) => {
                if let Some(&g) = pending_slot.get(&b.id)
                    && g != b.group
                {
                    return Err(format!("slot {} pending for group {g} and {}", b.id, b.group));
                }
                let set = arrived.entry(b.group).or_default();
                set.insert(core_id[c]);
                if set.len() == b.participants.len() {
                    pending_slot.retain(|_, g| *g != b.group);
                    for w in &mut waiting {
                        if *w == Some(b.group) {
                            *w = None;
                        }
                    }
                } else {
                    pending_slot.insert(b.id, b.group);
                    waiting[c] = Some(b.group);
                }
            }
            Op::Return => done[c] = true,
            _ => execute(inst, &mut |a: &AccessPattern| a.loc.index(), &mut mem),
        }
    }
    Ok(outputs(m, &mem))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_link_passes_the_checker_and_is_deterministic(cfg in common::gen_config(1..=8)) {
        let p = generate(&cfg);
        let modules = per_core_modules(&p).unwrap();
        let before = modules.clone();
        let linked = link(&modules).unwrap();
        prop_assert_eq!(&modules, &before, "the inputs were modified");
        let v = check_link(&modules, &linked);
        prop_assert!(v.is_empty(), "checker: {:#?}", v);
        let again = link(&modules).unwrap();
        prop_assert_eq!(&again, &linked);
        prop_assert_eq!(print(&again), print(&linked));
        // The dispatcher lists call_def_<c>_instance_0 for c = 0..N, in order.
        let calls: Vec<String> = linked.functions[0].insts.iter().map(|i| i.name.to_string()).collect();
        let want: Vec<String> = (0..cfg.cores).map(|c| format!("call_def_{c}_instance_0")).collect();
        prop_assert_eq!(calls, want);
    }

    #[test]
    fn linked_cores_in_any_barrier_order_give_the_interpreters_outputs(
        cfg in common::gen_config(1..=8),
        input_seed in any::<u64>(),
        schedules in proptest::collection::vec(any::<u64>(), 2),
    ) {
        let p = generate(&cfg);
        let inputs = seeded_inputs(&p, input_seed);
        let golden = interpret(&p, &inputs).unwrap();
        let linked = link(&per_core_modules(&p).unwrap()).unwrap();
        for s in schedules {
            let got = run_linked(&linked, &inputs, s).unwrap();
            prop_assert_eq!(&got, &golden, "schedule seed {}", s);
        }
    }

    #[test]
    fn one_core_link_preserves_the_program_under_the_interpreter(cfg in common::gen_config(1..=1), input_seed in any::<u64>()) {
        let p = generate(&cfg);
        let inputs = seeded_inputs(&p, input_seed);
        let linked = link(&per_core_modules(&p).unwrap()).unwrap();
        prop_assert_eq!(linked.functions.len(), 2);
        prop_assert_eq!(&linked.functions[0].insts[0].name, "call_def_0_instance_0");
        prop_assert_eq!(interpret(&linked, &inputs).unwrap(), interpret(&p, &inputs).unwrap());
    }

    #[test]
    fn pre_merge_renumbering_matches_the_merged_one_shifted_by_the_completion_barriers(
        cfg in common::gen_config(1..=8),
        base in 0u32..1000,
    ) {
        let p = generate(&cfg);
        let modules = per_core_modules(&p).unwrap();
        let linked = link(&modules).unwrap();
        let mut pre = modules.clone();
        let total: usize = modules.iter().flat_map(|m| &m.functions[0].insts).filter(|i| matches!(i.op, Op::CoreBarrier(_))).count();
        prop_assert_eq!(renumber_core_barriers_in_modules(&mut pre, base), base + total as u32);
        for (c, m) in pre.iter().enumerate() {
            let lf = &linked.functions[c + 1];
            for i in &m.functions[0].insts {
                if let Op::CoreBarrier(b) = &i.op {
                    prop_assert!(!b.flagged);
                    let Op::CoreBarrier(lb) = &lf.insts[lf.inst_by_name(&i.name).unwrap().index()].op else { unreachable!() };
                    // Each earlier core adds one completion barrier to the merged count.
                    prop_assert_eq!(lb.id + base, b.id + c as u32);
                }
            }
        }
    }
}

#[test]
fn the_executor_catches_a_deadlock_and_a_slot_collision() {
    let p = generate(&lncsim_model::program::GenConfig::new(3, 4, lncsim_model::program::SizeClass::Small));
    let inputs = seeded_inputs(&p, 1);
    let linked = link(&per_core_modules(&p).unwrap()).unwrap();
    assert_eq!(run_linked(&linked, &inputs, 0).unwrap(), interpret(&p, &inputs).unwrap());
    // Core 0's completion barrier removed: everyone else waits forever.
    let mut broken = linked.clone();
    let f = &mut broken.functions[1];
    let cb = f.inst_by_name("cb_return_call_def_0_instance_0").unwrap();
    f.insts[cb.index()].op = Op::SemSignal { sem: 0 };
    assert!(run_linked(&broken, &inputs, 0).unwrap_err().contains("deadlock"));
    // Every barrier on slot 0: two groups pending on one slot.
    let mut broken = linked.clone();
    for f in &mut broken.functions {
        for i in &mut f.insts {
            if let Op::CoreBarrier(b) = &mut i.op {
                b.id = 0;
            }
        }
    }
    let errs: Vec<String> = (0..16).filter_map(|s| run_linked(&broken, &inputs, s).err()).collect();
    assert!(errs.iter().any(|e| e.contains("slot 0 pending")), "{errs:?}");
}
