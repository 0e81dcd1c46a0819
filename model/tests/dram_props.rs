//! Properties of the allocation core (256+ cases each): the checker passes on
//! generated problems (or allocate reports out-of-space), allocation is
//! deterministic, non-interfering buffers really share addresses, and the
//! page-straddle bump, the CC-region retry and the HWM floor all run.

use std::cell::Cell;

use lncsim_model::dram::{AllocError, Order, Problem, Violation, allocate, allocate_naive, check, generate};
use lncsim_model::marks::Recorder;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// A runner with a fixed seed: the same cases on every run.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, rng_seed: RngSeed::Fixed(4), ..Config::default() })
}

fn lives_meet(p: &Problem, a: usize, b: usize) -> bool {
    let (x, y) = (&p.locations[a].intervals, &p.locations[b].intervals);
    x.iter().any(|i| y.iter().any(|j| i.def <= j.last_use && j.def <= i.last_use))
}

/// A pair (x, y) of nonzero-size locations that are live together, y movable.
fn live_pair(p: &Problem) -> Option<(usize, usize)> {
    let n = p.locations.len();
    let nonzero = |i: usize| p.locations[i].aligned_size().unwrap_or(0) > 0;
    (0..n).flat_map(|x| (0..n).map(move |y| (x, y))).find(|&(x, y)| {
        x != y && nonzero(x) && nonzero(y) && p.locations[y].fixed_address.is_none() && lives_meet(p, x, y)
    })
}

/// Pairs of locations with disjoint lifetimes whose byte ranges intersect.
fn shared_pairs(p: &Problem, addrs: &[u64]) -> usize {
    let size = |i: usize| p.locations[i].aligned_size().unwrap_or(0);
    let mut n = 0;
    for a in 0..addrs.len() {
        for b in a + 1..addrs.len() {
            let (sa, sb) = (size(a), size(b));
            if sa > 0 && sb > 0 && addrs[a] < addrs[b] + sb && addrs[b] < addrs[a] + sa && !lives_meet(p, a, b) {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn generated_problems_check_clean_deterministically_with_reuse_and_every_branch() {
    let rec = Recorder::start();
    let placed = Cell::new(0u32);
    let out_of_space = Cell::new(0u32);
    let reuse = Cell::new(0usize);
    let size_order = Cell::new(0u32);
    let mut runner = runner(512);
    runner
        .run(&any::<u64>(), |seed| {
            let (p, c) = generate::random_case(seed);
            match allocate(&p, &c) {
                Ok(a) => {
                    let v = check(&p, &c, &a.addresses);
                    prop_assert!(v.is_empty(), "seed {}: {:?}", seed, v);
                    let again = allocate(&p, &c);
                    prop_assert_eq!(Ok(&a), again.as_ref(), "seed {} not deterministic", seed);
                    let naive = allocate_naive(&p, &c);
                    prop_assert_eq!(Ok(&a), naive.as_ref(), "seed {}: tree != pair scan", seed);
                    reuse.set(reuse.get() + shared_pairs(&p, &a.addresses));
                    // Break it: move a movable location onto a live neighbour; the checker must see it.
                    if let Some((x, y)) = live_pair(&p) {
                        let mut broken = a.addresses.clone();
                        broken[y] = broken[x];
                        let v = check(&p, &c, &broken);
                        let hit = v
                            .iter()
                            .any(|w| matches!(w, Violation::Overlap { a, b, .. } if (*a, *b) == (x.min(y), x.max(y))));
                        prop_assert!(hit, "seed {}: moved {} onto {} unnoticed: {:?}", seed, y, x, v);
                    }
                    placed.set(placed.get() + 1);
                    if c.order == Order::Size {
                        size_order.set(size_order.get() + 1);
                    }
                }
                Err(AllocError::OutOfSpace { .. }) => out_of_space.set(out_of_space.get() + 1),
                Err(e) => prop_assert!(false, "seed {}: valid problem rejected: {}", seed, e),
            }
            Ok(())
        })
        .expect("property");
    let (placed, oos) = (placed.get(), out_of_space.get());
    eprintln!(
        "placed {placed}, out of space {oos}, size order {}, shared pairs {}, marks {:?}",
        size_order.get(),
        reuse.get(),
        rec.delta()
    );
    assert!(placed >= 256, "only {placed} of 512 cases placed");
    assert!(oos > 0, "no case ran out of space");
    assert!(size_order.get() > 0);
    assert!(reuse.get() > 0, "no two non-interfering buffers ever shared an address");
    for mark in ["dram.page_straddle_bump", "dram.cc_region_retry", "dram.hwm_floor"] {
        assert!(rec.hits(mark) > 0, "mark {mark} never hit");
    }
}

#[test]
fn larger_generated_problems_check_clean_in_both_orders() {
    let mut runner = runner(256);
    runner
        .run(&(any::<u64>(), 50usize..400, 2u64..40), |(seed, n, live)| {
            let p = generate::bench_problem(seed, n, live);
            for order in [Order::Seed, Order::Size] {
                let c = generate::bench_config(order);
                let a = allocate(&p, &c).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let v = check(&p, &c, &a.addresses);
                prop_assert!(v.is_empty(), "seed {} n {}: {:?}", seed, n, v);
                prop_assert!(a.metrics.peak >= p.lower_bound().unwrap_or(0) + a.metrics.start);
            }
            Ok(())
        })
        .expect("property");
}
