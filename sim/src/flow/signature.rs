//! A failure's signature: which check (or stage) failed and what kind of
//! failure it was, with the run's particulars (names, addresses, counts)
//! taken out, so the same bug found by twenty seeds is one group, and a
//! shrunk program can be required to fail the same way as the original.
//!
//! The kind is the failure's text up to its first `:` (after a leading
//! `core N:`), with backquoted names replaced by `_` and numbers by `N`,
//! at most 60 characters. Cost: linear in the text.

use super::report::{CheckResult, RunReport};

/// The signature of one failure: `check / kind` (for a stage, `stage NAME / kind`).
pub fn signature(what: &str, detail: &str) -> String {
    let name = what.split(':').next().unwrap_or(what).trim();
    format!("{name} / {}", kind(detail))
}

/// Every failure's signature in `r`, stages first, in report order, without repeats.
pub fn signatures(r: &RunReport) -> Vec<String> {
    signatures_with_examples(r).into_iter().map(|(s, _)| s).collect()
}

/// Every failure of `r` as (signature, line), stages first, in report order
/// and with repeats; the line is `NAME: detail`, as `RunReport::failures` prints it.
pub fn failure_lines(r: &RunReport) -> Vec<(String, String)> {
    let stages = r.stages.iter().filter_map(|s| {
        let e = s.outcome.as_ref().err()?;
        Some((signature(&format!("stage {}", s.name), e), format!("{}: {e}", s.name)))
    });
    let checks = r.checks.iter().filter_map(|c| match &c.result {
        CheckResult::Fail(e) => Some((signature(c.name, e), format!("{}: {e}", c.name))),
        _ => None,
    });
    stages.chain(checks).collect()
}

/// Each signature of `r` once, in report order, with the first failure line
/// that has it (a group's example is then its own failure, never another's).
/// O(f log f) in failures.
pub fn signatures_with_examples(r: &RunReport) -> Vec<(String, String)> {
    let mut seen = std::collections::BTreeSet::new();
    failure_lines(r).into_iter().filter(|(s, _)| seen.insert(s.clone())).collect()
}

/// The kind of a failure text: its head, particulars replaced.
fn kind(detail: &str) -> String {
    let mut d = detail.trim();
    // A per-core prefix says where, not what.
    if let Some(rest) = d.strip_prefix("core ")
        && let Some((num, tail)) = rest.split_once(':')
        && num.chars().all(|c| c.is_ascii_digit())
    {
        d = tail.trim_start();
    }
    let head = d.split(':').next().unwrap_or(d);
    let mut out = String::new();
    let mut chars = head.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            for n in chars.by_ref() {
                if n == '`' {
                    break;
                }
            }
            out.push('_');
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|n| n.is_ascii_hexdigit() || *n == 'x') {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
        if out.chars().count() >= 60 {
            break;
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn particulars_do_not_split_a_group() {
        let a = signature(
            "IR checker: live tensors disjoint",
            "core 0: `t10` [0x13000, 0x14000) and `t17` [0x13000, 0x15000) overlap while both live at 6",
        );
        let b = signature(
            "IR checker: live tensors disjoint",
            "core 3: `t2` [0x1000, 0x2000) and `t9` [0x1800, 0x3000) overlap while both live at 12",
        );
        assert_eq!(a, b);
        assert_eq!(a, "IR checker / _ [N, N) and _ [N, N) overlap while both live at N");
    }

    #[test]
    fn different_kinds_and_checks_differ() {
        let race = signature("happens-before", "race (write-write) at 0x100422000: core 0 Dve #1 ...");
        let clobber = signature("shadow memory: no access outside", "clobber at 0x100422000: core 0 ...");
        let deadlock = signature("barriers: no slot collision", "deadlock: core 0 Dve #3 waits ...");
        let slot = signature("barriers: no slot collision", "barrier slot collision on slot 7: core 1 ...");
        assert_eq!(race, "happens-before / race (write-write) at N");
        assert_eq!(clobber, "shadow memory / clobber at N");
        assert_eq!(deadlock, "barriers / deadlock");
        assert_eq!(slot, "barriers / barrier slot collision on slot N");
    }

    #[test]
    fn a_report_lists_each_signature_once() {
        let mut r = RunReport::new(1, None);
        r.stage("link", Err("link: missing input `x`".into()));
        r.check("outputs", &[5], Err("output `a` differs first at element 3".into()));
        r.check("outputs", &[5], Err("output `b` differs first at element 9".into()));
        r.check("fine", &[1], Ok(()));
        assert_eq!(signatures(&r), vec!["stage link / link", "outputs / output _ differs first at element N"]);
    }

    #[test]
    fn each_signature_keeps_its_own_first_line() {
        let mut r = RunReport::new(1, None);
        r.check("outputs", &[5], Err("output `a` differs first at element 3".into()));
        r.check("outputs", &[5], Err("output `b` differs first at element 9".into()));
        r.check("happens-before", &[4], Err("race (write-write) at 0x100: core 0".into()));
        let lines: Vec<String> = failure_lines(&r).into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, r.failures());
        let ex = signatures_with_examples(&r);
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].1, "outputs: output `a` differs first at element 3");
        // The second signature's example is the race, not the second outputs line.
        assert_eq!(
            ex[1],
            (
                "happens-before / race (write-write) at N".into(),
                "happens-before: race (write-write) at 0x100: core 0".into()
            )
        );
    }
}
