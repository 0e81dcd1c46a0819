//! The compile pipeline and its builder (DESIGN.md, "The flow"; seed 004,
//! "The disable_dram_allocation Gate").
//!
//! [`build_pipeline`] turns [`PipelineOptions`] into an ordered list of named
//! [`Pass`]es; [`Pipeline::run`] runs them on a program. The order:
//!
//! 1. `split` (lnc_splitter);
//! 2. `coloring_allocator_dram` (per core, private region), then its paired
//!    `anti_dependency_analyzer_post_dram`;
//! 3. `coloring_allocator_dram_shared` (per core, shared region);
//! 4. `sync_shared_allocations` (all N modules);
//! 5. `anti_dependency_analyzer_post_shared_dram` (after sync, so views hold
//!    their addresses);
//! 6. `link` (bir_linker): the N finished per-core modules into one
//!    `<name>/sgLnk` module.
//!
//! **The gate.** `--disable-dram-allocation` is checked here, when the pass
//! list is built, not inside the allocator (seed GOTCHA): the two allocator
//! passes and their paired anti-dependency passes are simply not in the list.
//! `sync_shared_allocations` stays: it only follows `is_shared_post_dram_alloc`
//! marks, which only the shared allocator sets, so it has nothing to do. The
//! per-core modules then keep their compiler-placed tensors unaddressed and
//! codegen refuses them with `CodegenError::Unallocated`.

use crate::dram::{
    AllocReport, AntiDepReport, DramError, DramOptions, HbmUsage, IrCheckConfig, SyncError, allocate_module,
    allocate_shared, allocate_shared_with, anti_dependency_analyzer_post_dram,
    anti_dependency_analyzer_post_shared_dram, compact_core_cap_with_problems, hbm_usage, shared::Synced,
    sync_shared_allocations,
};
use std::path::PathBuf;

use crate::ir::Module;
use crate::link::{LinkError, LinkOptions, PostLinkReport, TensorMap, link_with};
use crate::split::{SplitError, split};

/// The most instructions a program may hold, every core together: a larger
/// one is refused with [`PipelineError::TooLarge`] before `split` (or any
/// later pass) allocates anything for it, so no program drives the compile
/// stages into the kernel's OOM killer (issue 11 item 5). Measured with
/// `/usr/bin/time -v lncsim run`: 8 x 100k instructions peak at 5.2 GB and a
/// 1.4M-instruction one-core program at 4.7 GB (about 3.5-6.5 KB per
/// instruction through every stage and check), so 2M stays inside 16 GiB
/// however the instructions are spread over cores.
pub const MAX_PROGRAM_INSTRUCTIONS: u64 = 2_000_000;

/// `shared_core_cap_mib` value that asks for the computed compact slab size.
pub const COMPACT_CORE_CAP: u64 = 0;

/// The options that shape the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineOptions {
    /// `--disable-dram-allocation`: build the pipeline without the DRAM allocator passes.
    pub disable_dram_allocation: bool,
    /// `--allreduce-buffer-size` in MiB; -1 = auto-size by `cc_buffer_size`. lncsim's
    /// default is -1 (auto), so device footprints follow the program; the seed's
    /// compiler default, 500, is one flag away.
    pub allreduce_buffer_size_mib: i64,
    /// The per-core private DRAM window in bytes (default [`crate::dram::DEFAULT_DRAM_REGION`]).
    pub dram_region_bytes: u64,
    /// Place under a compact window inside `dram_region_bytes` ([`crate::dram::compact_ceiling`]); default on.
    pub compact_dram: bool,
    /// `coreCap`: MiB of the shared region per core slab; [`COMPACT_CORE_CAP`] (the
    /// default) computes the smallest slab that fits every core ([`crate::dram::compact_core_cap_mib`]).
    pub shared_core_cap_mib: u64,
    /// Root of the linker's sgLnk link directory; `None` writes nothing.
    pub link_dir: Option<PathBuf>,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        let d = DramOptions::default();
        PipelineOptions {
            disable_dram_allocation: false,
            allreduce_buffer_size_mib: -1,
            dram_region_bytes: d.region_ceiling,
            compact_dram: true,
            shared_core_cap_mib: COMPACT_CORE_CAP,
            link_dir: None,
        }
    }
}

impl PipelineOptions {
    /// The allocator's knobs.
    pub fn dram(&self) -> DramOptions {
        DramOptions {
            region_ceiling: self.dram_region_bytes,
            allreduce_buffer_size_mib: self.allreduce_buffer_size_mib,
            shared_core_cap_mib: self.shared_core_cap_mib,
            compact: self.compact_dram,
        }
    }

    /// The IR checker's configuration for modules this pipeline allocated; `report`
    /// supplies the `coreCap` the shared run used (computed in compact mode).
    pub fn check_config(&self, report: &CompileReport) -> IrCheckConfig {
        let cap = if self.shared_core_cap_mib == COMPACT_CORE_CAP {
            report.shared_core_cap_mib
        } else {
            self.shared_core_cap_mib
        };
        IrCheckConfig {
            region_ceiling: self.dram_region_bytes,
            allreduce_buffer_size_mib: self.allreduce_buffer_size_mib,
            shared_core_cap_mib: cap,
            compact: self.compact_dram,
        }
    }
}

