//! Injected faults (issue 7, item 5), chosen per seed by a swarm or set by
//! hand: a core stalled for a long time at a chosen moment (no engine of the
//! core issues a record during the window; records in flight finish), and DMA
//! latency spikes (a seeded fraction of transfers take much longer). Both only
//! move time, so a correctly synchronised program still computes the same
//! outputs; a missing synchronisation shows up as a race report or a wrong
//! output. Device allocation and copy-in faults belong to the loader's plan.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::queue::Time;

/// One core stops issuing records during `[at_ns, at_ns + duration_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StallFault {
    /// The core's index in the images the simulation was built from.
    pub core: u32,
    /// Start of the stall.
    pub at_ns: Time,
    /// Length of the stall.
    pub duration_ns: Time,
}

impl StallFault {
    /// The end of the stall window when `t` lies inside it.
    pub fn covers(&self, t: Time) -> Option<Time> {
        let end = self.at_ns.saturating_add(self.duration_ns);
        (t >= self.at_ns && t < end).then_some(end)
    }
}

/// A seeded fraction of DMA transfers takes `extra_ns` longer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaSpikes {
    /// Chance per transfer, in thousandths.
    pub permille: u32,
    /// Extra latency of a spiked transfer.
    pub extra_ns: Time,
}

/// The faults of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Core stalls.
    pub stalls: Vec<StallFault>,
    /// DMA latency spikes.
    pub dma_spikes: Option<DmaSpikes>,
}

impl FaultPlan {
    /// True when the plan injects nothing.
    pub fn is_empty(&self) -> bool {
        self.stalls.is_empty() && self.dma_spikes.is_none()
    }

    /// A seeded plan for `cores` cores over a run of about `horizon_ns`: with
    /// even odds a stall of one core somewhere in the horizon lasting up to
    /// the whole horizon, and with even odds DMA spikes (1..=25 % of
    /// transfers, 1..=20 us each).
    pub fn random(seed: u64, cores: u32, horizon_ns: Time) -> FaultPlan {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xFA17_FA17_FA17_FA17);
        let horizon = horizon_ns.max(1);
        let mut plan = FaultPlan::default();
        if rng.random_bool(0.5) {
            plan.stalls.push(StallFault {
                core: rng.random_range(0..cores.max(1)),
                at_ns: rng.random_range(0..horizon),
                duration_ns: rng.random_range(1..=horizon),
            });
        }
        if rng.random_bool(0.5) {
            plan.dma_spikes =
                Some(DmaSpikes { permille: rng.random_range(10..=250), extra_ns: rng.random_range(1_000..=20_000) });
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_window_is_half_open_and_random_plans_are_seeded() {
        let s = StallFault { core: 0, at_ns: 10, duration_ns: 5 };
        assert_eq!(s.covers(9), None);
        assert_eq!(s.covers(10), Some(15));
        assert_eq!(s.covers(14), Some(15));
        assert_eq!(s.covers(15), None);
        assert_eq!(FaultPlan::random(7, 4, 1000), FaultPlan::random(7, 4, 1000));
        let plans: Vec<FaultPlan> = (0..32).map(|s| FaultPlan::random(s, 4, 1000)).collect();
        assert!(plans.iter().any(|p| !p.stalls.is_empty()));
        assert!(plans.iter().any(|p| p.dma_spikes.is_some()));
        assert!(plans.iter().any(FaultPlan::is_empty));
        assert!(plans.iter().flat_map(|p| &p.stalls).all(|s| s.core < 4 && s.at_ns < 1000));
    }
}
