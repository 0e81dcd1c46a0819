#![allow(clippy::unwrap_used)]
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, Runtime};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::SimDevice;

#[test]
fn smoke() {
    for cores in [1u32, 2, 4] {
        let cfg = GenConfig::new(7, cores, SizeClass::Small);
        let neff = pack_generated(&cfg).unwrap();
        let rt = Runtime::new(SimDevice::new(8, cores));
        let (r, t) = rt.nrt_load_traced(&neff, -1, -1);
        for e in &t.events {
            println!("{} {:<22} {} {}", e.stage, e.func, e.ok, e.detail);
        }
        let m = r.unwrap();
        let imgs = rt.core_images(m.h_nn).unwrap();
        for i in &imgs {
            println!("{:?}", i.vars.iter().map(|v| (&v.name, v.pa)).collect::<Vec<_>>());
        }
        rt.nrt_unload(&m).unwrap();
        assert_eq!(rt.device().live_allocations(), 0);
    }
    let real = std::fs::read("/work/shared/real-neff/matmul_small.neff").unwrap();
    let rt = Runtime::new(SimDevice::new(2, 2));
    let (r, t) = rt.nrt_load_traced(&real, -1, -1);
    for e in &t.events {
        println!("{} {:<22} {} {}", e.stage, e.func, e.ok, e.detail);
    }
    r.unwrap();
}

#[test]
fn write4() {
    let cfg = GenConfig::new(7, 4, SizeClass::Small);
    std::fs::write("/tmp/gen4.neff", pack_generated(&cfg).unwrap()).unwrap();
}
