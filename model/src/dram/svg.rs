//! An SVG picture of a placement: time on x, address on y (0 at the bottom),
//! one rectangle per live interval of each buffer. Output is a pure function of
//! its input (fixed canvas, fixed number formatting, colours by index).

use std::fmt::Write;

use super::problem::Problem;

const W: f64 = 1000.0;
const H: f64 = 600.0;
const M: f64 = 60.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Renders `problem` placed at `addresses`; draws `capacity` as a dashed line when given.
pub fn render(problem: &Problem, addresses: &[u64], capacity: Option<u64>) -> String {
    let locs = &problem.locations;
    let ivs = || locs.iter().flat_map(|l| l.intervals.iter());
    let t0 = ivs().map(|i| i.def).min().unwrap_or(0);
    let t1 = ivs().map(|i| i.last_use.saturating_add(1)).max().unwrap_or(1).max(t0 + 1);
    let size = |i: usize| locs[i].aligned_size().unwrap_or(locs[i].byte_size);
    let peak = (0..locs.len().min(addresses.len())).map(|i| addresses[i].saturating_add(size(i))).max().unwrap_or(0);
    let top = peak.max(capacity.unwrap_or(0)).max(1);
    let x = |t: u64| M + (t - t0) as f64 / (t1 - t0) as f64 * W;
    let y = |a: u64| M + H - a as f64 / top as f64 * H;
    let mut s = String::new();
    let (cw, ch) = (W + 2.0 * M, H + 2.0 * M);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{cw:.0}" height="{ch:.0}" viewBox="0 0 {cw:.0} {ch:.0}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect x="0" y="0" width="{cw:.0}" height="{ch:.0}" fill="white"/>"#);
    let _ = writeln!(s, r#"<rect x="{M:.0}" y="{M:.0}" width="{W:.0}" height="{H:.0}" fill="none" stroke="black"/>"#);
    for (i, l) in locs.iter().enumerate() {
        let Some(&a) = addresses.get(i) else { break };
        let hue = (i * 137) % 360;
        let end = a.saturating_add(size(i));
        for iv in &l.intervals {
            let (x0, x1) = (x(iv.def), x(iv.last_use.saturating_add(1)));
            let (y0, y1) = (y(end), y(a));
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.2}" y="{y0:.2}" width="{:.2}" height="{:.2}" fill="hsl({hue},60%,65%)" stroke="black" stroke-width="0.3"><title>{} [{}, {}) @{} +{}</title></rect>"#,
                x1 - x0,
                y1 - y0,
                escape(&l.name),
                iv.def,
                iv.last_use.saturating_add(1),
                a,
                size(i)
            );
        }
    }
    if let Some(c) = capacity {
        let yc = y(c);
        let _ = writeln!(
            s,
            r#"<line x1="{M:.0}" y1="{yc:.2}" x2="{:.0}" y2="{yc:.2}" stroke="red" stroke-dasharray="6,4"/><text x="{:.0}" y="{:.2}" fill="red">capacity {c}</text>"#,
            M + W,
            M + 4.0,
            yc - 4.0
        );
    }
    let _ = writeln!(s, r#"<text x="{M:.0}" y="{:.0}">time {t0}</text>"#, M + H + 20.0);
    let _ = writeln!(s, r#"<text x="{:.0}" y="{:.0}" text-anchor="end">{t1}</text>"#, M + W, M + H + 20.0);
    let _ = writeln!(s, r#"<text x="{M:.0}" y="{:.0}">address 0 .. {top} (peak {peak})</text>"#, M - 20.0);
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::{LiveInterval, Location};

    #[test]
    fn one_rectangle_per_interval_and_stable_output() {
        let p = Problem {
            locations: vec![
                Location::new("a<1>", 4, 1, vec![LiveInterval::new(0, 2)]),
                Location::new("b", 4, 1, vec![LiveInterval::new(3, 5), LiveInterval::new(7, 9)]),
            ],
            cc_operands: vec![],
        };
        let s = render(&p, &[0, 0], Some(8));
        assert_eq!(s.matches("<title>").count(), 3);
        assert!(s.contains("a&lt;1&gt; [0, 3) @0 +4"));
        assert!(s.contains("capacity 8"));
        assert_eq!(s, render(&p, &[0, 0], Some(8)));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
    }
}
