//! The independent link checker (issue 4 item 7). It reads the input
//! per-core modules and the linked module and shares no code with the linker:
//! correspondence is rebuilt from instruction names and access patterns alone.
//!
//! It reports every violation it finds: dangling indices; verifier errors;
//! the header (`<name>/sgLnk`, lnc_size N, no NeuronCoreId); one function per
//! input core and a dispatcher (function 0) calling them in core order as
//! `call_def_<core>_instance_0`; per core, every input instruction present
//! once with the same operation, plus exactly one `return_*` (last), one
//! `cb_return_*` completion barrier and exactly the `I-SQI-*` switches the
//! linker's documented rule inserts: which queue, instance, engine, name and
//! place (`checker/switches.rs`); one input tensor -> one linked location
//! and one linked location -> one tensor (a view counts as its producer's
//! tensor), named as the tensor or by the documented collision rename
//! `<name>.nc<core>[.k]`, with the tensor's memory type, dtype, size,
//! placement, usage (kept, but for `fixOutputKind`'s output -> internal),
//! shared flag and contents seed, and no remote target; slot ids of the
//! barriers flagged before linking plus the completion barriers unique and
//! dense from 0, flags cleared, unflagged ids kept, every group arrived at
//! exactly once by each participant, the completion barriers one group of
//! every input core that no input barrier uses (the order of the slot ids,
//! seed 000 §7, is `check_barrier_ids`' in the simulator crate, which every
//! flow and `lncsim link` run next to this checker); every shared tensor one
//! location whose (address, partition, bank) equal the producer's and the
//! view's before linking; every view kept as a location aliasing (must) the
//! unified one (its name, or the documented rename `<name>.nc<core>...`),
//! the alias joining a producer-core write to a consumer of another core,
//! the kept view with the view's attributes, its usage (a view declared
//! input or output: spill, `io2Spill`) and a remote target naming the
//! unified location on the producer core; the linked aliases exactly those
//! handoffs plus every alias an input declared, carried between the
//! locations standing for its ends (self-edges dropped, one per pair, the
//! first kind kept); no handoff target still an external output and every
//! other written output still one; queues folded by name with the inputs'
//! (agreed) type and owner engine, the union of instances and the maximum
//! semaphore count; every core function's dependency edges exactly its
//! input's remapped plus the documented inserted ones (`checker/deps.rs`);
//! every set (of any name: a set name carries no usage rule) and every
//! function's arguments exactly what the inputs declared, mapped to the
//! linked locations, minus the locations that stopped being IO (an internal
//! argument stays), and (with [`check_linked`]) the tensor map too
//! (`checker/sets.rs`).
//!
//! Cost: O(n log n + e log e + L log L) for n instructions, e edges and L
//! locations (aliases and set members counted with the locations), with no
//! hash-table probe per instruction or location: each
//! core's instruction names become dense class ids by one sort of name
//! hashes ([`classes`]), every input tensor a dense id and every view its
//! target by one sort each ([`tids`]); names are compared in full wherever
//! hashes meet, so a collision costs time, never an answer (the fixed hash
//! of [`crate::namehash`]; it decides nothing the linker decides). The
//! tensor correspondence is a table per input core indexed by location
//! ([`LocMap`]) and a table of linked locations per tensor id, built by a
//! sort; the name table of linked locations is built only when a location
//! no access reaches must be found by name. Whatever is reported is sorted
//! first, so messages come out in a fixed order. No per-instruction
//! allocation on a valid module.

use std::collections::BTreeMap;
use std::fmt;

use crate::ir::*;
use crate::namehash::NameMap;

/// The class of a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ViolationKind {
    /// An index points outside its arena.
    Index,
    /// `Module::verify` rejects the linked module.
    Invalid,
    /// Name, lnc_size or NeuronCoreId of the linked module.
    Header,
    /// A core's function is missing, duplicated, or its instructions differ.
    Core,
    /// The dispatcher is malformed.
    Dispatcher,
    /// Locations do not correspond one to one.
    Location,
    /// Barrier slot ids, flags or groups.
    Barrier,
    /// A shared tensor is split, moved or lost.
    Shared,
    /// A handoff alias is missing or wrong.
    Alias,
    /// An intermediate is still an external output, or a true output is lost.
    Output,
    /// Queues are not folded as documented.
    Queue,
    /// An inserted switch-queue instance is missing, extra or wrong.
    Switch,
    /// A dependency edge dropped, added or mis-mapped.
    Edge,
    /// A location set disagrees with the locations.
    Set,
    /// A function's arguments disagree with the locations.
    Argument,
    /// The tensor map disagrees with the locations.
    TensorMap,
}

