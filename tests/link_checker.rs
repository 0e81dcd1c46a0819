//! The independent link checker fails on hand-broken linked modules: each
//! breakage is reported with its kind, and a module broken several ways
//! gets every violation reported.
#![allow(clippy::unwrap_used)]

mod link_fixtures;

use lncsim_model::ir::{self, *};
use lncsim_model::link::checker::ViolationKind;
use lncsim_model::link::checker::{check_linked, check_tensor_map};
use lncsim_model::link::pipeline::per_core_modules;
use lncsim_model::link::{LinkDirError, LinkError, LinkOptions, LinkViolation, check_link, dry_run, link, link_with};
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

/// Two cores' views of one tensor under one name (the `link` fuzz target's
/// crash-dbb5330b): the linker keeps both, the later renamed `<name>.nc<core>`;
/// each view's survivor is its own location, so the clean link passes, and
/// the renamed view losing its alias is still reported.
#[test]
fn views_of_one_name_on_two_cores_each_keep_their_own_alias() {
    let mut modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    // The first view whose target another core's view also reads.
    let views = |m: &Module| -> Vec<(String, String, u32)> {
        m.memlocs
            .iter()
            .filter_map(|l| l.remote_local_target.as_ref().map(|r| (l.name.to_string(), r.name.to_string(), r.core)))
            .collect()
    };
    let (a, b, name, view) = (0..modules.len())
        .flat_map(|a| (a + 1..modules.len()).map(move |b| (a, b)))
        .find_map(|(a, b)| {
            let vb = views(&modules[b]);
            views(&modules[a])
                .into_iter()
                .find_map(|(n, t, c)| vb.iter().find(|x| x.1 == t && x.2 == c).map(|x| (a, b, n, x.0.clone())))
        })
        .expect("two cores viewing one tensor");
    let id = modules[b].loc_by_name(&view).unwrap();
    modules[b].memlocs[id.index()].name = name.as_str().into();
    let mut m = link(&modules).unwrap();
    assert_eq!(check_link(&modules, &m), vec![], "both views kept under two names must pass");
    let core_b = modules[b].attrs.neuron_core_id.unwrap();
    let renamed = m.loc_by_name(&format!("{name}.nc{core_b}")).expect("the second view renamed");
    assert!(m.loc_by_name(&name).is_some(), "core {a}'s view keeps its name");
    m.memlocs[renamed.index()].aliases.clear();
    let v = check_link(&modules, &m);
    assert!(has(&v, ViolationKind::Alias, &format!("view `{name}` of core {core_b} lost its must-alias")), "{v:#?}");
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

    let mut dup = m.clone();
    let id = barrier_mut(&mut dup.functions[1], "cb_return_call_def_0_instance_0").id;
    barrier_mut(&mut dup.functions[2], "cb_return_call_def_1_instance_0").id = id;
    let v = check_link(&inputs, &dup);
    let want = format!(
        "duplicate barrier ID {id}: `nc0/cb_return_call_def_0_instance_0` and `nc1/cb_return_call_def_1_instance_0`"
    );
    assert!(has(&v, ViolationKind::Barrier, &want), "{v:#?}");

    let mut sparse = m.clone();
    barrier_mut(&mut sparse.functions[4], "cb_return_call_def_3_instance_0").id = 1000;
    let v = check_link(&inputs, &sparse);
    assert!(has(&v, ViolationKind::Barrier, "renumbered slot ids are not dense from 0: {"), "{v:#?}");
    assert!(has(&v, ViolationKind::Barrier, ", 1000}"), "{v:#?}");

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

/// Core function 1 of `m` (core 1), and the index of its first copied instruction with edges.
fn with_edges(m: &Module) -> (usize, String) {
    let f = &m.functions[2];
    let i = f.insts.iter().position(|i| i.name.starts_with('i') && !i.deps.is_empty()).unwrap();
    (i, f.insts[i].name.to_string())
}

#[test]
fn a_dropped_added_or_mis_mapped_dependency_edge_is_reported() {
    let (inputs, m) = linked4();
    let (i, name) = with_edges(&m);
    let needle = format!("core 1 `{name}`: edges are not the input's");

    let mut dropped = m.clone();
    let lost = dropped.functions[2].insts[i].deps.pop().unwrap();
    let v = check_link(&inputs, &dropped);
    assert_eq!(kinds(&v), [ViolationKind::Edge], "{v:#?}");
    let target = &m.functions[2].insts[lost.inst.index()].name;
    assert!(
        has(&v, ViolationKind::Edge, &format!("{needle}: missing [(\"{target}\", {:?})], unexpected []", lost.kind)),
        "{v:#?}"
    );

    let mut added = m.clone();
    let other = (0..added.functions[2].insts.len())
        .find(|&k| k != i && !m.functions[2].insts[i].deps.iter().any(|d| d.inst.index() == k))
        .unwrap();
    added.functions[2].insts[i].deps.push(Dep { inst: InstId::from_index(other), kind: EdgeKind::Data });
    let v = check_link(&inputs, &added);
    let other_name = &m.functions[2].insts[other].name;
    assert!(
        has(&v, ViolationKind::Edge, &format!("{needle}: missing [], unexpected [(\"{other_name}\", Data)]")),
        "{v:#?}"
    );

    let mut mis = m.clone();
    let d = &mut mis.functions[2].insts[i].deps[0];
    let was = d.inst;
    d.inst = InstId::from_index(other);
    let v = check_link(&inputs, &mis);
    let was_name = &m.functions[2].insts[was.index()].name;
    assert!(has(&v, ViolationKind::Edge, &needle) && has(&v, ViolationKind::Edge, was_name), "{v:#?}");
    assert!(has(&v, ViolationKind::Edge, other_name), "{v:#?}");

    // An edge of a kind other than the input's is a different edge.
    let mut kind = m.clone();
    let d = &mut kind.functions[2].insts[i].deps[0];
    d.kind = if d.kind == EdgeKind::Control { EdgeKind::Data } else { EdgeKind::Control };
    assert!(has(&check_link(&inputs, &kind), ViolationKind::Edge, &needle));
}

#[test]
fn the_inserted_edges_are_checked_too() {
    let (inputs, m) = linked4();
    let f = 2;
    let cb = m.functions[f].inst_by_name("cb_return_call_def_1_instance_0").unwrap();
    let ret = m.functions[f].inst_by_name("return_call_def_1_instance_0").unwrap();

    let mut sink_lost = m.clone();
    sink_lost.functions[f].insts[cb.index()].deps.pop().unwrap();
    let v = check_link(&inputs, &sink_lost);
    assert!(
        has(&v, ViolationKind::Edge, "`cb_return_call_def_1_instance_0`: not on exactly the input's sinks"),
        "{v:#?}"
    );

    let mut ret_free = m.clone();
    ret_free.functions[f].insts[ret.index()].deps.clear();
    let v = check_link(&inputs, &ret_free);
    assert!(
        has(&v, ViolationKind::Edge, "`return_call_def_1_instance_0`: not on exactly its completion barrier"),
        "{v:#?}"
    );

    // A switch inserted before a DMA: the DMA's extra edge is allowed, a second dependent is not.
    let (fi, k, _) = first_switch(&m);
    let mut two = m.clone();
    let user = two.functions[fi]
        .insts
        .iter()
        .position(|i| i.name.starts_with('i') && !matches!(i.op, Op::DmaCopy { .. }))
        .unwrap();
    two.functions[fi].insts[user].deps.push(Dep { inst: InstId::from_index(k), kind: EdgeKind::Control });
    let v = check_link(&inputs, &two);
    assert!(has(&v, ViolationKind::Edge, "an inserted switch must have exactly one dependent"), "{v:#?}");
    assert!(has(&v, ViolationKind::Edge, "edges are not the input's"), "{v:#?}");

    let mut orphan = m.clone();
    for i in &mut orphan.functions[fi].insts {
        i.deps.retain(|d| d.inst.index() != k);
    }
    let v = check_link(&inputs, &orphan);
    assert!(has(&v, ViolationKind::Edge, "an inserted switch must have exactly one dependent"), "{v:#?}");
}

/// The first inserted switch of `m`: (function index, switch index, its one dependent's index).
fn first_switch(m: &Module) -> (usize, usize, usize) {
    let (fi, k) = m
        .functions
        .iter()
        .enumerate()
        .find_map(|(fi, f)| f.insts.iter().position(|i| i.name.starts_with("I-SQI-")).map(|k| (fi, k)))
        .expect("the generated program drives a queue: a switch is inserted");
    let user = m.functions[fi].insts.iter().position(|i| i.deps.iter().any(|d| d.inst.index() == k)).unwrap();
    assert!(matches!(m.functions[fi].insts[user].op, Op::DmaCopy { .. }), "a switch's dependent is a DMA copy");
    (fi, k, user)
}

#[test]
fn a_switch_edge_is_allowed_only_as_control_from_the_dmas_own_queue() {
    let (inputs, m) = linked4();
    let (fi, k, user) = first_switch(&m);
    let user_name = m.functions[fi].insts[user].name.clone();
    let sqi_name = m.functions[fi].insts[k].name.clone();
    // A data edge from the switch is no edge the linker inserts.
    let mut data = m.clone();
    data.functions[fi].insts[user].deps.iter_mut().find(|d| d.inst.index() == k).unwrap().kind = EdgeKind::Data;
    let v = check_link(&inputs, &data);
    let want = format!("`{user_name}`: edges are not the input's: missing [], unexpected [(\"{sqi_name}\", Data)]");
    assert!(has(&v, ViolationKind::Edge, &want), "{v:#?}");

    // The switch moved to another queue: it no longer orders this DMA's queue.
    let Op::SwitchQueueInstance { queue, .. } = m.functions[fi].insts[k].op else { unreachable!() };
    let other = (0..m.queues.len()).find(|&q| q != queue.index()).expect("the program has two queues");
    let mut moved = m.clone();
    if let Op::SwitchQueueInstance { queue, .. } = &mut moved.functions[fi].insts[k].op {
        *queue = QueueId::from_index(other);
    }
    let v = check_link(&inputs, &moved);
    let want = format!("`{user_name}`: edges are not the input's: missing [], unexpected [(\"{sqi_name}\", Control)]");
    assert!(has(&v, ViolationKind::Edge, &want), "{v:#?}");
    assert!(
        has(&v, ViolationKind::Edge, &format!("`{sqi_name}`: an inserted switch must have exactly one dependent")),
        "{v:#?}"
    );

    // The DMA gained an edge: the report names that edge, not the allowed switch edge.
    let mut added = m.clone();
    let f = &added.functions[fi];
    let other =
        (0..f.insts.len()).find(|&o| o != k && o != user && !f.insts[user].deps.iter().any(|d| d.inst.index() == o));
    let other = other.expect("an instruction the DMA does not depend on");
    added.functions[fi].insts[user].deps.push(Dep { inst: InstId::from_index(other), kind: EdgeKind::Data });
    let v = check_link(&inputs, &added);
    let other_name = &m.functions[fi].insts[other].name;
    let want = format!("`{user_name}`: edges are not the input's: missing [], unexpected [(\"{other_name}\", Data)]");
    assert!(has(&v, ViolationKind::Edge, &want), "{v:#?}");
}

#[test]
fn a_dma_that_depends_on_two_inserted_switches_of_its_queue_is_reported() {
    let (inputs, m) = linked4();
    let (fi, k, user) = first_switch(&m);
    let user_name = m.functions[fi].insts[user].name.clone();
    // A second switch of the same queue, whose only dependent is the same DMA.
    let mut two = m.clone();
    let f = &mut two.functions[fi];
    let mut extra = f.insts[k].clone();
    extra.name = format!("{}-again", extra.name).into();
    f.insts.push(extra);
    let id = InstId::from_index(f.insts.len() - 1);
    let entry = f.blocks.iter().position(|b| b.insts.iter().any(|&i| i.index() == k)).unwrap();
    let at = f.blocks[entry].insts.iter().position(|&i| i.index() == k).unwrap();
    f.blocks[entry].insts.insert(at + 1, id);
    f.insts[user].deps.push(Dep { inst: id, kind: EdgeKind::Control });
    f.canonicalize();
    let v = check_link(&inputs, &two);
    let want = format!("`{user_name}`: depends on 2 inserted switches of its queue");
    assert!(has(&v, ViolationKind::Edge, &want), "{v:#?}");
}

#[test]
fn an_input_edge_to_no_instruction_is_reported_not_skipped() {
    let (mut inputs, m) = linked4();
    let f = &mut inputs[1].functions[0];
    let i = f.insts.iter().position(|i| !i.deps.is_empty()).unwrap();
    let name = f.insts[i].name.clone();
    f.insts[i].deps.push(Dep { inst: InstId(9999), kind: EdgeKind::Data });
    let v = check_link(&inputs, &m);
    let want = format!("core 1 `{name}`: edges are not the input's: missing [(\"?\", Data)], unexpected []");
    assert!(has(&v, ViolationKind::Edge, &want), "{v:#?}");
}

#[test]
fn sets_and_arguments_that_disagree_with_the_locations_are_reported() {
    let (inputs, m) = linked4();
    let set = |m: &Module, name: &str| m.sets.iter().position(|s| s.name == name).unwrap();
    let internal = m.memlocs.iter().position(|l| l.usage == Usage::Internal).unwrap();
    let iname = m.memlocs[internal].name.clone();

    let mut wrong = m.clone();
    let o = set(&wrong, "outputs");
    wrong.sets[o].locs.push(MemLocId::from_index(internal));
    let v = check_link(&inputs, &wrong);
    assert!(has(&v, ViolationKind::Set, &format!("set `outputs` holds `{iname}`, a Internal location")), "{v:#?}");
    assert!(has(&v, ViolationKind::Set, "which no input listed there"), "{v:#?}");

    let mut lost = m.clone();
    let s = set(&lost, "inputs");
    let gone = lost.sets[s].locs.remove(0);
    let v = check_link(&inputs, &lost);
    let gname = &m.memlocs[gone.index()].name;
    assert!(has(&v, ViolationKind::Set, &format!("set `inputs` lost `{gname}`")), "{v:#?}");

    let mut renamed = m.clone();
    renamed.sets[0].name = "others".into();
    assert!(has(&check_link(&inputs, &renamed), ViolationKind::Set, "the inputs have"));

    let mut disp = m.clone();
    let a = disp.functions[0].args.pop().unwrap();
    let v = check_link(&inputs, &disp);
    let aname = &m.memlocs[a.index()].name;
    assert!(
        has(
            &v,
            ViolationKind::Argument,
            &format!("dispatcher arguments are not the core functions': missing [\"{aname}\"]")
        ),
        "{v:#?}"
    );

    // An argument no input function declared is reported where it is listed
    // (an internal argument an input declared is kept: see the args program below).
    let mut core_arg = m.clone();
    core_arg.functions[1].args.push(MemLocId::from_index(internal));
    core_arg.functions[0].args.push(MemLocId::from_index(internal));
    let v = check_link(&inputs, &core_arg);
    assert!(has(&v, ViolationKind::Argument, &format!("unexpected [\"{iname}\"]")), "{v:#?}");
    let mut disp_only = m.clone();
    disp_only.functions[0].args.push(MemLocId::from_index(internal));
    let v = check_link(&inputs, &disp_only);
    assert!(
        has(
            &v,
            ViolationKind::Argument,
            &format!("dispatcher arguments are not the core functions': missing [], unexpected [\"{iname}\"]")
        ),
        "{v:#?}"
    );
}

/// A program whose `main` lists the internal tensor `t` as an argument
/// (review finding F3) and whose `outputs` set holds the internal `t` and
/// whose `misc` set holds the shared `u` (review finding F4).
const ARGS_AND_SETS: &str = "module argsprog lnc 2
loc a dram input i32[64] @0x0
loc t dram internal i32[64]
loc u dram internal i32[64]
loc y dram output i32[64] @0x1000
set inputs = a
set outputs = y, t
set misc = u
func main
  args a, t, y
  block entry
    p0 = act relu a[0..64] -> t[0..64] core 0
    p1 = act relu t[0..64] -> u[0..64] core 0 after p0
    p2 = act relu u[0..64] -> y[0..64] core 1
";

/// An internal argument and a set named `outputs` holding an internal tensor
/// are valid IR the linker keeps (the seed gives arguments and set names no
/// usage rule): no false alarm. Every set and argument list is still exactly
/// what the inputs declared, for sets of any name (a view included).
#[test]
fn internal_arguments_and_sets_of_any_name_are_checked_by_correspondence_not_usage() {
    let modules = per_core_modules(&ir::parse(ARGS_AND_SETS).unwrap()).unwrap();
    let m = link(&modules).unwrap();
    assert_eq!(check_link(&modules, &m), vec![], "valid: internal `t` in the arguments and in `outputs`");
    let t = m.loc_by_name("t").unwrap();
    assert!(m.functions[1].args.contains(&t) && m.functions[0].args.contains(&t));
    let misc = m.sets.iter().position(|s| s.name == "misc").unwrap();
    let view = m.loc_by_name("u_in1").unwrap();
    assert!(m.sets[misc].locs.contains(&view), "core 1 listed its view of `u` in `misc`");

    let mut lost_arg = m.clone();
    lost_arg.functions[1].args.retain(|&a| a != t);
    let v = check_link(&modules, &lost_arg);
    assert!(has(&v, ViolationKind::Argument, "`nc0` arguments: missing [\"t\"], unexpected []"), "{v:#?}");

    let mut lost_view = m.clone();
    lost_view.sets[misc].locs.retain(|&l| l != view);
    let v = check_link(&modules, &lost_view);
    assert!(has(&v, ViolationKind::Set, "set `misc` lost `u_in1`"), "{v:#?}");

    let mut extra = m.clone();
    extra.sets[misc].locs.push(m.loc_by_name("a").unwrap());
    let v = check_link(&modules, &extra);
    assert!(has(&v, ViolationKind::Set, "set `misc` holds `a`, which no input listed there"), "{v:#?}");
}

#[test]
fn a_tensor_map_that_disagrees_with_the_locations_is_reported() {
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let linked = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(check_linked(&modules, &linked), vec![]);
    let mut tm = linked.tensor_map.clone();
    let first = tm.entries.keys().next().unwrap().clone();
    tm.entries.get_mut(&first).unwrap().sim_format = "float32".into();
    let v = check_tensor_map(&linked.module, &tm);
    assert!(has(&v, ViolationKind::TensorMap, &format!("entry `{first}` disagrees with its location")), "{v:#?}");
    tm.entries.remove(&first);
    let mut stray = linked.tensor_map.entries[&first].clone();
    stray.layer_name = "stray".into();
    tm.entries.insert("stray".into(), stray);
    let v = check_tensor_map(&linked.module, &tm);
    assert!(has(&v, ViolationKind::TensorMap, &format!("external `{first}` has no entry")), "{v:#?}");
    assert!(has(&v, ViolationKind::TensorMap, "entry `stray` names no external location"), "{v:#?}");
}

#[test]
fn an_output_written_on_two_cores_is_refused() {
    let core = |c: u32| {
        format!(
            "module dup lnc 2 core {c}\nloc x dram input i32[4] @0x0\nloc y dram output i32[4] @0x1000\n\
             func main\n  args x, y\n  block entry\n    a{c} = dve relu x[0..4] -> y[0..4] core {c}\n"
        )
    };
    let inputs: Vec<Module> = [0, 1].iter().map(|&c| ir::parse(&core(c)).unwrap()).collect();
    match link(&inputs) {
        Err(LinkError::OutputWrittenTwice { name, first, second }) => {
            assert_eq!((name.as_str(), first, second), ("y", 0, 1));
        }
        other => panic!("expected OutputWrittenTwice, got {other:?}"),
    }
}

#[test]
fn weights_too_large_to_write_are_refused_before_anything_is_written() {
    let elems = (1u64 << 28) + 1; // 4 GiB + 4 bytes of i32, over the 1 GiB limit
    let text = format!(
        "module big lnc 1 core 0\nloc o dram output i32[4] @0x0\nloc w dram weight i32[{elems}] @0x1000 init 7\n\
         func main\n  args o\n  block entry\n    a = dve relu w[0..4] -> o[0..4] core 0\n"
    );
    let inputs = vec![ir::parse(&text).unwrap()];
    let root = std::env::temp_dir().join(format!("lncsim-too-large-{}", std::process::id()));
    let opts = LinkOptions { link_dir: Some(root.clone()) };
    let want = elems * 4;
    assert!(matches!(dry_run(&inputs, &opts), Err(LinkError::LinkDir(LinkDirError::TooLarge(b))) if b == want));
    assert!(matches!(link_with(&inputs, &opts), Err(LinkError::LinkDir(LinkDirError::TooLarge(b))) if b == want));
    assert!(!root.join("big").exists(), "nothing was written");
    let _ = std::fs::remove_dir_all(&root);
}

/// A generated 2-core program of 50k instructions per core, split (no DRAM
/// allocation: the link checker does not read addresses it was not given)
/// and linked; the unbroken link passes.
fn linked_large() -> (Vec<Module>, Module) {
    use lncsim_model::pipeline::{PipelineOptions, build_pipeline};
    let cfg = GenConfig::with_ops(7, 2, 50_000, 16).unwrap();
    let opts = PipelineOptions { disable_dram_allocation: true, ..PipelineOptions::default() };
    let (modules, _) = build_pipeline(&opts).run_per_core(&generate(&cfg)).unwrap();
    let m = link(&modules).unwrap();
    assert_eq!(check_link(&modules, &m), vec![], "the unbroken large link must pass");
    (modules, m)
}

#[test]
fn faults_at_the_end_of_a_100k_instruction_link_are_reported() {
    let (inputs, m) = linked_large();
    let f = &m.functions[2];
    assert!(f.insts.len() > 49_000, "{} instructions", f.insts.len());
    // The last copied instruction of core 1 with an edge, and one with an access.
    let inserted = |n: &str| n.starts_with("cb_return_") || n.starts_with("return_") || n.starts_with("I-SQI-");
    let deep = f.insts.iter().rposition(|i| !inserted(&i.name) && !i.deps.is_empty()).unwrap();
    assert!(deep > f.insts.len() - 100, "{deep} of {}", f.insts.len());
    let name = f.insts[deep].name.clone();

    let mut dropped = m.clone();
    dropped.functions[2].insts[deep].deps.clear();
    let v = check_link(&inputs, &dropped);
    assert!(has(&v, ViolationKind::Edge, &format!("core 1 `{name}`: edges are not the input's")), "{v:#?}");

    let acc = f.insts.iter().rposition(|i| i.write().is_some()).unwrap();
    assert!(acc > f.insts.len() - 100, "{acc} of {}", f.insts.len());
    let acc_name = f.insts[acc].name.clone();
    let mut moved = m.clone();
    match &mut moved.functions[2].insts[acc].op {
        Op::DmaCopy { dst, .. } | Op::Compute { dst, .. } => dst.len += 1,
        _ => unreachable!(),
    }
    let v = check_link(&inputs, &moved);
    assert!(has(&v, ViolationKind::Core, &format!("instruction `{acc_name}`: access range differs")), "{v:#?}");

    // The last input instruction of core 1 missing from its linked function.
    let mut lost = m.clone();
    let lf = &mut lost.functions[2];
    lf.insts[acc].name = format!("{acc_name}_renamed").into();
    let v = check_link(&inputs, &lost);
    assert!(has(&v, ViolationKind::Core, &format!("instruction `{acc_name}` is missing")), "{v:#?}");
}

/// Every entry point reports what `check_link` reports; the tensor map is
/// judged beside the module's other violations, and skipped only when an
/// index dangles (its entries could not be read).
#[test]
fn the_entry_points_report_and_the_tensor_map_is_judged_unless_an_index_dangles() {
    use lncsim_model::link::checker::{check_link_verified, check_linked_verified};
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let linked = link_with(&modules, &LinkOptions::default()).unwrap();
    let mut bad = linked.clone();
    let id0 = barrier_mut(&mut bad.module.functions[1], "cb1").id;
    barrier_mut(&mut bad.module.functions[2], "cb0").id = id0;
    let barrier = format!("duplicate barrier ID {id0}");
    let v = check_link_verified(&modules, bad.module.verified().unwrap());
    assert!(has(&v, ViolationKind::Barrier, &barrier), "{v:#?}");
    assert_eq!(v, check_link(&modules, &bad.module));
    // Printed as its kind and its message.
    let line = v.iter().find(|x| x.kind == ViolationKind::Barrier).unwrap().to_string();
    assert!(line.starts_with(&format!("Barrier: {barrier}")), "{line}");

    let first = bad.tensor_map.entries.keys().next().unwrap().clone();
    bad.tensor_map.entries.get_mut(&first).unwrap().sim_format = "float32".into();
    let map_msg = format!("entry `{first}` disagrees with its location");
    for v in
        [check_linked(&modules, &bad), check_linked_verified(&modules, bad.module.verified().unwrap(), &bad.tensor_map)]
    {
        assert!(has(&v, ViolationKind::Barrier, &barrier), "{v:#?}");
        assert!(has(&v, ViolationKind::TensorMap, &map_msg), "{v:#?}");
    }
    // The tensor map alone is broken: reported too.
    let mut map_only = linked.clone();
    map_only.tensor_map = bad.tensor_map.clone();
    assert!(has(&check_linked(&modules, &map_only), ViolationKind::TensorMap, &map_msg));
    // A dangling index stops the check before the tensor map.
    bad.module.sets[0].locs.push(MemLocId(9999));
    assert_eq!(kinds(&check_linked(&modules, &bad)), [ViolationKind::Index]);
}

#[test]
fn invalid_ir_in_the_linked_module_is_reported_by_the_irs_verifier() {
    let (inputs, mut m) = linked4();
    let f = &mut m.functions[1];
    f.insts[1].name = f.insts[0].name.clone();
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Invalid, "duplicate"), "{v:#?}");
}

