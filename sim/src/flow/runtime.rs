//! The simulator's findings as the run's checks (DESIGN.md invariants 1, 2,
//! 3 and 5), one per family of [`Violation::kind`]s. A check whose family
//! found nothing passes, except that the equalization check is "not
//! exercised" when the run compared no access through another core's var of
//! a shared tensor, and the barrier check when no barrier arrival ran: a
//! check that looked at nothing says so. Cost: O(v) for v violations per check.
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
    r.check(
        "shadow memory: no access outside its tensor, no clobber of a live tensor",
        &[3],
        kinds(&["out-of-var", "clobber", "unmapped"]),
    );
    r.check("happens-before: no unsynchronised conflicting accesses", &[5], kinds(&["race"]));
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

    fn sim(shared_accesses: u64, barrier_arrivals: u64, violations: Vec<Violation>) -> SimReport {
        SimReport {
            seed: 0,
            outcome: Outcome::Finished,
            time_ns: 0,
            instructions: 0,
            events: 0,
            hbm_bytes: 0,
            compute_bytes: 0,
            shared_accesses,
            barrier_arrivals,
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
        let mut on = |_: crate::flow::Progress<'_>| {};
        let mut r = Rec::new(RunReport::new(0, None), &mut on);
        runtime_checks(s, &mut r);
        (r.checks[0].result.clone(), r.checks[1].result.clone())
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
