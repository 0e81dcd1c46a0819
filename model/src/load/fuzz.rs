//! The loader fuzz target's model side (`fuzz/fuzz_targets/nrt_load.rs`,
//! replayed on stable by `tests/corpus.rs`): structure-aware edits to a
//! valid NEFF, re-packed with a correct hash so the load reaches S2-S5, a
//! load on a device with a seeded fault plan, and the properties every load
//! must keep:
//!
//! - READY: the [`super::checker`] passes on every core, and unload leaves
//!   the device, the registry, the device db and the vnc claims empty;
//! - an error: one line, a status the file or the device explains (never
//!   `NRT_FAILURE`, which only a loader bug gives; `NRT_HW_ERROR` only from
//!   an injected copy fault), and nothing allocated, registered or claimed.
//!
//! The input bytes choose (via [`arbitrary::Unstructured`]) the base NEFF,
//! 1..=4 edits ([`Edit`]), the device shape, a fault seed and the staging
//! driver. The device comes from the caller ([`FuzzDevice`]), since the
//! simulated device lives in `lncsim-sim`.

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Value, json};

use super::checker_registered::check_registered;
use super::device::Device;
use super::runtime::Runtime;
use super::tnc::CacheState;
use crate::neff::{Compression, MemberTable, Neff, NeffError, NeffHeader, NeffWriter, NrtStatus, ReadOptions};

/// A device the fuzz driver can load onto and ask about injected faults.
pub trait FuzzDevice: Device + Sized {
    /// A fresh device of `tpbs` physical cores in vncs of `lnc`; with
    /// `fault_seed`, a seeded fault plan over its first operations.
    fn fresh(tpbs: u32, lnc: u32, fault_seed: Option<u64>) -> Self;
    /// How many injected faults fired so far.
    fn injected(&self) -> usize;
}

/// Re-packs `bytes` with `edit` applied to its members and header, keeping
/// every other header field (versions, uuid, features, lnc), with a correct
/// `data_size` and hash: what a buggy compiler would emit.
pub fn repack(bytes: &[u8], edit: impl FnOnce(&mut MemberTable, &mut NeffHeader)) -> Result<Vec<u8>, NeffError> {
    repack_with(bytes, Compression::Gzip, edit)
}

/// [`repack`] with the payload written as `compression` (the fuzz driver
/// writes a plain tar, which the loader reads the same way, to spend its time
/// loading rather than deflating).
pub fn repack_with(
    bytes: &[u8],
    compression: Compression,
    edit: impl FnOnce(&mut MemberTable, &mut NeffHeader),
) -> Result<Vec<u8>, NeffError> {
    let n = Neff::parse(bytes, &ReadOptions::default())?;
    let mut members = n.members.clone();
    let mut header = n.header.clone();
    edit(&mut members, &mut header);
    let mut w = NeffWriter::new(&header.name_str(), header.lnc_size);
    w.header = header;
    w.compression = compression;
    w.write(&members)
}

/// Numbers a compiler bug would write: boundaries, powers of two, wrap-arounds.
const INTERESTING: [u64; 16] = [
    0,
    1,
    3,
    63,
    64,
    4096,
    65535,
    1 << 20,
    4_000_000_000,
    u32::MAX as u64,
    1 << 32,
    1 << 40,
    1 << 48,
    1 << 63,
    u64::MAX - 0x23a8c0 + 1,
    u64::MAX,
];

fn number(u: &mut Unstructured<'_>) -> arbitrary::Result<u64> {
    Ok(if u.ratio(3, 4)? { *u.choose(&INTERESTING)? } else { u64::arbitrary(u)? })
}

/// The def.json var fields an edit can set.
const VAR_FIELDS: [&str; 9] = [
    "var_id",
    "size",
    "alignment",
    "backing_variable_off",
    "backing_variable",
    "type",
    "file_name",
    "vnc_shared",
    "ops",
];
const VAR_TYPES: [&str; 9] =
    ["input", "output", "file", "tmp-buf", "virtual", "state-buffer", "dge-table", "pointer", "bogus"];
const DMA_FIELDS: [&str; 6] = ["from_off", "to_off", "size", "queue", "from", "to"];

/// One structured edit of a NEFF.
#[derive(Clone, Debug)]
pub enum Edit {
    /// Set one field of one var of one subgraph's def.json.
    VarField,
    /// Add a var of a chosen type.
    AddVar,
    /// Remove a var.
    RemoveVar,
    /// Edit one DMA descriptor field of an engine description.
    DmaField,
    /// Overwrite bytes of an engine stream (or truncate it).
    StreamBytes,
    /// Duplicate, drop or swap kelf graphs.
    KelfGraphs,
    /// A def.json top-level key (`runtime_semaphore_count`, `barrier_groups`, queue indices).
    DefKey,
    /// Drop a member.
    DropMember,
    /// A header field (lnc_size, feature bits, tpb counts).
    Header,
}