#[test]
fn a_switch_naming_no_queue_is_a_dangling_index() {
    let (inputs, mut m) = linked4();
    let (fi, k, _) = first_switch(&m);
    if let Op::SwitchQueueInstance { queue, .. } = &mut m.functions[fi].insts[k].op {
        *queue = QueueId::from_index(999);
    }
    let v = check_link(&inputs, &m);
    assert_eq!(kinds(&v), [ViolationKind::Index], "{v:#?}");
    assert!(has(&v, ViolationKind::Index, "queue"), "{v:#?}");
}

/// A handoff's producer core must still write the unified tensor.
#[test]
fn a_producer_that_no_longer_writes_its_handoff_is_reported() {
    let (inputs, mut m) = linked4();
    let view = m.loc_by_name("t7_in1").unwrap();
    let unified = m.memlocs[view.index()].aliases[0].target;
    let other = (0..m.memlocs.len())
        .find(|&i| m.memlocs[i].usage == Usage::Internal && MemLocId::from_index(i) != unified)
        .unwrap();
    let mut moved = 0;
    for f in m.functions.iter_mut().filter(|f| f.attrs.neuron_core_id.is_some()) {
        for i in &mut f.insts {
            if let Op::Compute { dst, .. } | Op::DmaCopy { dst, .. } = &mut i.op
                && dst.loc == unified
            {
                dst.loc = MemLocId::from_index(other);
                moved += 1;
            }
        }
    }
    assert!(moved > 0, "the producer writes the handoff");
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Alias, "alias of `t7_in1` does not join a write on core"), "{v:#?}");
}