/// One pass of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pass {
    /// lnc_splitter: the program into per-core modules.
    Split,
    /// `coloring_allocator_dram`: the private-region allocator, per core.
    DramAlloc,
    /// `anti_dependency_analyzer_post_dram`: WAR/WAW edges over the private region.
    AntiDepsPostDram,
    /// `coloring_allocator_dram_shared`: the shared-region allocator, per core.
    DramShared,
    /// `sync_shared_allocations`: views get their producer's (address, partition, bank).
    SyncSharedAllocations,
    /// `anti_dependency_analyzer_post_shared_dram`: WAR/WAW edges over the shared region.
    AntiDepsPostSharedDram,
    /// bir_linker: the per-core modules into one `<name>/sgLnk` module.
    Link,
}

impl Pass {
    /// The pass's name (the seed's pass names).
    pub fn name(self) -> &'static str {
        match self {
            Pass::Split => "split",
            Pass::DramAlloc => "coloring_allocator_dram",
            Pass::AntiDepsPostDram => "anti_dependency_analyzer_post_dram",
            Pass::DramShared => "coloring_allocator_dram_shared",
            Pass::SyncSharedAllocations => "sync_shared_allocations",
            Pass::AntiDepsPostSharedDram => "anti_dependency_analyzer_post_shared_dram",
            Pass::Link => "link",
        }
    }
}

/// An ordered list of passes and the options they run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    passes: Vec<Pass>,
    opts: PipelineOptions,
}

/// The pipeline builder: the `--disable-dram-allocation` gate lives here.
pub fn build_pipeline(opts: &PipelineOptions) -> Pipeline {
    let mut passes = vec![Pass::Split];
    if !opts.disable_dram_allocation {
        passes.extend([Pass::DramAlloc, Pass::AntiDepsPostDram, Pass::DramShared]);
    }
    passes.push(Pass::SyncSharedAllocations);
    if !opts.disable_dram_allocation {
        passes.push(Pass::AntiDepsPostSharedDram);
    }
    passes.push(Pass::Link);
    Pipeline { passes, opts: opts.clone() }
}

/// Why the pipeline failed. One line each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// The program could not be split.
    #[error("split: {0}")]
    Split(#[from] SplitError),
    /// The DRAM allocator failed on a core.
    #[error("{pass} on core {core}: {err}")]
    Dram {
        /// The pass.
        pass: &'static str,
        /// The core (module index).
        core: usize,
        /// The allocator's error.
        err: DramError,
    },
    /// `sync_shared_allocations` failed.
    #[error("sync_shared_allocations: {0}")]
    Sync(#[from] SyncError),
    /// The per-core modules could not be linked.
    #[error("link: {0}")]
    Link(#[from] LinkError),
    /// A pass that needs per-core modules ran before `split`.
    #[error("pass {0} runs before split")]
    NotSplit(&'static str),
    /// The program holds more instructions than the pipeline handles.
    #[error(
        "the program has {instructions} instructions; the pipeline handles at most {MAX_PROGRAM_INSTRUCTIONS} (all cores together)"
    )]
    TooLarge {
        /// Its instructions.
        instructions: u64,
    },
    /// The pipeline has no `link` pass, so there is no linked module.
    #[error("the pipeline has no link pass")]
    NotLinked,
}

/// What the pipeline did, per pass and per core.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompileReport {
    /// The passes that ran, in order.
    pub passes: Vec<&'static str>,
    /// The private-region run, per core (one report per function).
    pub dram: Vec<Vec<AllocReport>>,
    /// The shared-region run, per core.
    pub dram_shared: Vec<Vec<AllocReport>>,
    /// Every view `sync_shared_allocations` equalized.
    pub synced: Vec<Synced>,
    /// `anti_dependency_analyzer_post_dram`, per core.
    pub anti_deps_post_dram: Vec<Vec<AntiDepReport>>,
    /// `anti_dependency_analyzer_post_shared_dram`, per core.
    pub anti_deps_post_shared_dram: Vec<Vec<AntiDepReport>>,
    /// HBM placed over all cores, shared bytes counted once.
    pub hbm: HbmUsage,
    /// The `coreCap` (MiB) the shared run used (the computed one in compact mode).
    pub shared_core_cap_mib: u64,
    /// The linker's post-link report (`None` when the link pass did not run).
    pub link: Option<PostLinkReport>,
}

/// The pipeline's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// The per-core modules (split, allocated, synced), in core order.
    pub per_core: Vec<Module>,
    /// The linked `<name>/sgLnk` module.
    pub linked: Module,
    /// The linked module's unified tensor map.
    pub tensor_map: TensorMap,
    /// What each pass did.
    pub report: CompileReport,
}

impl Pipeline {
    /// The passes, in order.
    pub fn passes(&self) -> &[Pass] {
        &self.passes
    }

