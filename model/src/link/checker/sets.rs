//! The link checker's set, argument and tensor-map checks (issue 12 §3):
//! each agrees with the linked locations.
//!
//! A location *left IO* when the input location was an input, weight or
//! output (a view or not) and the location standing for it in the linked
//! module no longer has that usage: an output demoted by `fixOutputKind`, a
//! view declared as IO turned spill by `io2Spill` (both judged by the
//! location checks). The linker drops such locations from every set and
//! argument list (`link/outputs.rs`), so these checks expect them gone.
//!
//! - Sets: the linked module has one set per set name of the inputs, each
//!   holding, with no repeat, exactly the locations standing for what some
//!   input core listed in its set of that name (a view: the location it
//!   survives as), minus the ones that left IO. A set name carries no usage
//!   rule: neither the IR verifier nor the linker gives `inputs`, `weights`
//!   or `outputs` a meaning, so a program may list an internal tensor in
//!   `outputs` (choice, issue F4). A member no input listed is reported with
//!   its usage when it does not fit the name of one of those three sets.
//! - Arguments: a core function's arguments are, with no repeat, exactly the
//!   locations standing for its input function's non-view arguments, minus
//!   the ones that left IO (an internal argument stays: seed 000 §5b binds a
//!   function's arguments through its sets and drops only dangling IO,
//!   `io2Spill`; issue F3); the dispatcher's are exactly the union of the
//!   core functions' (no repeat).
//! - Tensor map ([`check_tensor_map`]): one entry per external location of
//!   the linked module, keyed by its name, whose fields are the location's
//!   (the numpy dtype name, the element count, the weight file, SBUF, kind),
//!   derived here independently of the linker's `tensor_map.rs`.
//!
//! Cost: O((L + A) log L) for L locations and A set members and arguments.

use std::collections::{BTreeMap, BTreeSet};

use super::{Ck, LinkViolation, ViolationKind};
use crate::ir::*;
use crate::link::TensorMap;

/// The usage a set of this name suggests, for the three sets with a conventional meaning.
fn set_usage(name: &str) -> Option<Usage> {
    match name {
        "inputs" => Some(Usage::Input),
        "weights" => Some(Usage::Weight),
        "outputs" => Some(Usage::Output),
        _ => None,
    }
}

/// An input, weight or output that is not a view.
fn external(l: &MemoryLocation) -> bool {
    l.remote_local_target.is_none() && matches!(l.usage, Usage::Input | Usage::Weight | Usage::Output)
}

impl<'a> Ck<'a> {
    /// The linked location standing for core `c`'s location `id`: from its accesses, else by name.
    pub(super) fn resolve(&self, c: u32, id: MemLocId) -> Option<MemLocId> {
        if let Some(l) = self.loc_map.get(c, id) {
            return Some(l);
        }
        let l = self.inputs.get(&c)?.memlocs.get(id.index())?;
        self.linked_names().get(l.name.as_str()).copied()
    }

    /// The linked location standing for exactly core `c`'s location `id`
    /// ([`Ck::own`]), unless it left IO (module doc).
    fn kept_io(&self, c: u32, id: MemLocId) -> Option<MemLocId> {
        let input = self.inputs.get(&c)?.memlocs.get(id.index())?;
        let l = self.own(c, id)?;
        let io = matches!(input.usage, Usage::Input | Usage::Weight | Usage::Output);
        let left = io && self.linked.memlocs.get(l.index()).is_some_and(|x| x.usage != input.usage);
        (!left).then_some(l)
    }

    /// The set checks in the module doc.
    pub(super) fn sets(&mut self) {
        let linked = self.linked;
        let mut errs = Vec::new();
        let mut want_names: BTreeSet<&str> = BTreeSet::new();
        // Set name -> the linked locations standing for what some input listed there.
        let mut listed: BTreeMap<&str, BTreeSet<MemLocId>> = BTreeMap::new();
        for (&c, m) in &self.inputs {
            for s in &m.sets {
                want_names.insert(s.name.as_str());
                let e = listed.entry(s.name.as_str()).or_default();
                e.extend(s.locs.iter().filter_map(|&id| self.kept_io(c, id)));
            }
        }
        let mut got_names: BTreeSet<&str> = BTreeSet::new();
        for s in &linked.sets {
            if !got_names.insert(s.name.as_str()) {
                errs.push(format!("set `{}` appears twice", s.name));
            }
            let members: BTreeSet<MemLocId> = s.locs.iter().copied().collect();
            if members.len() != s.locs.len() {
                errs.push(format!("set `{}` lists a location twice", s.name));
            }
            let want = listed.get(s.name.as_str());
            for &id in want.into_iter().flatten() {
                if !members.contains(&id) {
                    errs.push(format!("set `{}` lost `{}`", s.name, linked.memlocs[id.index()].name));
                }
            }
            for &id in &members {
                if !want.is_some_and(|w| w.contains(&id)) {
                    let l = &linked.memlocs[id.index()];
                    let unfit = set_usage(&s.name).is_some_and(|u| l.usage != u || l.remote_local_target.is_some());
                    let what = match (unfit, l.remote_local_target.is_some()) {
                        (false, _) => String::new(),
                        (true, false) => format!(", a {:?} location", l.usage),
                        (true, true) => format!(", a {:?} location (a view)", l.usage),
                    };
                    errs.push(format!("set `{}` holds `{}`{what}, which no input listed there", s.name, l.name));
                }
            }
        }
        if want_names != got_names {
            errs.push(format!("sets {got_names:?}, the inputs have {want_names:?}"));
        }
        for e in errs {
            self.bad(ViolationKind::Set, e);
        }
    }

