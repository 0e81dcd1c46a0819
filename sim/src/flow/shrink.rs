//! Shrinking a failing run (issue 7 item 8): fewer cores, fewer ops, smaller
//! tensors through the generator's parameters, then fewer instructions and
//! locations in the program itself, keeping every step that still fails the
//! same way: its failures' signatures (check + kind, [`super::signature`])
//! include one of the original's and add none the original did not have, so
//! a race never shrinks into a different failure (a false alarm, a failed
//! stage) that happens to share a check.

use std::collections::BTreeSet;

use lncsim_model::ir::{MemLocId, Module};
use lncsim_model::program::{GenConfig, generate};

use super::{RunConfig, RunReport, Source, run};

/// The smallest failing program found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The program, in the text format via `lncsim_model::ir::print`.
    pub program: Module,
    /// The config that reproduces the failure on it.
    pub config: RunConfig,
    /// The failing run's report.
    pub report: RunReport,
    /// Runs spent.
    pub runs: usize,
}

/// A run's failure signatures (check + kind, stages included).
fn signature(r: &RunReport) -> BTreeSet<String> {
    super::signature::signatures(r).into_iter().collect()
}

/// True when `got` fails the way `want` did: a common signature, none new.
pub(crate) fn same_failure(want: &BTreeSet<String>, got: &BTreeSet<String>) -> bool {
    !got.is_disjoint(want) && got.is_subset(want)
}

struct Shrinker {
    want: BTreeSet<String>,
    runs: usize,
    budget: usize,
}

impl Shrinker {
    /// Runs `cfg`; the report when it still fails the same way.
    fn fails(&mut self, cfg: &RunConfig) -> Option<RunReport> {
        if self.runs >= self.budget {
            return None;
        }
        self.runs += 1;
        let r = run(cfg);
        (!r.passed() && same_failure(&self.want, &signature(&r))).then_some(r)
    }
}

fn smaller(g: &GenConfig) -> Vec<GenConfig> {
    let mut v = Vec::new();
    if g.cores > 1 {
        v.push(GenConfig { cores: 1, ..g.clone() });
        v.push(GenConfig { cores: g.cores - 1, ..g.clone() });
    }
    if g.ops > 1 {
        v.push(GenConfig { ops: g.ops / 2, ..g.clone() });
        v.push(GenConfig { ops: g.ops - 1, ..g.clone() });
    }
    if g.max_elems > 1 {
        v.push(GenConfig { max_elems: g.max_elems / 2, ..g.clone() });
    }
    if g.allreduces > 0 {
        v.push(GenConfig { allreduces: 0, ..g.clone() });
    }
    if g.outputs > 1 {
        v.push(GenConfig { outputs: 1, ..g.clone() });
    }
    if g.handoff_pct > 0 {
        v.push(GenConfig { handoff_pct: g.handoff_pct / 2, ..g.clone() });
    }
    v
}

/// `m` without instruction `i` of function `fi` (edges to it dropped), if still valid IR.
fn without_inst(m: &Module, fi: usize, i: usize) -> Option<Module> {
    let mut c = m.clone();
    let f = &mut c.functions[fi];
    for b in &mut f.blocks {
        b.insts.retain(|id| id.index() != i);
    }
    f.canonicalize();
    c.verify().ok().map(|()| c)
}

/// `m` without locations nothing refers to (ids remapped), if still valid IR.
fn without_unused_locs(m: &Module) -> Option<Module> {
    let mut used: BTreeSet<MemLocId> = BTreeSet::new();
    for f in &m.functions {
        used.extend(f.args.iter().copied());
        for i in &f.insts {
            used.extend(i.reads().iter().map(|a| a.loc));
            used.extend(i.write().map(|a| a.loc));
        }
    }
    for l in &m.memlocs {
        used.extend(l.aliases.iter().map(|a| a.target));
    }
    if used.len() == m.memlocs.len() {
        return None;
    }
    let remap: Vec<Option<MemLocId>> = {
        let mut next = 0;
        (0..m.memlocs.len())
            .map(|i| {
                used.contains(&MemLocId::from_index(i)).then(|| {
                    next += 1;
                    MemLocId::from_index(next - 1)
                })
            })
            .collect()
    };
    let map = |id: MemLocId| remap.get(id.index()).copied().flatten();
    let mut c = m.clone();
    c.memlocs = m.memlocs.iter().enumerate().filter(|(i, _)| remap[*i].is_some()).map(|(_, l)| l.clone()).collect();
    for l in &mut c.memlocs {
        for a in &mut l.aliases {
            a.target = map(a.target)?;
        }
    }
    for s in &mut c.sets {
        s.locs = s.locs.iter().filter_map(|&id| map(id)).collect();
    }
    c.sets.retain(|s| !s.locs.is_empty());
    for f in &mut c.functions {
        f.args = f.args.iter().filter_map(|&id| map(id)).collect();
        for inst in &mut f.insts {
            remap_inst(inst, &map)?;
        }
    }
    c.verify().ok().map(|()| c)
}

