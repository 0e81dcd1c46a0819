//! The simulator's findings as the run's checks (DESIGN.md invariants 1, 2,
//! 3 and 5), one per family of [`Violation::kind`]s. A check whose family
//! found nothing passes, except that the equalization check is "not
//! exercised" when the run compared no access through another core's var of
//! a shared tensor, the barrier check when no barrier arrival ran, and the
//! shadow-memory and happens-before checks when no memory access was
//! shadowed, and the happens-before check too when no access met an earlier
//! one by another engine or core: a check that looked at nothing says so. Cost: O(v) for v violations per check.
//!
//! [`Violation::kind`]: crate::check::violation::Violation::kind

use super::list;
use super::report::Rec;

/// The simulator's findings as checks. The equalization and barrier checks
/// are "not exercised" when the run compared no shared access or met no
/// barrier and found nothing (a finding fails them either way).
pub(super) fn runtime_checks(s: &crate::SimReport, r: &mut Rec<'_>) {
    let kinds = |ks: &[&str]| -> Result<(), String> {
        let v: Vec<String> = s.violations.iter().filter(|v| ks.contains(&v.kind())).map(|v| v.to_string()).collect();
        list(&v)
    };
    let shared = "every core's access to a shared tensor hits one address";
    match kinds(&["unequal", "unequal-access"]) {
        Ok(()) if s.shared_accesses == 0 => {
            r.not_exercised(shared, &[1], "no access went through another core's var of a shared tensor".into())
        }
        v => r.check(shared, &[1], v),
    }
    let barriers = "barriers: no slot collision, every group complete, no deadlock";
    match kinds(&["slot-collision", "barrier-mismatch", "deadlock"]) {
        Ok(()) if s.barrier_arrivals == 0 => r.not_exercised(barriers, &[2], "no barrier arrival ran".into()),
        v => r.check(barriers, &[2], v),
    }
    let none = || "no memory access was shadowed (no record touched memory, or the checks are off)".to_string();
    let shadow = "shadow memory: no access outside its tensor, no clobber of a live tensor";
    match kinds(&["out-of-var", "clobber", "unmapped"]) {
        Ok(()) if s.shadowed_accesses == 0 => r.not_exercised(shadow, &[3], none()),
        v => r.check(shadow, &[3], v),
    }
    let races = "happens-before: no unsynchronised conflicting accesses";
    match kinds(&["race"]) {
        Ok(()) if s.shadowed_accesses == 0 => r.not_exercised(races, &[5], none()),
        Ok(()) if s.race_comparisons == 0 => r.not_exercised(
            races,
            &[5],
            "no access met an earlier access to its bytes by another engine or core".into(),
        ),
        v => r.check(races, &[5], v),
    }
    r.check("execution: legal records, within the event budget", &[5], kinds(&["illegal", "event-budget"]));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::runtime_checks;
    use crate::Outcome;
    use crate::SimReport;
    use crate::check::violation::Violation;
    use crate::flow::report::{CheckResult, Rec, RunReport};

    fn sim(accesses: u64, barrier_arrivals: u64, violations: Vec<Violation>) -> SimReport {
        SimReport {
            seed: 0,
            outcome: Outcome::Finished,
            time_ns: 0,
            instructions: 0,
            events: 0,
            hbm_bytes: 0,
            compute_bytes: 0,
            shared_accesses: accesses,
            barrier_arrivals,
            shadowed_accesses: accesses,
            race_comparisons: accesses,
            mirrored_bytes: 0,
            cores: Vec::new(),
            violation_ns: vec![0; violations.len()],
            violations,
            violations_dropped: 0,
            trace_hash: 0,
            trace: None,
            faults_fired: Vec::new(),
            faults_fired_total: 0,
        }
    }

    /// The first two checks' results: equalization, barriers.
    fn verdicts(s: &SimReport) -> (CheckResult, CheckResult) {
        let all = all_verdicts(s);
        (all[0].clone(), all[1].clone())
    }

    /// Every check's result, in order: equalization, barriers, shadow, races, execution.
    fn all_verdicts(s: &SimReport) -> Vec<CheckResult> {
        let mut on = |_: crate::flow::Progress<'_>| {};
        let mut r = Rec::new(RunReport::new(0, None), &mut on);
        runtime_checks(s, &mut r);
        r.checks.iter().map(|c| c.result.clone()).collect()
    }

    #[test]
    fn shadow_and_race_checks_that_shadowed_nothing_are_not_exercised() {
        let idle = all_verdicts(&sim(0, 0, Vec::new()));
        assert!(
            matches!(idle[2], CheckResult::NotExercised(_)) && matches!(idle[3], CheckResult::NotExercised(_)),
            "{idle:?}"
        );
        assert_eq!(idle[4], CheckResult::Pass, "the execution check always looked at the run");
        // Accesses shadowed, but none met another engine's: nothing was ordered.
        let mut alone = sim(3, 1, Vec::new());
        alone.race_comparisons = 0;
        let v = all_verdicts(&alone);
        assert_eq!(v[2], CheckResult::Pass, "{v:?}");
        assert!(matches!(&v[3], CheckResult::NotExercised(w) if w.contains("another engine")), "{v:?}");
        // A race fails the check whatever was counted.
        let site = |pc| crate::check::violation::Site {
            core: 0,
            engine: lncsim_model::ir::Engine::Act,
            pc,
            debug_id: pc,
            opcode: None,
            var: None,
            inst: None,
            origin: None,
        };
        alone.violations.push(Violation::Race {
            kind: crate::check::violation::RaceKind::WriteRead,
            addr: 0,
            first: site(0),
            second: site(1),
        });
        alone.violation_ns.push(0);
        assert!(matches!(all_verdicts(&alone)[3], CheckResult::Fail(_)));
        let busy = all_verdicts(&sim(3, 1, Vec::new()));
        assert!(busy.iter().all(|c| *c == CheckResult::Pass), "{busy:?}");
    }

    #[test]
    fn a_check_that_compared_nothing_is_not_exercised_and_one_that_did_passes() {
        let (eq, bar) = verdicts(&sim(0, 0, Vec::new()));
        assert!(matches!(eq, CheckResult::NotExercised(_)), "{eq:?}");
        assert!(matches!(bar, CheckResult::NotExercised(_)), "{bar:?}");
        assert_eq!(verdicts(&sim(1, 1, Vec::new())), (CheckResult::Pass, CheckResult::Pass));
    }

    #[test]
    fn a_finding_fails_its_check_even_when_nothing_was_counted() {
        let unequal = Violation::Unequal { name: "t".into(), first: (0, 0x1000, 64), other: (1, 0x2000, 64) };
        let deadlock = Violation::Deadlock { waiters: Vec::new() };
        let (eq, bar) = verdicts(&sim(0, 0, vec![unequal, deadlock]));
        assert!(matches!(&eq, CheckResult::Fail(e) if e.contains('t')), "{eq:?}");
        assert!(matches!(bar, CheckResult::Fail(_)), "{bar:?}");
    }
}
