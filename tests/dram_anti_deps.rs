//! The post-DRAM anti-dependency passes: edges between instructions that touch
//! reused bytes through different tensors, backward, deduplicated, minimal.

#![allow(clippy::unwrap_used)]

use lncsim_model::dram::{
    DramOptions, MAX_WALK_STEPS, allocate_module, anti_dependency_analyzer_post_dram,
    anti_dependency_analyzer_post_shared_dram, reuse_worst_case,
};
use lncsim_model::ir::{Dep, EdgeKind, InstId, Module, parse};
use lncsim_model::marks::Recorder;

fn module(text: &str) -> Module {
    parse(text).unwrap_or_else(|e| panic!("{e}"))
}

/// a -> b -> c with no dependency edges at all: only the allocator's reuse of
/// a's bytes for c links the instructions.
const NO_DEPS: &str = "\
module p lnc 1
loc x dram input i32[1024] @0x0
loc a dram internal i32[1024]
loc b dram internal i32[1024]
loc c dram internal i32[1024]
loc y dram output i32[1024] @0x1000

func main
  block entry
    i0 = act relu x[0..1024] -> a[0..1024]
    i1 = dve relu a[0..1024] -> b[0..1024]
    i2 = pool relu b[0..1024] -> c[0..1024]
    i3 = pe relu c[0..1024] -> y[0..1024]
";

fn deps(m: &Module, inst: &str) -> Vec<(String, EdgeKind)> {
    let f = &m.functions[0];
    let i = f.inst_by_name(inst).unwrap();
    f.insts[i.index()].deps.iter().map(|d| (f.insts[d.inst.index()].name.to_string(), d.kind)).collect()
}

fn allocated(text: &str) -> Module {
    let mut m = module(text);
    allocate_module(&mut m, &DramOptions::default()).unwrap();
    let a = m.loc(m.loc_by_name("a").unwrap()).address;
    assert_eq!(a, m.loc(m.loc_by_name("c").unwrap()).address, "the test needs a and c to share bytes");
    m
}

#[test]
fn reuse_gets_war_waw_and_read_edges_pointing_backward() {
    let mut m = allocated(NO_DEPS);
    let r = Recorder::start();
    let reports = anti_dependency_analyzer_post_dram(&mut m).unwrap();
    assert_eq!(r.hits("dram.anti_deps_post_dram"), 1);
    // i2 writes c over a: after i1 read a (WAR), after i0 wrote a (WAW).
    assert_eq!(deps(&m, "i2"), vec![("i0".into(), EdgeKind::Waw), ("i1".into(), EdgeKind::War)]);
    // i3 reads c's bytes, which i2 overwrote entirely after i0 wrote them through a: i2 follows
    // i0 (its WAW edge) and i3 follows i2 by the program's own same-tensor order, so no edge.
    assert!(deps(&m, "i3").is_empty());
    assert!(deps(&m, "i0").is_empty() && deps(&m, "i1").is_empty());
    assert_eq!((reports[0].waw, reports[0].war, reports[0].raw), (1, 1, 0));
    m.verify().unwrap();
    // Deduplicated: a second run adds nothing.
    let again = m.clone();
    assert_eq!(anti_dependency_analyzer_post_dram(&mut m).unwrap()[0].added(), 0);
    assert_eq!(m, again);
}

#[test]
fn a_read_of_bytes_last_written_through_another_tensor_gets_a_data_edge() {
    // i2 overwrites only the first half of c: the second half still holds what i0 wrote through a.
    let mut m =
        allocated(&NO_DEPS.replace("-> c[0..1024]", "-> c[0..512]").replace("b[0..1024] -> c", "b[0..512] -> c"));
    let reports = anti_dependency_analyzer_post_dram(&mut m).unwrap();
    assert_eq!(deps(&m, "i2"), vec![("i0".into(), EdgeKind::Waw), ("i1".into(), EdgeKind::War)]);
    assert_eq!(deps(&m, "i3"), vec![("i0".into(), EdgeKind::Data)]);
    assert_eq!((reports[0].waw, reports[0].war, reports[0].raw), (1, 1, 1));
}

#[test]
fn edges_already_implied_by_the_program_are_not_added() {
    let text = NO_DEPS
        .replace("-> b[0..1024]", "-> b[0..1024] after i0")
        .replace("-> c[0..1024]\n", "-> c[0..1024] after i1\n");
    let text = text.replace("-> y[0..1024]", "-> y[0..1024] after i2");
    let mut m = allocated(&text);
    let before = m.clone();
    let reports = anti_dependency_analyzer_post_dram(&mut m).unwrap();
    assert_eq!(reports[0].added(), 0, "i2 already follows i1 and i0 through the data edges");
    assert_eq!(m, before);
}

