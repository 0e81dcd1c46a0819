//! bir_linker (seed 000, whole): N finished per-core modules merged into one
//! new module `<name>/sgLnk`.
//!
//! [`link`] / [`link_with`] follow the seed's `run` (§2) step by step, each
//! step a function named after the seed's (so code and seed read side by side):
//!
//! 1. `getNcLnkModuleName`: `<name>/sgLnk`;
//! 2. `runModuleDefPasses` ([`defs`]): every input verified, one function, a
//!    NeuronCoreId, no call/return, barrier groups consistent across cores;
//! 3. `initDefInfo` ([`defs`]): the module-definition table, with the seed's
//!    defs-vs-modules mismatch diagnostic;
//! 4. a fresh [`Module`] (never an edit of an input; lnc_size N, no NeuronCoreId);
//! 5. `runCallGraph` ([`callgraph`]): `initCallGraphModule`,
//!    `copyModulesAsFunctions` (`copyAllocs2Func`/`copyAllocs2Inst` in [`allocs`],
//!    `copyInstrs2BB` with `copyDeps` folded in, `copyTensorMapForFunc`), `runFunctionPasses`
//!    ([`fpass`]), `buildMainMemlocs` + `buildMainAliases` ([`memlocs`]),
//!    `buildMainTensorMap` ([`tensor_map`]), the dispatcher via `addFnCall`,
//!    `moveModulesAsFunctions`;
//! 6. `initQueues` ([`queues`]);
//! 7. link-dir setup ([`link_dir`], only when a link dir is requested);
//! 8. `fixOutputKind` ([`outputs`]);
//! 9. `orderCoreBarriersAndCollectives` on every block, then
//!    `renumberCoreBarriers` ([`barriers`]);
//! 10. the post-link report ([`report`]).
//!
//! The seed's `hlo_netlist.json` (step 4 of its `run`) has no counterpart: the
//! cross-core handoffs it describes are the `remote_local_target`s the
//! splitter minted. [`checker`] is the independent oracle; [`pipeline`] the
//! per-core flow feeding the linker; [`fuzz`] the fuzz target body.

pub mod allocs;
pub mod barriers;
pub mod callgraph;
pub mod checker;
pub mod defs;
pub mod fpass;
pub mod fuzz;
pub mod link_dir;
pub mod memlocs;
mod names;
pub mod outputs;
pub mod pipeline;
pub mod queues;
pub mod report;
pub mod tensor_map;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::ir::{FuncId, MemLocId, Module, ModuleAttrs, VerifiedModules, VerifyErrors};
use crate::marks;

pub use checker::{LinkViolation, check_link, check_link_verified, check_linked, check_linked_verified};
pub use link_dir::LinkDirError;
pub use report::PostLinkReport;
pub use tensor_map::{TensorMap, TensorMapEntry};

