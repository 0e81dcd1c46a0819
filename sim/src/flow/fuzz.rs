//! The `flow` fuzz target's body, callable on stable (the corpus replay in
//! `tests/corpus.rs`): `arbitrary` turns the fuzzer's bytes into a
//! [`FlowInput`] (generator parameters, core count, jitter and faults), which
//! runs the whole flow of `lncsim run` ([`crate::flow::run`]). A generated
//! program is valid by construction, so every check of the run must pass: a
//! failed check is a finding and panics with the report. A failed *stage* is
//! a typed refusal (the run stops there with one line naming why), which is
//! fine, except for the stages after packaging (`load`, `execute`): the
//! flow's own NEFF must load and run, so their failure is a finding too.
//!
//! Cost: one run of a small program (at most 8 cores, 48 ops, 512-element
//! tensors), plus a second identical run for about one input in four to
//! check that the report and trace hash are a pure function of the config.

use arbitrary::{Arbitrary, Unstructured};
use lncsim_model::program::{GenConfig, SizeClass};

use crate::flow::{CheckResult, Faults, LoadFault, RunConfig, RunReport, Source, run};

/// Stages whose failure is a finding, not a refusal: the flow packed the NEFF itself.
const MUST_PASS: &[&str] = &["load", "execute"];

/// What the fuzzer's bytes choose.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub struct FlowInput {
    /// The run seed (inputs, staging order, jitter, faults) and the generator's.
    pub seed: u64,
    /// Cores, taken modulo 8, plus 1.
    pub cores: u8,
    /// Ops before the outputs, modulo 48, plus 1.
    pub ops: u8,
    /// Largest tensor: 2^(this modulo 10) elements.
    pub max_elems_log2: u8,
    /// Percent chance of a cross-core operand, modulo 101.
    pub handoff_pct: u8,
    /// All-reduces, modulo 3.
    pub allreduces: u8,
    /// Program outputs, modulo 3, plus 1.
    pub outputs: u8,
    /// Seeded latency jitter.
    pub jitter: bool,
    /// Stall one core.
    pub stall: bool,
    /// DMA latency spikes.
    pub dma_spikes: bool,
    /// A faulty load first: `(copy_in instead of mem_alloc, index modulo 64)`.
    pub load_fault: Option<(bool, u8)>,
    /// Concurrent TNC loaders, modulo 5.
    pub loaders: u8,
    /// Run twice and compare (taken when this modulo 4 is 0).
    pub recheck: u8,
}

impl FlowInput {
    /// The run this input describes.
    pub fn config(&self) -> RunConfig {
        let mut g = GenConfig::new(self.seed, 1 + u32::from(self.cores % 8), SizeClass::Small);
        g.ops = 1 + u32::from(self.ops % 48);
        g.max_elems = 1 << (self.max_elems_log2 % 10);
        g.handoff_pct = u32::from(self.handoff_pct % 101);
        g.allreduces = u32::from(self.allreduces % 3);
        g.outputs = 1 + u32::from(self.outputs % 3);
        let mut cfg = RunConfig::generated(self.seed, g.cores, SizeClass::Small);
        cfg.source = Source::Generated(g, None);
        cfg.jitter = self.jitter;
        cfg.faults = Faults {
            stall: self.stall,
            dma_spikes: self.dma_spikes,
            load: self.load_fault.map(|(copy, k)| {
                let k = u64::from(k % 64);
                if copy { LoadFault::CopyIn(k) } else { LoadFault::Alloc(k) }
            }),
            loaders: u32::from(self.loaders % 5),
        };
        cfg
    }
}

/// What is wrong with a finished run, if anything: a failed check, or a
/// failed stage that must not fail (see the module docs).
pub fn finding(r: &RunReport) -> Option<String> {
    let checks = r.checks.iter().filter_map(|c| match &c.result {
        CheckResult::Fail(e) => Some(format!("check {:?} failed: {e}", c.name)),
        CheckResult::Pass | CheckResult::NotExercised(_) => None,
    });
    let stages = r
        .stages
        .iter()
        .filter(|s| MUST_PASS.contains(&s.name))
        .filter_map(|s| s.outcome.as_ref().err().map(|e| format!("stage {} failed: {e}", s.name)));
    let all: Vec<String> = checks.chain(stages).collect();
    (!all.is_empty()).then(|| all.join("; "))
}

/// Fuzzer bytes -> [`FlowInput`] -> the whole flow; panics on a finding.
pub fn flow(data: &[u8]) {
    let Ok(input) = FlowInput::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let cfg = input.config();
    let r = run(&cfg);
    if let Some(f) = finding(&r) {
        panic!("flow finding for {input:?}: {f}\n{r}");
    }
    if input.recheck % 4 == 0 {
        let again = run(&cfg);
        assert_eq!(
            (again.to_json(), again.trace_hash),
            (r.to_json(), r.trace_hash),
            "the same config gave two reports: {input:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::flow::Check;

    fn input() -> FlowInput {
        FlowInput {
            seed: 3,
            cores: 1,
            ops: 5,
            max_elems_log2: 4,
            handoff_pct: 30,
            allreduces: 1,
            outputs: 1,
            jitter: true,
            stall: false,
            dma_spikes: false,
            load_fault: Some((false, 2)),
            loaders: 2,
            recheck: 0,
        }
    }

    #[test]
    fn the_input_maps_onto_a_small_run_config() {
        let cfg = input().config();
        let Source::Generated(g, None) = &cfg.source else { panic!("{:?}", cfg.source) };
        assert_eq!((g.seed, g.cores, g.ops, g.max_elems, g.outputs), (3, 2, 6, 16, 2));
        assert_eq!(cfg.faults.load, Some(LoadFault::Alloc(2)));
        assert_eq!((cfg.jitter, cfg.faults.loaders), (true, 2));
    }

    #[test]
    fn a_valid_run_has_no_finding() {
        let r = run(&input().config());
        assert_eq!(finding(&r), None, "{r}");
        assert!(r.checks.len() >= 5, "{r}");
    }

    #[test]
    fn a_failed_check_or_a_failed_load_is_a_finding_and_an_early_refusal_is_not() {
        let mut r = RunReport::new(1, None);
        r.stage("split + allocate", Err("out of space".into()));
        assert_eq!(finding(&r), None, "a typed refusal before packaging is fine");
        r.stage("load", Err("NRT_INVALID: bad".into()));
        assert_eq!(finding(&r).unwrap(), "stage load failed: NRT_INVALID: bad");
        let mut r = RunReport::new(1, None);
        r.checks.push(Check { name: "x", invariants: vec![5], result: CheckResult::Fail("race".into()), micros: 0 });
        assert_eq!(finding(&r).unwrap(), "check \"x\" failed: race");
    }

    #[test]
    fn a_planted_bug_is_a_finding() {
        let mut cfg = input().config();
        cfg.plant = Some(crate::flow::PlantedBug::TncNoWake);
        let f = finding(&run(&cfg)).expect("the planted lost wake-up is found");
        assert!(f.contains("TNC cache"), "{f}");
    }

    #[test]
    fn short_and_empty_inputs_do_not_panic() {
        flow(&[]);
        flow(&[1, 2, 3]);
    }
}