#[test]
fn nearest_conflict_first_covers_earlier_ones_transitively() {
    // i1 follows i0; i2 conflicts with both (WAW with i0, WAR with i1) and needs only the edge to i1.
    let text = NO_DEPS.replace("-> b[0..1024]", "-> b[0..1024] after i0");
    let mut m = allocated(&text);
    anti_dependency_analyzer_post_dram(&mut m).unwrap();
    assert_eq!(deps(&m, "i2"), vec![("i1".into(), EdgeKind::War)]);
}

#[test]
fn the_shared_pass_covers_the_shared_region_only() {
    // Two shared tensors hand-placed on the same bytes (the allocator never does this).
    let text = "\
module s lnc 2 core 0
loc x dram input i32[4] @0x0
loc p dram internal i32[4] @0x2000
loc q dram internal i32[4] @0x2000
loc s1 dram shared i32[4] @0x0 shared_post_alloc
loc s2 dram shared i32[4] @0x0 shared_post_alloc

func main
  block entry
    i0 = act relu x[0..4] -> s1[0..4] core 0
    i1 = act relu x[0..4] -> s2[0..4] core 0
    i2 = act relu x[0..4] -> p[0..4] core 0
    i3 = act relu x[0..4] -> q[0..4] core 0
";
    let mut shared = module(text);
    let r = anti_dependency_analyzer_post_shared_dram(&mut shared).unwrap();
    assert_eq!(r[0].waw, 1);
    assert_eq!(deps(&shared, "i1"), vec![("i0".into(), EdgeKind::Waw)]);
    assert!(deps(&shared, "i3").is_empty(), "private tensors are the other pass's");
    let mut private = module(text);
    anti_dependency_analyzer_post_dram(&mut private).unwrap();
    assert_eq!(deps(&private, "i3"), vec![("i2".into(), EdgeKind::Waw)]);
    assert!(deps(&private, "i1").is_empty());
    let f = &private.functions[0];
    for (j, inst) in f.insts.iter().enumerate() {
        assert!(inst.deps.iter().all(|&Dep { inst, .. }| inst < InstId::from_index(j)));
    }
}

#[test]
fn an_unordered_reuse_planted_at_instruction_99990_of_a_100k_chain_gets_exactly_its_edge() {
    // A dependent chain on distinct hand-placed pages, plus `p99990`, ordered after nothing,
    // writing `r`, which sits on t99985's page (written by i99985, last read by i99986).
    let n = 100_000usize;
    let mut s = String::from("module deep lnc 1\nloc x dram input i32[64] @0x0\n");
    for k in 0..n {
        s.push_str(&format!("loc t{k} dram internal i32[64] @{:#x}\n", (k as u64 + 1) << 12));
    }
    s.push_str(&format!("loc r dram internal i32[64] @{:#x}\n", (99_985u64 + 1) << 12));
    s.push_str("\nfunc main\n  block entry\n    i0 = act relu x[0..64] -> t0[0..64]\n");
    for k in 1..n {
        s.push_str(&format!("    i{k} = dve relu t{}[0..64] -> t{k}[0..64] after i{}\n", k - 1, k - 1));
        if k == 99_990 {
            s.push_str("    p99990 = act relu x[0..64] -> r[0..64]\n");
        }
    }
    let mut m = module(&s);
    let reports = anti_dependency_analyzer_post_dram(&mut m).unwrap();
    // WAR to the last reader; the WAW to i99985 is implied through i99986's own edge.
    assert_eq!(deps(&m, "p99990"), vec![("i99986".into(), EdgeKind::War)]);
    assert_eq!((reports[0].waw, reports[0].war, reports[0].raw), (0, 1, 0));
    m.verify().unwrap();
}

#[test]
fn an_adversarial_reuse_pattern_is_refused_with_one_typed_line_not_an_oom() {
    // 6000 one-element writes through `a`, then 6000 reads of all of it through `big`,
    // hand-placed on the same bytes: about 36M reader entries, past the walk's limit.
    let mut m = module(&reuse_worst_case(6000, 6000));
    let before = m.clone();
    let err = anti_dependency_analyzer_post_dram(&mut m).unwrap_err();
    let line = err.to_string();
    assert!(line.contains("function `main`") && line.contains(&format!("limit of {MAX_WALK_STEPS} steps")), "{line}");
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(m.functions[0].insts.len(), before.functions[0].insts.len());
    assert!(m.functions[0].insts.iter().all(|i| i.deps.is_empty()), "no edges added on refusal");
}
