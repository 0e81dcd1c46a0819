//! The whole flow of one run (DESIGN.md, "The flow"), with every invariant's
//! independent checker: program -> reference interpreter -> split + DRAM
//! allocation (+ IR checker, + the interleaving oracle) -> link (+ link
//! checker) -> codegen -> NEFF -> `nrt_load` on the simulated device (+ a
//! faulty load that must leave nothing behind) -> simulate -> outputs vs the
//! interpreter's -> unload (device empty) -> TNC scenario.
//!
//! A run is a pure function of its [`RunConfig`]: the loader's staging
//! fan-out is stepped in a seeded order on this thread and the simulator is
//! single-threaded, so the same config gives the same report and trace hash.
//! Nothing here panics on user input; every failure is a failed stage or
//! check in the [`RunReport`], which also carries the command that replays it.

pub mod campaign;
mod features;
pub mod fuzz;
mod leftovers;
mod modules;
pub mod names;
mod outputs;
pub mod plant;
mod report;
mod runtime;
pub mod shrink;
pub mod signature;
pub mod swarm;

use lncsim_model::codegen::{CoreCode, VarKind, codegen, codegen_verified};
use lncsim_model::dram::check_modules;
use lncsim_model::ir::{Module, VerifiedModules};
use lncsim_model::link::{LinkOptions, check_linked, check_linked_verified, link_verified, link_with};
use lncsim_model::load::checker_registered::check_registered;
use lncsim_model::load::{CoreImage, Isa, Runtime};
use lncsim_model::neff::pack::pack_code;
use lncsim_model::neff::{Neff, NeffHeader, PackOptions, ReadOptions};
use lncsim_model::pipeline::{PipelineOptions, build_pipeline};
use lncsim_model::program::interleave::{
    run_interleaved, run_interleaved_verified, run_linked_interleaved, run_linked_interleaved_verified,
};
use lncsim_model::program::interp::MAX_ELEMENTS;
use lncsim_model::program::{
    GenConfig, SizeClass, Values, generate, interpret_verified, retain_written, seeded_input, seeded_inputs_checked,
};
use lncsim_tnc::TncBug;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use names::Names;
pub use names::SourceLines;
pub use plant::PlantedBug;
use report::Rec;
pub use report::{Check, CheckResult, Progress, RunReport, Stage};

use crate::check::barrier_ids::check_barrier_ids;
use crate::check::equalized::check_equalized;
use crate::check::handles::{check_handles, handed, reload_sequence};
use crate::check::hbm::check_hbm;
use crate::check::neff_outputs::check_neff_outputs;
use crate::device::{Fault, FaultPlan as DeviceFaults, SimDevice};
use crate::tnc::{LoaderSpec, TncScenario};
use crate::{DmaSpikes, FaultPlan, FiredSimFault, IssueStall, SimConfig, Simulation};
use leftovers::{faulty_load_verdict, fired_load_verdict, unload_verdict};
use lncsim_model::split::check_split;
use outputs::compare;

/// Where the run's program comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The seeded generator (its size class is kept for the replay command).
    Generated(GenConfig, Option<SizeClass>),
    /// A program in the text format, read from `path`.
    Program {
        /// The parsed program.
        module: Module,
        /// Where it came from (for the replay command).
        path: String,
        /// Where each instruction was written (names findings `FILE:LINE`), when known.
        lines: Option<SourceLines>,
    },
    /// Per-core modules written by hand, one per core (`run --modules A.bir B.bir ...`):
    /// split is skipped, allocation too when every location carries an address.
    Modules {
        /// The modules, in the order given.
        modules: Vec<Module>,
        /// Their files (for the replay command).
        paths: Vec<String>,
        /// Where each instruction was written.
        lines: Option<SourceLines>,
    },
    /// A linked module (a dispatcher and one function per core), read from `path`:
    /// split, allocation and link are skipped.
    Linked {
        /// The linked module.
        module: Module,
        /// Where it came from.
        path: String,
        /// Where each instruction was written.
        lines: Option<SourceLines>,
    },
    /// A NEFF packed by lncsim, read from `path`: loaded and executed on seeded inputs.
    Neff {
        /// The file's bytes.
        bytes: Vec<u8>,
        /// Where it came from.
        path: String,
    },
}

/// A device fault during load: the k-th (0-based) `mem_alloc` or `copy_in` fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadFault {
    /// Fail the k-th `mem_alloc`.
    Alloc(u64),
    /// Fail the k-th `copy_in`.
    CopyIn(u64),
}

/// The faults a run injects (a swarm draws them per seed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Stall one core for a long time at a seeded moment.
    pub stall: bool,
    /// DMA latency spikes.
    pub dma_spikes: bool,
    /// A faulty load before the real one: it must fail with a typed error and leave nothing behind.
    pub load: Option<LoadFault>,
    /// Concurrent loaders of the TNC cache, stepped by the seeded scheduler (0 = none).
    pub loaders: u32,
}