/// A set member is found through the accesses that map it, not only by
/// name: an input the link renamed (the documented `<name>.nc<core>`) is
/// still the member its core listed.
#[test]
fn a_renamed_set_member_is_matched_through_its_accesses() {
    let (inputs, mut m) = linked4();
    let set = inputs[1].sets.iter().find(|s| s.name == "inputs").unwrap();
    let name = inputs[1].memlocs[set.locs[0].index()].name.clone();
    let ll = m.loc_by_name(&name).unwrap();
    m.memlocs[ll.index()].name = format!("{name}.nc1").into();
    let v = check_link(&inputs, &m);
    assert!(!v.iter().any(|x| x.kind == ViolationKind::Set), "{v:#?}");
}

/// An input access to no location of its module maps to no tensor: reported, not dropped.
#[test]
fn an_input_access_to_no_location_is_reported() {
    let (mut inputs, m) = linked4();
    let f = &mut inputs[1].functions[0];
    let i = f.insts.iter().position(|i| matches!(i.op, Op::Compute { .. })).unwrap();
    if let Op::Compute { srcs, .. } = &mut f.insts[i].op {
        srcs[0].loc = MemLocId(9999);
    }
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Location, "core 1: location 9999 has no resolvable tensor"), "{v:#?}");
}

/// The header's three fields, a dispatcher call's callee and the count of
/// each kind of inserted instruction are checked each on its own.
#[test]
fn the_header_the_dispatch_callees_and_the_inserted_counts_are_each_checked() {
    let (inputs, m) = linked4();
    let mut lnc = m.clone();
    lnc.attrs.lnc_size += 1;
    assert!(has(&check_link(&inputs, &lnc), ViolationKind::Header, "expected `"));
    let mut core = m.clone();
    core.attrs.neuron_core_id = Some(0);
    assert!(has(&check_link(&inputs, &core), ViolationKind::Header, "expected `"));

    // Two calls keep their names but swap their callees.
    let mut swapped = m.clone();
    let d = &mut swapped.functions[0];
    let calls: Vec<usize> = (0..d.insts.len()).filter(|&k| matches!(d.insts[k].op, Op::Call { .. })).collect();
    let (a, b) = (d.insts[calls[0]].op.clone(), d.insts[calls[1]].op.clone());
    (d.insts[calls[0]].op, d.insts[calls[1]].op) = (b, a);
    let v = check_link(&inputs, &swapped);
    assert!(has(&v, ViolationKind::Dispatcher, "not one call per core in core order"), "{v:#?}");

    // The inserted return renamed: no longer counted as the return.
    let r = m.functions[1].insts.iter().position(|i| matches!(i.op, Op::Return)).unwrap();
    let mut renamed = m.clone();
    renamed.functions[1].insts[r].name = "zzz".into();
    let v = check_link(&inputs, &renamed);
    assert!(has(&v, ViolationKind::Core, "(0 returns, 1 completion barriers"), "{v:#?}");

    // A second inserted return: every count adds up, but two returns are one too many.
    let mut two = m.clone();
    let f = &mut two.functions[1];
    let mut again = f.insts[r].clone();
    again.name = "return_again".into();
    append_inst(f, again);
    let v = check_link(&inputs, &two);
    assert!(has(&v, ViolationKind::Core, "(2 returns, 1 completion barriers"), "{v:#?}");

    // A second completion barrier, and an inserted instruction of no inserted kind.
    let cb = m.functions[1].insts.iter().position(|i| i.name.starts_with("cb_return_")).unwrap();
    for (from, name, want) in [
        (cb, "cb_return_again", "(1 returns, 2 completion barriers"),
        (r, "zzz_extra", "inserted (1 returns, 1 completion barriers"),
    ] {
        let mut more = m.clone();
        let f = &mut more.functions[1];
        let mut extra = f.insts[from].clone();
        extra.name = name.into();
        append_inst(f, extra);
        let v = check_link(&inputs, &more);
        assert!(has(&v, ViolationKind::Core, want), "{name}: {v:#?}");
    }
}

