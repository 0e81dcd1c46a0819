//! Names a run's findings in the program's terms (issue 14, item 1): a
//! record's (core, debug id) becomes the IR instruction's name in the linked
//! module (the program's own name, which split and link keep), and, when the
//! program came from a file, the FILE:LINE it was written at.
//!
//! Cost: O(n log n) for n instructions to collect the source lines (one
//! ordered table), and, only when a run has findings, O(n) to build one name
//! table per core; then O(log n) per named site.

use std::collections::{BTreeMap, BTreeSet};

use lncsim_model::ir::{Module, Name, SourceMap, engine_word};

use crate::SimReport;
use crate::check::violation::{Origin, Site};

/// Where each instruction of one or more source files was written, by (core, name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceLines {
    lines: BTreeMap<(u32, Name), (String, usize)>,
    /// (core, name) written more than once (e.g. in two functions): no line is claimed for it.
    ambiguous: BTreeSet<(u32, Name)>,
}

impl SourceLines {
    /// Adds every instruction of `m` (parsed from `file` with `map`): its core
    /// is its own `core`, else its function's, else the module's, else 0.
    pub fn add(&mut self, m: &Module, map: &SourceMap, file: &str) {
        for (fi, f) in m.functions.iter().enumerate() {
            let Some(lines) = map.insts.get(fi) else { continue };
            for (ii, inst) in f.insts.iter().enumerate() {
                let Some(&(line, _)) = lines.get(ii) else { continue };
                let core = inst.core.or(f.attrs.neuron_core_id).or(m.attrs.neuron_core_id).unwrap_or(0);
                let key = (core, inst.name.clone());
                if self.ambiguous.contains(&key) {
                    continue;
                }
                if self.lines.insert(key.clone(), (file.to_owned(), line)).is_some() {
                    self.lines.remove(&key);
                    self.ambiguous.insert(key);
                }
            }
        }
    }

    /// `FILE:LINE` of instruction `name` on `core`, when written once.
    pub fn at(&self, core: u32, name: &str) -> Option<String> {
        self.lines.get(&(core, Name::from(name))).map(|(f, l)| format!("{f}:{l}"))
    }

    /// The lines of one parsed file.
    pub fn of(m: &Module, map: &SourceMap, file: &str) -> Self {
        let mut s = SourceLines::default();
        s.add(m, map, file);
        s
    }
}

/// Names sites of a run of one linked module. Building it costs nothing;
/// the per-core name tables are built only when there is something to name.
#[derive(Clone, Copy, Debug)]
pub struct Names<'a> {
    linked: &'a Module,
    lines: Option<&'a SourceLines>,
}

/// Per NeuronCoreId: instruction names by debug id (position in the core function's order).
struct Table<'a>(BTreeMap<u32, Vec<&'a str>>);

impl<'a> Names<'a> {
    /// The names of `linked`'s core functions, with `lines` when the program came from files.
    pub fn new(linked: &'a Module, lines: Option<&'a SourceLines>) -> Self {
        Names { linked, lines }
    }