/// Program and load features a run draws so that every seed contract's
/// end-to-end check has something to see (issue 12 section 4); each is a
/// seeded transform of the run's own inputs, never of a stage's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `placed-shared`: every DRAM tensor of the program gets a seeded
    /// (partition, bank), so equalization must copy all three (seed 004).
    pub placed_shared: bool,
    /// `unflagged-barriers`: a seeded share of the split's barrier groups is
    /// left unflagged with slot ids of its own, which the linker must keep (seed 000 section 7).
    pub unflagged_barriers: bool,
    /// `sem-pool`: core k declares k more semaphores on every queue, and every
    /// core uses the highest semaphore of the pool the merged queues must provide (seed 000 section 6).
    pub sem_pool: bool,
    /// `reloads`: after the run, the same runtime loads the NEFF again, once
    /// faulted at the asymmetric S0 edge and left registered (seed 002).
    pub reloads: bool,
    /// `partial-writes`: a seeded third of the program's elementwise writes
    /// become two halves, so destinations start past element 0.
    pub partial_writes: bool,
}

impl Features {
    /// Every feature's `--features` word.
    pub const NAMES: [&'static str; 5] =
        ["placed-shared", "unflagged-barriers", "sem-pool", "reloads", "partial-writes"];

    /// The `--features` words of the features that are on.
    pub fn words(&self) -> Vec<&'static str> {
        let on = [self.placed_shared, self.unflagged_barriers, self.sem_pool, self.reloads, self.partial_writes];
        Self::NAMES.iter().zip(on).filter(|(_, on)| *on).map(|(n, _)| *n).collect()
    }

    /// Turns on the feature named `word`; false when no feature has that name.
    pub fn set(&mut self, word: &str) -> bool {
        match word {
            "placed-shared" => self.placed_shared = true,
            "unflagged-barriers" => self.unflagged_barriers = true,
            "sem-pool" => self.sem_pool = true,
            "reloads" => self.reloads = true,
            "partial-writes" => self.partial_writes = true,
            _ => return false,
        }
        true
    }
}

/// Everything that shapes one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    /// The program or NEFF.
    pub source: Source,
    /// Drives inputs, the staging order, jitter and faults.
    pub seed: u64,
    /// Seeded latency jitter (schedule exploration).
    pub jitter: bool,
    /// Injected faults.
    pub faults: Faults,
    /// Program and load features that reach the seed contracts' checks.
    pub features: Features,
    /// A bug planted on purpose.
    pub plant: Option<PlantedBug>,
    /// Keep the simulator's trace for a Chrome/Perfetto file.
    pub trace: bool,
    /// The simulator's event budget.
    pub events_max: u64,
    /// The compiler pipeline's options.
    pub pipeline: PipelineOptions,
}

/// The simulator's default event budget.
pub const DEFAULT_EVENTS_MAX: u64 = 100_000_000;

impl RunConfig {
    /// A generated program `GenConfig::new(seed, cores, size)`, no jitter, no faults.
    pub fn generated(seed: u64, cores: u32, size: SizeClass) -> Self {
        RunConfig {
            source: Source::Generated(GenConfig::new(seed, cores, size), Some(size)),
            seed,
            jitter: false,
            faults: Faults::default(),
            features: Features::default(),
            plant: None,
            trace: false,
            events_max: DEFAULT_EVENTS_MAX,
            pipeline: PipelineOptions::default(),
        }
    }

    /// The features the run uses: those asked for, and the one a planted bug needs to be seen.
    pub fn effective_features(&self) -> Features {
        let mut f = self.features;
        match self.plant {
            Some(PlantedBug::SyncAddressOnly) => f.placed_shared = true,
            Some(PlantedBug::RenumberUnflagged) => f.unflagged_barriers = true,
            Some(PlantedBug::HandleRollback) => f.reloads = true,
            Some(PlantedBug::SingleCoreSemCount) => f.sem_pool = true,
            Some(PlantedBug::DropDstOffset) => f.partial_writes = true,
            _ => {}
        }
        f
    }

    /// The one command that replays this run, when one exists (a shrunk or
    /// hand-edited generator config has no flags: print its program instead).
    pub fn replay(&self) -> Option<String> {
        let mut cmd = match &self.source {
            Source::Generated(g, Some(size)) if *g == GenConfig::new(g.seed, g.cores, *size) && g.seed == self.seed => {
                format!("lncsim run --seed {} --cores {} --size {}", self.seed, g.cores, size_name(*size))
            }
            Source::Generated(g, None) if g.seed == self.seed => match g.ops_per_core() {
                Some(n) => {
                    format!("lncsim run --seed {} --cores {} --ops {n} --elems {}", self.seed, g.cores, g.max_elems)
                }
                None => return None,
            },
            Source::Generated(..) => return None,
            Source::Program { path, .. } | Source::Neff { path, .. } | Source::Linked { path, .. } => {
                format!("lncsim run {} --seed {}", shell_word(path), self.seed)
            }
            Source::Modules { paths, .. } => {
                let files: Vec<String> = paths.iter().map(|p| shell_word(p)).collect();
                format!("lncsim run --seed {} --modules {}", self.seed, files.join(" "))
            }
        };
        if self.jitter {
            cmd.push_str(" --jitter");
        }
        let mut faults = Vec::new();
        if self.faults.stall {
            faults.push("stall".to_string());
        }
        if self.faults.dma_spikes {
            faults.push("dma".to_string());
        }
        match self.faults.load {
            Some(LoadFault::Alloc(k)) => faults.push(format!("load-alloc={k}")),
            Some(LoadFault::CopyIn(k)) => faults.push(format!("load-copyin={k}")),
            None => {}
        }
        if !faults.is_empty() {
            cmd.push_str(&format!(" --faults {}", faults.join(",")));
        }
        if self.faults.loaders > 0 {
            cmd.push_str(&format!(" --loaders {}", self.faults.loaders));
        }
        let features = self.features.words();
        if !features.is_empty() {
            cmd.push_str(&format!(" --features {}", features.join(",")));
        }
        if let Some(p) = self.plant {
            cmd.push_str(&format!(" --plant {p}"));
        }
        if self.events_max != DEFAULT_EVENTS_MAX {
            cmd.push_str(&format!(" --events-max {}", self.events_max));
        }
        Some(cmd)
    }
}

