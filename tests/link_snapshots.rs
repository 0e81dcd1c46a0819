//! Snapshot reviews of linked modules (insta; snapshots in the top-level
//! `snapshots/` folder). Each snapshot is what a reviewer reads: the
//! post-link summary (`#` lines: functions with copied/inserted counts,
//! unified tensors, collisions, output kinds, queues, every barrier's group
//! and new slot id) followed by the linked module in the text format
//! (dispatcher first, then `nc0`..; aliases `view -> unified must`).
//! Cases: hand-written and generated, N = 1, 2, 4, 8, including a handoff
//! chain across all cores and a module with several queues.
//!
//! Accept a reviewed change with `INSTA_UPDATE=always cargo test --test
//! link_snapshots` (or `cargo insta accept`); under `CI=true` a changed
//! snapshot fails.
#![allow(clippy::unwrap_used)]

mod link_fixtures;

use lncsim_model::ir::{self, Module};
use lncsim_model::link::pipeline::per_core_modules;
use lncsim_model::link::{LinkOptions, check_link, link_with};
use lncsim_model::program::{GenConfig, SizeClass, generate};

/// The review text of linking `modules`; the checker must pass first.
fn review(modules: &[Module]) -> String {
    let l = link_with(modules, &LinkOptions::default()).unwrap();
    assert_eq!(check_link(modules, &l.module), vec![]);
    format!("{}\n{}", l.report, ir::print(&l.module))
}

fn snap(name: &str, modules: &[Module]) {
    let text = review(modules);
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(format!("link__{name}"), text);
    });
}

fn parse_all(texts: &[&str]) -> Vec<Module> {
    texts.iter().map(|t| ir::parse(t).unwrap()).collect()
}

/// A program whose one tensor travels through every core: core k adds x to
/// core k-1's result; the last core writes the output.
fn chain_program(n: u32) -> Module {
    let mut t = format!("module chain{n} lnc {n}\nqueue qSyncIO dynamic owner sp sems 2 instances 0,1\n");
    t += "loc x dram input i32[8] @0x0\nloc out dram output i32[8] @0x1000\n";
    for k in 0..n {
        t += &format!("loc t{k} dram internal i32[8]\n");
    }
    t += "\nfunc main\n  args x, out\n  block entry\n    i0 = act relu x[0..8] -> t0[0..8] core 0\n";
    for k in 1..n {
        t += &format!("    i{k} = dve add t{}[0..8], x[0..8] -> t{k}[0..8] core {k} after i{}\n", k - 1, k - 1);
    }
    t += &format!("    o = sp dma t{}[0..8] -> out[0..8] queue qSyncIO core {} after i{}\n", n - 1, n - 1, n - 1);
    ir::parse(&t).unwrap()
}

fn generated(seed: u64, cores: u32, ops: u32) -> Vec<Module> {
    let cfg = GenConfig { ops, ..GenConfig::new(seed, cores, SizeClass::Small) };
    per_core_modules(&generate(&cfg)).unwrap()
}

#[test]
fn snapshot_hand_n1_solo() {
    let m = "module solo lnc 1 core 0
queue qSyncIO dynamic owner sp sems 2 instances 0,1
loc x dram input i32[4] @0x0
loc w dram weight i32[4] @0x1000 init 0x5eed
loc t dram internal i32[4]
loc o dram output i32[4] @0x2000
func main
  args x, o
  block entry
    a = dve mul x[0..4], w[0..4] -> t[0..4]
    b = sp dma t[0..4] -> o[0..4] queue qSyncIO after a
";
    snap("hand_n1_solo", &parse_all(&[m]));
}

#[test]
fn snapshot_hand_n2_shared_synced() {
    snap("hand_n2_shared_synced", &parse_all(&[link_fixtures::SHARED_0, link_fixtures::SHARED_1]));
}

#[test]
fn snapshot_hand_n2_fix_output_kind() {
    snap("hand_n2_fix_output_kind", &parse_all(&[link_fixtures::OUTPUTS_0, link_fixtures::OUTPUTS_1]));
}

#[test]
fn snapshot_hand_n2_collisions() {
    let a = "module coll lnc 2 core 0
loc x dram input i32[4] @0x0
loc w dram weight i32[4] @0x40 init 0x7
loc tmp dram internal i32[4]
loc o0 dram output i32[4] @0x1000
func main
  block entry
    a = dve add x[0..4], w[0..4] -> tmp[0..4]
    b = sp dma tmp[0..4] -> o0[0..4] after a
";
    let b = "module coll lnc 2 core 1
loc w dram weight i32[4] @0x40 init 0x7
loc x dram input i32[4] @0x0
loc tmp dram internal i32[4]
loc x0 dram internal i32[4]
loc o1 dram output i32[4] @0x2000
func main
  block entry
    a = act relu w[0..4] -> tmp[0..4]
    c = dve add tmp[0..4], x[0..4] -> x0[0..4] after a
    b = sp dma x0[0..4] -> o1[0..4] after c
";
    snap("hand_n2_collisions", &parse_all(&[a, b]));
}

#[test]
fn snapshot_hand_n2_several_queues() {
    let a = "module queues lnc 2 core 0
queue qSyncIO dynamic owner sp sems 2 instances 0,1
queue qPool static owner pool sems 1 instances 0
queue qAct dynamic owner act sems 3 instances 2
loc x dram input i32[4] @0x0
loc o0 dram output i32[4] @0x1000
loc o2 dram output i32[4] @0x3000
func main
  block entry
    a = sp dma x[0..4] -> o0[0..4] queue qSyncIO
    b = pool dma x[0..4] -> o2[0..4] queue qPool
";
    let b = "module queues lnc 2 core 1
queue qAct dynamic owner act sems 1 instances 0,2
queue qSyncIO dynamic owner sp sems 4 instances 1
loc x dram input i32[4] @0x0
loc o1 dram output i32[4] @0x2000
loc o3 dram output i32[4] @0x4000
func main
  block entry
    s = sp switch_queue qSyncIO instance 1
    a = sp dma x[0..4] -> o1[0..4] queue qSyncIO after s:ctl
    b = act dma x[0..4] -> o3[0..4] queue qAct
";
    snap("hand_n2_several_queues", &parse_all(&[a, b]));
}

#[test]
fn snapshot_hand_n4_handoff_chain() {
    snap("hand_n4_handoff_chain", &per_core_modules(&chain_program(4)).unwrap());
}

#[test]
fn snapshot_hand_n8_handoff_chain() {
    snap("hand_n8_handoff_chain", &per_core_modules(&chain_program(8)).unwrap());
}

#[test]
fn snapshot_gen_n1() {
    snap("gen_s1_n1", &generated(1, 1, 12));
}

#[test]
fn snapshot_gen_n2() {
    snap("gen_s2_n2", &generated(2, 2, 16));
}

#[test]
fn snapshot_gen_n4() {
    snap("gen_s3_n4", &generated(3, 4, 24));
}

#[test]
fn snapshot_gen_n8() {
    snap("gen_s5_n8", &generated(5, 8, 16));
}