fn remap_inst(inst: &mut lncsim_model::ir::Inst, map: &dyn Fn(MemLocId) -> Option<MemLocId>) -> Option<()> {
    use lncsim_model::ir::Op;
    match &mut inst.op {
        Op::DmaCopy { src, dst } => {
            src.loc = map(src.loc)?;
            dst.loc = map(dst.loc)?;
        }
        Op::Compute { srcs, dst, .. } => {
            for s in srcs {
                s.loc = map(s.loc)?;
            }
            dst.loc = map(dst.loc)?;
        }
        _ => {}
    }
    Some(())
}

/// Shrinks a failing run of a generated or text program within `budget` runs;
/// `None` when the run passes or its source is a NEFF or hand-written modules.
pub fn shrink(cfg: &RunConfig, budget: usize) -> Option<Shrunk> {
    if matches!(cfg.source, Source::Neff { .. } | Source::Modules { .. } | Source::Linked { .. }) {
        return None;
    }
    let first = run(cfg);
    if first.passed() {
        return None;
    }
    let mut s = Shrinker { want: signature(&first), runs: 1, budget };
    let mut best = (cfg.clone(), first);
    // Generator parameters first: each accepted step regenerates a smaller program.
    if let Source::Generated(g, _) = &cfg.source {
        let mut g = g.clone();
        'params: loop {
            for cand in smaller(&g) {
                let c = RunConfig { source: Source::Generated(cand.clone(), None), ..cfg.clone() };
                if let Some(r) = s.fails(&c) {
                    g = cand;
                    best = (c, r);
                    continue 'params;
                }
            }
            break;
        }
    }
    let mut program = match &best.0.source {
        Source::Generated(g, _) => generate(g),
        Source::Program { module, .. } => module.clone(),
        Source::Neff { .. } | Source::Modules { .. } | Source::Linked { .. } => return None,
    };
    let as_program = |m: &Module| RunConfig {
        source: Source::Program { module: m.clone(), path: "shrunk.bir".into(), lines: None },
        ..cfg.clone()
    };
    // Then instructions, last first, and the locations they leave unused.
    for fi in 0..program.functions.len() {
        let mut i = program.functions[fi].insts.len();
        while i > 0 {
            i -= 1;
            if let Some(cand) = without_inst(&program, fi, i)
                && let Some(r) = s.fails(&as_program(&cand))
            {
                program = cand;
                best = (as_program(&program), r);
            }
            i = i.min(program.functions[fi].insts.len());
        }
    }
    if let Some(cand) = without_unused_locs(&program)
        && let Some(r) = s.fails(&as_program(&cand))
    {
        program = cand;
        best = (as_program(&program), r);
    }
    Some(Shrunk { program, config: best.0, report: best.1, runs: s.runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_step_keeps_a_signature_and_adds_none() {
        let want = set(&["happens-before / race (write-write) at N", "shadow memory / clobber at N"]);
        assert!(same_failure(&want, &set(&["happens-before / race (write-write) at N"])));
        assert!(same_failure(&want, &want));
        // A different failure in another check, even alongside the old one, is not the same failure.
        assert!(!same_failure(&want, &set(&["IR checker / _ at N is below the HWM floor N"])));
        assert!(!same_failure(
            &want,
            &set(&["happens-before / race (write-write) at N", "IR checker / _ at N is below the HWM floor N"])
        ));
        assert!(!same_failure(&want, &set(&[])));
    }
}