/// One violation found by [`check_link`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkViolation {
    /// Its class.
    pub kind: ViolationKind,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for LinkViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.msg)
    }
}

/// The identity of an input tensor: an external name, or (producer core, name).
#[derive(Clone, Copy, Debug, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Ext(&'a str),
    Local(u32, &'a str),
}

/// The derived equality (names compared in full), with a fast path for one
/// name seen twice (a view's key borrows its producer's name): no byte read.
impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &str, b: &str| std::ptr::eq(a, b) || a == b;
        match (self, other) {
            (Key::Ext(a), Key::Ext(b)) => same(a, b),
            (Key::Local(c, a), Key::Local(d, b)) => c == d && same(a, b),
            _ => false,
        }
    }
}

/// (core, input location) -> linked location: a row per input core indexed
/// by location, plus an ordered map for ids outside their module (dangling).
struct LocMap {
    rows: BTreeMap<u32, Vec<MemLocId>>,
    extra: BTreeMap<(u32, MemLocId), MemLocId>,
}

/// A row entry with no linked location.
const NONE: MemLocId = MemLocId(u32::MAX);

impl LocMap {
    fn new() -> Self {
        LocMap { rows: BTreeMap::new(), extra: BTreeMap::new() }
    }

    /// Sets `(c, il) -> ll`; returns the previous value.
    fn insert(&mut self, c: u32, il: MemLocId, ll: MemLocId) -> Option<MemLocId> {
        match self.rows.get_mut(&c).and_then(|r| r.get_mut(il.index())) {
            Some(slot) => Some(std::mem::replace(slot, ll)).filter(|&p| p != NONE),
            None => self.extra.insert((c, il), ll),
        }
    }

    fn get(&self, c: u32, il: MemLocId) -> Option<MemLocId> {
        match self.rows.get(&c).and_then(|r| r.get(il.index())) {
            Some(&l) => Some(l).filter(|&l| l != NONE),
            None => self.extra.get(&(c, il)).copied(),
        }
    }

    /// Every entry, ascending by (core, input location).
    fn entries(&self) -> Vec<((u32, MemLocId), MemLocId)> {
        let mut v: Vec<((u32, MemLocId), MemLocId)> = self
            .rows
            .iter()
            .flat_map(|(&c, r)| {
                r.iter().enumerate().filter(|(_, l)| **l != NONE).map(move |(i, &l)| ((c, MemLocId::from_index(i)), l))
            })
            .collect();
        if !self.extra.is_empty() {
            v.extend(self.extra.iter().map(|(&k, &l)| (k, l)));
            v.sort_unstable_by_key(|e| e.0);
        }
        v
    }
}

struct Ck<'a> {
    inputs: BTreeMap<u32, &'a Module>,
    linked: &'a Module,
    out: Vec<LinkViolation>,
    /// (core, input location) -> linked location, from access patterns.
    loc_map: LocMap,
    /// The input locations in one numbering.
    flat: tids::Flat<'a>,
    /// Every input tensor's dense id.
    tensors: tids::Tensors,
    /// Tensor -> the linked locations its accesses use (one, when linked right):
    /// tensor `t`'s are `by_tid[by_tid_start[t]..by_tid_start[t + 1]]`, ascending.
    by_tid: Vec<MemLocId>,
    /// See [`Ck::by_tid`]; empty until [`Ck::locations`] ran.
    by_tid_start: Vec<usize>,
    /// Per input core, per location: a view's target on its producer core
    /// (the last location of that name there), [`NONE`] when the location is
    /// no view, the target is missing or is a view itself. Resolved once: each
    /// view is looked up by name once, however many checks ask for its tensor.
    targets: BTreeMap<u32, Vec<MemLocId>>,
    /// Linked location name -> id (the last of a repeated name), built on first use.
    linked_names: std::cell::OnceCell<NameMap<'a, MemLocId>>,
    /// Per core with a linked function: its instruction names.
    core_names: BTreeMap<u32, CoreNames>,
    /// Linked location -> the locations with a must-alias to it.
    /// (linked location, a location with a must-alias to it), sorted by the first.
    must_alias_in: Vec<(MemLocId, MemLocId)>,
    /// Per core: a bit per linked location written by that core's linked function.
    written: BTreeMap<u32, Vec<u64>>,
    /// Per input core, per location: the linked location a view survives as
    /// (aliasing its unified tensor), [`NONE`] when no view or not found;
    /// filled by [`Ck::shared_and_aliases`].
    view_locs: BTreeMap<u32, Vec<MemLocId>>,
    /// (a view's surviving location, its unified location), per view found
    /// by [`Ck::shared_and_aliases`]: the handoff aliases.
    handoffs: Vec<(MemLocId, MemLocId)>,
    /// Per input core: its function's DMA copies on a queue and switches, as
    /// (instruction, queue, a switch), ascending by instruction; filled by
    /// [`Ck::core`] in its one pass over the input.
    queue_ops: BTreeMap<u32, Vec<(u32, QueueId, bool)>>,
}

