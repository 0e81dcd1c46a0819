//! lncsim-sim: a seeded discrete-event simulator of N NeuronCores sharing one
//! HBM (issue 7; DESIGN.md "Execution", "CoreBarriers", "Determinism and
//! concurrency", "The invariants").
//!
//! A run is a pure function of (device contents, core images, [`SimConfig`]):
//! virtual time in nanoseconds, one event queue ordered by (time, sequence
//! number), one ChaCha8 RNG from the seed, no wall clock, no threads, no
//! hash-map iteration. Each loaded core has five engines (PE, ACT, DVE, POOL,
//! SP), each a sequential processor over the records it fetched from device
//! memory at its [`lncsim_model::load::StreamImage`] address. Engines
//! synchronise through per-core semaphores and cross-core CoreBarriers; DMA
//! records move bytes through per-queue bandwidth. While it runs, the
//! simulator checks for data races (vector clocks), ownership violations and
//! clobbers (shadow memory by interval), unequalized shared tensors, barrier
//! slot collisions, illegal records and deadlocks.
//!
//! ```no_run
//! # fn demo(device: &dyn lncsim_model::load::Device, images: &[lncsim_model::load::CoreImage]) -> Result<(), lncsim_sim::SimError> {
//! use lncsim_sim::{SimConfig, Simulation};
//! let mut sim = Simulation::new(device, images, SimConfig::seeded(7).with_jitter())?;
//! let report = sim.run();
//! sim.write_back(device)?; // outputs are now readable through the device
//! assert!(report.passed(), "{report}");
//! # Ok(()) }
//! ```
//!
//! [`device`] is the simulated device (HBM, first-fit allocator, fault plan)
//! that implements the loader's [`lncsim_model::load::Device`]; [`tnc`] steps
//! the TNC parse cache with the same kind of seeded scheduler; [`testkit`]
//! runs the real flow for tests (pipeline, NEFF, `nrt_load` on the simulated
//! device) and keeps a plain stager of its own as a differential check of
//! the loader.

pub mod check;
pub mod device;
pub mod engine;
pub mod flow;
pub mod testkit;
pub mod tnc;

pub use check::violation;
pub use device::io;
pub use engine::{chrome, config, cost, fault, queue, report, trace};
pub use flow::fuzz;

pub use config::{Checks, Jitter, SimConfig};
pub use cost::CostModel;
pub use engine::sim::{MAX_CORES, Simulation, simulate};
pub use fault::{DmaSpikes, FaultPlan, FiredSimFault, IssueStall, StallFault};
pub use queue::{Event, EventKind, EventQueue, Time, bare_event_loop};
pub use report::{CoreStats, EngineStats, Outcome, QueueStats, SimReport};
pub use trace::{Trace, TraceCore, TraceEvent};
pub use violation::{Doing, Illegal, Origin, RaceKind, Signaller, Site, Violation, WaitFor, Waiter, sem_name};

/// Why a simulation could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// A device operation failed (fetching records, mirroring vars, writing back).
    #[error("device: {0}")]
    Device(String),
    /// A core image is malformed.
    #[error("bad core image: {0}")]
    BadImage(String),
}