/// `s` as one POSIX shell word: as is when it is plainly safe, else single-quoted.
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !s.is_empty() && !s.starts_with('-') && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The `--size` word of a size class.
pub fn size_name(s: SizeClass) -> &'static str {
    match s {
        SizeClass::Small => "small",
        SizeClass::Medium => "medium",
        SizeClass::Large => "large",
    }
}

/// The start of the execute stage's error when a NEFF holds the real ISA.
pub const NOT_EXECUTABLE: &str = "not executable: opaque instruction set";

/// Runs the whole flow for `cfg` and checks every invariant.
pub fn run(cfg: &RunConfig) -> RunReport {
    run_observed(cfg, &mut |_| {})
}

/// [`run`], telling `on` about each stage and check (with its wall time) as
/// soon as it finishes, so a caller can print a run as it goes.
pub fn run_observed(cfg: &RunConfig, on: &mut dyn FnMut(Progress<'_>)) -> RunReport {
    let mut r = Rec::new(RunReport::new(cfg.seed, cfg.replay()), on);
    match &cfg.source {
        Source::Neff { bytes, .. } => execute_neff(cfg, bytes, None, None, None, None, &mut r),
        Source::Generated(g, _) => run_program(cfg, &generate(g), None, &mut r),
        Source::Program { module, lines, .. } => run_program(cfg, module, lines.as_ref(), &mut r),
        Source::Modules { modules, lines, .. } => modules::run_modules(cfg, modules, lines.as_ref(), &mut r),
        Source::Linked { module, lines, .. } => modules::run_linked(cfg, module, lines.as_ref(), &mut r),
    }
    tnc(cfg, &mut r);
    r.report
}

fn run_program(cfg: &RunConfig, program: &Module, lines: Option<&SourceLines>, r: &mut Rec<'_>) {
    let feats = cfg.effective_features();
    let placed;
    let program = if feats.placed_shared || feats.partial_writes {
        let mut p = program.clone();
        if feats.partial_writes {
            let n = features::partial_writes(&mut p, cfg.seed);
            r.stage("features", Ok(format!("partial-writes: {n} writes split in two halves")));
        }
        if feats.placed_shared {
            let n = features::place_shared(&mut p, cfg.seed);
            r.stage("features", Ok(format!("placed-shared: {n} DRAM tensors given a seeded partition and bank")));
        }
        placed = p;
        &placed
    } else {
        program
    };
    r.program = program.name.clone();
    r.cores = program.attrs.lnc_size;
    r.instructions = program.functions.iter().map(|f| f.insts.len()).sum();
    // Verified once here; the interpreter takes the proof instead of verifying again.
    let proof = match program.verified() {
        Ok(p) => p,
        Err(e) => return r.stage("program", Err(e.to_string())),
    };
    r.stage("program", Ok(format!("{} ({} cores, {} instructions)", program.name, r.cores, r.instructions)));
    let inputs = match seeded_inputs_checked(program, cfg.seed) {
        Ok(i) => i,
        Err(e) => return r.stage("interpret", Err(e.to_string())),
    };
    let mut golden = match interpret_verified(proof, &inputs) {
        Ok(g) => g,
        Err(e) => return r.stage("interpret", Err(e.to_string())),
    };
    // An output no instruction writes has no producing core: the splitter drops it
    // and the linker's fixOutputKind erases it, so it is no output of the NEFF either.
    retain_written(proof, &mut golden);
    r.stage("interpret", Ok(format!("{} outputs", golden.len())));
    let (mut per_core, mut report) = match build_pipeline(&cfg.pipeline).run_per_core(program) {
        Ok(x) => x,
        Err(e) => return r.stage("split + allocate", Err(e.to_string())),
    };
    r.stage(
        "split + allocate",
        Ok(format!("{} modules; HBM {} B (shared counted once)", per_core.len(), report.hbm.total)),
    );
    r.check(
        "split checker: each op on its core once, only cross-core tensors shared, every handoff fenced",
        &[5],
        list(&check_split(program, &per_core)),
    );
    if feats.unflagged_barriers {
        let n = features::unflag_barriers(&mut per_core, cfg.seed);
        r.stage(
            "features",
            Ok(format!("unflagged-barriers: {n} barrier arrivals left unflagged with ids of their own")),
        );
    }
    if feats.sem_pool {
        let n = features::use_sem_pool(&mut per_core);
        r.stage("features", Ok(format!("sem-pool: {n} cores use the highest semaphore of the merged queues' pool")));
    }
    if cfg.plant == Some(PlantedBug::OverlapLiveTensors) && !plant(r, plant::overlap_live_tensors(&mut per_core)) {
        return;
    }
    if cfg.plant == Some(PlantedBug::HbmSharedPerCore)
        && !plant(r, plant::hbm_shared_per_core(&mut report.hbm, &per_core))
    {
        return;
    }
    if cfg.plant == Some(PlantedBug::SyncAddressOnly) && !plant(r, plant::sync_address_only(&mut per_core)) {
        return;
    }
    if !cfg.pipeline.disable_dram_allocation {
        let v = check_modules(&per_core, &cfg.pipeline.check_config(&report));
        ir_check(r, "IR checker: live tensors disjoint, floors, ceilings, shared = views", &per_core, &v);
    }
    let name = "every core's copy of a shared tensor has one (address, partition, bank), the program's";
    match check_equalized(program, &per_core) {
        Ok(0) => r.not_exercised(name, &[1], "no core holds a view of a shared tensor".into()),
        Ok(_) => r.check(name, &[1], Ok(())),
        Err(v) => r.check(name, &[1], list(&v)),
    }
    // The per-core modules are final from here on: verified once for the
    // split-order oracle and the linker (an invalid one: each verifies and reports it).
    let per_core_proof = VerifiedModules::new(&per_core).ok();
    let interleaved = match per_core_proof {
        Some(p) => run_interleaved_verified(p, &inputs, cfg.seed),
        None => run_interleaved(&per_core, &inputs, cfg.seed),
    };
    r.outputs_check(
        "split modules in a seeded barrier order give the interpreter's outputs",
        &[5],
        &golden,
        match interleaved {
            Ok(out) => compare(&golden, &out),
            Err(e) => Err(e.to_string()),
        },
    );
    let opts = LinkOptions::default();
    let linking = || link_with(&per_core, &opts);
    let mut linked = match per_core_proof.map_or_else(linking, |p| link_verified(p, &opts)) {
        Ok(l) => l,
        Err(e) => return r.stage("link", Err(e.to_string())),
    };
    r.stage("link", Ok(format!("{} ({} functions)", linked.module.name, linked.module.functions.len())));
    if cfg.plant == Some(PlantedBug::DuplicateBarrierId) && !plant(r, plant::duplicate_barrier_id(&mut linked.module)) {
        return;
    }
    if cfg.plant == Some(PlantedBug::KeepIntermediateOutput)
        && !plant(r, plant::keep_intermediate_output(&mut linked.module))
    {
        return;
    }
    if cfg.plant == Some(PlantedBug::SingleCoreSemCount)
        && !plant(r, plant::single_core_sem_count(&per_core, &mut linked.module))
    {
        return;
    }
    if cfg.plant == Some(PlantedBug::RenumberUnflagged)
        && !plant(r, plant::renumber_unflagged(&per_core, &mut linked.module))
    {
        return;
    }
    // The linked module is final from here on (plants done): verified once for the
    // link checker, the linked-order oracle and codegen (an invalid one: each verifies and reports it).
    let linked_proof = linked.module.verified().ok();
    let judge = || check_linked(&per_core, &linked);
    r.check(
        "link checker: barrier ids unique and dense, shared tensors unified",
        &[1, 2],
        list(&linked_proof.map_or_else(judge, |p| check_linked_verified(&per_core, p, &linked.tensor_map))),
    );
    barrier_ids_check(r, &per_core, &linked.module);
    let linked = &linked.module;
    // The linked module run engine by engine in a seeded order that respects
    // only its dependency edges and barriers: a lost or mis-mapped edge shows.
    r.outputs_check(
        "linked module in a seeded dependency-respecting order gives the interpreter's outputs",
        &[2, 5],
        &golden,
        match linked_proof.map_or_else(
            || run_linked_interleaved(linked, &inputs, cfg.seed),
            |p| run_linked_interleaved_verified(p, &inputs, cfg.seed),
        ) {
            Ok(out) => compare(&golden, &out).map_err(|e| Names::new(linked, lines).explain_output(e)),
            Err(e) => Err(e.to_string()),
        },
    );
    let mut codes = match linked_proof.map_or_else(|| codegen(linked), codegen_verified) {
        Ok(c) => c,
        Err(e) => return r.stage("codegen", Err(e.to_string())),
    };
    r.stage("codegen", Ok(format!("{} records", record_count(&codes))));
    if cfg.plant == Some(PlantedBug::UnsyncedShared) && !plant(r, plant::unsync_shared(&mut codes)) {
        return;
    }
    if cfg.plant == Some(PlantedBug::DropSemSignal) && !plant(r, plant::drop_sem_signal(&mut codes)) {
        return;
    }
    if cfg.plant == Some(PlantedBug::DropDstOffset) && !plant(r, plant::drop_dst_offset(&mut codes)) {
        return;
    }
    let bytes = match pack_code(
        &linked.name,
        linked.attrs.lnc_size,
        &codes,
        &PackOptions { seed: cfg.seed, ..PackOptions::default() },
    ) {
        Ok(b) => b,
        Err(e) => return r.stage("package", Err(e.to_string())),
    };
    r.stage("package", Ok(format!("NEFF of {} bytes", bytes.len())));
    let names = Names::new(linked, lines);
    let hbm = (report.hbm.total, report.hbm.shared);
    execute_neff(cfg, &bytes, Some((&golden, INTERPRETER_OUTPUTS)), Some(inputs), Some(&names), Some(hbm), r);
}

/// The output check against the reference interpreter.
const INTERPRETER_OUTPUTS: &str = "simulated outputs equal the interpreter's";

/// Records a plant; false (and a failed stage) when the program offers no place for it.
fn plant(r: &mut Rec<'_>, outcome: Result<String, String>) -> bool {
    let ok = outcome.is_ok();
    r.stage("plant", outcome.map_err(|e| format!("cannot plant here: {e}")));
    ok
}

fn record_count(codes: &[CoreCode]) -> usize {
    codes.iter().flat_map(|c| &c.engines).map(|e| e.records.len()).sum()
}

/// The IR checker's verdict on `modules`: "not exercised" when none holds a
/// compiler-placed DRAM location (Internal, Spill or Shared: what it checks)
/// and it found nothing. O(L) in locations.
fn ir_check(r: &mut Rec<'_>, name: &'static str, modules: &[Module], v: &[lncsim_model::dram::IrViolation]) {
    use lncsim_model::ir::{MemType, Usage};
    let placed = |l: &&lncsim_model::ir::MemoryLocation| {
        l.mem_type == MemType::Dram && matches!(l.usage, Usage::Internal | Usage::Spill | Usage::Shared)
    };
    if v.is_empty() && !modules.iter().flat_map(|m| &m.memlocs).any(|l| placed(&l)) {
        r.not_exercised(
            name,
            &[1, 3],
            "no module holds a compiler-placed (internal, spill or shared) DRAM location".into(),
        );
    } else {
        r.check(name, &[1, 3], list(v));
    }
}

/// The barrier-id check's name in the run report.
const BARRIER_IDS_CHECK: &str =
    "link: barriers flagged before linking renumbered in seed order, unflagged ones keep their ids";

/// [`check_barrier_ids`] on a link of `per_core` (seed 000 §7's renumbering order), into the report.
fn barrier_ids_check(r: &mut Rec<'_>, per_core: &[Module], linked: &Module) {
    match check_barrier_ids(per_core, linked) {
        Ok(seen) if seen.barriers == 0 => {
            r.not_exercised(BARRIER_IDS_CHECK, &[2], "the linked module has no barrier".into())
        }
        Ok(_) => r.check(BARRIER_IDS_CHECK, &[2], Ok(())),
        Err(v) => r.check(BARRIER_IDS_CHECK, &[2], list(&v)),
    }
}

/// A checker's violations as one failure: the first on the check's line, up to
/// [`LISTED_VIOLATIONS`] in all one a line below it, then how many more.
fn list<T: std::fmt::Display>(v: &[T]) -> Result<(), String> {
    let Some((first, rest)) = v.split_first() else { return Ok(()) };
    let mut msg = first.to_string();
    for more in rest.iter().take(LISTED_VIOLATIONS - 1) {
        msg.push_str(&format!("\n        {more}"));
    }
    if v.len() > LISTED_VIOLATIONS {
        msg.push_str(&format!("\n        ... and {} more", v.len() - LISTED_VIOLATIONS));
    }
    Err(msg)
}

/// The most violations one check's report lists, one a line (then a count of the rest).
pub const LISTED_VIOLATIONS: usize = 20;

/// A device of `lnc` physical cores in one vnc.
fn device(lnc: u32) -> SimDevice {
    SimDevice::new(lnc.max(1), lnc.max(1))
}

/// Loads with the staging fan-out stepped in a seeded order (no threads).
fn load(rt: &Runtime<SimDevice>, bytes: &[u8], seed: u64) -> Result<lncsim_model::load::NrtModel, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x10AD_10AD);
    rt.nrt_load_stepped(bytes, -1, -1, &mut |steps| rng.random_range(0..steps.len().max(1)))
        .0
        .map_err(|e| e.to_string())
}

