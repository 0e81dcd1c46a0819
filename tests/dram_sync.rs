//! `sync_shared_allocations` (address equalization and its typed errors) and
//! memory-pressure accounting that counts shared bytes once.

#![allow(clippy::unwrap_used)]

use lncsim_model::dram::shared::Synced;
use lncsim_model::dram::{DramOptions, SyncError, allocate_shared, hbm_usage, sync_shared_allocations};
use lncsim_model::ir::{Module, Usage, parse};
use lncsim_model::marks::Recorder;
use lncsim_model::split::split;

const HANDOFF: &str = "\
module h lnc 2
loc x dram input i32[4] @0x0
loc t dram internal i32[4]
loc u dram internal i32[4]
loc v dram internal i32[4]
loc y dram output i32[4] @0x1000

func main
  block entry
    i0 = act relu x[0..4] -> t[0..4] core 0
    i1 = act relu t[0..4] -> u[0..4] core 1 after i0
    i2 = act relu u[0..4] -> v[0..4] core 0 after i1
    i3 = act relu v[0..4] -> y[0..4] core 0 after i2
";

fn opts() -> DramOptions {
    DramOptions { shared_core_cap_mib: 1, ..DramOptions::default() }
}

fn split_text(text: &str) -> Vec<Module> {
    split(&parse(text).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

fn allocated() -> Vec<Module> {
    let mut ms = split_text(HANDOFF);
    for m in &mut ms {
        allocate_shared(m, &opts()).unwrap();
    }
    ms
}

fn loc<'a>(m: &'a Module, name: &str) -> &'a lncsim_model::ir::MemoryLocation {
    m.loc(m.loc_by_name(name).unwrap())
}

fn loc_mut<'a>(m: &'a mut Module, name: &str) -> &'a mut lncsim_model::ir::MemoryLocation {
    let id = m.loc_by_name(name).unwrap();
    &mut m.memlocs[id.index()]
}

#[test]
fn views_get_the_producers_address_partition_and_bank() {
    let mut ms = allocated();
    loc_mut(&mut ms[0], "t").partition = 3;
    loc_mut(&mut ms[0], "t").bank = 2;
    let synced = sync_shared_allocations(&mut ms).unwrap();
    let t = loc(&ms[0], "t").clone();
    let view = loc(&ms[1], "t_in1");
    assert_eq!((view.address, view.partition, view.bank), (t.address, 3, 2));
    assert_eq!(loc(&ms[0], "u_in0").address, loc(&ms[1], "u").address);
    assert_eq!(loc(&ms[1], "u").address, Some(1 << 20));
    let names: Vec<(usize, &str)> = synced.iter().map(|s| (s.core, s.view.as_str())).collect();
    assert_eq!(names, vec![(0, "u_in0"), (1, "t_in1")]);
    assert_eq!(synced[1], Synced { core: 1, view: "t_in1".into(), address: t.address.unwrap(), partition: 3, bank: 2 });
    // Idempotent.
    let again = ms.clone();
    sync_shared_allocations(&mut ms).unwrap();
    assert_eq!(ms, again);
}

#[test]
fn a_missing_target_is_a_typed_error_and_changes_nothing() {
    let mut ms = allocated();
    loc_mut(&mut ms[0], "t").name = "renamed".into();
    let before = ms.clone();
    let err = sync_shared_allocations(&mut ms).unwrap_err();
    assert_eq!(err, SyncError::MissingTarget { core: 1, view: "t_in1".into(), name: "t".into(), target: 0 }, "{err}");
    assert!(err.to_string().contains("remote_mloc != nullptr"));
    assert_eq!(ms, before, "u_in0 was not updated either");
}

#[test]
fn an_unallocated_producer_is_a_typed_error() {
    let mut ms = split_text(HANDOFF);
    // Only core 1 runs the shared allocator: its view t_in1 is marked, core 0's t has no address.
    allocate_shared(&mut ms[1], &opts()).unwrap();
    let err = sync_shared_allocations(&mut ms).unwrap_err();
    assert_eq!(err, SyncError::UnallocatedTarget { core: 1, view: "t_in1".into(), name: "t".into(), target: 0 });
    assert!(err.to_string().contains("remote_mloc->isAllocated()"));
}

#[test]
fn a_missing_core_is_a_typed_error() {
    let mut ms = allocated();
    loc_mut(&mut ms[1], "t_in1").remote_local_target.as_mut().unwrap().core = 7;
    let err = sync_shared_allocations(&mut ms).unwrap_err();
    assert_eq!(err, SyncError::MissingCore { core: 1, view: "t_in1".into(), target: 7 });
}

#[test]
fn unmarked_views_are_skipped_and_one_core_returns_at_once() {
    let mut ms = split_text(HANDOFF);
    let before = ms.clone();
    assert_eq!(sync_shared_allocations(&mut ms), Ok(vec![]));
    assert_eq!(ms, before, "nothing marked (no shared run): nothing to copy");
    let r = Recorder::start();
    let mut one = vec![parse("module p lnc 1\n").unwrap()];
    assert_eq!(sync_shared_allocations(&mut one), Ok(vec![]));
    assert_eq!(r.hits("dram.sync_single_core"), 1);
}

#[test]
fn an_already_addressed_view_is_left_alone_and_the_owner_is_never_written() {
    let mut ms = allocated();
    let owner = loc(&ms[0], "t").clone();
    loc_mut(&mut ms[1], "t_in1").address = Some(0x7000);
    let synced = sync_shared_allocations(&mut ms).unwrap();
    // Seed: `if loc[168] != 0: continue` (the old pass rewrote it with the owner's address).
    assert_eq!(loc(&ms[1], "t_in1").address, Some(0x7000));
    assert!(synced.iter().all(|s| s.view != "t_in1"), "{synced:?}");
    assert_eq!(loc(&ms[0], "t"), &owner, "the owner keeps its own triple");
}

