//! JUnit XML for a swarm campaign: one test case per seed, a failing seed's
//! failure lines and replay command in its `<failure>`, so CI systems that
//! read JUnit (GitHub, GitLab, Jenkins) show each failing seed. Cost: linear
//! in the outcomes' text.

use std::fmt::Write as _;

use lncsim_sim::flow::swarm::SwarmReport;

/// `s` with XML's five special characters escaped, and control characters
/// other than tab and newline (not allowed in XML 1.0) dropped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

/// The JUnit document of `report`; `suite` names the test suite (seed range and shard).
pub fn junit(report: &SwarmReport, suite: &str) -> String {
    let failed = report.failed().count();
    let mut x = String::new();
    let _ = writeln!(x, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        x,
        r#"<testsuites name="lncsim swarm" tests="{}" failures="{failed}" errors="0">"#,
        report.outcomes.len()
    );
    let _ = writeln!(
        x,
        r#"  <testsuite name="{}" tests="{}" failures="{failed}" errors="0" skipped="0">"#,
        escape(suite),
        report.outcomes.len()
    );
    for o in &report.outcomes {
        let name = format!("seed {} ({})", o.seed, o.mix);
        if o.passed {
            let _ = writeln!(x, r#"    <testcase classname="lncsim.swarm" name="{}"/>"#, escape(&name));
            continue;
        }
        let _ = writeln!(x, r#"    <testcase classname="lncsim.swarm" name="{}">"#, escape(&name));
        let message = o.signatures.first().map_or("failed", String::as_str);
        let mut body = o.failures.join("\n");
        body.push_str("\nreplay: ");
        body.push_str(o.replay.as_deref().unwrap_or("(no replay command)"));
        let _ = writeln!(
            x,
            r#"      <failure message="{}" type="{}">{}</failure>"#,
            escape(message),
            escape(message),
            escape(&body)
        );
        let _ = writeln!(x, "    </testcase>");
    }
    let _ = writeln!(x, "  </testsuite>");
    let _ = writeln!(x, "</testsuites>");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_are_escaped_and_controls_dropped() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y\tz\n"), "xy\tz\n");
    }
}
