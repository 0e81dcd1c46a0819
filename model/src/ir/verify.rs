//! `Module::verify`: every dangling index, duplicate name, use-before-def and
//! type mismatch, reported as typed errors (all of them, not just the first).

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use crate::namehash::{NameHasher, hash_name};
use std::fmt;

use super::module::*;

/// One thing wrong with a module.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// An index that points past its arena.
    #[error("{context}: dangling {what} {index}")]
    Dangling {
        /// Where the index was found.
        context: String,
        /// What kind of index.
        what: &'static str,
        /// The bad index.
        index: u32,
    },
    /// Two items of one namespace share a name.
    #[error("duplicate {kind} name `{name}`{scope}")]
    Duplicate {
        /// The namespace (location, queue, function, set, block, instruction).
        kind: &'static str,
        /// The repeated name.
        name: String,
        /// ` in function ...` when the namespace is per function.
        scope: String,
    },
    /// A location is read before anything writes it.
    #[error("function `{func}`, instruction `{inst}`: reads `{loc}` before anything writes it")]
    UseBeforeDef {
        /// The function.
        func: String,
        /// The reading instruction.
        inst: String,
        /// The location.
        loc: String,
    },
    /// Operands that do not fit their operation.
    #[error("{context}: {msg}")]
    TypeMismatch {
        /// Where.
        context: String,
        /// What does not fit.
        msg: String,
    },
    /// A structural rule is broken (block order, core binding, barrier participants).
    #[error("{context}: {msg}")]
    Structure {
        /// Where.
        context: String,
        /// Which rule.
        msg: String,
    },
}

/// Every error `verify` found, in a stable order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyErrors(pub Vec<VerifyError>);

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [] => f.write_str("no errors"),
            [one] => write!(f, "{one}"),
            [first, rest @ ..] => write!(f, "{first} (and {} more)", rest.len()),
        }
    }
}

impl std::error::Error for VerifyErrors {}

impl Module {
    /// Checks every structural and typing rule of the IR; returns all violations.
    pub fn verify(&self) -> Result<(), VerifyErrors> {
        let mut v = Verifier { m: self, errs: Vec::new(), locs: Vec::new(), first_here: Vec::new() };
        v.module();
        if v.errs.is_empty() { Ok(()) } else { Err(VerifyErrors(v.errs)) }
    }
}

/// Where an instruction error is: formatted only when an error is reported.
struct Ctx<'a> {
    func: &'a str,
    inst: &'a str,
}

impl fmt::Display for Ctx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "function `{}`, instruction `{}`", self.func, self.inst)
    }
}

/// A location or set named in an error: formatted only when an error is reported.
struct Named<'a>(&'static str, &'a str);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.0, self.1)
    }
}

/// What the instruction rules ask of a location, 16 bytes apiece (one probe
/// per operand instead of one into the full location table).
#[derive(Clone, Copy)]
struct LocFacts {
    /// Its element count.
    elems: u64,
    /// Its element type.
    dtype: DType,
    /// [`EXTERNAL`], [`READ_ONLY`], [`WRITTEN_ANYWHERE`], [`IN_FUNCTION`].
    flags: u8,
}

/// Defined from outside: an input, a weight, or a view of a remote tensor.
const EXTERNAL: u8 = 1;
/// An input or a weight: no instruction may write it.
const READ_ONLY: u8 = 2;
/// Some instruction of some function writes it.
const WRITTEN_ANYWHERE: u8 = 4;
/// Some instruction of the function being checked writes it.
const IN_FUNCTION: u8 = 8;
/// `first_here`'s mark for "not written yet in this function".
const UNWRITTEN: u64 = u64::MAX;

/// Checks one module. Cost: O(n log n) for n instructions, locations and
/// names (the duplicate-name sorts), plus O(L) for L locations once per
/// module: the per-location tables are built once and reset after each
/// function only where that function wrote (no O(L) work per function).
struct Verifier<'a> {
    m: &'a Module,
    errs: Vec<VerifyError>,
    /// Per location: the facts the instruction rules probe.
    locs: Vec<LocFacts>,
    /// Per location: position of the first write in the function being checked, so far.
    first_here: Vec<u64>,
}

