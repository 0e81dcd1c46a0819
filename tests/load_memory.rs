//! Memory a hostile NEFF can make the loader hold (review of the load
//! pipeline, finding 1): a small NEFF whose vars, engines or graphs name one
//! large member many times, or whose var ids are sparse, must be refused or
//! loaded with host memory bounded by what the file holds, never amplified
//! per reference. Each test measures the heap the load itself allocates at
//! its peak (a counting global allocator; the tests run one at a time under a
//! lock, so the peak is theirs) or asserts the typed refusal.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use lncsim_model::load::fuzz::repack;
use lncsim_model::load::kbin::MAX_LOAD_BYTES;
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, Runtime};
use lncsim_model::neff::{Neff, NrtStatus, ReadOptions};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::SimDevice;
use serde_json::{Value, json};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counters are plain atomics.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::SeqCst) + l.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` / `realloc` with this layout.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::SeqCst);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::SeqCst);
            let now = LIVE.fetch_add(new, Ordering::SeqCst) + new;
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One measurement at a time: the peak is the measured test's.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `f`'s result and the most heap it held above what was live before it ran.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let out = f();
    let peak = PEAK.load(Ordering::SeqCst).saturating_sub(before);
    eprintln!("peak heap: {} KiB", peak >> 10);
    (out, peak)
}

const MIB: usize = 1 << 20;

fn packed(cores: u32) -> Vec<u8> {
    pack_generated(&GenConfig::new(41, cores, SizeClass::Small)).unwrap()
}

/// An edit of one JSON member: the member and what to do to it.
type Edit<'a> = (&'a str, &'a dyn Fn(&mut Value));

/// `bytes` with each JSON member of `edits` edited and `extra` members added.
fn edited(bytes: &[u8], edits: &[Edit<'_>], extra: &[(&str, Vec<u8>)]) -> Vec<u8> {
    repack(bytes, |m, _| {
        for (member, f) in edits {
            let mut v: Value = serde_json::from_slice(m.get(member).unwrap()).unwrap();
            f(&mut v);
            assert!(m.set(member, serde_json::to_vec(&v).unwrap()));
        }
        for (name, data) in extra {
            m.insert((*name).to_owned(), data.clone()).unwrap();
        }
    })
    .unwrap()
}

/// `n` `file` vars of sg00 all naming the member `sg00/big.bin` of `size` zero bytes.
fn file_amp(n: usize, size: usize) -> Vec<u8> {
    let add = |d: &mut Value| {
        let next = d["var"].as_object().unwrap().values().map(|v| v["var_id"].as_u64().unwrap()).max().unwrap() + 1;
        for i in 0..n {
            d["var"][format!("w_amp{i}")] = json!({"type": "file", "file_name": "big.bin", "var_id": next + i as u64});
        }
    };
    edited(&packed(1), &[("sg00/def.json", &add)], &[("sg00/big.bin", vec![0; size])])
}

/// Finding 1(a), t2_file_amp.py 60: 60 `file` vars naming one 8 MiB member
/// (480 MiB counted per reference, under the limit) load READY holding the
/// member once: the load's peak heap is a small multiple of the member, not
/// 60 copies (it was 60 x 8 MiB before payloads were borrowed).
#[test]
fn a_member_named_by_many_file_vars_is_held_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = file_amp(60, 8 * MIB);
    let rt = Runtime::new(SimDevice::new(1, 1));
    let (m, peak) = peak_of(|| rt.nrt_load(&bytes, -1, -1));
    let m = m.unwrap();
    assert!(peak < 4 * 8 * MIB, "the load held {} MiB at its peak for one 8 MiB member", peak / MIB);
    let neff = Neff::parse(&bytes, &ReadOptions::default()).unwrap();
    let bad = lncsim_model::load::checker::check_models(rt.device(), &neff, &rt.models(m.h_nn).unwrap());
    assert_eq!(bad, Vec::<String>::new());
    rt.nrt_unload(&m).unwrap();
    assert_eq!(rt.device().live_allocations(), 0);
}

/// Finding 1(a), t2_file_amp.py 400: past [`MAX_LOAD_BYTES`] counted per
/// reference, the load is one `NRT_INVALID` line naming the limit, refused
/// before any subgraph is built: it holds little more than the parse.
#[test]
fn references_past_the_load_limit_are_refused_before_building() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let size = 8 * MIB;
    let n = (MAX_LOAD_BYTES as usize).div_ceil(size) + 1;
    let bytes = file_amp(n, size);
    let rt = Runtime::new(SimDevice::new(1, 1));
    let (r, peak) = peak_of(|| rt.nrt_load(&bytes, -1, -1));
    let e = r.unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    let line = e.to_string();
    assert!(!line.contains('\n') && line.contains("sg00/def.json") && line.contains("MAX_LOAD_BYTES"), "{line}");
    assert!(peak < 4 * size, "the refused load held {} MiB at its peak", peak / MIB);
    assert_eq!(rt.device().live_allocations(), 0);
    assert!(rt.registered().is_empty() && rt.vnc_usage() == [0]);
}

/// Finding 1(b): more subgraphs than one logical core are refused before any
/// is built. Four subgraphs, each naming its own 8 MiB table, on vncs of 2:
/// the load holds the parse (4 x 8 MiB) and nothing per kbin (building them
/// copied every table before the core check).
#[test]
fn too_many_subgraphs_are_refused_before_any_kbin_is_built() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let b = packed(4);
    let neff = Neff::parse(&b, &ReadOptions::default()).unwrap();
    let jsons: Vec<String> =
        neff.subgraphs.iter().map(|s| s.engines.iter().find_map(|e| e.json_member.clone()).unwrap()).collect();
    let add = |j: &mut Value| j["big_table"] = json!("big.bin");
    let edits: Vec<Edit<'_>> = jsons.iter().map(|j| (j.as_str(), &add as &dyn Fn(&mut Value))).collect();
    let names: Vec<String> = neff.subgraphs.iter().map(|s| format!("{}big.bin", s.dir)).collect();
    let bytes = {
        let extra: Vec<(&str, Vec<u8>)> = names.iter().map(|n| (n.as_str(), vec![0; 8 * MIB])).collect();
        edited(&b, &edits, &extra)
    };
    let rt = Runtime::new(SimDevice::new(4, 2));
    let (r, peak) = peak_of(|| rt.nrt_load(&bytes, -1, -1));
    let e = r.unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    assert!(e.message.contains("4 subgraphs need 2 logical NeuronCores of size 2"), "{e}");
    // The parse holds the four tables (32 MiB); every built kbin held a copy of its own.
    assert!(peak < 48 * MIB, "the refused load held {} MiB at its peak", peak / MIB);
    assert_eq!(rt.device().live_allocations(), 0);
}

/// Finding 1(b), t3_graph_amp.py: kelf graphs naming one def.json are
/// refused by the NEFF reader before any definition is parsed (a choice:
/// each graph is one core's program, see `neff_file::distinct_definitions`).
#[test]
fn graphs_sharing_one_definition_are_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let b = packed(2);
    let graphs = |k: &mut Value| {
        k["graphs"] = (0..256).map(|i| json!({"definition": "sg00/def.json", "name": format!("g{i}")})).collect();
    };
    let neff = Neff::parse(&b, &ReadOptions::default()).unwrap();
    let kelf = neff.kelf_member.clone();
    let bytes = edited(&b, &[(kelf.as_str(), &graphs)], &[]);
    let rt = Runtime::new(SimDevice::new(2, 2));
    let (r, peak) = peak_of(|| rt.nrt_load(&bytes, -1, -1));
    let e = r.unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    assert!(e.message.contains("graphs 0 and 1 both name the definition \"sg00/def.json\""), "{e}");
    assert!(peak < 4 * MIB, "the refused load held {} KiB at its peak", peak >> 10);
    assert!(Neff::parse(&bytes, &ReadOptions::default()).is_err(), "the reader refuses it too");
    assert_eq!(rt.device().live_allocations(), 0);
}

/// Finding 1(c), t7_sparse_ids.py: 16,320 vars whose ids span 2^20 are
/// refused naming the var and field (each core's image is indexed by
/// var_id: that was 80 MiB per core); ids inside `2 n + 4096` load, and the
/// image is at most that long.
#[test]
fn sparse_var_ids_are_bounded_by_the_var_count() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n: u64 = 16_320;
    let b = packed(1);
    let k = Neff::parse(&b, &ReadOptions::default()).unwrap().subgraphs[0].def.var.len() as u64;
    // `n` vars in all: sg00's own (ids 0..k) and tiny tmp-bufs at every other id, the last at `last`.
    let sparse = |last: u64| {
        move |d: &mut Value| {
            for i in 0..n - k {
                let id = if i + 1 < n - k { k + 2 * i } else { last };
                d["var"][format!("v_sparse{i}")] = json!({"type": "tmp-buf", "size": 0, "var_id": id});
            }
        }
    };
    let far = sparse((1 << 20) - 1);
    let bytes = edited(&b, &[("sg00/def.json", &far)], &[]);
    let rt = Runtime::new(SimDevice::new(1, 1));
    let (r, peak) = peak_of(|| rt.nrt_load(&bytes, -1, -1));
    let e = r.unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    let last = format!("sg00/def.json: var \"v_sparse{}\" field var_id: 1048575 is absurd", n - k - 1);
    assert!(e.message.contains(&last), "{e}");
    assert!(peak < 32 * MIB, "the refused load held {} MiB at its peak", peak / MIB);
    // The largest id the bound allows: the image has exactly that many entries.
    let limit = 2 * n + 4096;
    let near = sparse(limit - 1);
    let bytes = edited(&b, &[("sg00/def.json", &near)], &[]);
    let (m, peak) = peak_of(|| rt.nrt_load(&bytes, -1, -1));
    let Ok(m) = m else { panic!("{m:?}") };
    let images = rt.core_images(m.h_nn).unwrap();
    assert_eq!(images[0].vars.len() as u64, limit);
    assert!(peak < 64 * MIB, "the load held {} MiB at its peak", peak / MIB);
    rt.nrt_unload(&m).unwrap();
}
