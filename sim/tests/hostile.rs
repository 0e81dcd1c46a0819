#![allow(clippy::unwrap_used)]
//! Corrupt staged bytes and malformed images: typed errors or reported
//! violations, never a panic.

mod support;

use lncsim_model::codegen::record::RECORD_SIZE;
use lncsim_model::ir::Engine;
use lncsim_model::load::Device;
use lncsim_sim::{SimConfig, SimError, Simulation};
use proptest::prelude::*;
use support::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn corrupt_records_and_descriptors_never_panic(
        flips in proptest::collection::vec((0usize..5, 0usize..64, any::<u8>(), any::<bool>()), 1..8),
        seed in any::<u64>(),
    ) {
        let s = stage(&module(ONE_CORE), 3);
        let img = &s.images[0];
        for (e, byte, val, ring) in flips {
            let st = &img.engines[e];
            let (base, n, size) = if ring { (st.ring_pa, st.descriptors, 32) } else { (st.pa, st.records, RECORD_SIZE as u64) };
            if n == 0 {
                continue;
            }
            let at = base + (seed % n) * size + (byte as u64 % size);
            s.device.copy_in(0, at, &[val]).unwrap();
        }
        let (report, _) = s.run(SimConfig::seeded(seed).with_jitter());
        // Whatever happened is in the report, one line per violation; a deadlock
        // is its wait-for graph: a header and one line per waiter, bounded.
        for v in &report.violations {
            let lines = v.to_string().lines().count();
            match v {
                lncsim_sim::Violation::Deadlock { waiters } => {
                    prop_assert_eq!(lines, 1 + waiters.len().min(lncsim_sim::violation::DEADLOCK_LINES)
                        + usize::from(waiters.len() > lncsim_sim::violation::DEADLOCK_LINES));
                }
                _ => prop_assert_eq!(lines, 1),
            }
        }
    }
}

#[test]
fn malformed_images_are_typed_errors() {
    let s = stage(&module(ONE_CORE), 3);
    let mut img = s.images[0].clone();
    img.engines.swap(0, 1);
    assert!(matches!(Simulation::new(&s.device, &[img], SimConfig::default()), Err(SimError::BadImage(_))));
    let mut img = s.images[0].clone();
    img.engines[Engine::Dve.index()].records = 1 << 40;
    assert!(matches!(Simulation::new(&s.device, &[img], SimConfig::default()), Err(SimError::BadImage(_))));
    let mut img = s.images[0].clone();
    img.engines[Engine::Dve.index()].records += 1000;
    assert!(matches!(Simulation::new(&s.device, &[img], SimConfig::default()), Err(SimError::Device(_))));
    let mut img = s.images[0].clone();
    img.engines[Engine::Pe.index()].pa = 0x8;
    let e = Simulation::new(&s.device, &[img], SimConfig::default()).unwrap_err();
    assert!(e.to_string().starts_with("device: fetching core 0 Pe records"), "{e}");
    // A var whose bytes the device does not hold, accessed by a record.
    let mut img = s.images[0].clone();
    let x = img.vars.iter_mut().find(|v| v.name == "x").unwrap();
    let (old, size) = (x.pa, x.size);
    x.pa = 0x8;
    let dev = &s.device;
    lncsim_sim::testkit::patch_record(
        dev,
        &img,
        Engine::Dve,
        |r| r.ops[1].pa() == old,
        |r| r.ops[1] = lncsim_model::codegen::record::Operand::physical(0x8, size as u32),
    )
    .unwrap()
    .unwrap();
    let e = Simulation::new(&s.device, &[img], SimConfig::default()).unwrap_err();
    assert!(e.to_string().starts_with("device: "), "{e}");
    let too_many = vec![s.images[0].clone(); 300];
    assert!(matches!(Simulation::new(&s.device, &too_many, SimConfig::default()), Err(SimError::BadImage(_))));
    // Fewer semaphores than the records use: the records are illegal, the run reports them.
    let mut img = s.images[0].clone();
    img.semaphores = 2;
    let report = Simulation::new(&s.device, &[img], SimConfig::default()).unwrap().run();
    assert!(report.of_kind("illegal").count() >= 1, "{report}");
}
