//! Scenarios and the seeded runner.

use std::collections::BTreeMap;
use std::fmt;

use lncsim_model::marks;
use lncsim_tnc::{CreatorToken, Enter, Holder, Resume, TncBug, TncPath, TncSnapshot, TncState, Uuid, WaitTicket};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::check::{self, TncViolation};
use super::outcome::LoaderOutcome;
use crate::engine::queue::{EventKind, EventQueue, Time};
use crate::engine::trace::TraceHasher;

/// One loader of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoaderSpec {
    /// The NEFF's UUID.
    pub uuid: Uuid,
    /// When it calls `tnc_enter`.
    pub arrive_ns: Time,
    /// Its parse fails (an injected fault) if it parses as CREATOR or INDEPENDENT.
    pub parse_fails: bool,
}

/// K loaders, the planted bug if any, and the seed of the schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TncScenario {
    /// Drives parse and S2 durations and wake-up delays.
    pub seed: u64,
    /// The loaders.
    pub loaders: Vec<LoaderSpec>,
    /// A planted bug in the state machine.
    pub bug: Option<TncBug>,
    /// Most steps before the run is cut off.
    pub steps_max: u64,
}

/// The outcome of a scenario.
#[derive(Clone, Debug)]
pub struct TncReport {
    /// The scenario's seed.
    pub seed: u64,
    /// Every loader, in scenario order.
    pub loaders: Vec<LoaderOutcome>,
    /// Everything the checks found.
    pub violations: Vec<TncViolation>,
    /// Simulated time of the last step.
    pub time_ns: Time,
    /// Steps taken.
    pub steps: u64,
    /// Hash of the step sequence (same seed, same hash).
    pub trace_hash: u64,
    /// The slot at the end.
    pub final_state: TncSnapshot,
    /// Generation -> whether its CREATOR failed.
    pub creator_failed: BTreeMap<u64, bool>,
}

impl TncReport {
    /// True when every check passed.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

impl fmt::Display for TncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tnc seed {}: {} loaders, {} steps, {} ns, hash {:016x}",
            self.seed,
            self.loaders.len(),
            self.steps,
            self.time_ns,
            self.trace_hash
        )?;
        for v in &self.violations {
            writeln!(f, "  {v}")?;
        }
        Ok(())
    }
}

impl TncScenario {
    /// `loaders` loaders of `uuids` distinct UUIDs arriving within 10 us, each
    /// parse failing with chance `fail_permille` / 1000, all drawn from `seed`.
    pub fn random(seed: u64, loaders: usize, uuids: usize, fail_permille: u32) -> TncScenario {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7AC0_7AC0_7AC0_7AC0);
        let loaders = (0..loaders)
            .map(|_| {
                let u = rng.random_range(0..uuids.max(1)) as u8;
                LoaderSpec {
                    uuid: [u + 1; 16],
                    arrive_ns: rng.random_range(0..10_000),
                    parse_fails: rng.random_range(0..1000) < fail_permille,
                }
            })
            .collect();
        TncScenario { seed, loaders, bug: None, steps_max: 1_000_000 }
    }

    /// This scenario with `bug` planted.
    pub fn with_bug(mut self, bug: TncBug) -> TncScenario {
        self.bug = Some(bug);
        self
    }

    /// Runs the scenario and checks it.
    pub fn run(&self) -> TncReport {
        Runner::new(self).run()
    }
}

/// Where a loader is; holds its move-only token.
enum Phase {
    Arrive,
    CreatorParsing(CreatorToken),
    IndependentParsing,
    Waiting(WaitTicket),
    Holding(Holder),
    Done,
}

struct Runner<'a> {
    sc: &'a TncScenario,
    tnc: TncState<u64>,
    rng: ChaCha8Rng,
    queue: EventQueue,
    now: Time,
    phases: Vec<Phase>,
    scheduled: Vec<bool>,
    out: Vec<LoaderOutcome>,
    violations: Vec<TncViolation>,
    creator_failed: BTreeMap<u64, bool>,
    hash: TraceHasher,
    steps: u64,
}