const EDITS: [Edit; 9] = [
    Edit::VarField,
    Edit::AddVar,
    Edit::RemoveVar,
    Edit::DmaField,
    Edit::StreamBytes,
    Edit::KelfGraphs,
    Edit::DefKey,
    Edit::DropMember,
    Edit::Header,
];

fn names_with(members: &MemberTable, f: impl Fn(&str) -> bool) -> Vec<String> {
    members.iter().map(|m| m.name.clone()).filter(|n| f(n)).collect()
}

fn edit_json(members: &mut MemberTable, name: &str, f: impl FnOnce(&mut Value)) {
    let Some(b) = members.get(name) else { return };
    let Ok(mut v) = serde_json::from_slice::<Value>(b) else { return };
    f(&mut v);
    if let Ok(out) = serde_json::to_vec(&v) {
        members.set(name, out);
    }
}

/// Applies one edit chosen by `u`; an edit that finds nothing to change changes nothing.
pub fn apply(u: &mut Unstructured<'_>, members: &mut MemberTable, header: &mut NeffHeader) -> arbitrary::Result<Edit> {
    let edit = u.choose(&EDITS)?.clone();
    let defs = names_with(members, |n| n.ends_with("/def.json"));
    match edit {
        Edit::VarField | Edit::AddVar | Edit::RemoveVar => {
            let Ok(def) = u.choose(&defs) else { return Ok(edit) };
            let def = def.clone();
            let field = *u.choose(&VAR_FIELDS)?;
            let ty = *u.choose(&VAR_TYPES)?;
            let n = number(u)?;
            let pick = usize::arbitrary(u)?;
            let other = usize::arbitrary(u)?;
            let kind = edit.clone();
            edit_json(members, &def, |d| {
                let Some(vars) = d.get_mut("var").and_then(Value::as_object_mut) else { return };
                let keys: Vec<String> = vars.keys().cloned().collect();
                if keys.is_empty() {
                    return;
                }
                let name = keys[pick % keys.len()].clone();
                let other = keys[other % keys.len()].clone();
                match kind {
                    Edit::AddVar => {
                        let id = n % 4096;
                        let mut v = json!({"type": ty, "var_id": id, "size": n % 65536});
                        if ty == "virtual" {
                            v["backing_variable"] = json!(other);
                            v["backing_variable_off"] = json!(n % 64);
                        }
                        vars.insert(format!("fz{id}"), v);
                    }
                    Edit::RemoveVar => {
                        vars.remove(&name);
                    }
                    _ => {
                        let Some(v) = vars.get_mut(&name).filter(|v| v.is_object()) else { return };
                        v[field] = match field {
                            "backing_variable" => json!(other),
                            "type" => json!(ty),
                            "file_name" => json!(format!("{other}.npy")),
                            "vnc_shared" => json!(n % 2 == 0),
                            "ops" => json!([]),
                            _ => json!(n),
                        };
                    }
                }
            });
        }
        Edit::DmaField => {
            let engines = names_with(members, |n| {
                n.starts_with("sg")
                    && n.ends_with(".json")
                    && !n.ends_with("def.json")
                    && !n.ends_with("tensor_map.json")
            });
            let Ok(e) = u.choose(&engines) else { return Ok(edit) };
            let e = e.clone();
            let field = *u.choose(&DMA_FIELDS)?;
            let (n, pick) = (number(u)?, usize::arbitrary(u)?);
            edit_json(members, &e, |j| {
                let Some(dma) = j.get_mut("dma").and_then(Value::as_array_mut) else { return };
                if dma.is_empty() {
                    return;
                }
                let len = dma.len();
                let d = &mut dma[pick % len];
                if !d.is_object() {
                    return;
                }
                d[field] = match field {
                    "queue" | "from" | "to" => json!(format!("q{}", n % 4)),
                    _ => json!(n),
                };
            });
        }
        Edit::StreamBytes => {
            let streams = names_with(members, |n| n.starts_with("sg") && n.ends_with(".bin"));
            let Ok(s) = u.choose(&streams) else { return Ok(edit) };
            let s = s.clone();
            let Some(mut b) = members.get(&s).map(<[u8]>::to_vec) else { return Ok(edit) };
            if u.ratio(1, 4)? {
                let keep = usize::arbitrary(u)? % (b.len() + 1);
                b.truncate(keep);
            } else if !b.is_empty() {
                for _ in 0..u.int_in_range(1..=8)? {
                    let at = usize::arbitrary(u)? % b.len();
                    b[at] = u8::arbitrary(u)?;
                }
            }
            members.set(&s, b);
        }
        Edit::KelfGraphs => {
            let kelfs = names_with(members, |n| n.starts_with("kelf") && n.ends_with(".json"));
            let Ok(k) = u.choose(&kelfs) else { return Ok(edit) };
            let k = k.clone();
            let (how, a, b) = (u8::arbitrary(u)? % 3, usize::arbitrary(u)?, usize::arbitrary(u)?);
            edit_json(members, &k, |j| {
                let Some(g) = j.get_mut("graphs").and_then(Value::as_array_mut) else { return };
                if g.is_empty() {
                    return;
                }
                let (a, b) = (a % g.len(), b % g.len());
                match how {
                    0 => {
                        let x = g[a].clone();
                        g.push(x);
                    }
                    1 => {
                        g.remove(a);
                    }
                    _ => g.swap(a, b),
                }
            });
        }
        Edit::DefKey => {
            let Ok(def) = u.choose(&defs) else { return Ok(edit) };
            let def = def.clone();
            let (which, n) = (u8::arbitrary(u)? % 3, number(u)?);
            edit_json(members, &def, |d| match which {
                _ if !d.is_object() => {}
                0 => d["runtime_semaphore_count"] = json!(n),
                1 => d["barrier_groups"] = json!({ (n % 8).to_string(): [n % 4, n % 3] }),
                _ => {
                    if let Some(q) = d.get_mut("dma_queue").and_then(Value::as_object_mut) {
                        for (i, v) in q.values_mut().enumerate() {
                            v["queue_index"] = json!(n.wrapping_add(i as u64) % 4);
                        }
                    }
                }
            });
        }
        Edit::DropMember => {
            let all = names_with(members, |_| true);
            if let Ok(m) = u.choose(&all) {
                let m = m.clone();
                let mut t = MemberTable::new();
                for x in members.iter().filter(|x| x.name != m) {
                    let _ = t.insert(x.name.clone(), x.data.clone());
                }
                *members = t;
            }
        }
        Edit::Header => match u8::arbitrary(u)? % 4 {
            0 => header.lnc_size = u32::arbitrary(u)? % 6,
            1 => header.feature_bits ^= 1 << (u8::arbitrary(u)? % 24),
            2 => header.num_tpb = u32::arbitrary(u)? % 4,
            _ => header.requested_tpb_count = u32::arbitrary(u)? % 4,
        },
    }
    Ok(edit)
}