/// A copied instruction keeps its engine, collective flag and queue (by name), each on its own.
#[test]
fn a_copied_instruction_that_changed_engine_flag_or_queue_is_reported() {
    let (inputs, m) = linked4();
    let (fi, k) = (1..m.functions.len())
        .find_map(|fi| {
            let f = &m.functions[fi];
            f.insts.iter().position(|i| matches!(i.op, Op::DmaCopy { .. }) && i.queue.is_some()).map(|k| (fi, k))
        })
        .expect("a core function copies a DMA on a queue");
    let name = m.functions[fi].insts[k].name.clone();
    let want = format!("instruction `{name}`: engine, collective flag or queue differ");
    let q = m.functions[fi].insts[k].queue.unwrap();
    let other = (0..m.queues.len()).find(|&o| o != q.index()).expect("two queues");
    let mut queue = m.clone();
    queue.functions[fi].insts[k].queue = Some(QueueId::from_index(other));
    let mut flag = m.clone();
    flag.functions[fi].insts[k].collective ^= true;
    let mut engine = m.clone();
    engine.functions[fi].insts[k].engine =
        if m.functions[fi].insts[k].engine == Engine::Act { Engine::Pool } else { Engine::Act };
    for broken in [queue, flag, engine] {
        let v = check_link(&inputs, &broken);
        assert!(has(&v, ViolationKind::Core, &want), "{v:#?}");
    }
}

