//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use lncsim_model::ir::{Module, parse};
use lncsim_model::load::CoreImage;
use lncsim_model::program::{Values, interpret, seeded_inputs};
use lncsim_sim::io::{read_outputs, write_inputs};
use lncsim_sim::testkit::{MemDevice, PlaceOptions, build, build_compiled, build_linked};
use lncsim_sim::{SimConfig, SimReport, simulate};

/// A staged program: the device, its images and the interpreter's outputs.
pub struct Staged {
    pub device: MemDevice,
    pub images: Vec<CoreImage>,
    pub inputs: Values,
    pub golden: Values,
}

/// Parses a module in the text format.
pub fn module(text: &str) -> Module {
    parse(text).unwrap_or_else(|e| panic!("parse: {e}"))
}

/// Splits, places, compiles and stages `program`, writes seeded inputs.
pub fn stage_with(program: &Module, seed: u64, opts: &PlaceOptions) -> Staged {
    let inputs = seeded_inputs(program, seed);
    let golden = interpret(program, &inputs).unwrap();
    let (device, images) = build(program, opts).unwrap();
    write_inputs(&device, &images, &inputs).unwrap();
    Staged { device, images, inputs, golden }
}

/// Splits, places, links (the real linker), compiles and stages `program`, writes seeded inputs.
pub fn stage_linked(program: &Module, seed: u64) -> Staged {
    let inputs = seeded_inputs(program, seed);
    let golden = interpret(program, &inputs).unwrap();
    let (device, images) = build_linked(program, &PlaceOptions::default()).unwrap();
    write_inputs(&device, &images, &inputs).unwrap();
    Staged { device, images, inputs, golden }
}

/// Compiles `program` with the real pipeline (allocator, anti-dependencies,
/// linker), generates code, stages it and writes seeded inputs.
pub fn stage_compiled(program: &Module, seed: u64) -> Staged {
    let inputs = seeded_inputs(program, seed);
    let golden = interpret(program, &inputs).unwrap();
    let (device, images) = build_compiled(program, &Default::default()).unwrap();
    write_inputs(&device, &images, &inputs).unwrap();
    Staged { device, images, inputs, golden }
}

/// [`stage_with`] with default placement.
pub fn stage(program: &Module, seed: u64) -> Staged {
    stage_with(program, seed, &PlaceOptions::default())
}

impl Staged {
    /// Runs the simulation and reads the outputs back; the device is left as it was.
    pub fn run(&self, cfg: SimConfig) -> (SimReport, Values) {
        let before = self.device.snapshot();
        let report = simulate(&self.device, &self.images, cfg).unwrap();
        let out = read_outputs(&self.device, &self.images).unwrap();
        self.device.restore(&before);
        (report, out)
    }
}

/// Two cores: core 0 adds x and w into t, core 1 copies t to out.
pub const HANDOFF: &str = "module demo lnc 2
queue qSyncIO dynamic owner sp sems 2 instances 0,1
loc x dram input i32[16] @0x0
loc w dram weight i32[16] @0x1000 init 0xbeef
loc t dram internal i32[16]
loc out dram output i32[16] @0x2000

func main
  args x, out
  block entry
    i0 = dve add x[0..16], w[0..16] -> t[0..16] core 0
    i1 = sp dma t[0..16] -> out[0..16] queue qSyncIO core 1 after i0
";

/// One core, every opcode, cross-engine dependencies.
pub const ONE_CORE: &str = "module ops lnc 1
queue q dynamic owner sp sems 1 instances 0
loc x dram input i32[16] @0x0
loc y dram input i32[16] @0x1000
loc w dram weight i32[16] @0x2000 init 7
loc a dram internal i32[16]
loc b dram internal i32[16]
loc c dram internal i32[4]
loc d dram internal i32[16]
loc e dram internal i32[16]
loc out dram output i32[16] @0x3000
loc out2 dram output i32[4] @0x4000

func main
  args x, y, out, out2
  block entry
    i0 = dve add x[0..16], y[0..16], w[0..16] -> a[0..16]
    i1 = act relu a[0..16] -> b[0..16] after i0
    i2 = pool reduce b[0..16] -> c[0..4] after i1
    i3 = pe matmul 4x4x4 a[0..16], b[0..16] -> d[0..16] after i0, i1
    i4 = dve mul d[0..16], x[0..16] -> e[0..16] after i3
    i5 = sp dma e[0..16] -> out[0..16] queue q after i4
    i6 = sp dma c[0..4] -> out2[0..4] queue q after i2
";

/// A proptest strategy over generator configurations with `cores` cores
/// (every other parameter drawn too, so a failure shrinks to a small program).
pub fn gen_config(
    cores: std::ops::RangeInclusive<u32>,
) -> impl proptest::strategy::Strategy<Value = lncsim_model::program::GenConfig> {
    use proptest::prelude::*;
    (any::<u64>(), cores, 1u32..40, 0u32..12, 0u32..=100, 0u32..3, 1u32..4).prop_map(
        |(seed, cores, ops, size_bits, handoff_pct, allreduces, outputs)| lncsim_model::program::GenConfig {
            seed,
            cores,
            ops,
            max_elems: 1u64 << size_bits,
            handoff_pct,
            allreduces,
            outputs,
        },
    )
}

/// Rewrites, in device memory, the first record of `engine` on `image` that
/// `pick` accepts; returns its index (panics when none is picked).
pub fn patch_record(
    device: &MemDevice,
    image: &CoreImage,
    engine: lncsim_model::ir::Engine,
    pick: impl Fn(&lncsim_model::codegen::record::Record) -> bool,
    edit: impl FnOnce(&mut lncsim_model::codegen::record::Record),
) -> usize {
    lncsim_sim::testkit::patch_record(device, image, engine, pick, edit).unwrap().expect("a record to patch")
}

/// A program loaded by the real flow (pipeline, NEFF, `nrt_load` on the
/// simulated device) with seeded inputs written, and the interpreter's outputs.
pub struct LoadedRun {
    pub loaded: lncsim_sim::testkit::Loaded,
    pub golden: Values,
}

impl LoadedRun {
    /// Compiles, packs and loads `program`; writes inputs seeded by `seed`.
    pub fn new(program: &Module, seed: u64) -> LoadedRun {
        let inputs = seeded_inputs(program, seed);
        let golden = interpret(program, &inputs).unwrap();
        let loaded = lncsim_sim::testkit::load_compiled(program, &Default::default(), seed).unwrap();
        write_inputs(loaded.runtime.device(), &loaded.images, &inputs).unwrap();
        LoadedRun { loaded, golden }
    }

    /// Runs once (the device keeps the results) and reads the outputs back.
    pub fn run(&self, cfg: SimConfig) -> (SimReport, Values) {
        let dev = self.loaded.runtime.device();
        let report = simulate(dev, &self.loaded.images, cfg).unwrap();
        (report, read_outputs(dev, &self.loaded.images).unwrap())
    }
}