impl<'a> Runner<'a> {
    fn new(sc: &'a TncScenario) -> Runner<'a> {
        let out = sc
            .loaders
            .iter()
            .map(|l| LoaderOutcome {
                uuid: l.uuid,
                paths: Vec::new(),
                role: None,
                parse_failed: false,
                generation: 0,
                finished_at: None,
            })
            .collect();
        Runner {
            sc,
            tnc: TncState::with_bug(sc.bug),
            rng: ChaCha8Rng::seed_from_u64(sc.seed),
            queue: EventQueue::new(),
            now: 0,
            phases: sc.loaders.iter().map(|_| Phase::Arrive).collect(),
            scheduled: vec![true; sc.loaders.len()],
            out,
            violations: Vec::new(),
            creator_failed: BTreeMap::new(),
            hash: TraceHasher::new(),
            steps: 0,
        }
    }

    fn later(&mut self, i: usize, lo: Time, hi: Time) {
        let t = self.now + self.rng.random_range(lo..=hi);
        self.scheduled[i] = true;
        self.queue.push(t, EventKind::Issue(i as u32));
    }

    fn took(&mut self, i: usize, path: TncPath) {
        marks::hit(path.mark());
        self.out[i].paths.push(path);
        self.out[i].role = path.role();
        self.hash.word(i as u64 ^ (path as u64) << 32);
    }

    fn finish(&mut self, i: usize) {
        self.phases[i] = Phase::Done;
        self.out[i].finished_at = Some(self.now);
    }

    fn run(mut self) -> TncReport {
        for (i, l) in self.sc.loaders.iter().enumerate() {
            self.queue.push(l.arrive_ns, EventKind::Issue(i as u32));
        }
        while let Some(ev) = self.queue.pop() {
            self.steps += 1;
            if self.steps > self.sc.steps_max {
                self.violations.push(TncViolation::StepBudget(self.sc.steps_max));
                break;
            }
            self.now = ev.time;
            let (EventKind::Issue(i) | EventKind::Complete(i)) = ev.kind;
            let i = i as usize;
            self.scheduled[i] = false;
            self.hash.word(self.now);
            if let Err(e) = self.step(i) {
                self.violations.push(TncViolation::StepRefused(e.to_string()));
                self.finish(i);
            }
            // sem_post wakes sleepers: while wake-ups are posted, blocked waiters retry.
            if self.tnc.wakeups_posted() > 0 {
                for w in 0..self.phases.len() {
                    if matches!(self.phases[w], Phase::Waiting(_)) && !self.scheduled[w] {
                        self.later(w, 1, 200);
                    }
                }
            }
        }
        let final_state = self.tnc.snapshot();
        self.violations.extend(check::after_run(&self.out, &final_state, &self.creator_failed));
        TncReport {
            seed: self.sc.seed,
            loaders: self.out,
            violations: self.violations,
            time_ns: self.now,
            steps: self.steps,
            trace_hash: self.hash.finish(),
            final_state,
            creator_failed: self.creator_failed,
        }
    }

    fn step(&mut self, i: usize) -> Result<(), lncsim_tnc::TncError> {
        let spec = &self.sc.loaders[i];
        let (uuid, parse_fails) = (spec.uuid, spec.parse_fails);
        match std::mem::replace(&mut self.phases[i], Phase::Done) {
            Phase::Arrive => {
                let before = self.tnc.snapshot();
                let r = self.tnc.enter(uuid);
                let path = r.path();
                self.violations.extend(check::on_enter(i, uuid, path, &before, &self.tnc.snapshot()));
                self.took(i, path);
                self.out[i].generation = self.tnc.generation();
                match r {
                    Enter::Creator(tok) => {
                        self.phases[i] = Phase::CreatorParsing(tok);
                        self.later(i, 1_000, 20_000);
                    }
                    Enter::Reuse(_, h) => {
                        self.phases[i] = Phase::Holding(h);
                        self.later(i, 500, 5_000);
                    }
                    Enter::Wait(ticket) => self.phases[i] = Phase::Waiting(ticket),
                    Enter::Independent(_) => {
                        self.phases[i] = Phase::IndependentParsing;
                        self.later(i, 1_000, 20_000);
                    }
                }
            }
            Phase::CreatorParsing(tok) => {
                let generation = tok.generation();
                if parse_fails {
                    marks::hit("sim.tnc.creator_failed");
                    self.creator_failed.insert(generation, true);
                    self.out[i].parse_failed = true;
                    self.tnc.fail(tok)?;
                    self.finish(i);
                } else {
                    self.creator_failed.insert(generation, false);
                    let h = self.tnc.complete(tok, i as u64)?;
                    self.phases[i] = Phase::Holding(h);
                    self.later(i, 500, 5_000);
                }
            }
            Phase::Holding(h) => {
                self.tnc.release(h)?;
                self.finish(i);
            }
            Phase::IndependentParsing => {
                self.out[i].parse_failed = parse_fails;
                self.finish(i);
            }
            Phase::Waiting(ticket) => match self.tnc.resume(ticket)? {
                Resume::Blocked(t) => self.phases[i] = Phase::Waiting(t),
                r @ (Resume::Reuse(..) | Resume::Independent(_)) => {
                    self.took(i, r.path());
                    if let Resume::Reuse(_, h) = r {
                        self.phases[i] = Phase::Holding(h);
                        self.later(i, 500, 5_000);
                    } else {
                        self.phases[i] = Phase::IndependentParsing;
                        self.later(i, 1_000, 20_000);
                    }
                }
            },
            Phase::Done => {}
        }
        Ok(())
    }
}