    /// The argument checks in the module doc.
    pub(super) fn arguments(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        let linked = self.linked;
        let mut errs = Vec::new();
        let name = |id: &MemLocId| linked.memlocs[id.index()].name.as_str();
        let mut union: BTreeSet<MemLocId> = BTreeSet::new();
        for (&c, &fid) in funcs {
            let Some(src) = self.input_fn(c) else { continue };
            let m = self.inputs[&c];
            let want: BTreeSet<MemLocId> = src
                .args
                .iter()
                .filter(|a| m.memlocs.get(a.index()).is_some_and(|l| l.remote_local_target.is_none()))
                .filter_map(|&a| self.kept_io(c, a))
                .collect();
            let lf = &linked.functions[fid.index()];
            let got: BTreeSet<MemLocId> = lf.args.iter().copied().collect();
            if got.len() != lf.args.len() {
                errs.push(format!("`{}` lists an argument twice", lf.name));
            }
            if want != got {
                let missing: Vec<&str> = want.difference(&got).map(name).collect();
                let extra: Vec<&str> = got.difference(&want).map(name).collect();
                errs.push(format!("`{}` arguments: missing {missing:?}, unexpected {extra:?}", lf.name));
            }
            union.extend(got);
        }
        if let Some(d) = linked.functions.first().filter(|f| f.attrs.neuron_core_id.is_none()) {
            let got: BTreeSet<MemLocId> = d.args.iter().copied().collect();
            if got.len() != d.args.len() {
                errs.push("the dispatcher lists an argument twice".into());
            }
            if got != union {
                let missing: Vec<&str> = union.difference(&got).map(name).collect();
                let extra: Vec<&str> = got.difference(&union).map(name).collect();
                errs.push(format!(
                    "dispatcher arguments are not the core functions': missing {missing:?}, unexpected {extra:?}"
                ));
            }
        }
        for e in errs {
            self.bad(ViolationKind::Argument, e);
        }
    }
}

/// The numpy dtype name of an element type.
fn numpy(d: DType) -> &'static str {
    match d {
        DType::U8 => "uint8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
    }
}

/// Checks the unified tensor map `tm` against the external locations of `linked` (module doc).
pub fn check_tensor_map(linked: &Module, tm: &TensorMap) -> Vec<LinkViolation> {
    let mut out = Vec::new();
    let mut bad = |msg: String| out.push(LinkViolation { kind: ViolationKind::TensorMap, msg });
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for l in linked.memlocs.iter().filter(|l| external(l)) {
        if !seen.insert(l.name.as_str()) {
            bad(format!("two external locations are named `{}`", l.name));
            continue;
        }
        let Some(e) = tm.entries.get(l.name.as_str()) else {
            bad(format!("external `{}` has no entry", l.name));
            continue;
        };
        let kind = match l.usage {
            Usage::Input => "input",
            Usage::Weight => "weight",
            _ => "output",
        };
        let tf = if l.usage == Usage::Weight && l.init.is_some() { format!("{}.npy", l.name) } else { String::new() };
        let fields_ok = e.layer_name == l.name
            && e.sim_format == numpy(l.dtype)
            && e.sim_shape == [l.elem_count]
            && e.tf_file == tf
            && e.sbuf_compatible == (l.mem_type == MemType::Sbuf)
            && e.kind == kind;
        if !fields_ok {
            bad(format!("entry `{}` disagrees with its location: {e:?}", l.name));
        }
    }
    for name in tm.entries.keys().filter(|n| !seen.contains(n.as_str())) {
        bad(format!("entry `{name}` names no external location"));
    }
    out
}