/// Why a set of per-core modules cannot be linked. Each is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Nothing to link.
    #[error("no modules to link")]
    NoModules,
    /// An input module is not valid IR.
    #[error("module of core {core}: invalid: {err}")]
    Invalid {
        /// The module's NeuronCoreId (or its position when it has none).
        core: u32,
        /// What `verify` found.
        err: VerifyErrors,
    },
    /// An input is not a finished per-core module.
    #[error("module #{index} is not a per-core module: {why}")]
    NotPerCore {
        /// Position in the input vector.
        index: usize,
        /// Which rule it breaks.
        why: String,
    },
    /// The inputs disagree on the program's name.
    #[error("module of core {core} is named `{name}`, expected `{expected}` (every core keeps the program's name)")]
    NameMismatch {
        /// The core.
        core: u32,
        /// Its name.
        name: String,
        /// The first module's name.
        expected: String,
    },
    /// The seed's defs-vs-modules mismatch: two modules claim one NeuronCoreId.
    #[error("Num Module Definitions {defs} does not match {modules} modules: core {core} is defined twice")]
    DefMismatch {
        /// Distinct module definitions (NeuronCoreIds).
        defs: usize,
        /// Modules given.
        modules: usize,
        /// A NeuronCoreId claimed twice.
        core: u32,
    },
    /// A core of the logical NeuronCore has no module.
    #[error("no module for core {core}: lnc_size is {lnc} but {modules} modules were given")]
    MissingCore {
        /// The first missing core.
        core: u32,
        /// The modules' lnc_size.
        lnc: u32,
        /// Modules given.
        modules: usize,
    },
    /// Two cores declare different external tensors under one name.
    #[error("Name collision for ExtInput `{name}` in Module Instance {core} subgraph {sg}: {why}")]
    ExtCollision {
        /// The external name.
        name: String,
        /// The core whose declaration disagrees.
        core: u32,
        /// Its subgraph directory.
        sg: String,
        /// What differs.
        why: String,
    },
    /// A view's remote target does not exist (the seed's "missing input" diagnostic).
    #[error("missing input '{view}' on core {core}: remote target `{target}` on core {target_core} does not exist")]
    MissingInput {
        /// The consumer core.
        core: u32,
        /// The view.
        view: String,
        /// The remote name.
        target: String,
        /// The remote core.
        target_core: u32,
    },
    /// A view and its remote target do not describe the same tensor.
    #[error("view `{view}` on core {core} does not match its remote target `{target}` on core {target_core}: {why}")]
    ViewMismatch {
        /// The consumer core.
        core: u32,
        /// The view.
        view: String,
        /// The remote name.
        target: String,
        /// The remote core.
        target_core: u32,
        /// What differs (an address difference means sync_shared_allocations was not run).
        why: String,
    },
    /// Two cores declare one queue name with different type or owner.
    #[error("queue `{name}` of core {core} differs from the queue of that name already linked: {why}")]
    QueueConflict {
        /// The queue.
        name: String,
        /// The core whose queue disagrees.
        core: u32,
        /// What differs.
        why: String,
    },
    /// Barrier arrivals across the cores do not form complete groups.
    #[error("barrier group {group}: {why}")]
    BarrierGroup {
        /// The logical barrier.
        group: u32,
        /// What is wrong.
        why: String,
    },
    /// Two cores write one external output.
    #[error("output `{name}` is written on core {first} and on core {second}")]
    OutputWrittenTwice {
        /// The output.
        name: String,
        /// A writing core.
        first: u32,
        /// Another writing core.
        second: u32,
    },
    /// Per-core tensor maps disagree on one tensor.
    #[error("tensor map: {0}")]
    TensorMap(String),
    /// `addBarrier` refused to wire an inserted instruction.
    #[error("addBarrier: {0}")]
    Wiring(#[from] barriers::AddBarrierError),
    /// The sgLnk link directory could not be set up.
    #[error("link dir: {0}")]
    LinkDir(#[from] LinkDirError),
}

/// What to link with besides the modules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkOptions {
    /// Root of the sgLnk link directory (seed §8); `None` writes nothing.
    pub link_dir: Option<PathBuf>,
}

/// The result of a link: the module, its unified tensor map and the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linked {
    /// The new `<name>/sgLnk` module.
    pub module: Module,
    /// The unified tensor map (seed §5e).
    pub tensor_map: TensorMap,
    /// The post-link report (seed §2 step 12).
    pub report: PostLinkReport,
}

/// The linked module's name: `<name>/sgLnk` (the seed's `getNcLnkModuleName`).
pub fn get_nc_lnk_module_name(base: &str) -> String {
    format!("{base}/sgLnk")
}

/// The dispatcher function's name. Choice (seed §3 calls it "the top-level
/// dispatcher Function & BasicBlock" without a name): `dispatcher`, with one
/// block also named `dispatcher`; it is always function 0.
pub const DISPATCHER: &str = "dispatcher";

/// The name of core `core`'s function: `nc<core>` (seed §3.1 writes
/// "call_def_0_instance_0 → Function nc0").
pub fn core_function_name(core: u32) -> String {
    format!("nc{core}")
}

/// The dispatcher call of core `core`, instance `idx`: `call_def_<core>_instance_<idx>` (seed §3.1).
pub fn call_name(core: u32, idx: u32) -> String {
    format!("call_def_{core}_instance_{idx}")
}

/// Links `modules` (one per core, any order) into one new module.
pub fn link(modules: &[Module]) -> Result<Module, LinkError> {
    link_with(modules, &LinkOptions::default()).map(|l| l.module)
}

/// Links `modules` with `opts`, returning the module, tensor map and report.
pub fn link_with(modules: &[Module], opts: &LinkOptions) -> Result<Linked, LinkError> {
    BirLinker::new(modules, opts)?.run()
}

/// [`link_with`] on modules `proof` shows valid: the per-module IR verify is not repeated.
pub fn link_verified(proof: VerifiedModules<'_>, opts: &LinkOptions) -> Result<Linked, LinkError> {
    BirLinker::new_verified(proof, opts)?.run()
}