#[test]
fn only_shared_dram_locations_are_equalized_even_when_marked() {
    let mut ms = allocated();
    // A marked, unaddressed private location with a remote target: usage class is not the shared one.
    let v = loc_mut(&mut ms[1], "t_in1");
    v.usage = Usage::Internal;
    let synced = sync_shared_allocations(&mut ms).unwrap();
    assert_eq!(loc(&ms[1], "t_in1").address, None);
    assert!(synced.iter().all(|s| s.view != "t_in1"), "{synced:?}");
}

#[test]
fn a_marked_shared_location_without_a_remote_target_is_a_typed_error() {
    let mut ms = allocated();
    loc_mut(&mut ms[1], "t_in1").remote_local_target = None;
    let before = ms.clone();
    let err = sync_shared_allocations(&mut ms).unwrap_err();
    assert_eq!(err, SyncError::NoRemoteTarget { core: 1, view: "t_in1".into() });
    assert!(err.to_string().contains("getRemoteLocalTarget().has_value()"), "{err}");
    assert_eq!(ms, before);
}

#[test]
fn the_first_error_in_module_order_wins_whatever_its_kind() {
    // Core 0's view u_in0 has no target (found by name only after the scan), and
    // core 1's t_in1 has no remote target (found during the scan): core 0's error comes first.
    let mut ms = allocated();
    loc_mut(&mut ms[1], "u").name = "renamed".into();
    loc_mut(&mut ms[1], "t_in1").remote_local_target = None;
    let before = ms.clone();
    let err = sync_shared_allocations(&mut ms).unwrap_err();
    assert_eq!(err, SyncError::MissingTarget { core: 0, view: "u_in0".into(), name: "u".into(), target: 1 });
    assert_eq!(ms, before);
    // With core 0's view fixed, core 1's error is the one reported.
    loc_mut(&mut ms[1], "renamed").name = "u".into();
    let err = sync_shared_allocations(&mut ms).unwrap_err();
    assert_eq!(err, SyncError::NoRemoteTarget { core: 1, view: "t_in1".into() });
}

#[test]
fn the_core_count_attribute_not_the_module_count_decides_single_core() {
    let mut ms = allocated();
    for m in &mut ms {
        m.attrs.lnc_size = 1;
    }
    let before = ms.clone();
    let r = Recorder::start();
    assert_eq!(sync_shared_allocations(&mut ms), Ok(vec![]));
    assert_eq!(r.hits("dram.sync_single_core"), 1);
    assert_eq!(ms, before, "two modules, but the attribute says one core");
    // And with the attribute at 2, the same modules are equalized.
    for m in &mut ms {
        m.attrs.lnc_size = 2;
    }
    assert_eq!(sync_shared_allocations(&mut ms).unwrap().len(), 2);
}

/// One tensor produced on core 0 and read on every other core of four.
const BROADCAST: &str = "\
module b lnc 4
loc x dram input i32[1024] @0x0
loc t dram internal i32[1024]
loc y1 dram output i32[1024] @0x1000
loc y2 dram output i32[1024] @0x2000
loc y3 dram output i32[1024] @0x3000

func main
  block entry
    i0 = act relu x[0..1024] -> t[0..1024] core 0
    i1 = act relu t[0..1024] -> y1[0..1024] core 1 after i0
    i2 = act relu t[0..1024] -> y2[0..1024] core 2 after i0
    i3 = act relu t[0..1024] -> y3[0..1024] core 3 after i0
";

#[test]
fn shared_bytes_are_counted_once_not_per_core() {
    let mut ms = split_text(BROADCAST);
    for m in &mut ms {
        allocate_shared(m, &opts()).unwrap();
    }
    sync_shared_allocations(&mut ms).unwrap();
    let usage = hbm_usage(&ms);
    // The seed's QUIRK: summing every core's copy counts the one buffer N times.
    let naive: u64 = ms
        .iter()
        .flat_map(|m| &m.memlocs)
        .filter(|l| l.usage == Usage::Shared)
        .map(|l| l.byte_size().div_ceil(4096) * 4096)
        .sum();
    assert_eq!(usage.shared, 4096);
    assert_eq!(naive, 4 * usage.shared);
    assert_eq!(usage.private, vec![0, 0, 0, 0]);
    assert_eq!(usage.total, 4096);
}

#[test]
fn the_shared_run_on_the_compact_sizings_problems_equals_a_fresh_run() {
    use lncsim_model::dram::{allocate_shared_with, compact_core_cap_mib, compact_core_cap_with_problems};
    use lncsim_model::program::{GenConfig, SizeClass, generate};
    let generated = split(&generate(&GenConfig::new(5, 4, SizeClass::Medium))).unwrap();
    for modules in [split_text(HANDOFF), generated] {
        let (mut a, mut b) = (modules.clone(), modules);
        let (cap, problems) = compact_core_cap_with_problems(&a, &opts()).unwrap();
        assert_eq!(cap, compact_core_cap_mib(&b, &opts()).unwrap());
        assert!(problems.iter().flatten().any(Option::is_some), "some core owns a shared tensor");
        let o = DramOptions { shared_core_cap_mib: cap, ..opts() };
        let ra: Vec<_> = a.iter_mut().zip(problems).map(|(m, p)| allocate_shared_with(m, &o, p).unwrap()).collect();
        let rb: Vec<_> = b.iter_mut().map(|m| allocate_shared(m, &o).unwrap()).collect();
        assert_eq!(ra, rb);
        assert_eq!(a, b);
    }
}
