//! A record's memory effect at completion: the static access checks
//! (unmapped, out-of-var, unequalized shared access), the shadow checks
//! (races, clobbers), then the data movement or arithmetic on the mirror.
//!
//! Choice: a record reads its sources and writes its destination atomically
//! at completion time. Races are found by happens-before, independent of
//! timing; outputs of racy programs depend on the schedule, as on hardware.

use lncsim_model::codegen::record::Opcode;
use lncsim_model::marks;

use crate::check::race::Tag;
use crate::check::shadow::Finding;
use crate::check::violation::Violation;
use crate::engine::arith;
use crate::engine::decode::Instr;
use crate::engine::sim::Simulation;
use crate::engine::vars::NONE;

impl Simulation {
    /// Executes the memory part of the record at `pc` of engine `e`.
    pub(crate) fn execute(&mut self, e: usize, pc: u32, ins: &Instr) {
        let mems = ins.mems();
        let mut mapped = true;
        for (k, m) in mems.iter().enumerate() {
            if m.loc.is_none() {
                mapped = false;
                marks::hit("sim.unmapped");
                let site = self.site(e, pc, Some(k as u8));
                self.report_violation(Violation::Unmapped { site, pa: m.pa, len: m.len });
            }
            if self.cfg.checks.ownership && m.out_of_var && m.var != NONE {
                marks::hit("sim.ownership.out_of_var");
                let v = &self.vars.vars[m.var as usize];
                let (var_pa, var_size) = (v.pa, v.size);
                let site = self.site(e, pc, Some(k as u8));
                self.report_violation(Violation::OutOfVar { site, pa: m.pa, len: m.len, var_pa, var_size });
            }
            if self.cfg.checks.equalization && m.compared {
                self.shared_accesses += 1;
            }
            if self.cfg.checks.equalization
                && let Some(canonical_pa) = m.unequal
            {
                marks::hit("sim.equalize.unequal_access");
                let site = self.site(e, pc, Some(k as u8));
                self.report_violation(Violation::UnequalAccess { site, pa: m.pa, canonical_pa });
            }
        }
        if self.cfg.checks.races || self.cfg.checks.ownership {
            self.shadow_accesses(e, pc, ins);
        }
        if !mapped {
            return;
        }
        let dst = mems[0];
        let Some(dloc) = dst.loc else { return };
        if ins.op == Some(Opcode::Dma) {
            let Some(sloc) = mems[1].loc else { return };
            self.hbm.copy(sloc, dloc, dst.len as usize);
            self.hbm_bytes += dst.len;
            return;
        }
        let src = |k: usize| mems.get(k).and_then(|m| m.loc.map(|l| (l, m.len as usize)));
        let mut out = std::mem::take(&mut self.buf);
        {
            let a = src(1).map_or(&[][..], |((r, o), l)| self.hbm.slice(r, o, l));
            let b = src(2).map_or(&[][..], |((r, o), l)| self.hbm.slice(r, o, l));
            arith::compute(ins.op.unwrap_or(Opcode::Add), ins.imm, dst.len as usize, a, b, &mut out);
        }
        self.hbm.write(dloc.0, dloc.1, &out);
        self.buf = out;
        self.compute_bytes += mems.iter().map(|m| m.len).sum::<u64>();
    }

    /// Feeds the record's reads, then its write, to the shadow; reports what it finds.
    fn shadow_accesses(&mut self, e: usize, pc: u32, ins: &Instr) {
        let site = self.site_base[e] + pc;
        let clock = if self.cfg.checks.races { self.clocks.vc(e)[e] } else { 0 };
        let mut findings = std::mem::take(&mut self.findings);
        let mems = ins.mems();
        self.shadowed_accesses += mems.len() as u64;
        for k in (0..mems.len()).rev() {
            let tag = Tag { thread: e as u16, slot: k as u8, clock, site };
            let vc: &[u32] = if self.cfg.checks.races { self.clocks.vc(e) } else { &[] };
            if mems[k].write {
                self.shadow.write(&mems[k], tag, vc, &mut findings);
            } else {
                self.shadow.read(&mems[k], tag, vc, &mut findings);
            }
            for f in findings.drain(..) {
                self.finding(tag, f);
            }
        }
        self.findings = findings;
    }

    fn finding(&mut self, tag: Tag, f: Finding) {
        match f {
            Finding::Race { kind, prior, addr } => {
                if !self.seen_races.insert((prior.site, prior.slot, tag.site, tag.slot)) {
                    return;
                }
                marks::hit("sim.race");
                let (pe, ppc) = self.locate_site(prior.site);
                let first = self.site(pe, ppc, Some(prior.slot));
                let second = self.site(
                    usize::from(tag.thread),
                    tag.site - self.site_base[usize::from(tag.thread)],
                    Some(tag.slot),
                );
                self.report_violation(Violation::Race { kind, addr, first, second });
            }
            Finding::Clobber { owner, writer, addr } => {
                if !self.seen_clobbers.insert((tag.site, tag.slot)) {
                    return;
                }
                marks::hit("sim.ownership.clobber");
                let reader = self.site(
                    usize::from(tag.thread),
                    tag.site - self.site_base[usize::from(tag.thread)],
                    Some(tag.slot),
                );
                let writer = (writer.thread != crate::check::race::NO_THREAD).then(|| {
                    let (we, wpc) = self.locate_site(writer.site);
                    self.site(we, wpc, Some(writer.slot))
                });
                let owner = self.vars.owner_key(owner).unwrap_or_default();
                self.report_violation(Violation::Clobber { reader, owner, writer, addr });
            }
        }
    }
}