/// Checks that `modules` would link, without building the linked module (seed §10 `dry_run`).
///
/// Runs the input checks that need no linked module — definitions, barrier
/// groups, the allocation plan (collisions, external unification, remote
/// targets and their placement), queues, link-dir names — and returns the
/// report those checks can fill. (Two outputs written by two cores and
/// tensor-map disagreements are found only while building.)
pub fn dry_run(modules: &[Module], opts: &LinkOptions) -> Result<PostLinkReport, LinkError> {
    let info = defs::run_module_def_passes(modules).and_then(|()| defs::init_def_info(modules))?;
    let plan = allocs::copy_allocs(modules, &info)?;
    queues::plan_queues(modules, &info)?;
    if let Some(root) = &opts.link_dir {
        link_dir::check_names(root, modules, &info)?;
    }
    marks::hit("link.dry_run");
    let mut r = PostLinkReport::new(get_nc_lnk_module_name(&info.name), info.defs.len());
    r.diagnostics = info.diagnostics.clone();
    r.collisions = plan.messages.clone();
    r.locations = plan.locs.len();
    r.unified_shared = plan.consumed.len();
    r.views = plan.aliases.len();
    Ok(r)
}

/// The linker's state through one `run` (the seed's BirLinker object).
pub struct BirLinker<'a> {
    /// The inputs, never modified.
    pub(crate) modules: &'a [Module],
    /// Options.
    pub(crate) opts: &'a LinkOptions,
    /// The module-definition table.
    pub(crate) info: defs::DefInfo,
    /// The merged module under construction (the seed's `mainModule`).
    pub(crate) main: Module,
    /// Per def (core order): the function of that core in `main`.
    pub(crate) core_funcs: Vec<FuncId>,
    /// Unified handoff targets -> the consumer cores (for fixOutputKind).
    pub(crate) consumed: BTreeMap<MemLocId, BTreeSet<u32>>,
    /// Views that were dangling IO, now spills (fixOutputKind drops them from sets).
    pub(crate) io_views: Vec<MemLocId>,
    /// The unified tensor map.
    pub(crate) tensor_map: TensorMap,
    /// The report, filled step by step.
    pub(crate) report: PostLinkReport,
}

impl<'a> BirLinker<'a> {
    /// Steps 1-4 of the seed's `run`: name, def passes, def table, fresh module.
    pub fn new(modules: &'a [Module], opts: &'a LinkOptions) -> Result<Self, LinkError> {
        defs::run_module_def_passes(modules)?;
        Self::after_def_passes(modules, opts)
    }

    /// [`BirLinker::new`] on modules `proof` shows valid (not verified again).
    pub fn new_verified(proof: VerifiedModules<'a>, opts: &'a LinkOptions) -> Result<Self, LinkError> {
        defs::run_verified_def_passes(proof)?;
        Self::after_def_passes(proof.modules(), opts)
    }

    /// Steps 2-4, after the def passes accepted `modules`.
    fn after_def_passes(modules: &'a [Module], opts: &'a LinkOptions) -> Result<Self, LinkError> {
        let info = defs::init_def_info(modules)?;
        let name = get_nc_lnk_module_name(&info.name);
        // (6) a new merged module: never an in-place edit of an input.
        let main = Module {
            name: name.clone(),
            attrs: ModuleAttrs { lnc_size: info.lnc, neuron_core_id: None },
            ..Module::default()
        };
        let mut report = PostLinkReport::new(name, info.defs.len());
        report.diagnostics = info.diagnostics.clone();
        Ok(BirLinker {
            modules,
            opts,
            info,
            main,
            core_funcs: Vec::new(),
            consumed: BTreeMap::new(),
            io_views: Vec::new(),
            tensor_map: TensorMap::default(),
            report,
        })
    }

    /// Steps 5-10: the merge, queues, link dir, output kinds, barrier renumbering, report.
    pub fn run(mut self) -> Result<Linked, LinkError> {
        callgraph::run_call_graph(&mut self)?;
        queues::init_queues(&mut self)?;
        if let Some(root) = self.opts.link_dir.clone() {
            link_dir::setup_link_dir(&root, self.modules, &self.info, &self.tensor_map)?;
            self.report.link_dir = Some(link_dir::lnk_dir(&root, &self.info.name)?.display().to_string());
        }
        outputs::fix_output_kind(&mut self)?;
        if let Some(root) = self.opts.link_dir.clone() {
            link_dir::try_update_tensor_map_file(&root, &self.info.name, &self.tensor_map)?;
        }
        match barriers::order_module_core_barriers(&mut self.main) {
            barriers::BarrierOrder::Unchanged => {}
            barriers::BarrierOrder::Reordered(n) => self.report.barrier_blocks_reordered = n,
            barriers::BarrierOrder::Refused => self.report.barrier_order_refused = true,
        }
        self.report.barriers_renumbered = barriers::renumber_core_barriers(&mut self.main);
        report::post_link_report(&self.main, &mut self.report);
        Ok(Linked { module: self.main, tensor_map: self.tensor_map, report: self.report })
    }
}