/// A set member no instruction touches has no access to map it: it is found by name.
#[test]
fn an_untouched_set_member_is_matched_by_name() {
    let (mut inputs, mut m) = linked4();
    let loc = |name: &str| MemoryLocation { address: Some(0x7000_0000), ..MemoryLocation::dram(name, Usage::Input, 4) };
    inputs[1].memlocs.push(loc("unused"));
    let il = MemLocId::from_index(inputs[1].memlocs.len() - 1);
    inputs[1].sets.iter_mut().find(|s| s.name == "inputs").unwrap().locs.push(il);
    m.memlocs.push(loc("unused"));
    let ll = MemLocId::from_index(m.memlocs.len() - 1);
    m.sets.iter_mut().find(|s| s.name == "inputs").unwrap().locs.push(ll);
    let v = check_link(&inputs, &m);
    assert!(!v.iter().any(|x| x.kind == ViolationKind::Set), "{v:#?}");
    // Under another name in the linked module, it is another location.
    m.memlocs[ll.index()].name = "other".into();
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Set, "set `inputs` holds `other`, which no input listed there"), "{v:#?}");
}

/// A copied compute keeps its arithmetic, even when its operand count is unchanged.
#[test]
fn a_copied_compute_with_other_arithmetic_is_reported() {
    let (inputs, mut m) = linked4();
    let (fi, k) = (1..m.functions.len())
        .find_map(|fi| {
            let f = &m.functions[fi];
            f.insts.iter().position(|i| matches!(i.op, Op::Compute { kind: ComputeKind::Add, .. })).map(|k| (fi, k))
        })
        .expect("a core function copies an add");
    let name = m.functions[fi].insts[k].name.clone();
    if let Op::Compute { kind, .. } = &mut m.functions[fi].insts[k].op {
        *kind = ComputeKind::Mul;
    }
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Core, &format!("instruction `{name}`: operation differs")), "{v:#?}");
}

/// A copied barrier keeps its participants, and `weights` holds weights only.
#[test]
fn a_copied_barrier_with_other_participants_and_a_non_weight_in_weights_are_reported() {
    let (inputs, m) = linked4();
    let mut parts = m.clone();
    let b = barrier_mut(&mut parts.functions[1], "cb1");
    b.participants.pop();
    let v = check_link(&inputs, &parts);
    assert!(has(&v, ViolationKind::Core, "instruction `cb1`: operation differs"), "{v:#?}");

    let mut weights = m.clone();
    let internal = m.memlocs.iter().position(|l| l.usage == Usage::Internal).unwrap();
    let iname = m.memlocs[internal].name.clone();
    weights.sets.iter_mut().find(|s| s.name == "weights").unwrap().locs.push(MemLocId::from_index(internal));
    let v = check_link(&inputs, &weights);
    assert!(has(&v, ViolationKind::Set, &format!("set `weights` holds `{iname}`, a Internal location")), "{v:#?}");
}

/// A switch the input itself holds is copied with its instance and its queue.
/// (The program switches queue 0 before any DMA on it, so the linker inserts
/// no switch of its own for that queue: the fixture is lncsim's link of it.)
#[test]
fn a_copied_switch_with_another_instance_is_reported() {
    let (mut inputs, _) = linked4();
    let q = QueueId::from_index(0);
    let f = &mut inputs[1].functions[0];
    let mut sw = Inst::new("sw_user", Engine::Sp, Op::SwitchQueueInstance { queue: q, instance: 0 });
    sw.core = f.insts.first().and_then(|i| i.core);
    f.insts.push(sw);
    let id = InstId::from_index(f.insts.len() - 1);
    f.blocks[0].insts.insert(0, id);
    f.canonicalize();
    let mut m = link(&inputs).unwrap();
    assert_eq!(check_link(&inputs, &m), vec![]);
    let fi = core_function(&m, 1);
    let qname = &inputs[1].queues[0].name;
    let inserted = format!("I-SQI-{qname}-");
    assert!(!m.functions[fi].insts.iter().any(|i| i.name.starts_with(&inserted)), "the program chose");
    let k = m.functions[fi].inst_by_name("sw_user").unwrap();
    if let Op::SwitchQueueInstance { instance, .. } = &mut m.functions[fi].insts[k.index()].op {
        *instance = 1;
    }
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Core, "instruction `sw_user`: operation differs"), "{v:#?}");
}