impl Verifier<'_> {
    fn structure(&mut self, context: String, msg: impl Into<String>) {
        self.errs.push(VerifyError::Structure { context, msg: msg.into() });
    }

    fn mismatch(&mut self, context: String, msg: impl Into<String>) {
        self.errs.push(VerifyError::TypeMismatch { context, msg: msg.into() });
    }

    fn dangling(&mut self, context: String, what: &'static str, index: u32) {
        self.errs.push(VerifyError::Dangling { context, what, index });
    }

    fn dups<'n>(&mut self, kind: &'static str, scope: &str, names: impl Iterator<Item = &'n str> + Clone) {
        // Distinct 64-bit hashes prove distinct names: sort the hashes (one
        // sequential pass and a cache-friendly sort, where a table of a
        // million names misses the cache on every insert) and look for equal
        // neighbours. Only then find the duplicates themselves, in order.
        let mut hashes: Vec<u64> = names.clone().map(hash_name).collect();
        hashes.sort_unstable();
        if hashes.windows(2).all(|w| w[0] != w[1]) {
            return;
        }
        // Insert-only (never iterated), so the hash order cannot leak into reports.
        let mut seen: HashSet<&str, BuildHasherDefault<NameHasher>> =
            HashSet::with_capacity_and_hasher(names.size_hint().0, BuildHasherDefault::default());
        for n in names {
            if !seen.insert(n) {
                self.errs.push(VerifyError::Duplicate { kind, name: n.to_string(), scope: scope.to_string() });
            }
        }
    }

    fn loc_ok(&mut self, context: &dyn fmt::Display, id: MemLocId) -> bool {
        if id.index() < self.m.memlocs.len() {
            return true;
        }
        self.dangling(context.to_string(), "location", id.0);
        false
    }

    fn module(&mut self) {
        let m = self.m;
        if m.attrs.lnc_size == 0 {
            self.structure("module".into(), "lnc_size must be at least 1");
        }
        if let Some(c) = m.attrs.neuron_core_id
            && c >= m.attrs.lnc_size
        {
            self.structure("module".into(), format!("NeuronCoreId {c} is not below lnc_size {}", m.attrs.lnc_size));
        }
        self.dups("location", "", m.memlocs.iter().map(|l| l.name.as_str()));
        self.dups("set", "", m.sets.iter().map(|s| s.name.as_str()));
        self.dups("queue", "", m.queues.iter().map(|q| q.name.as_str()));
        self.dups("function", "", m.functions.iter().map(|f| f.name.as_str()));
        for (i, l) in m.memlocs.iter().enumerate() {
            let ctx = Named("location", &l.name);
            if l.elem_count == 0 {
                self.mismatch(ctx.to_string(), "element count must be at least 1");
            }
            if let Some(r) = &l.remote_local_target {
                if r.core >= m.attrs.lnc_size {
                    self.structure(ctx.to_string(), format!("remote core {} is not below lnc_size", r.core));
                }
                if Some(r.core) == m.attrs.neuron_core_id {
                    self.structure(ctx.to_string(), "remote_local_target names its own core");
                }
            }
            for a in &l.aliases {
                if self.loc_ok(&ctx, a.target) && a.target.index() == i {
                    self.structure(ctx.to_string(), "aliases itself");
                }
            }
        }
        for s in &m.sets {
            let ctx = Named("set", &s.name);
            for &id in &s.locs {
                self.loc_ok(&ctx, id);
            }
        }
        for q in &m.queues {
            if q.instances.windows(2).any(|w| w[0] >= w[1]) {
                self.structure(format!("queue `{}`", q.name), "instances must be strictly ascending");
            }
        }
        self.locs = m
            .memlocs
            .iter()
            .map(|l| {
                let read_only = matches!(l.usage, Usage::Input | Usage::Weight);
                let external = read_only || l.remote_local_target.is_some();
                let flags = if external { EXTERNAL } else { 0 } | if read_only { READ_ONLY } else { 0 };
                LocFacts { elems: l.elem_count, dtype: l.dtype, flags }
            })
            .collect();
        for a in m.functions.iter().flat_map(|f| f.insts.iter().filter_map(Inst::write)) {
            if let Some(l) = self.locs.get_mut(a.loc.index()) {
                l.flags |= WRITTEN_ANYWHERE;
            }
        }
        self.first_here = vec![UNWRITTEN; m.memlocs.len()];
        for (fi, f) in m.functions.iter().enumerate() {
            self.function(fi, f);
        }
    }

    fn function(&mut self, fi: usize, f: &Function) {
        let fctx = format!("function `{}`", f.name);
        let scope = format!(" in function `{}`", f.name);
        self.dups("block", &scope, f.blocks.iter().map(|b| b.name.as_str()));
        self.dups("instruction", &scope, f.insts.iter().map(|i| i.name.as_str()));
        for &a in &f.args {
            self.loc_ok(&fctx, a);
        }
        let mut listed = vec![0u32; f.insts.len()];
        // Canonical (`Function::is_canonical`): the blocks list ids 0, 1, 2, ... and nothing else.
        let (mut canonical, mut next) = (true, 0usize);
        for b in &f.blocks {
            for &id in &b.insts {
                canonical &= id.index() == next;
                next += 1;
                match listed.get_mut(id.index()) {
                    Some(n) => *n += 1,
                    None => self.dangling(format!("{fctx}, block `{}`", b.name), "instruction", id.0),
                }
            }
        }
        for (i, n) in listed.iter().enumerate() {
            if *n != 1 {
                let name = &f.insts[i].name;
                self.structure(fctx.clone(), format!("instruction `{name}` is listed by {n} blocks (must be 1)"));
            }
        }
        canonical &= next == f.insts.len();
        if !canonical && listed.iter().all(|&n| n == 1) {
            self.structure(fctx.clone(), "instruction arena is not in block order (call Function::canonicalize)");
        }
        let core = f.attrs.neuron_core_id.or(self.m.attrs.neuron_core_id);
        for a in f.insts.iter().filter_map(Inst::write) {
            if let Some(l) = self.locs.get_mut(a.loc.index()) {
                l.flags |= IN_FUNCTION;
            }
        }
        for (pos, id) in f.order().enumerate() {
            let Some(inst) = f.insts.get(id.index()) else { continue };
            let ictx = Ctx { func: &f.name, inst: &inst.name };
            self.inst(fi, f, id, inst, &ictx, core);
            let pos = pos as u64;
            for r in inst.read_slice() {
                if r.loc.index() < self.locs.len() && !self.defined(r.loc, pos) {
                    self.errs.push(VerifyError::UseBeforeDef {
                        func: f.name.clone(),
                        inst: inst.name.to_string(),
                        loc: self.m.memlocs[r.loc.index()].name.to_string(),
                    });
                }
            }
            if let Some(w) = inst.write_ref()
                && let Some(slot) = self.first_here.get_mut(w.loc.index())
                && *slot == UNWRITTEN
            {
                *slot = pos;
            }
        }
        // Back to "unwritten in this function" where this function wrote: the
        // next function starts from clean tables without an O(L) reset.
        for a in f.insts.iter().filter_map(Inst::write_ref) {
            if let (Some(l), Some(p)) = (self.locs.get_mut(a.loc.index()), self.first_here.get_mut(a.loc.index())) {
                l.flags &= !IN_FUNCTION;
                *p = UNWRITTEN;
            }
        }
    }

    /// A read at `pos` is defined when the location comes from outside (input,
    /// weight, a remote view), or an earlier instruction of this function wrote
    /// it, or only other functions write it (a handoff in a linked module).
    fn defined(&self, loc: MemLocId, pos: u64) -> bool {
        let flags = self.locs[loc.index()].flags;
        if flags & EXTERNAL != 0 {
            return true;
        }
        match self.first_here[loc.index()] {
            UNWRITTEN => flags & WRITTEN_ANYWHERE != 0 && flags & IN_FUNCTION == 0,
            // A later writer in this same function makes the read a use-before-def.
            p => p < pos,
        }
    }

    fn inst(&mut self, fi: usize, f: &Function, id: InstId, inst: &Inst, ictx: &Ctx<'_>, core: Option<u32>) {
        let lnc = self.m.attrs.lnc_size;
        for d in &inst.deps {
            if d.inst.index() >= f.insts.len() {
                self.dangling(ictx.to_string(), "instruction", d.inst.0);
            } else if d.inst >= id {
                self.structure(
                    ictx.to_string(),
                    format!("depends on `{}`, which is not earlier", f.insts[d.inst.index()].name),
                );
            }
        }
        if let Some(c) = inst.core {
            if c >= lnc {
                self.structure(ictx.to_string(), format!("core {c} is not below lnc_size {lnc}"));
            } else if core.is_some_and(|fc| fc != c) {
                self.structure(
                    ictx.to_string(),
                    format!("bound to core {c} inside a module or function of another core"),
                );
            }
        }
        if let Some(q) = inst.queue {
            if q.index() >= self.m.queues.len() {
                self.dangling(ictx.to_string(), "queue", q.0);
            }
            if !matches!(inst.op, Op::DmaCopy { .. }) {
                self.mismatch(ictx.to_string(), "only a DMA copy uses a queue");
            }
        }
        let mut all_ok = true;
        for a in inst.read_slice().iter().chain(inst.write_ref()) {
            all_ok &= self.ap(ictx, a);
        }
        if let Some(w) = inst.write_ref()
            && self.locs.get(w.loc.index()).is_some_and(|l| l.flags & READ_ONLY != 0)
        {
            let l = &self.m.memlocs[w.loc.index()];
            self.mismatch(ictx.to_string(), format!("writes `{}`, which is a read-only {:?}", l.name, l.usage));
        }
        match &inst.op {
            Op::DmaCopy { src, dst } if all_ok => {
                if src.len != dst.len {
                    self.mismatch(ictx.to_string(), format!("DMA copies {} elements into {}", src.len, dst.len));
                }
                if self.locs[src.loc.index()].dtype != self.locs[dst.loc.index()].dtype {
                    self.mismatch(ictx.to_string(), "DMA between different element types");
                }
            }
            Op::Compute { kind, srcs, dst } if all_ok => self.compute(ictx, *kind, srcs, dst),
            Op::Call { callee } => {
                if callee.index() >= self.m.functions.len() {
                    self.dangling(ictx.to_string(), "function", callee.0);
                } else if callee.index() == fi {
                    self.structure(ictx.to_string(), "a function calls itself");
                }
            }
            Op::CoreBarrier(b) => {
                if b.participants.is_empty() || b.participants.windows(2).any(|w| w[0] >= w[1]) {
                    self.structure(ictx.to_string(), "barrier participants must be non-empty and strictly ascending");
                }
                if let Some(&c) = b.participants.iter().find(|&&c| c >= lnc) {
                    self.structure(ictx.to_string(), format!("barrier participant {c} is not below lnc_size {lnc}"));
                }
                if let Some(c) = inst.core.or(core)
                    && !b.participants.contains(&c)
                {
                    self.structure(
                        ictx.to_string(),
                        format!("core {c} arrives at a barrier it does not participate in"),
                    );
                }
            }
            Op::SwitchQueueInstance { queue, instance } => match self.m.queues.get(queue.index()) {
                None => self.dangling(ictx.to_string(), "queue", queue.0),
                Some(q) if !q.instances.contains(instance) => {
                    self.mismatch(ictx.to_string(), format!("queue `{}` has no instance {instance}", q.name));
                }
                Some(_) => {}
            },
            _ => {}
        }
    }

    fn ap(&mut self, ictx: &Ctx<'_>, a: &AccessPattern) -> bool {
        if !self.loc_ok(ictx, a.loc) {
            return false;
        }
        let elems = self.locs[a.loc.index()].elems;
        if a.len == 0 || a.offset.checked_add(a.len).is_none_or(|end| end > elems) {
            let l = &self.m.memlocs[a.loc.index()];
            let msg = format!(
                "access `{}[{}..{}]` is empty or outside its {} elements",
                l.name,
                a.offset,
                a.offset.saturating_add(a.len),
                l.elem_count
            );
            self.mismatch(ictx.to_string(), msg);
            return false;
        }
        true
    }

    fn compute(&mut self, ictx: &Ctx<'_>, kind: ComputeKind, srcs: &[AccessPattern], dst: &AccessPattern) {
        if srcs.iter().chain([dst]).any(|a| self.locs[a.loc.index()].dtype != DType::I32) {
            self.mismatch(ictx.to_string(), "compute operands must be i32");
        }
        let same_len = srcs.iter().all(|s| s.len == dst.len);
        let msg = match kind {
            ComputeKind::Add if srcs.len() < 2 || !same_len => {
                Some("add takes two or more sources of the result's length")
            }
            ComputeKind::Mul if srcs.len() != 2 || !same_len => Some("mul takes two sources of the result's length"),
            ComputeKind::Relu if srcs.len() != 1 || !same_len => Some("relu takes one source of the result's length"),
            ComputeKind::Reduce if srcs.len() != 1 || !srcs[0].len.is_multiple_of(dst.len) => {
                Some("reduce takes one source whose length is a multiple of the result's")
            }
            ComputeKind::MatMul { m: rm, k, n } => {
                let (rm, k, n) = (u64::from(rm), u64::from(k), u64::from(n));
                let ok = srcs.len() == 2 && srcs[0].len == rm * k && srcs[1].len == k * n && dst.len == rm * n;
                (!ok).then_some("matmul MxKxN takes sources of M*K and K*N elements and a result of M*N")
            }
            _ => None,
        };
        if let Some(msg) = msg {
            self.mismatch(ictx.to_string(), msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::{VerifyError, parse};

    fn use_before_def(text: &str) -> Vec<(String, String, String)> {
        let errs = match parse(text).expect("parses").verify() {
            Ok(()) => return Vec::new(),
            Err(e) => e.0,
        };
        errs.into_iter()
            .map(|e| match e {
                VerifyError::UseBeforeDef { func, inst, loc } => (func, inst, loc),
                other => panic!("only use-before-def expected, got {other}"),
            })
            .collect()
    }

    /// The per-location tables are shared by the functions of a module and
    /// reset after each: a write in one function neither defines a read in the
    /// next one's own write order, nor makes the next one's handoff read local.
    #[test]
    fn use_before_def_is_judged_per_function_over_shared_tables() {
        let text = "module m lnc 1
loc x dram input i32[4]
loc t dram internal i32[4]
loc u dram internal i32[4]
loc v dram internal i32[4]
func f0
  block b
    a = dve relu x[0..4] -> t[0..4]
func f1
  block b
    h = dve relu t[0..4] -> u[0..4]
func f2
  block b
    c0 = dve relu x[0..4] -> u[0..4]
    c1 = dve relu t[0..4] -> u[0..4]
    c2 = dve relu x[0..4] -> t[0..4]
func f3
  block b
    d0 = dve relu u[0..4] -> v[0..4]
    d1 = dve relu t[0..4] -> v[0..4]
";
        // f1 reads t that only f0 writes (a handoff): defined. f2 reads t at
        // position 1 and writes it at 2: a use-before-def, although f0 wrote t
        // at position 0. f3 reads u written by f1 and f2 only, and t written
        // by f0 and f2 only: both handoffs, defined.
        let want = vec![("f2".to_string(), "c1".to_string(), "t".to_string())];
        assert_eq!(use_before_def(text), want);
    }

    #[test]
    fn a_read_before_the_functions_own_first_write_is_reported_and_after_it_is_not() {
        let text = "module m lnc 1
loc x dram input i32[4]
loc t dram internal i32[4]
loc u dram internal i32[4]
func f
  block b
    r0 = dve relu t[0..4] -> u[0..4]
    w = dve relu x[0..4] -> t[0..4]
    r1 = dve relu t[0..4] -> u[0..4]
";
        assert_eq!(use_before_def(text), vec![("f".into(), "r0".into(), "t".into())]);
    }
}