/// Loads and simulates a NEFF; `golden` is the reference outputs and the name
/// of the check comparing with them; `names` names the findings in the program's terms;
/// `hbm`: the allocator's reported (total, shared) HBM bytes, when the run compiled the program.
fn execute_neff(
    cfg: &RunConfig,
    bytes: &[u8],
    golden: Option<(&Values, &'static str)>,
    inputs: Option<Values>,
    names: Option<&Names<'_>>,
    hbm: Option<(u64, u64)>,
    r: &mut Rec<'_>,
) {
    let header = match NeffHeader::parse(bytes) {
        Ok(h) => h,
        Err(e) => return r.stage("load", Err(e.to_string())),
    };
    let lnc = header.lnc_size.max(1);
    if r.cores == 0 {
        r.cores = lnc;
        r.program = header.name_str();
    }
    if let Some(f) = cfg.faults.load {
        faulty_load(bytes, lnc, f, cfg.seed, r);
    }
    let rt = Runtime::new(device(lnc));
    let model = match load(&rt, bytes, cfg.seed) {
        Ok(m) => m,
        Err(e) => return r.stage("load", Err(e)),
    };
    // The per-core models, copied out of the runtime once: the layout check
    // reads them, then their images move into the simulation (no second copy).
    let models = match rt.models(model.h_nn) {
        Ok(m) => m,
        Err(e) => return r.stage("load", Err(e.to_string())),
    };
    r.hbm_bytes = rt.device().allocations().iter().map(|a| a.size).sum();
    r.stage(
        "load",
        Ok(format!("READY: H_NN {}, {} cores staged, {} B of HBM allocated", model.h_nn.0, models.len(), r.hbm_bytes)),
    );
    // The load checker (it shares no code with the loader) judges the READY layout.
    let layout = match (Neff::parse(bytes, &ReadOptions::default()), rt.dlr_model(model.h_nn)) {
        (Ok(neff), Some(dlr)) => check_registered(rt.device(), &neff, &dlr, &models),
        (Err(e), _) => vec![format!("the NEFF reader refuses the file the loader loaded: {e}")],
        (_, None) => vec![format!("H_NN {} is READY but not registered", model.h_nn.0)],
    };
    r.check(
        "load layout: staged bytes inside their allocations, tables, IO sizes, no overlap, queues, nothing leaked",
        &[6],
        list(&layout),
    );
    let images: Vec<CoreImage> = models.into_iter().map(|m| m.image).collect();
    if let Some((total, shared)) = hbm {
        let name = "HBM accounting (shared bytes once) equals the loaded tensors' footprint on the device";
        match check_hbm(&images, total, shared) {
            Ok(0) => r.not_exercised(name, &[3], "no compiler-placed tensor was loaded: 0 B against 0 B".into()),
            Ok(_) => r.check(name, &[3], Ok(())),
            Err(e) => r.check(name, &[3], Err(e)),
        }
    }
    if let Some((golden, _)) = golden {
        r.check(
            "the NEFF's outputs are the program's outputs: none extra, none missing",
            &[5],
            check_neff_outputs(&images, golden.keys().map(String::as_str)).map(|_| ()).or_else(|v| list(&v)),
        );
    }
    let first = handed(&rt, model.h_nn, "load 1".into());
    if images.iter().any(|i| i.isa == Isa::Opaque) {
        // Nothing here can run the real Neuron ISA: the outcome is its own, not a failed check.
        r.stage("execute", Err(format!("{NOT_EXECUTABLE} (the real Neuron ISA is staged, not simulated)")));
        let unloaded = unload_verdict(&rt, rt.nrt_unload(&model));
        r.check("unload leaves the device empty and nothing registered", &[6], unloaded);
        return;
    }
    let inputs = match inputs.map_or_else(|| neff_inputs(&images, cfg.seed), Ok) {
        Ok(i) => i,
        Err(e) => return r.stage("execute", Err(e)),
    };
    let dev = rt.device();
    if let Err(e) = crate::device::io::clear_outputs_and_scratch(dev, &images)
        .and_then(|()| crate::device::io::write_inputs(dev, &images, &inputs))
    {
        return r.stage("execute", Err(e.to_string()));
    }
    let records: u64 = images.iter().flat_map(|i| &i.engines).map(|e| e.records).sum();
    if r.instructions == 0 {
        r.instructions = records as usize;
    }
    let sim_cfg = SimConfig {
        seed: cfg.seed,
        jitter: cfg.jitter.then(crate::Jitter::default),
        events_max: cfg.events_max,
        trace: cfg.trace,
        ..SimConfig::default()
    };
    let mut sim = match Simulation::new(dev, &images, sim_cfg) {
        Ok(s) => s,
        Err(e) => return r.stage("execute", Err(e.to_string())),
    };
    let plan = sim_faults(cfg, &sim.records_per_core(), sim.dma_records());
    sim.set_faults(plan.clone());
    let mut report = sim.run();
    if let Some(n) = names {
        n.name_report(&mut report);
    }
    fired_faults(cfg, &plan, &report, r);
    let outputs = sim
        .write_back(dev)
        .map_err(|e| e.to_string())
        .and_then(|()| crate::device::io::read_outputs(dev, &images).map_err(|e| e.to_string()));
    r.stage(
        "execute",
        Ok(format!(
            "{:?} at {} ns, {} instructions, {} events",
            report.outcome, report.time_ns, report.instructions, report.events
        )),
    );
    runtime::runtime_checks(&report, r);
    if let Some((golden, check)) = golden {
        let verdict = outputs.and_then(|o| compare(golden, &o));
        r.outputs_check(
            check,
            &[5],
            golden,
            verdict.map_err(|e| match names {
                Some(n) => n.explain_output(e),
                None => e,
            }),
        );
    } else if let Err(e) = outputs {
        r.check("outputs read back", &[5], Err(e));
    }
    r.trace_hash = Some(report.trace_hash);
    r.sim = Some(report);
    let unloaded = unload_verdict(&rt, rt.nrt_unload(&model));
    r.check("unload leaves the device empty and nothing registered", &[6], unloaded);
    if cfg.effective_features().reloads {
        if cfg.plant == Some(PlantedBug::HandleRollback) {
            rt.plant_handle_rollback();
            r.stage("plant", Ok("the registry takes back the handles of a load failed at the S0 edge".into()));
        }
        let loads = first.and_then(|f| reload_sequence(&rt, f, &mut |rt| load(rt, bytes, cfg.seed)));
        let outcome = loads.and_then(|l| {
            let verdict = check_handles(&l).or_else(|v| list(&v));
            verdict.and_then(|()| unload_verdict(&rt, Ok(())))
        });
        r.check(
            "registry: no H_NN or H_MODEL handed out twice in a run (reloads around the asymmetric S0 edge)",
            &[6],
            outcome,
        );
    }
}

/// Seeded values for every input variable of a loaded NEFF (by name, like
/// `seeded_inputs`); an error, before allocating, when its inputs or its
/// outputs (read back later) are together more elements than the
/// interpreter's budget (a NEFF's sizes come from its file).
fn neff_inputs(images: &[CoreImage], seed: u64) -> Result<Values, String> {
    let vars = |kind: VarKind| images.iter().flat_map(|i| &i.vars).filter(move |v| v.kind == kind);
    for (kind, what) in [(VarKind::Input, "inputs"), (VarKind::Output, "outputs")] {
        let total = vars(kind).fold(0u64, |a, v| a.saturating_add(v.size / 4));
        if total > MAX_ELEMENTS {
            return Err(format!("the NEFF's {what} hold {total} elements in all; at most {MAX_ELEMENTS} are handled"));
        }
    }
    Ok(vars(VarKind::Input).map(|v| (v.name.clone(), seeded_input(&v.name, v.size / 4, seed))).collect())
}

/// The simulator's faults for `cfg`, placed on the program's real records so
/// that a requested fault fires: the stall on a record a core really issues
/// (a core with records, after a seeded number of its records), the forced
/// DMA spike on a transfer that exists. Either can still fail to fire when
/// the run ends first (a deadlock); the run then reports it not exercised.
fn sim_faults(cfg: &RunConfig, per_core: &[u64], dma_records: u64) -> FaultPlan {
    let records: u64 = per_core.iter().sum();
    let horizon = records.max(1).saturating_mul(500);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x57A1_1000);
    let mut plan = FaultPlan::default();
    let busy: Vec<usize> = (0..per_core.len()).filter(|&c| per_core[c] > 0).collect();
    if cfg.faults.stall && !busy.is_empty() {
        let core = busy[rng.random_range(0..busy.len())];
        plan.issue_stalls.push(IssueStall {
            core: core as u32,
            after_issues: rng.random_range(0..per_core[core]),
            duration_ns: rng.random_range(horizon / 8..=horizon / 2).max(1),
        });
    }
    if cfg.faults.dma_spikes {
        plan.dma_spikes =
            Some(DmaSpikes { permille: rng.random_range(10..=250), extra_ns: rng.random_range(1_000..=20_000) });
        if dma_records > 0 {
            plan.dma_spike_at = Some(rng.random_range(0..dma_records));
        }
    }
    plan
}