/// Only a weight with seeded contents has a weight file.
#[test]
fn a_weight_without_contents_has_no_weight_file() {
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let mut linked = link_with(&modules, &LinkOptions::default()).unwrap();
    let w = linked.module.memlocs.iter().position(|l| l.usage == Usage::Weight && l.init.is_some()).unwrap();
    let name = linked.module.memlocs[w].name.to_string();
    assert_eq!(linked.tensor_map.entries[&name].tf_file, format!("{name}.npy"));
    linked.module.memlocs[w].init = None;
    let v = check_tensor_map(&linked.module, &linked.tensor_map);
    assert!(has(&v, ViolationKind::TensorMap, &format!("entry `{name}` disagrees with its location")), "{v:#?}");
    linked.tensor_map.entries.get_mut(&name).unwrap().tf_file = String::new();
    assert_eq!(check_tensor_map(&linked.module, &linked.tensor_map), vec![]);
}

/// Two input tensors merged into one linked location are reported, by name.
#[test]
fn two_tensors_merged_into_one_linked_location_are_reported() {
    let (inputs, mut m) = linked4();
    let internals: Vec<usize> = (0..m.memlocs.len()).filter(|&i| m.memlocs[i].usage == Usage::Internal).collect();
    let (a, b) = (MemLocId::from_index(internals[0]), MemLocId::from_index(internals[1]));
    let mut moved = 0;
    for f in &mut m.functions {
        for i in &mut f.insts {
            let aps: Vec<&mut AccessPattern> = match &mut i.op {
                Op::DmaCopy { src, dst } => vec![src, dst],
                Op::Compute { srcs, dst, .. } => srcs.iter_mut().chain([dst]).collect(),
                _ => Vec::new(),
            };
            for ap in aps.into_iter().filter(|ap| ap.loc == b) {
                ap.loc = a;
                moved += 1;
            }
        }
    }
    assert!(moved > 0);
    let v = check_link(&inputs, &m);
    let name = &m.memlocs[a.index()].name;
    assert!(has(&v, ViolationKind::Location, &format!("linked location `{name}` holds different tensors")), "{v:#?}");
}

/// A barrier the splitter did not flag keeps its id through the link.
#[test]
fn an_unflagged_barrier_keeps_its_id() {
    let (mut inputs, m) = linked4();
    let (c, k) = (0..inputs.len())
        .find_map(|c| inputs[c].functions[0].insts.iter().position(|i| i.name == "cb1").map(|k| (c, k)))
        .unwrap();
    let fi = core_function(&m, c as u32);
    let linked_id = barrier_mut(&mut m.clone().functions[fi], "cb1").id;
    let Op::CoreBarrier(b) = &mut inputs[c].functions[0].insts[k].op else { unreachable!() };
    (b.flagged, b.id) = (false, linked_id);
    let v = check_link(&inputs, &m);
    assert!(!v.iter().any(|x| x.msg.contains("was not flagged")), "{v:#?}");
    let Op::CoreBarrier(b) = &mut inputs[c].functions[0].insts[k].op else { unreachable!() };
    b.id = linked_id + 1;
    let v = check_link(&inputs, &m);
    let want = format!("`cb1` was not flagged but its id changed {} -> {linked_id}", linked_id + 1);
    assert!(has(&v, ViolationKind::Barrier, &want), "{v:#?}");
}

/// An input barrier may be named like the inserted completion barriers; it is
/// still one barrier (its slot id is counted once).
#[test]
fn an_input_barrier_named_like_a_completion_barrier_is_counted_once() {
    let (mut inputs, mut m) = linked4();
    let c = (0..inputs.len()).find(|&c| inputs[c].functions[0].inst_by_name("cb1").is_some()).unwrap();
    let fi = core_function(&m, c as u32);
    for f in [&mut inputs[c].functions[0], &mut m.functions[fi]] {
        let id = f.inst_by_name("cb1").unwrap();
        f.insts[id.index()].name = "cb_return_user".into();
    }
    assert_eq!(check_link(&inputs, &m), vec![]);
}

/// A handoff's view placed apart from its producer's tensor is reported even
/// when the linked location still sits at the producer's address.
#[test]
fn a_view_placed_apart_from_its_target_is_reported() {
    let mut inputs: Vec<Module> =
        [link_fixtures::SHARED_0, link_fixtures::SHARED_1].iter().map(|t| ir::parse(t).unwrap()).collect();
    let m = link(&inputs).unwrap();
    let (c, view) = (0..inputs.len())
        .find_map(|c| inputs[c].memlocs.iter().position(|l| l.remote_local_target.is_some()).map(|i| (c, i)))
        .unwrap();
    let name = inputs[c].memlocs[view].name.clone();
    let at = inputs[c].memlocs[view].address.unwrap_or(0);
    inputs[c].memlocs[view].address = Some(at + 0x1000);
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Shared, &format!("view `{name}` had")), "{v:#?}");
}

/// The index of the linked module's function of core `core` (its `neuron_core_id`).
fn core_function(m: &Module, core: u32) -> usize {
    m.functions.iter().position(|f| f.attrs.neuron_core_id == Some(core)).expect("a function per input core")
}

/// Appends `inst` to `f`'s instruction arena and to its last block, then canonicalizes `f`.
fn append_inst(f: &mut Function, inst: Inst) {
    f.insts.push(inst);
    let id = InstId::from_index(f.insts.len() - 1);
    f.blocks.last_mut().expect("a function has a block").insts.push(id);
    f.canonicalize();
}

/// A semaphore wait or signal is copied as it is: a changed semaphore or value is reported.
#[test]
fn a_copied_semaphore_op_with_another_semaphore_or_value_is_reported() {
    let text = "\
module sems lnc 2
queue q0 static owner sp sems 2
loc x dram input i32[16] @0x0
loc out dram output i32[16] @0x1000
loc out1 dram output i32[16] @0x2000

func main
  args x
  block entry
    i0 = sp dma x[0..16] -> out[0..16] queue q0 core 0
    i1 = sp sem_signal 1 core 0 after i0
    i2 = sp sem_wait 1 value 1 core 0 after i1
    i3 = act relu x[0..16] -> out1[0..16] core 1
";
    let program = ir::parse(text).unwrap_or_else(|e| panic!("{e}"));
    let modules = per_core_modules(&program).unwrap();
    let m = link(&modules).unwrap();
    assert_eq!(check_link(&modules, &m), vec![], "the unbroken link must pass");
    let fi = core_function(&m, 0);
    let find = |m: &Module, name: &str| m.functions[fi].insts.iter().position(|i| i.name == name).unwrap();
    let edits: [(&str, Op); 3] = [
        ("i1", Op::SemSignal { sem: 0 }),
        ("i2", Op::SemWait { sem: 0, value: 1 }),
        ("i2", Op::SemWait { sem: 1, value: 2 }),
    ];
    for (name, op) in edits {
        let mut broken = m.clone();
        let k = find(&broken, name);
        broken.functions[fi].insts[k].op = op.clone();
        let v = check_link(&modules, &broken);
        assert!(has(&v, ViolationKind::Core, &format!("instruction `{name}`: operation differs")), "{op:?}: {v:#?}");
    }
}

/// An edit of one location.
type LocEdit = dyn Fn(&mut MemoryLocation);

