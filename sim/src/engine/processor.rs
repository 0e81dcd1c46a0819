//! One engine's run-time state: a sequential processor over its stream.

use lncsim_model::ir::Engine;

use crate::engine::queue::Time;
use crate::engine::report::EngineStats;

/// Where an engine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Ready to issue the record at `pc`.
    Ready,
    /// Executing the record at `pc`.
    Busy,
    /// Blocked on `sem >= value` before the record at `pc`.
    WaitSem { sem: u8, value: u32 },
    /// Arrived at a barrier group, waiting for it to complete.
    WaitBarrier { group: u32 },
    /// Held by a stall fault until the given time.
    Stalled { until: Time },
    /// Past the end of its stream (or a `Return`).
    Done,
    /// Stopped on an illegal record.
    Halted,
}

/// One engine of one core.
#[derive(Clone, Debug)]
pub(crate) struct EngineRt {
    pub core_ix: u32,
    pub engine: Engine,
    pub pc: u32,
    pub state: State,
    /// When the current record was issued.
    pub issued: Time,
    /// When the current blocking (wait, stall) began.
    pub blocked_since: Time,
    pub stats: EngineStats,
}

impl EngineRt {
    /// A ready engine at the start of its stream.
    pub(crate) fn new(core_ix: u32, engine: Engine) -> EngineRt {
        EngineRt {
            core_ix,
            engine,
            pc: 0,
            state: State::Ready,
            issued: 0,
            blocked_since: 0,
            stats: EngineStats {
                engine,
                instructions: 0,
                busy_ns: 0,
                sem_wait_ns: 0,
                barrier_wait_ns: 0,
                stalled_ns: 0,
                finished_at: None,
                halted: false,
            },
        }
    }
}