    /// The function codegen picks for each core (its own NeuronCoreId, else the module's). O(n).
    fn table(&self) -> Table<'a> {
        let mut per_core = BTreeMap::new();
        for f in &self.linked.functions {
            if let Some(core) = f.attrs.neuron_core_id.or(self.linked.attrs.neuron_core_id) {
                per_core.insert(core, f.order().map(|id| f.insts[id.index()].name.as_str()).collect());
            }
        }
        Table(per_core)
    }

    /// Fills `site.inst` and `site.origin` when the core's function has its debug id.
    fn name_with(&self, t: &Table<'_>, site: &mut Site) {
        let Some(name) = t.0.get(&site.core).and_then(|v| v.get(site.debug_id as usize)) else { return };
        site.inst = Some((*name).to_owned());
        site.origin = self.lines.and_then(|l| {
            let key = (site.core, Name::from(*name));
            match l.lines.get(&key) {
                Some((file, line)) => Some(Origin::Line { file: file.clone(), line: *line }),
                None if l.ambiguous.contains(&key) => None,
                None => Some(Origin::Inserted),
            }
        });
    }

    /// Names one site (builds the tables: for many sites use [`Names::name_report`]).
    pub fn name(&self, site: &mut Site) {
        self.name_with(&self.table(), site);
    }

    /// An output check's failure (``output `NAME` ...``) with the instructions
    /// that write `NAME` named after it (at most three, then a count). O(n),
    /// only on a failure.
    pub fn explain_output(&self, msg: String) -> String {
        let Some(name) = msg.strip_prefix("output `").and_then(|r| r.split_once('`')).map(|(n, _)| n) else {
            return msg;
        };
        let mut writers = Vec::new();
        for f in &self.linked.functions {
            let Some(core) = f.attrs.neuron_core_id.or(self.linked.attrs.neuron_core_id) else { continue };
            for i in &f.insts {
                if i.write().is_some_and(|a| self.linked.loc(a.loc).name == name) {
                    let at =
                        self.lines.and_then(|l| l.at(core, &i.name)).map(|a| format!(" at {a}")).unwrap_or_default();
                    writers.push(format!("`{}`{at} (core {core} {})", i.name, engine_word(i.engine)));
                }
            }
        }
        if writers.is_empty() {
            return msg;
        }
        let more = writers.len().saturating_sub(3);
        writers.truncate(3);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!("{msg}; written by {}{more}", writers.join(", "))
    }

    /// Names every site of every violation of `report` (nothing to do, nothing built).
    pub fn name_report(&self, report: &mut SimReport) {
        if report.violations.is_empty() {
            return;
        }
        let t = self.table();
        for v in &mut report.violations {
            for s in v.sites_mut() {
                self.name_with(&t, s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::ir::{Engine, parse_with_map};

    const TEXT: &str = "module m lnc 2\nloc x dram input i32[4] @0x0\nloc o dram output i32[4] @0x100\n\
                        func main\n  args x, o\n  block entry\n    a = dve relu x[0..4] -> o[0..4] core 1\n";

    fn site(core: u32, debug_id: u32) -> Site {
        Site { core, engine: Engine::Dve, pc: 0, debug_id, opcode: None, var: None, inst: None, origin: None }
    }

    #[test]
    fn a_site_gets_its_name_and_line_and_an_unknown_name_is_inserted() {
        let (m, map) = parse_with_map(TEXT).unwrap();
        let lines = SourceLines::of(&m, &map, "p.bir");
        let mut linked = m.clone();
        linked.functions[0].attrs.neuron_core_id = Some(1);
        let names = Names::new(&linked, Some(&lines));
        let mut s = site(1, 0);
        names.name(&mut s);
        assert_eq!(s.inst.as_deref(), Some("a"));
        assert_eq!(s.origin, Some(Origin::Line { file: "p.bir".into(), line: 7 }));
        assert!(s.to_string().starts_with("`a` at p.bir:7 (core 1 dve #0"), "{s}");
        // Core 0 has no function: nothing is claimed.
        let mut s0 = site(0, 0);
        names.name(&mut s0);
        assert_eq!((s0.inst, s0.origin), (None, None));
        // A name the source does not have is inserted by the flow.
        linked.functions[0].insts[0].name = "cb0".into();
        let mut s = site(1, 0);
        Names::new(&linked, Some(&lines)).name(&mut s);
        assert_eq!(s.origin, Some(Origin::Inserted));
    }

    #[test]
    fn an_output_failure_names_the_instructions_that_write_it() {
        let (m, map) = parse_with_map(TEXT).unwrap();
        let lines = SourceLines::of(&m, &map, "p.bir");
        let mut linked = m.clone();
        linked.functions[0].attrs.neuron_core_id = Some(1);
        let n = Names::new(&linked, Some(&lines));
        assert_eq!(
            n.explain_output("output `o` differs first at element 0".into()),
            "output `o` differs first at element 0; written by `a` at p.bir:7 (core 1 dve)"
        );
        assert_eq!(n.explain_output("output `x` missing".into()), "output `x` missing", "nobody writes x");
        assert_eq!(n.explain_output("unexpected output `o`".into()), "unexpected output `o`");
    }

    #[test]
    fn a_name_written_twice_on_one_core_claims_no_line() {
        let (m, map) = parse_with_map(TEXT).unwrap();
        let mut lines = SourceLines::of(&m, &map, "p.bir");
        lines.add(&m, &map, "q.bir");
        let mut linked = m.clone();
        linked.functions[0].attrs.neuron_core_id = Some(1);
        let mut s = site(1, 0);
        Names::new(&linked, Some(&lines)).name(&mut s);
        assert_eq!((s.inst.as_deref(), s.origin), (Some("a"), None));
    }
}