/// Checks `linked` against the `inputs` it was linked from; returns every violation (empty: pass).
pub fn check_link(inputs: &[Module], linked: &Module) -> Vec<LinkViolation> {
    check(inputs, linked, false)
}

/// [`check_link`] on a linked module `linked` proves valid IR: the IR
/// verifier's verdict (IR code, no linker code) is taken, not recomputed.
pub fn check_link_verified(inputs: &[Module], linked: Verified<'_>) -> Vec<LinkViolation> {
    check(inputs, linked.module(), true)
}

/// [`check_link`]; `proven`: `linked` passed `Module::verify` (a [`Verified`] proof).
fn check(inputs: &[Module], linked: &Module, proven: bool) -> Vec<LinkViolation> {
    let mut by_core: BTreeMap<u32, &Module> = BTreeMap::new();
    for m in inputs {
        by_core.insert(m.attrs.neuron_core_id.unwrap_or(0), m);
    }
    let flat = tids::Flat::new(&by_core);
    let targets = tids::resolve_targets(&flat);
    let tensors = tids::Tensors::new(&flat, &targets);
    let mut ck = Ck {
        loc_map: LocMap::new(),
        flat,
        tensors,
        by_tid: Vec::new(),
        by_tid_start: Vec::new(),
        targets,
        inputs: by_core,
        linked,
        out: Vec::new(),
        linked_names: std::cell::OnceCell::new(),
        core_names: BTreeMap::new(),
        must_alias_in: Vec::new(),
        written: BTreeMap::new(),
        view_locs: BTreeMap::new(),
        handoffs: Vec::new(),
        queue_ops: BTreeMap::new(),
    };
    for (&c, m) in &ck.inputs {
        ck.loc_map.rows.insert(c, vec![NONE; m.memlocs.len()]);
        ck.view_locs.insert(c, vec![NONE; m.memlocs.len()]);
    }
    if !ck.indices() {
        return ck.out;
    }
    for (i, l) in linked.memlocs.iter().enumerate() {
        let id = MemLocId::from_index(i);
        for a in l.aliases.iter().filter(|a| a.kind == AliasKind::Must) {
            ck.must_alias_in.push((a.target, id));
        }
    }
    // Stable: a target's aliasing locations stay in ascending order.
    ck.must_alias_in.sort_by_key(|e| e.0);
    for f in &linked.functions {
        if let Some(c) = f.attrs.neuron_core_id {
            let bits = ck.written.entry(c).or_insert_with(|| vec![0u64; linked.memlocs.len().div_ceil(64)]);
            for w in f.insts.iter().filter_map(Inst::write) {
                if let Some(word) = bits.get_mut(w.loc.index() / 64) {
                    *word |= 1 << (w.loc.index() % 64);
                }
            }
        }
    }
    // Valid IR is judged by the IR's own verifier, no linker code. A module the
    // caller proved valid (a `Verified` proof) keeps that verdict; any other is verified here.
    if !proven && let Err(e) = linked.verify() {
        for e in e.0 {
            ck.bad(ViolationKind::Invalid, e.to_string());
        }
    }
    ck.header(inputs);
    let funcs = ck.core_functions();
    for (&c, &f) in &funcs {
        if let Some(src) = ck.input_fn(c) {
            ck.core_names.insert(c, CoreNames::new(src, &linked.functions[f.index()]));
        }
    }
    ck.dispatcher(&funcs);
    for (&c, &f) in &funcs {
        ck.core(c, f);
    }
    ck.locations();
    ck.barriers(&funcs);
    ck.shared_and_aliases(&funcs);
    ck.aliases();
    ck.outputs();
    ck.queues();
    ck.edges(&funcs);
    ck.switches(&funcs);
    ck.sets();
    ck.arguments(&funcs);
    ck.out
}