/// A linked location keeps its tensor's usage (but for `fixOutputKind`'s
/// output -> internal), shared flag and contents seed, and is no view; a
/// folded queue keeps its type and owner engine: each change is reported.
#[test]
fn a_changed_usage_shared_flag_contents_or_queue_kind_is_reported() {
    let (inputs, m) = linked4();
    let find = |f: &dyn Fn(&MemoryLocation) -> bool| m.memlocs.iter().position(f).unwrap();
    let shared = find(&|l| l.usage == Usage::Shared && l.remote_local_target.is_none());
    let internal = find(&|l| l.usage == Usage::Internal);
    let weight = find(&|l| l.usage == Usage::Weight && l.init.is_some());
    let name = |k: usize| m.memlocs[k].name.to_string();
    let edits: [(usize, &LocEdit, &str); 6] = [
        (shared, &|l| l.usage = Usage::Internal, "with usage Internal (was Shared)"),
        (internal, &|l| l.usage = Usage::Spill, "with usage Spill (was Internal)"),
        (shared, &|l| l.is_shared_post_dram_alloc = false, "with shared flag false (was true)"),
        (weight, &|l| l.init = l.init.map(|s| s ^ 1), "with contents seed"),
        (weight, &|l| l.usage = Usage::Input, "with usage Input (was Weight)"),
        (
            internal,
            &|l| l.remote_local_target = Some(RemoteLocalTarget { name: "x".into(), core: 1 }),
            "with a remote target `x` on core 1 (was none)",
        ),
    ];
    for (k, edit, want) in edits {
        let mut broken = m.clone();
        edit(&mut broken.memlocs[k]);
        let v = check_link(&inputs, &broken);
        let want = format!("`{}` became `{}` {want}", name(k), name(k));
        assert!(has(&v, ViolationKind::Location, &want), "{want}: {v:#?}");
    }
    let mut queue = m.clone();
    queue.queues[0].owner = if m.queues[0].owner == Engine::Act { Engine::Sp } else { Engine::Act };
    let v = check_link(&inputs, &queue);
    assert!(has(&v, ViolationKind::Queue, &format!("queue `{}`: type and owner", m.queues[0].name)), "{v:#?}");
    let mut qtype = m.clone();
    qtype.queues[0].qtype = if m.queues[0].qtype == QueueType::Static { QueueType::Dynamic } else { QueueType::Static };
    assert!(has(&check_link(&inputs, &qtype), ViolationKind::Queue, "type and owner"));
}

/// Per-core modules that declare aliases of their own (one between two
/// private locations, one from a view): lncsim carries them.
const ALIASED_0: &str = "module demo lnc 2 core 0
loc x dram input i32[8] @0x0
loc t dram shared i32[8] @0x100 shared_post_alloc
loc p dram internal i32[8] @0x200
loc q dram internal i32[8] @0x200
alias q -> p may
func main
  block entry
    a = dve relu x[0..8] -> t[0..8]
    c = dve relu x[0..8] -> p[0..8]
    cb = sp barrier group 0 cores 0,1 id 0 flagged after a:ctl
";

/// See [`ALIASED_0`].
const ALIASED_1: &str = "module demo lnc 2 core 1
loc t_in1 dram shared i32[8] @0x100 shared_post_alloc remote t core 0
loc r dram internal i32[8] @0x300
loc o dram output i32[8] @0x1000
alias t_in1 -> r may
func main
  block entry
    cb = sp barrier group 0 cores 0,1 id 0 flagged
    b = sp dma t_in1[0..8] -> o[0..8] after cb:ctl
";

/// The linked aliases are exactly the handoffs plus the inputs' own (a
/// valid link with carried aliases passes); a lost, weakened, added or
/// reversed alias is reported, and so is a view whose surviving location
/// changed an attribute or its remote target.
#[test]
fn aliases_are_exactly_the_handoffs_and_the_carried_ones_and_views_keep_their_attributes() {
    let inputs: Vec<Module> = [ALIASED_0, ALIASED_1].iter().map(|t| ir::parse(t).unwrap()).collect();
    let m = link(&inputs).unwrap();
    assert_eq!(check_link(&inputs, &m), vec![], "carried aliases are no false alarm");
    let id = |name: &str| m.loc_by_name(name).unwrap();
    let (q, p, v, r, t) = (id("q"), id("p"), id("t_in1"), id("r"), id("t"));
    assert_eq!(m.loc(q).aliases, vec![Alias { target: p, kind: AliasKind::May }]);

    let mut lost = m.clone();
    lost.memlocs[q.index()].aliases.clear();
    let v1 = check_link(&inputs, &lost);
    assert!(has(&v1, ViolationKind::Alias, "alias `q -> p May` (carried from an input) is lost"), "{v1:#?}");

    let mut kind = m.clone();
    kind.memlocs[v.index()].aliases.iter_mut().find(|a| a.target == r).unwrap().kind = AliasKind::Must;
    let v2 = check_link(&inputs, &kind);
    assert!(has(&v2, ViolationKind::Alias, "alias `t_in1 -> r Must` comes from no input alias"), "{v2:#?}");
    assert!(has(&v2, ViolationKind::Alias, "alias `t_in1 -> r May` (carried from an input) is lost"), "{v2:#?}");

    let mut reversed = m.clone();
    reversed.memlocs[t.index()].aliases.push(Alias { target: v, kind: AliasKind::Must });
    let v3 = check_link(&inputs, &reversed);
    assert!(has(&v3, ViolationKind::Alias, "alias `t -> t_in1 Must` comes from no input alias"), "{v3:#?}");

    // The surviving view: size, usage, remote target.
    let edits: [(&LocEdit, &str); 3] = [
        (&|l| l.elem_count = 7, "different type, size, placement, shared flag or contents seed"),
        (&|l| l.usage = Usage::Internal, "usage Internal (expected Shared)"),
        (
            &|l| l.remote_local_target.as_mut().unwrap().name = "p".into(),
            "remote target Some((\"p\", 0)) (expected `t` on core 0)",
        ),
    ];
    for (edit, want) in edits {
        let mut broken = m.clone();
        edit(&mut broken.memlocs[v.index()]);
        let found = check_link(&inputs, &broken);
        let want = format!("view `t_in1` of core 1 survives as `t_in1` with {want}");
        assert!(has(&found, ViolationKind::Alias, &want), "{want}: {found:#?}");
    }
}

/// A view declared as an output is dangling IO: it survives as a spill
/// (`io2Spill`), no false alarm; kept as an output it is reported.
#[test]
fn a_view_declared_as_io_survives_as_a_spill() {
    let one = ALIASED_1.replace(
        "loc t_in1 dram shared i32[8] @0x100 shared_post_alloc",
        "loc t_in1 dram output i32[8] @0x100 shared_post_alloc",
    );
    let inputs: Vec<Module> = [ALIASED_0, one.as_str()].iter().map(|t| ir::parse(t).unwrap()).collect();
    let mut m = link(&inputs).unwrap();
    let v = m.loc_by_name("t_in1").unwrap();
    assert_eq!(m.loc(v).usage, Usage::Spill);
    assert_eq!(check_link(&inputs, &m), vec![]);
    m.memlocs[v.index()].usage = Usage::Output;
    let found = check_link(&inputs, &m);
    assert!(has(&found, ViolationKind::Alias, "usage Output (expected Spill)"), "{found:#?}");
}