    /// The pass names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// The options the passes run with.
    pub fn options(&self) -> &PipelineOptions {
        &self.opts
    }

    /// Runs every pass on `program`.
    pub fn run(&self, program: &Module) -> Result<Compiled, PipelineError> {
        let (per_core, mut report) = self.run_per_core(program)?;
        if !self.passes.contains(&Pass::Link) {
            return Err(PipelineError::NotLinked);
        }
        report.passes.push(Pass::Link.name());
        let linked = link_with(&per_core, &LinkOptions { link_dir: self.opts.link_dir.clone() })?;
        report.link = Some(linked.report);
        Ok(Compiled { per_core, linked: linked.module, tensor_map: linked.tensor_map, report })
    }

    /// Runs every pass before `link` on `program`: the finished per-core modules.
    pub fn run_per_core(&self, program: &Module) -> Result<(Vec<Module>, CompileReport), PipelineError> {
        check_size(program)?;
        self.run_passes(Err(program))
    }

    /// Runs every pass after `split` and before `link` on per-core modules
    /// written by hand (`split` is skipped and not listed in the report).
    pub fn run_on_modules(&self, modules: Vec<Module>) -> Result<(Vec<Module>, CompileReport), PipelineError> {
        let total = modules.iter().flat_map(|m| &m.functions).fold(0u64, |t, f| t.saturating_add(f.insts.len() as u64));
        if total > MAX_PROGRAM_INSTRUCTIONS {
            return Err(PipelineError::TooLarge { instructions: total });
        }
        self.run_passes(Ok(modules))
    }

    /// The passes before `link` on per-core modules (`Ok`) or on a program to split (`Err`).
    fn run_passes(&self, input: Result<Vec<Module>, &Module>) -> Result<(Vec<Module>, CompileReport), PipelineError> {
        let mut dram = self.opts.dram();
        let mut report = CompileReport::default();
        let (mut per_core, program) = match input {
            Ok(m) => (Some(m), None),
            Err(p) => (None, Some(p)),
        };
        for &pass in &self.passes {
            if pass == Pass::Link || (pass == Pass::Split && program.is_none()) {
                continue;
            }
            report.passes.push(pass.name());
            if pass == Pass::Split {
                if let Some(p) = program {
                    per_core = Some(split(p)?);
                }
                continue;
            }
            let modules = per_core.as_mut().ok_or(PipelineError::NotSplit(pass.name()))?;
            let err = |core: usize| move |err: DramError| PipelineError::Dram { pass: pass.name(), core, err };
            match pass {
                Pass::Split | Pass::Link => {}
                Pass::DramAlloc => {
                    for (core, m) in modules.iter_mut().enumerate() {
                        report.dram.push(allocate_module(m, &dram).map_err(err(core))?);
                    }
                }
                Pass::DramShared => {
                    // Sizing the compact slab builds each core's shared problem; the run reuses it.
                    let mut problems = Vec::new();
                    if dram.shared_core_cap_mib == COMPACT_CORE_CAP {
                        let (cap, built) = compact_core_cap_with_problems(modules, &dram).map_err(err(0))?;
                        dram.shared_core_cap_mib = cap;
                        problems = built;
                    }
                    report.shared_core_cap_mib = dram.shared_core_cap_mib;
                    let mut problems = problems.into_iter();
                    for (core, m) in modules.iter_mut().enumerate() {
                        let run = match problems.next() {
                            Some(p) => allocate_shared_with(m, &dram, p),
                            None => allocate_shared(m, &dram),
                        };
                        report.dram_shared.push(run.map_err(err(core))?);
                    }
                }
                Pass::SyncSharedAllocations => report.synced = sync_shared_allocations(modules)?,
                Pass::AntiDepsPostDram => {
                    for (core, m) in modules.iter_mut().enumerate() {
                        report.anti_deps_post_dram.push(anti_dependency_analyzer_post_dram(m).map_err(err(core))?);
                    }
                }
                Pass::AntiDepsPostSharedDram => {
                    for (core, m) in modules.iter_mut().enumerate() {
                        let r = anti_dependency_analyzer_post_shared_dram(m).map_err(err(core))?;
                        report.anti_deps_post_shared_dram.push(r);
                    }
                }
            }
        }
        let per_core = per_core.ok_or(PipelineError::NotSplit("(end)"))?;
        report.hbm = hbm_usage(&per_core);
        Ok((per_core, report))
    }
}

/// Refuses a program with more than [`MAX_PROGRAM_INSTRUCTIONS`]. O(functions).
pub fn check_size(program: &Module) -> Result<(), PipelineError> {
    let total = program.functions.iter().fold(0u64, |t, f| t.saturating_add(f.insts.len() as u64));
    if total > MAX_PROGRAM_INSTRUCTIONS {
        return Err(PipelineError::TooLarge { instructions: total });
    }
    Ok(())
}

/// Builds the pipeline for `opts` and runs it on `program`.
pub fn compile(program: &Module, opts: &PipelineOptions) -> Result<Compiled, PipelineError> {
    build_pipeline(opts).run(program)
}