/// The faults the run asked of the simulator: each one that fired, and a
/// "not exercised" verdict for each kind that was requested and never fired.
fn fired_faults(cfg: &RunConfig, plan: &FaultPlan, s: &crate::SimReport, r: &mut Rec<'_>) {
    if !cfg.faults.stall && !cfg.faults.dma_spikes {
        return;
    }
    for f in &s.faults_fired {
        r.fault(f.to_string());
    }
    if s.faults_fired_total > s.faults_fired.len() as u64 {
        r.fault(format!("... {} fired in all", s.faults_fired_total));
    }
    let stalls = s.faults_fired.iter().filter(|f| matches!(f, FiredSimFault::Stall { .. })).count();
    let spikes = s.faults_fired.iter().filter(|f| matches!(f, FiredSimFault::DmaSpike { .. })).count();
    let mut missing = Vec::new();
    if cfg.faults.stall && stalls == 0 {
        missing.push(match plan.issue_stalls.first() {
            Some(st) => format!(
                "stall (core index {} after {} issued records) never fired: the run ended first",
                st.core, st.after_issues
            ),
            None => "stall never fired: no core has records".to_owned(),
        });
    }
    if cfg.faults.dma_spikes && spikes == 0 {
        missing.push("DMA spikes never fired: the program has no DMA transfer".to_owned());
    }
    let name = "requested simulator faults fired (stall, DMA spikes)";
    if missing.is_empty() {
        r.check(name, &[5], Ok(()));
    } else {
        missing.iter().for_each(|m| r.fault(format!("not fired: {m}")));
        r.not_exercised(name, &[5], missing.join("; "));
    }
}