/// The completion barriers meet as one group of every core, a group no input
/// barrier uses: a completion barrier made core-local (each core alone in a
/// fresh group of its own, which every per-group check accepts) is reported,
/// and so is a completion group that an input barrier already uses.
#[test]
fn the_completion_barriers_are_one_group_of_every_core_apart_from_the_inputs() {
    let (inputs, m) = linked4();
    let cbs: Vec<(usize, usize)> = (1..m.functions.len())
        .map(|fi| (fi, m.functions[fi].insts.iter().position(|i| i.name.starts_with("cb_return_")).unwrap()))
        .collect();
    let edit = |f: &dyn Fn(usize, &mut CoreBarrier)| {
        let mut broken = m.clone();
        for (c, &(fi, k)) in cbs.iter().enumerate() {
            let Op::CoreBarrier(b) = &mut broken.functions[fi].insts[k].op else { unreachable!() };
            f(c, b);
        }
        check_link(&inputs, &broken)
    };
    let local = edit(&|c, b| {
        b.group = 100 + c as u32;
        b.participants = vec![c as u32];
    });
    assert!(!local.iter().any(|x| x.msg.contains("arrivals from")), "each local group is complete: {local:#?}");
    assert!(
        has(&local, ViolationKind::Barrier, "completion barriers are in groups {100, 101, 102, 103}: one group"),
        "{local:#?}"
    );
    let want = "completion barrier `nc1/cb_return_call_def_1_instance_0` has participants [1], expected every core [0, 1, 2, 3]";
    assert!(has(&local, ViolationKind::Barrier, want), "{local:#?}");
    let reused = edit(&|_, b| b.group = 0);
    assert!(
        has(&reused, ViolationKind::Barrier, "completion barrier group 0 is also an input barrier's group"),
        "{reused:#?}"
    );
}

/// `gen --seed 3 --cores 2`, split and linked (the review's `L.bir`): `(inputs, linked text)`.
fn linked2_text() -> (Vec<Module>, String) {
    let modules = per_core_modules(&generate(&GenConfig::new(3, 2, SizeClass::Small))).unwrap();
    let m = link(&modules).unwrap();
    assert_eq!(check_link(&modules, &m), vec![], "the unbroken link must pass");
    (modules, ir::print(&m))
}

/// The inserted switches are exactly the linker's documented rule (one per
/// queue a core drives, right before its first DMA there, to the core's
/// lowest instance, on the queue's owner): a switch with another instance,
/// on another engine, dropped with its edge, or moved to a later DMA of its
/// queue is reported (each was accepted before, as long as one DMA of the
/// queue depended on it).
#[test]
fn inserted_switches_are_exactly_the_documented_ones() {
    let (inputs, text) = linked2_text();
    let sqi0 = "I-SQI-qSyncIO-call_def_0_instance_0";
    let sqi1 = "I-SQI-qSyncIO-call_def_1_instance_0";
    let line = |name: &str| text.lines().find(|l| l.trim_start().starts_with(&format!("{name} = "))).unwrap();
    assert_eq!(line(sqi0).trim(), format!("{sqi0} = sp switch_queue qSyncIO instance 0 core 0"));
    let judge = |edited: String| {
        assert_ne!(edited, text);
        check_link(&inputs, &ir::parse(&edited).unwrap_or_else(|e| panic!("{e}\n{edited}")))
    };
    let instance = judge(text.replace(line(sqi0), &line(sqi0).replace("instance 0", "instance 1")));
    let want = "core 0 `I-SQI-qSyncIO-call_def_0_instance_0` before `i9`: switches queue `qSyncIO` to instance 1, \
                expected `qSyncIO` to instance 0";
    assert!(has(&instance, ViolationKind::Switch, want), "{instance:#?}");
    let engine = judge(text.replace(line(sqi0), &line(sqi0).replace(" = sp ", " = act ")));
    assert!(has(&engine, ViolationKind::Switch, "runs on Act, not on the queue's owner Sp"), "{engine:#?}");

    // Dropped with the DMA's edge on it.
    let dropped: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with(sqi0))
        .map(|l| l.replace(&format!(" after {sqi0}:ctl"), ""))
        .map(|l| l + "\n")
        .collect();
    let v = judge(dropped);
    let want = "core 0: no inserted switch right before `i9`, its first DMA on queue `qSyncIO`";
    assert!(has(&v, ViolationKind::Switch, want), "{v:#?}");

    // Moved from before core 1's first DMA on the queue (`i19`) to before its second (`i20`).
    let (i19, i20) = (line("i19"), line("i20"));
    let late = text
        .replace(&format!("{}\n", line(sqi1)), "")
        .replace(i19, &i19.replace(&format!(", {sqi1}:ctl"), ""))
        .replace(i20, &format!("{}\n{}, {sqi1}:ctl", line(sqi1), i20));
    let v = judge(late);
    assert!(has(&v, ViolationKind::Switch, "core 1: no inserted switch right before `i19`"), "{v:#?}");
    assert!(
        has(&v, ViolationKind::Switch, &format!("core 1 `{sqi1}`: an inserted switch that is not right before")),
        "{v:#?}"
    );
    assert!(!v.iter().any(|x| x.kind == ViolationKind::Edge), "its edges alone look fine: {v:#?}");
}

/// `f`'s arena reversed (every id remapped): the same program, not in block order.
fn reverse_arena(f: &mut Function) {
    let n = f.insts.len();
    let flip = |id: InstId| InstId::from_index(n - 1 - id.index());
    f.insts.reverse();
    for i in &mut f.insts {
        i.deps.iter_mut().for_each(|d| d.inst = flip(d.inst));
    }
    for b in &mut f.blocks {
        b.insts.iter_mut().for_each(|id| *id = flip(*id));
    }
}

/// The switch rule follows program order, not arena order: an input or a
/// linked function whose arena is not in block order (the verifier's
/// complaint about the linked one aside) gets the same verdict.
#[test]
fn switches_are_judged_in_program_order_whatever_the_arena_order() {
    let (mut inputs, text) = linked2_text();
    let mut m = ir::parse(&text).unwrap();
    reverse_arena(&mut inputs[1].functions[0]);
    assert!(!inputs[1].functions[0].is_canonical());
    assert_eq!(check_link(&inputs, &m), vec![]);
    let fi = core_function(&m, 1);
    reverse_arena(&mut m.functions[fi]);
    let v = check_link(&inputs, &m);
    assert!(v.iter().all(|x| x.kind == ViolationKind::Invalid), "only the verifier's finding: {v:#?}");
    assert!(!v.is_empty());
    // Moved later, as in `inserted_switches_are_exactly_the_documented_ones`, in the reversed arena.
    let f = &mut m.functions[fi];
    let sqi = f.inst_by_name("I-SQI-qSyncIO-call_def_1_instance_0").unwrap();
    let (i19, i20) = (f.inst_by_name("i19").unwrap(), f.inst_by_name("i20").unwrap());
    f.insts[i19.index()].deps.retain(|d| d.inst != sqi);
    f.insts[i20.index()].deps.push(Dep { inst: sqi, kind: EdgeKind::Control });
    let b = f.blocks.iter().position(|b| b.insts.contains(&sqi)).unwrap();
    f.blocks[b].insts.retain(|&id| id != sqi);
    let at = f.blocks[b].insts.iter().position(|&id| id == i20).unwrap();
    f.blocks[b].insts.insert(at, sqi);
    let v = check_link(&inputs, &m);
    assert!(has(&v, ViolationKind::Switch, "core 1: no inserted switch right before `i19`"), "{v:#?}");
}
