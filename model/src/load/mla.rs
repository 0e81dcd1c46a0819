//! What `kelf_load_from_neff` collects for one subgraph (`mla_resources`) and
//! the var types that both the KBIN builder (`kbin.rs`) and the `mem_ref_set`
//! readers (`mem_ref.rs`) use: kept apart so neither of those imports the other.

use std::collections::BTreeMap;

use super::error::{LoadError, Stage};
use crate::codegen::VarKind;
use crate::ir::Engine;
use crate::neff::Subgraph;
use crate::neff::manifest::VarType;

/// The `backing` of a `virtual` var with no `backing_variable`: the core's implicit scratchpad.
pub const IMPLICIT_SCRATCHPAD: u32 = u32::MAX;
/// Where a var lives once staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The load's buffer for this input/output name.
    Io,
    /// At this offset in the core's carve-out.
    Carveout(u64),
    /// At this offset in the load's shared region.
    Shared(u64),
    /// Not in HBM (state buffer, tables, pointers, unknown types, var_id gaps).
    NotInHbm,
}

/// One var of the KBIN's table (`mem_ref_set`); `'m` is the NEFF's member
/// table, which a `file` var's payload borrows (never copied per reference).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KbinVar<'m> {
    /// The def.json name.
    pub name: String,
    /// The def.json type.
    pub var_type: VarType,
    /// Its kind for the image (see [`super::image::VarImage::var_type`]).
    pub kind: VarKind,
    /// Bytes.
    pub size: u64,
    /// Required alignment (>= 1).
    pub align: u64,
    /// Placement.
    pub place: Place,
    /// `file` vars: the bytes to copy in (the `.npy` payload), borrowed from the member.
    pub data: Option<&'m [u8]>,
    /// Its position in its subgraph's vars in name order (def.json's map
    /// order): orders a subgraph's vars by name with a u32 compare.
    pub name_rank: u32,
}

/// `mla_resources` (440 B): what `kelf_load_from_neff` collects for one
/// subgraph. Every byte slice borrows the NEFF's member table (`'m`): a
/// member named by many vars, engines or graphs is held once, by the table.
#[derive(Clone, Debug)]
pub struct MlaResources<'s, 'm> {
    /// Subgraph index.
    pub sg: u32,
    /// The subgraph.
    pub subgraph: &'s Subgraph,
    /// Engine streams by engine (bytes), from the members.
    pub streams: BTreeMap<Engine, &'m [u8]>,
    /// `file` var payloads by var name.
    pub files: BTreeMap<String, &'m [u8]>,
    /// Tables: (member, bytes), each member once per subgraph.
    pub tables: Vec<(String, &'m [u8])>,
}

/// An S2 (graph) refusal naming the subgraph's def.json member.
pub(super) fn bad(sg: &Subgraph, msg: impl std::fmt::Display) -> LoadError {
    LoadError::invalid(Stage::S2Graph, format!("{}: {msg}", sg.def_member))
}