/// A load with an injected device fault must fail with a typed error and leave
/// no allocation, no registered model and no vnc claim behind (invariant 6).
fn faulty_load(bytes: &[u8], lnc: u32, fault: LoadFault, seed: u64, r: &mut Rec<'_>) {
    let dev = device(lnc);
    dev.set_fault_plan(DeviceFaults {
        faults: vec![match fault {
            LoadFault::Alloc(k) => Fault::Alloc(k),
            LoadFault::CopyIn(k) => Fault::CopyIn(k),
        }],
    });
    let rt = Runtime::new(dev);
    let result = load(&rt, bytes, seed);
    let fired = rt.device().fired();
    let counts = rt.device().counts();
    let loaded = result.is_ok();
    let outcome = faulty_load_verdict(&rt, result, &fault);
    let name = "a faulty load fails cleanly: nothing allocated, registered or claimed";
    let asked = match fault {
        LoadFault::Alloc(k) => format!("load-alloc={k}"),
        LoadFault::CopyIn(k) => format!("load-copyin={k}"),
    };
    if fired.is_empty() {
        let why = format!(
            "{asked} never fired: the load made {} mem_alloc and {} copy_in calls",
            counts.mem_alloc, counts.copy_in
        );
        r.fault(format!("not fired: {why}"));
        match outcome {
            // The load never met its fault: that it unloaded clean says nothing about rollback.
            Ok(_) => r.not_exercised(name, &[6], why),
            Err(e) => r.check(name, &[6], Err(e)),
        }
    } else {
        lncsim_model::marks::hit("flow.fault.load_fired");
        for f in &fired {
            r.fault(format!("{asked} fired: {:?} #{} for tpb {}", f.kind, f.op_index, f.tpb));
        }
        r.check(name, &[6], fired_load_verdict(&asked, loaded, outcome));
    }
}

