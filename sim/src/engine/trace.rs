//! The run's trace: a hash over the canonical event sequence (always
//! computed: same seed, same hash), and, when asked for, the recorded spans
//! a Chrome/Perfetto trace is written from ([`crate::engine::chrome`]).

use lncsim_model::codegen::record::Opcode;
use lncsim_model::ir::Engine;

use crate::engine::queue::Time;

/// A 64-bit hash fed one word at a time (FNV-style multiply, final avalanche).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceHasher(u64);

impl TraceHasher {
    /// The empty hash.
    pub(crate) fn new() -> Self {
        TraceHasher(0xcbf2_9ce4_8422_2325)
    }

    /// Mixes in one word.
    #[inline]
    pub(crate) fn word(&mut self, x: u64) {
        self.0 = (self.0 ^ x).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }

    /// The final value.
    pub(crate) fn finish(self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// One recorded span or point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A record from issue to completion.
    Instr {
        /// Index of the core in the trace's cores.
        core_ix: u32,
        /// The engine.
        engine: Engine,
        /// Record index.
        pc: u32,
        /// Debug id.
        debug_id: u32,
        /// Opcode (`None`: undecodable).
        op: Option<Opcode>,
        /// Issue.
        start: Time,
        /// Completion.
        end: Time,
    },
    /// A DMA transfer on its queue.
    Dma {
        /// Index of the core.
        core_ix: u32,
        /// Queue index on the core.
        queue: u32,
        /// The engine that triggered it.
        engine: Engine,
        /// Bytes moved.
        bytes: u64,
        /// Start of the transfer (the queue became free).
        start: Time,
        /// Completion.
        end: Time,
    },
    /// An engine blocked on a semaphore.
    SemWait {
        /// Index of the core.
        core_ix: u32,
        /// The engine.
        engine: Engine,
        /// The semaphore.
        sem: u8,
        /// Blocked from.
        start: Time,
        /// Until.
        end: Time,
    },
    /// An engine held by a stall fault.
    Stall {
        /// Index of the core.
        core_ix: u32,
        /// The engine.
        engine: Engine,
        /// From.
        start: Time,
        /// Until.
        end: Time,
    },
    /// A barrier group completing: every arrival, then the release.
    Barrier {
        /// The group.
        group: u32,
        /// (core index, engine, arrival time), in arrival order.
        arrivals: Vec<(u32, Engine, Time)>,
        /// When the group completed (its last arrival).
        release: Time,
    },
}

/// Names of one core's tracks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceCore {
    /// NeuronCoreId.
    pub core: u32,
    /// Physical core.
    pub tpb: u32,
    /// DMA queue names by index.
    pub queues: Vec<String>,
}

/// A recorded trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The cores, by index.
    pub cores: Vec<TraceCore>,
    /// Spans and points in the order they were recorded.
    pub events: Vec<TraceEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_order_and_values() {
        let h = |ws: &[u64]| {
            let mut t = TraceHasher::new();
            ws.iter().for_each(|&w| t.word(w));
            t.finish()
        };
        assert_eq!(h(&[1, 2, 3]), h(&[1, 2, 3]));
        assert_ne!(h(&[1, 2, 3]), h(&[1, 3, 2]));
        assert_ne!(h(&[1, 2, 3]), h(&[1, 2, 4]));
        assert_ne!(h(&[]), h(&[0]));
    }
}