/// Runs one case on `base` (a valid NEFF): edits, load, properties. Panics
/// with one line on a violated property (the fuzz finding).
pub fn nrt_load_case<D: FuzzDevice + Send + Sync>(base: &[u8], data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(edits) = u.int_in_range(0..=4u8) else { return };
    let mut script = Vec::new();
    let bytes = repack_with(base, Compression::None, |members, header| {
        for _ in 0..edits {
            match apply(&mut u, members, header) {
                Ok(e) => script.push(e),
                Err(_) => break,
            }
        }
    });
    // An edit the writer refuses (a header it cannot write) is not a load case.
    let Ok(bytes) = bytes else { return };
    let tpbs = u.int_in_range(1..=8u32).unwrap_or(2);
    let lnc = NeffHeader::parse(&bytes).map(|h| h.lnc_size.clamp(1, 8)).unwrap_or(1);
    let fault_seed = u.arbitrary::<Option<u64>>().unwrap_or(None);
    let threads = u.arbitrary::<bool>().unwrap_or(true);
    let order = u.arbitrary::<u64>().unwrap_or(0);
    let rt = Runtime::new(D::fresh(tpbs, lnc, fault_seed));
    let result = if threads {
        rt.nrt_load(&bytes, -1, -1)
    } else {
        let mut k = order;
        rt.nrt_load_stepped(&bytes, -1, -1, &mut |steps: &[super::StageStep]| {
            k = k.rotate_left(7) ^ 0x9e37_79b9_7f4a_7c15;
            (k % steps.len().max(1) as u64) as usize
        })
        .0
    };
    let at = || format!("edits {script:?}, {tpbs} tpbs, lnc {lnc}, faults {fault_seed:?}, threads {threads}");
    match result {
        Ok(m) => {
            let neff =
                Neff::parse(&bytes, &ReadOptions::default()).unwrap_or_else(|e| panic!("READY but unreadable: {e}"));
            let models = rt.models(m.h_nn).unwrap_or_else(|e| panic!("READY without models: {e}; {}", at()));
            let dlr = rt.dlr_model(m.h_nn).unwrap_or_else(|| panic!("READY but not registered; {}", at()));
            let bad = check_registered(rt.device(), &neff, &dlr, &models);
            assert!(bad.is_empty(), "READY load fails the checker ({}): {}", at(), bad.join("; "));
            rt.nrt_unload(&m).unwrap_or_else(|e| panic!("unload failed: {e}; {}", at()));
        }
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n'), "multi-line error {line:?}; {}", at());
            assert!(e.status != NrtStatus::Failure, "NRT_FAILURE is a loader bug: {line}; {}", at());
            if e.status == NrtStatus::HwError {
                assert!(rt.device().injected() > 0, "NRT_HW_ERROR without an injected fault: {line}; {}", at());
            }
        }
    }
    assert_eq!(rt.device().live_allocations(), 0, "allocations left behind; {}", at());
    assert!(rt.registered().is_empty(), "models left registered; {}", at());
    assert!(rt.device_models().is_empty(), "models left in the device db; {}", at());
    assert!(rt.vnc_usage().iter().all(|&c| c == 0), "vnc claims left; {}", at());
    let s = rt.tnc().snapshot();
    assert_eq!(s.cache_state, CacheState::Uninit, "TNC slot left busy; {}", at());
}
