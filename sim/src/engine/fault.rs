//! Injected faults (issue 7, item 5), chosen per seed by a swarm or set by
//! hand: a core stalled for a long time at a chosen moment (no engine of the
//! core issues a record during the window; records in flight finish), and DMA
//! latency spikes (a seeded fraction of transfers take much longer). Both only
//! move time, so a correctly synchronised program still computes the same
//! outputs; a missing synchronisation shows up as a race report or a wrong
//! output. Device allocation and copy-in faults belong to the loader's plan.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::engine::queue::Time;

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

/// A stall triggered by progress, not by the clock: once `core` has issued
/// `after_issues` records, its next issue attempt starts a window of
/// `duration_ns` in which none of its engines issues. Placed on a record the
/// core really issues, it fires on every run that gets that far and delays
/// what the core does next, so it perturbs the schedule (a window placed by
/// time can fall after the run's end, or where the core is idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IssueStall {
    /// The core's index in the images the simulation was built from.
    pub core: u32,
    /// Records the core issues before the stall starts.
    pub after_issues: u64,
    /// Length of the stall.
    pub duration_ns: Time,
}

/// The faults of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Core stalls, by time window.
    pub stalls: Vec<StallFault>,
    /// Core stalls, by progress.
    pub issue_stalls: Vec<IssueStall>,
    /// DMA latency spikes.
    pub dma_spikes: Option<DmaSpikes>,
    /// The index (in issue order over the run) of one DMA transfer that takes
    /// `dma_spikes.extra_ns` longer whatever the seeded draw says, so a
    /// requested spike lands on a transfer that exists.
    pub dma_spike_at: Option<u64>,
}

/// A fault that fired during a simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FiredSimFault {
    /// A core stopped issuing during `[at_ns, until_ns)`.
    Stall {
        /// The core's NeuronCoreId.
        core: u32,
        /// When the first engine was held.
        at_ns: Time,
        /// When the window ends.
        until_ns: Time,
    },
    /// A DMA transfer took `extra_ns` longer.
    DmaSpike {
        /// The core's NeuronCoreId.
        core: u32,
        /// The transfer's index in issue order over the run.
        transfer: u64,
        /// When it started.
        at_ns: Time,
        /// The extra latency.
        extra_ns: Time,
    },
}

impl std::fmt::Display for FiredSimFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FiredSimFault::Stall { core, at_ns, until_ns } => {
                write!(f, "stall of core {core} from {at_ns} ns to {until_ns} ns")
            }
            FiredSimFault::DmaSpike { core, transfer, at_ns, extra_ns } => {
                write!(f, "DMA spike of +{extra_ns} ns on transfer #{transfer} (core {core}) at {at_ns} ns")
            }
        }
    }
}

/// Most fired faults a report lists one by one (the rest are counted).
pub const MAX_FIRED_LISTED: usize = 32;

/// The run-time state of a [`FaultPlan`]: per-core progress, triggered
/// windows and the fired log. Cost: O(stalls of the core) per issue attempt.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultState {
    /// Records issued per core index.
    pub issued: Vec<u64>,
    /// Per issue stall: its window once triggered.
    pub windows: Vec<Option<(Time, Time)>>,
    /// Per time stall: it was seen to hold an engine.
    pub seen: Vec<bool>,
    /// DMA transfers started so far.
    pub transfers: u64,
    /// Fired faults, the first [`MAX_FIRED_LISTED`].
    pub fired: Vec<FiredSimFault>,
    /// Every fired fault, listed or not.
    pub fired_total: u64,
}

impl FaultState {
    /// The state of `plan` for a simulation of `cores` cores.
    pub fn new(plan: &FaultPlan, cores: usize) -> Self {
        FaultState {
            issued: vec![0; cores],
            windows: vec![None; plan.issue_stalls.len()],
            seen: vec![false; plan.stalls.len()],
            ..FaultState::default()
        }
    }

    /// Logs a fired fault.
    pub fn fire(&mut self, f: FiredSimFault) {
        self.fired_total += 1;
        if self.fired.len() < MAX_FIRED_LISTED {
            self.fired.push(f);
        }
    }

    /// The end of a stall window holding core `core_ix` (NeuronCoreId `core`) at `now`, if any.
    pub fn stall_until(&mut self, plan: &FaultPlan, core_ix: usize, core: u32, now: Time) -> Option<Time> {
        for (i, s) in plan.stalls.iter().enumerate() {
            // Time stalls name the core as the simulator always has (its NeuronCoreId).
            if s.core == core
                && let Some(end) = s.covers(now)
            {
                if !self.seen[i] {
                    self.seen[i] = true;
                    self.fire(FiredSimFault::Stall { core, at_ns: now, until_ns: end });
                }
                return Some(end);
            }
        }
        let issued = self.issued.get(core_ix).copied().unwrap_or(0);
        for (i, s) in plan.issue_stalls.iter().enumerate() {
            if s.core != core_ix as u32 {
                continue;
            }
            match self.windows[i] {
                Some((_, end)) if now < end => return Some(end),
                None if issued >= s.after_issues => {
                    let end = now.saturating_add(s.duration_ns.max(1));
                    self.windows[i] = Some((now, end));
                    self.fire(FiredSimFault::Stall { core, at_ns: now, until_ns: end });
                    return Some(end);
                }
                _ => {}
            }
        }
        None
    }
}

impl FaultPlan {
    /// True when the plan injects nothing.
    pub fn is_empty(&self) -> bool {
        self.stalls.is_empty() && self.issue_stalls.is_empty() && self.dma_spikes.is_none()
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

    #[test]
    fn an_issue_stall_triggers_once_after_its_count_and_is_logged() {
        let plan = FaultPlan {
            issue_stalls: vec![IssueStall { core: 1, after_issues: 3, duration_ns: 50 }],
            ..FaultPlan::default()
        };
        let mut st = FaultState::new(&plan, 2);
        st.issued[1] = 2;
        assert_eq!(st.stall_until(&plan, 1, 7, 100), None);
        assert_eq!(st.stall_until(&plan, 0, 6, 100), None, "another core");
        st.issued[1] = 3;
        assert_eq!(st.stall_until(&plan, 1, 7, 120), Some(170));
        assert_eq!(st.stall_until(&plan, 1, 7, 169), Some(170));
        assert_eq!(st.stall_until(&plan, 1, 7, 170), None, "the window is half open");
        st.issued[1] = 10;
        assert_eq!(st.stall_until(&plan, 1, 7, 200), None, "fires once");
        assert_eq!(st.fired, vec![FiredSimFault::Stall { core: 7, at_ns: 120, until_ns: 170 }]);
        assert_eq!(st.fired_total, 1);
    }

    #[test]
    fn a_time_stall_is_logged_when_it_first_holds_an_engine() {
        let plan =
            FaultPlan { stalls: vec![StallFault { core: 0, at_ns: 10, duration_ns: 5 }], ..FaultPlan::default() };
        let mut st = FaultState::new(&plan, 1);
        assert_eq!(st.stall_until(&plan, 0, 0, 9), None);
        assert_eq!(st.stall_until(&plan, 0, 0, 11), Some(15));
        assert_eq!(st.stall_until(&plan, 0, 0, 12), Some(15));
        assert_eq!(st.fired, vec![FiredSimFault::Stall { core: 0, at_ns: 11, until_ns: 15 }]);
        for _ in 0..40 {
            st.fire(FiredSimFault::DmaSpike { core: 0, transfer: 0, at_ns: 0, extra_ns: 1 });
        }
        assert_eq!((st.fired.len(), st.fired_total), (MAX_FIRED_LISTED, 41));
    }
}