/// The TNC cache under seeded interleavings of concurrent loaders (invariant 4).
fn tnc(cfg: &RunConfig, r: &mut Rec<'_>) {
    let planted = cfg.plant == Some(PlantedBug::TncNoWake);
    if cfg.faults.loaders == 0 && !planted {
        return;
    }
    let scenario = if planted {
        // A creator whose parse fails while others wait for it: the planted bug never wakes them.
        let loaders = cfg.faults.loaders.max(3);
        let mut s = TncScenario::random(cfg.seed, loaders as usize, 1, 0);
        for (i, l) in s.loaders.iter_mut().enumerate() {
            *l = LoaderSpec { uuid: [7; 16], arrive_ns: i as u64 * 10, parse_fails: i == 0 };
        }
        s.with_bug(TncBug::NoWakeOnFailure)
    } else {
        TncScenario::random(cfg.seed, cfg.faults.loaders as usize, 1 + (cfg.seed % 2) as usize, 250)
    };
    let t = scenario.run();
    let outcome = if t.passed() {
        Ok(())
    } else {
        Err(t.violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; "))
    };
    r.stage("tnc", Ok(format!("{} loaders, {} steps", t.loaders.len(), t.steps)));
    let name = "TNC cache: every loader finishes, slot back to UNINIT, ref count 0";
    // Loaders that each found the slot UNINIT never met the cache's concurrency.
    let met_busy_slot = t.loaders.iter().any(|l| l.paths.iter().any(|&p| p != lncsim_tnc::TncPath::FirstWorker));
    if outcome.is_ok() && !met_busy_slot {
        let why = "no loader met another's busy slot (every one found it UNINIT: no wait, no reuse)";
        r.not_exercised(name, &[4], why.into());
    } else {
        r.check(name, &[4], outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::{LISTED_VIOLATIONS, list};

    #[test]
    fn a_checks_violations_are_listed_one_a_line_up_to_the_limit_then_counted() {
        assert_eq!(list::<String>(&[]), Ok(()));
        assert_eq!(list(&["a"]), Err("a".to_string()));
        assert_eq!(list(&["a", "b", "c"]), Err("a\n        b\n        c".to_string()));
        let many: Vec<String> = (0..LISTED_VIOLATIONS + 3).map(|i| format!("v{i}")).collect();
        let msg = list(&many).unwrap_err();
        let lines: Vec<&str> = msg.lines().collect();
        assert_eq!(lines.len(), LISTED_VIOLATIONS + 1, "{msg}");
        assert_eq!(lines[0], "v0");
        assert_eq!(lines[LISTED_VIOLATIONS - 1], format!("        v{}", LISTED_VIOLATIONS - 1));
        assert_eq!(lines[LISTED_VIOLATIONS], "        ... and 3 more");
    }
}
