//! The independent link checker fails on hand-broken linked modules: each
//! breakage is reported with its kind, and a module broken several ways
//! gets every violation reported.
#![allow(clippy::unwrap_used)]

mod link_fixtures;

use lncsim_model::ir::{self, *};
use lncsim_model::link::checker::ViolationKind;
use lncsim_model::link::pipeline::per_core_modules;
use lncsim_model::link::{LinkViolation, check_link, link};
use lncsim_model::program::{GenConfig, SizeClass, generate};

/// A generated 4-core program with handoffs, split and linked.
fn linked4() -> (Vec<Module>, Module) {
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let m = link(&modules).unwrap();
    assert_eq!(check_link(&modules, &m), vec![], "the unbroken link must pass");
    (modules, m)
}

fn kinds(v: &[LinkViolation]) -> Vec<ViolationKind> {
    let mut k: Vec<ViolationKind> = v.iter().map(|x| x.kind).collect();
    k.dedup();
    k
}

fn has(v: &[LinkViolation], kind: ViolationKind, needle: &str) -> bool {
    v.iter().any(|x| x.kind == kind && x.msg.contains(needle))
}

fn barrier_mut<'a>(f: &'a mut Function, name: &str) -> &'a mut CoreBarrier {
    let id = f.inst_by_name(name).unwrap();
    match &mut f.insts[id.index()].op {
        Op::CoreBarrier(b) => b,
        _ => panic!("{name} is not a barrier"),
    }
}

#[test]
fn a_duplicate_barrier_id_is_reported() {
    let (inputs, mut m) = linked4();
    let id0 = barrier_mut(&mut m.functions[1], "cb1").id;
    barrier_mut(&mut m.functions[2], "cb0").id = id0;
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Barrier, &format!("duplicate barrier ID {id0}")), "{v:#?}");
}

#[test]
fn a_missing_core_is_reported() {
    let (inputs, mut m) = linked4();
    m.functions.pop();
    m.functions[0].blocks[0].insts.pop();
    m.functions[0].insts.pop();
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Core, "core 3 has no function"), "{v:#?}");
    assert!(has(&v, ViolationKind::Dispatcher, "not one call per core"), "{v:#?}");
}

#[test]
fn a_shared_tensor_split_in_two_is_reported() {
    let (inputs, mut m) = linked4();
    // Core 1 reads `t7` (produced on core 0): point that read at a fresh copy of `t7`.
    let t7 = m.loc_by_name("t7").unwrap();
    let mut copy = m.loc(t7).clone();
    copy.name = "t7_copy".into();
    let c = m.add_loc(copy);
    let mut one = m.clone();
    let f = &mut one.functions[2];
    let i = f.inst_by_name("i7").unwrap();
    let Op::Compute { srcs, .. } = &mut f.insts[i.index()].op else { panic!() };
    assert_eq!(srcs[0].loc, t7);
    srcs[0].loc = c;
    // One of core 1's reads moved: its view now maps to two locations.
    let v = check_link(&inputs, &one);
    assert!(has(&v, ViolationKind::Shared, "core 1's `t7_in1` is split in two linked locations"), "{v:#?}");
    // Every read of core 1 moved: the tensor lives in two locations.
    for inst in &mut m.functions[2].insts {
        if let Op::Compute { srcs, .. } = &mut inst.op {
            srcs.iter_mut().filter(|s| s.loc == t7).for_each(|s| s.loc = c);
        }
    }
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Shared, "is split over linked locations [\"t7\", \"t7_copy\"]"), "{v:#?}");
}

#[test]
fn an_intermediate_left_as_external_output_is_reported() {
    let inputs: Vec<Module> =
        [link_fixtures::OUTPUTS_0, link_fixtures::OUTPUTS_1].iter().map(|t| ir::parse(t).unwrap()).collect();
    let mut m = link(&inputs).unwrap();
    assert_eq!(check_link(&inputs, &m), vec![]);
    let y = m.loc_by_name("y").unwrap();
    m.memlocs[y.index()].usage = Usage::Output;
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Output, "intermediate `y` is still an external output"), "{v:#?}");
    // And a true output demoted is reported too.
    let mut m2 = link(&inputs).unwrap();
    let o = m2.loc_by_name("out0").unwrap();
    m2.memlocs[o.index()].usage = Usage::Internal;
    let v = check_link(&inputs, &m2);
    assert!(has(&v, ViolationKind::Output, "program output `out0` is no longer an output"), "{v:#?}");
}

