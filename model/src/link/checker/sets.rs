//! The link checker's set, argument and tensor-map checks (issue 12 §3):
//! each agrees with the linked locations.
//!
//! - Sets: the linked module has one set per set name of the inputs; the
//!   sets `inputs`, `weights` and `outputs` hold only locations of that
//!   usage that are not views (a demoted intermediate left in `outputs` is
//!   reported), and hold every still-external location an input core listed
//!   in its set of that name (resolved by access, else by name), and nothing
//!   no input listed.
//! - Arguments: a core function's arguments are exactly the still-external
//!   linked locations of its input function's non-view arguments; the
//!   dispatcher's are exactly the union of the core functions' (no duplicate,
//!   every one external).
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

/// The usage a set of this name holds, for the three sets with a meaning.
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

    /// The set checks in the module doc.
    pub(super) fn sets(&mut self) {
        let linked = self.linked;
        let mut errs = Vec::new();
        let mut want_names: BTreeSet<&str> = BTreeSet::new();
        // Set name -> linked locations some input listed there (non-views only).
        let mut listed: BTreeMap<&str, BTreeSet<MemLocId>> = BTreeMap::new();
        for (&c, m) in &self.inputs {
            for s in &m.sets {
                want_names.insert(s.name.as_str());
                let e = listed.entry(s.name.as_str()).or_default();
                for &id in &s.locs {
                    if m.memlocs.get(id.index()).is_some_and(|l| l.remote_local_target.is_none())
                        && let Some(l) = self.resolve(c, id)
                    {
                        e.insert(l);
                    }
                }
            }
        }
        let mut got_names: BTreeSet<&str> = BTreeSet::new();
        for s in &linked.sets {
            if !got_names.insert(s.name.as_str()) {
                errs.push(format!("set `{}` appears twice", s.name));
            }
            let Some(usage) = set_usage(&s.name) else { continue };
            let members: BTreeSet<MemLocId> = s.locs.iter().copied().collect();
            if members.len() != s.locs.len() {
                errs.push(format!("set `{}` lists a location twice", s.name));
            }
            for &id in &members {
                let l = &linked.memlocs[id.index()];
                if l.usage != usage || l.remote_local_target.is_some() {
                    errs.push(format!(
                        "set `{}` holds `{}`, a {:?} location{}",
                        s.name,
                        l.name,
                        l.usage,
                        if l.remote_local_target.is_some() { " (a view)" } else { "" }
                    ));
                }
            }
            let want = listed.get(s.name.as_str());
            for &id in want.into_iter().flatten() {
                let l = &linked.memlocs[id.index()];
                if l.usage == usage && external(l) && !members.contains(&id) {
                    errs.push(format!("set `{}` lost `{}`", s.name, l.name));
                }
            }
            for &id in &members {
                if !want.is_some_and(|w| w.contains(&id)) {
                    let name = &linked.memlocs[id.index()].name;
                    errs.push(format!("set `{}` holds `{name}`, which no input listed there", s.name));
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
                .filter_map(|&a| self.resolve(c, a))
                .filter(|l| external(&linked.memlocs[l.index()]))
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
            for id in &got {
                if !external(&linked.memlocs[id.index()]) {
                    errs.push(format!("dispatcher argument `{}` is not an external tensor", name(id)));
                }
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