/// [`check_link`] on `linked.module`, plus [`check_tensor_map`] on its tensor map.
pub fn check_linked(inputs: &[Module], linked: &crate::link::Linked) -> Vec<LinkViolation> {
    with_tensor_map(check_link(inputs, &linked.module), &linked.module, &linked.tensor_map)
}

/// [`check_linked`] on the linked `module` (proven valid IR) and its `tensor_map`.
pub fn check_linked_verified(
    inputs: &[Module],
    module: Verified<'_>,
    tensor_map: &crate::link::TensorMap,
) -> Vec<LinkViolation> {
    with_tensor_map(check_link_verified(inputs, module), module.module(), tensor_map)
}

/// `v` plus [`check_tensor_map`]'s findings, unless `v` holds a dangling index.
fn with_tensor_map(mut v: Vec<LinkViolation>, m: &Module, map: &crate::link::TensorMap) -> Vec<LinkViolation> {
    if !v.iter().any(|x| x.kind == ViolationKind::Index) {
        v.extend(check_tensor_map(m, map));
    }
    v
}

impl<'a> Ck<'a> {
    fn bad(&mut self, kind: ViolationKind, msg: String) {
        self.out.push(LinkViolation { kind, msg });
    }

    /// The locations with a must-alias to linked location `t`, ascending.
    fn must_aliases_to(&self, t: MemLocId) -> impl Iterator<Item = MemLocId> + '_ {
        let from = self.must_alias_in.partition_point(|e| e.0 < t);
        self.must_alias_in[from..].iter().take_while(move |e| e.0 == t).map(|e| e.1)
    }

    /// Whether core `c`'s linked function writes linked location `l`.
    fn writes(&self, c: u32, l: MemLocId) -> bool {
        self.written.get(&c).and_then(|b| b.get(l.index() / 64)).is_some_and(|w| w >> (l.index() % 64) & 1 == 1)
    }

    /// Linked location name -> id (the last of a repeated name).
    fn linked_names(&self) -> &NameMap<'a, MemLocId> {
        let linked = self.linked;
        self.linked_names.get_or_init(|| {
            let mut names = NameMap::with_capacity_and_hasher(linked.memlocs.len(), Default::default());
            names.extend(linked.memlocs.iter().enumerate().map(|(i, l)| (l.name.as_str(), MemLocId::from_index(i))));
            names
        })
    }

    fn input_fn(&self, c: u32) -> Option<&'a Function> {
        self.inputs.get(&c).copied().and_then(|m| m.functions.first())
    }

    /// Every index of the linked module is in range; false stops the check.
    fn indices(&mut self) -> bool {
        let m = self.linked;
        let (nl, nf, nq) = (m.memlocs.len(), m.functions.len(), m.queues.len());
        let mut errs = Vec::new();
        // The context is formatted only for a dangling index (no allocation per item on a valid module).
        let mut loc = |what: &dyn Fn() -> String, id: MemLocId| {
            if id.index() >= nl {
                errs.push(format!("{}: location {}", what(), id.0));
            }
        };
        for l in &m.memlocs {
            l.aliases.iter().for_each(|a| loc(&|| format!("alias of `{}`", l.name), a.target));
        }
        m.sets.iter().for_each(|s| s.locs.iter().for_each(|&id| loc(&|| format!("set `{}`", s.name), id)));
        for f in &m.functions {
            f.args.iter().for_each(|&id| loc(&|| format!("args of `{}`", f.name), id));
            for i in &f.insts {
                let ctx = || format!("`{}`/`{}`", f.name, i.name);
                i.for_each_access(|a| loc(&ctx, a.loc));
            }
        }
        for f in &m.functions {
            let mut listed = vec![0u32; f.insts.len()];
            for b in &f.blocks {
                for id in &b.insts {
                    match listed.get_mut(id.index()) {
                        Some(n) => *n += 1,
                        None => errs.push(format!("block `{}` of `{}`: instruction {}", b.name, f.name, id.0)),
                    }
                }
            }
            if listed.iter().any(|&n| n != 1) {
                errs.push(format!("function `{}`: an instruction is not listed exactly once", f.name));
            }
            for i in &f.insts {
                let ctx = || format!("`{}`/`{}`", f.name, i.name);
                if i.deps.iter().any(|d| d.inst.index() >= f.insts.len()) {
                    errs.push(format!("{}: dependency", ctx()));
                }
                let q = match i.op {
                    Op::SwitchQueueInstance { queue, .. } => Some(queue),
                    _ => None,
                };
                if i.queue.into_iter().chain(q).any(|q| q.index() >= nq) {
                    errs.push(format!("{}: queue", ctx()));
                }
                if matches!(i.op, Op::Call { callee } if callee.index() >= nf) {
                    errs.push(format!("{}: callee", ctx()));
                }
            }
        }
        let ok = errs.is_empty();
        for e in errs {
            self.bad(ViolationKind::Index, format!("dangling index: {e}"));
        }
        ok
    }

    fn header(&mut self, inputs: &[Module]) {
        let want = inputs.first().map(|m| format!("{}/sgLnk", m.name)).unwrap_or_default();
        let m = self.linked;
        if m.name != want || m.attrs.lnc_size as usize != inputs.len() || m.attrs.neuron_core_id.is_some() {
            let got = format!("{} lnc {} core {:?}", m.name, m.attrs.lnc_size, m.attrs.neuron_core_id);
            self.bad(
                ViolationKind::Header,
                format!("header `{got}`, expected `{want}` lnc {} and no core", inputs.len()),
            );
        }
    }

    /// The linked function of every input core (exactly one each).
    fn core_functions(&mut self) -> BTreeMap<u32, FuncId> {
        let mut by_core: BTreeMap<u32, Vec<FuncId>> = BTreeMap::new();
        for (i, f) in self.linked.functions.iter().enumerate() {
            if let Some(c) = f.attrs.neuron_core_id {
                by_core.entry(c).or_default().push(FuncId::from_index(i));
            }
        }
        let mut out = BTreeMap::new();
        let cores: Vec<u32> = self.inputs.keys().copied().collect();
        for c in cores {
            match by_core.get(&c).map(Vec::as_slice) {
                Some([f]) => {
                    out.insert(c, *f);
                }
                Some(fs) => self.bad(ViolationKind::Core, format!("core {c} appears as {} functions", fs.len())),
                None => self.bad(ViolationKind::Core, format!("core {c} has no function")),
            }
        }
        for c in by_core.keys().filter(|c| !self.inputs.contains_key(c)).copied().collect::<Vec<_>>() {
            self.bad(ViolationKind::Core, format!("a function claims core {c}, which no input has"));
        }
        out
    }

    fn dispatcher(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        let m = self.linked;
        let Some(d) = m.functions.first().filter(|f| f.attrs.neuron_core_id.is_none()) else {
            return self.bad(ViolationKind::Dispatcher, "function 0 is not a dispatcher (it has a core)".into());
        };
        let calls: Vec<&Inst> = d.order().map(|id| &d.insts[id.index()]).collect();
        let want: Vec<(String, Option<&FuncId>)> =
            self.inputs.keys().map(|&c| (format!("call_def_{c}_instance_0"), funcs.get(&c))).collect();
        let got: Vec<(String, Option<FuncId>)> = calls
            .iter()
            .map(|i| match i.op {
                Op::Call { callee } => (i.name.to_string(), Some(callee)),
                _ => (i.name.to_string(), None),
            })
            .collect();
        let same = got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| g.0 == w.0 && g.1.as_ref() == w.1);
        if !same {
            let names: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
            self.bad(
                ViolationKind::Dispatcher,
                format!("dispatcher calls {names:?}, not one call per core in core order"),
            );
        }
        for f in &m.functions[1..] {
            if f.insts.iter().any(|i| matches!(i.op, Op::Call { .. })) {
                self.bad(ViolationKind::Dispatcher, format!("function `{}` calls; only the dispatcher may", f.name));
            }
        }
    }

    fn core(&mut self, c: u32, fid: FuncId) {
        let (Some(src), Some(m)) = (self.input_fn(c), self.inputs.get(&c).copied()) else { return };
        let linked = self.linked;
        let lf = &linked.functions[fid.index()];
        let Some(names) = self.core_names.remove(&c) else { return };
        let mut errs = Vec::new();
        let mut queue_ops = Vec::new();
        for (k, i) in src.insts.iter().enumerate() {
            match (&i.op, i.queue) {
                (Op::SwitchQueueInstance { queue, .. }, _) => queue_ops.push((k as u32, *queue, true)),
                (Op::DmaCopy { .. }, Some(q)) => queue_ops.push((k as u32, q, false)),
                _ => {}
            }
            let Some(n) = names.linked_of_input(k) else {
                errs.push(format!("instruction `{}` is missing", i.name));
                continue;
            };
            if let Some(e) = self.same_op(c, m, i, &lf.insts[n]) {
                errs.push(format!("instruction `{}`: {e}", i.name));
            }
        }
        let extra: Vec<&Inst> = names.inserted().map(|k| &lf.insts[k]).collect();
        self.core_names.insert(c, names);
        self.queue_ops.insert(c, queue_ops);
        let count = |p: &str, f: fn(&Op) -> bool| extra.iter().filter(|i| i.name.starts_with(p) && f(&i.op)).count();
        let rets = count("return_", |o| matches!(o, Op::Return));
        let cbs = count("cb_return_", |o| matches!(o, Op::CoreBarrier(_)));
        let sqis = count("I-SQI-", |o| matches!(o, Op::SwitchQueueInstance { .. }));
        if rets != 1 || cbs != 1 || rets + cbs + sqis != extra.len() || lf.insts.len() != src.insts.len() + extra.len()
        {
            errs.push(format!(
                "{} instructions = {} copied + {} inserted ({rets} returns, {cbs} completion barriers, {sqis} switches)",
                lf.insts.len(),
                src.insts.len(),
                extra.len()
            ));
        }
        let order: Vec<&Inst> = lf.order().map(|id| &lf.insts[id.index()]).collect();
        let tail_ok =
            matches!(order.as_slice(), [.., b, r] if matches!(r.op, Op::Return) && b.name.starts_with("cb_return_"));
        if !tail_ok {
            errs.push("does not end with its completion barrier then its return".into());
        }
        for e in errs {
            self.bad(ViolationKind::Core, format!("core {c} (`{}`): {e}", lf.name));
        }
    }

    /// Compares an input instruction with its linked copy; records the location correspondence.
    fn same_op(&mut self, c: u32, m: &'a Module, i: &Inst, n: &Inst) -> Option<String> {
        fn qname(mm: &Module, q: Option<QueueId>) -> Option<&str> {
            q.and_then(|q| mm.queues.get(q.index())).map(|q| q.name.as_str())
        }
        if i.engine != n.engine || i.collective != n.collective || qname(m, i.queue) != qname(self.linked, n.queue) {
            return Some("engine, collective flag or queue differ".into());
        }
        // The paired access patterns: (input reads, linked reads) then the writes (no allocation).
        let (mut reads, mut linked_reads): (&[AccessPattern], &[AccessPattern]) = (&[], &[]);
        let mut pair_writes: [Option<(AccessPattern, AccessPattern)>; 1] = [None];
        let ok = match (&i.op, &n.op) {
            (Op::DmaCopy { src: a, dst: b }, Op::DmaCopy { src: x, dst: y }) => {
                (reads, linked_reads) = (std::slice::from_ref(a), std::slice::from_ref(x));
                pair_writes[0] = Some((*b, *y));
                true
            }
            (Op::Compute { kind: k1, srcs: s1, dst: d1 }, Op::Compute { kind: k2, srcs: s2, dst: d2 }) => {
                (reads, linked_reads) = (s1, s2);
                pair_writes[0] = Some((*d1, *d2));
                k1 == k2 && s1.len() == s2.len()
            }
            (Op::CoreBarrier(a), Op::CoreBarrier(b)) => a.group == b.group && a.participants == b.participants,
            (
                Op::SwitchQueueInstance { queue: q1, instance: a },
                Op::SwitchQueueInstance { queue: q2, instance: b },
            ) => a == b && qname(m, Some(*q1)) == qname(self.linked, Some(*q2)),
            // Semaphores are per core and copied as they are (operands and all).
            (a @ (Op::SemWait { .. } | Op::SemSignal { .. }), b) => a == b,
            // A call's callee is a function id, which linking renumbers; a return has no operand.
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        };
        if !ok {
            return Some("operation differs".into());
        }
        let pairs = reads.iter().copied().zip(linked_reads.iter().copied()).chain(pair_writes.into_iter().flatten());
        for (a, b) in pairs {
            if (a.offset, a.len) != (b.offset, b.len) {
                return Some("access range differs".into());
            }
            match self.loc_map.insert(c, a.loc, b.loc) {
                Some(prev) if prev != b.loc => {
                    let name = m.memlocs.get(a.loc.index()).map_or("?", |l| l.name.as_str());
                    self.bad(ViolationKind::Shared, format!("core {c}'s `{name}` is split in two linked locations"));
                }
                _ => {}
            }
        }
        None
    }
}

mod classes;
mod deps;
mod sets;
mod switches;
mod tensors;
mod tids;

use classes::CoreNames;

pub use sets::check_tensor_map;