#[test]
fn a_lost_or_weakened_alias_is_reported() {
    let (inputs, mut m) = linked4();
    let v_id = m.loc_by_name("t7_in1").unwrap();
    m.memlocs[v_id.index()].aliases.clear();
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Alias, "view `t7_in1` of core 1 lost its must-alias to `t7`"), "{v:#?}");
    let (inputs, mut m) = linked4();
    m.memlocs[v_id.index()].aliases[0].kind = AliasKind::May;
    assert!(has(&check_link(&inputs, &m), ViolationKind::Alias, "t7_in1"));
}

#[test]
fn a_moved_shared_address_is_reported() {
    let inputs: Vec<Module> =
        [link_fixtures::SHARED_0, link_fixtures::SHARED_1].iter().map(|t| ir::parse(t).unwrap()).collect();
    let mut m = link(&inputs).unwrap();
    assert_eq!(check_link(&inputs, &m), vec![]);
    let t = m.loc_by_name("t").unwrap();
    m.memlocs[t.index()].address = Some(0x180);
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Shared, "linked placement"), "{v:#?}");
    assert!(has(&v, ViolationKind::Location, "different type, size or placement"), "{v:#?}");
}

#[test]
fn dropped_instructions_flags_queues_and_dispatch_order_are_reported() {
    let (inputs, m) = linked4();
    let mut dropped = m.clone();
    let f = &mut dropped.functions[3];
    f.blocks[0].insts.remove(0);
    f.canonicalize();
    assert!(has(&check_link(&inputs, &dropped), ViolationKind::Core, "instruction `i3` is missing"));

    let mut flagged = m.clone();
    barrier_mut(&mut flagged.functions[1], "cb1").flagged = true;
    assert!(has(&check_link(&inputs, &flagged), ViolationKind::Barrier, "`cb1` is still flagged"));

    let mut sems = m.clone();
    sems.queues[0].semaphores = 8;
    assert!(has(&check_link(&inputs, &sems), ViolationKind::Queue, "qSyncIO"));

    let mut order = m.clone();
    order.functions[0].blocks[0].insts.swap(0, 1);
    order.functions[0].canonicalize();
    assert!(has(&check_link(&inputs, &order), ViolationKind::Dispatcher, "core order"));

    let mut no_return = m.clone();
    let f = &mut no_return.functions[1];
    f.blocks.last_mut().unwrap().insts.pop();
    f.canonicalize();
    let v = check_link(&inputs, &no_return);
    assert!(has(&v, ViolationKind::Core, "0 returns"), "{v:#?}");
    assert!(has(&v, ViolationKind::Core, "does not end with its completion barrier then its return"), "{v:#?}");

    let mut lonely = m.clone();
    let f = &mut lonely.functions[4];
    let b = barrier_mut(f, "cb_return_call_def_3_instance_0");
    b.group = 99;
    b.participants = vec![3];
    let v = check_link(&inputs, &lonely);
    assert!(
        has(&v, ViolationKind::Barrier, "group 14: participants [0, 1, 2, 3] but arrivals from [0, 1, 2]"),
        "{v:#?}"
    );
}

#[test]
fn dangling_indices_stop_the_check_with_an_index_violation() {
    let (inputs, mut m) = linked4();
    m.functions[1].insts[0].deps.push(Dep { inst: InstId(9999), kind: EdgeKind::Data });
    m.sets[0].locs.push(MemLocId(9999));
    let v = check_link(&inputs, &m);
    assert_eq!(kinds(&v), [ViolationKind::Index]);
    assert_eq!(v.len(), 2, "{v:#?}");
}

#[test]
fn every_violation_is_returned_not_just_the_first() {
    let (inputs, mut m) = linked4();
    let id0 = barrier_mut(&mut m.functions[1], "cb1").id;
    barrier_mut(&mut m.functions[2], "cb0").id = id0;
    let v_id = m.loc_by_name("t7_in1").unwrap();
    m.memlocs[v_id.index()].aliases.clear();
    m.queues[1].instances.push(7);
    m.name = "wrong".into();
    let v = check_link(&inputs, &m);
    let k = kinds(&v);
    for want in [ViolationKind::Header, ViolationKind::Barrier, ViolationKind::Alias, ViolationKind::Queue] {
        assert!(k.contains(&want), "{want:?} missing from {v:#?}");
    }
}
