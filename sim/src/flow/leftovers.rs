//! The flow's "nothing left behind" check (DESIGN.md invariant 6): after a
//! load that failed under an injected fault, and after the unload that ends
//! a run, the runtime holds nothing: no live device allocation, no
//! registered model, no device-db model, no vnc claim, and the TNC slot is
//! UNINIT with ref count 0. It reads only the runtime's public tables and the
//! device's allocation count, never the loader's rollback or unload code.

use std::fmt::Debug;

use lncsim_model::load::{Device, LoadError, NrtModel, Runtime};
use lncsim_tnc::CacheState;

/// What `rt` still holds, one phrase per kind (empty: nothing).
pub(crate) fn leftovers<D: Device>(rt: &Runtime<D>) -> Vec<String> {
    let mut out = Vec::new();
    let live = rt.device().live_allocations();
    if live > 0 {
        out.push(format!("{live} device allocation(s)"));
    }
    let registered = rt.registered().len();
    if registered > 0 {
        out.push(format!("{registered} registered model(s)"));
    }
    let models = rt.device_models().len();
    if models > 0 {
        out.push(format!("{models} device-db model(s)"));
    }
    let claims: u32 = rt.vnc_usage().iter().sum();
    if claims > 0 {
        out.push(format!("{claims} vnc claim(s)"));
    }
    let s = rt.tnc().snapshot();
    if s.cache_state != CacheState::Uninit || s.packed_ref_count != 0 {
        out.push(format!("the TNC slot {:?} with packed ref count {:#x}", s.cache_state, s.packed_ref_count));
    }
    out
}

/// Ok when `rt` holds nothing; else one line saying what it still holds.
pub(crate) fn nothing_left<D: Device>(rt: &Runtime<D>) -> Result<(), String> {
    match leftovers(rt) {
        v if v.is_empty() => Ok(()),
        v => Err(format!("{} left", v.join(", "))),
    }
}

/// The verdict on a load run with `fault` injected: a failed load must leave
/// nothing behind; a load the fault never reached must unload clean.
pub(crate) fn faulty_load_verdict<D: Device>(
    rt: &Runtime<D>,
    result: Result<NrtModel, String>,
    fault: &dyn Debug,
) -> Result<String, String> {
    match result {
        Ok(m) => {
            rt.nrt_unload(&m).map_err(|e| format!("{fault:?} not reached, but the unload failed: {e}"))?;
            nothing_left(rt).map_err(|left| format!("{fault:?} not reached, and after the unload {left}"))?;
            Ok(format!("{fault:?} not reached: the load succeeded"))
        }
        Err(e) => match nothing_left(rt) {
            Ok(()) => Ok(format!("{fault:?}: {e}")),
            Err(left) => Err(format!("after `{e}`: {left}")),
        },
    }
}

/// The verdict on a load whose injected fault `asked` fired: the
/// [`faulty_load_verdict`] `outcome`, except that a load that still reached
/// READY (`loaded`) fails, since the device refused one of its calls and the
/// error was lost on the way.
pub(crate) fn fired_load_verdict(asked: &str, loaded: bool, outcome: Result<String, String>) -> Result<(), String> {
    match outcome {
        Ok(_) if loaded => {
            Err(format!("{asked} fired, but the load still reached READY: the refused call's error was lost"))
        }
        o => o.map(|_| ()),
    }
}

/// The verdict on the unload that ends a run: it succeeded and left nothing.
pub(crate) fn unload_verdict<D: Device>(rt: &Runtime<D>, unloaded: Result<(), LoadError>) -> Result<(), String> {
    unloaded.map_err(|e| e.to_string())?;
    nothing_left(rt)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::device::SimDevice;
    use lncsim_model::load::HNn;
    use lncsim_model::load::testkit::pack_generated;
    use lncsim_model::program::{GenConfig, SizeClass};

    fn neff() -> Vec<u8> {
        pack_generated(&GenConfig::new(9, 2, SizeClass::Small)).unwrap()
    }

    #[test]
    fn a_fresh_runtime_and_a_clean_unload_leave_nothing() {
        let rt = Runtime::new(SimDevice::new(2, 2));
        assert_eq!(nothing_left(&rt), Ok(()));
        let m = rt.nrt_load(&neff(), -1, -1).unwrap();
        assert_eq!(unload_verdict(&rt, rt.nrt_unload(&m)), Ok(()));
    }

    #[test]
    fn a_load_that_is_never_unloaded_is_reported() {
        let rt = Runtime::new(SimDevice::new(2, 2));
        let _m = rt.nrt_load(&neff(), -1, -1).unwrap();
        // An "unload" that did nothing but claims success.
        let e = unload_verdict(&rt, Ok(())).unwrap_err();
        for what in ["device allocation(s)", "1 registered model(s)", "2 device-db model(s)", "1 vnc claim(s)"] {
            assert!(e.contains(what), "{what} missing from: {e}");
        }
    }

    #[test]
    fn a_failed_load_that_leaves_its_model_registered_is_reported() {
        // The seed's asymmetric edge: S0's nrt_model_t allocation fails after S5 registered the model.
        let rt = Runtime::new(SimDevice::new(2, 2));
        rt.fail_next_nrt_model_alloc();
        let result = rt.nrt_load(&neff(), -1, -1).map_err(|e| e.to_string());
        let e = faulty_load_verdict(&rt, result, &"asymmetric edge").unwrap_err();
        assert!(e.starts_with("after `"), "{e}");
        assert!(e.contains("1 registered model(s)") && e.contains("device allocation(s)"), "{e}");
        assert!(!e.contains("vnc claim"), "the claim is released: {e}");
        rt.kmgr_unload_nn(HNn(1)).unwrap();
        assert_eq!(nothing_left(&rt), Ok(()));
    }

    #[test]
    fn a_fault_that_fired_under_a_load_that_still_succeeded_fails() {
        // The loader swallowed the refused call: the load's clean unload is no excuse.
        let rt = Runtime::new(SimDevice::new(2, 2));
        let m = rt.nrt_load(&neff(), -1, -1).map_err(|e| e.to_string());
        let outcome = faulty_load_verdict(&rt, m, &"Alloc(2)");
        assert!(outcome.is_ok(), "the unload itself was clean: {outcome:?}");
        let e = fired_load_verdict("load-alloc=2", true, outcome).unwrap_err();
        assert!(e.starts_with("load-alloc=2 fired, but the load still reached READY"), "{e}");
        assert_eq!(nothing_left(&rt), Ok(()), "the verdict unloaded it");
        // A load that failed cleanly passes; one that left something fails with its own line.
        assert_eq!(fired_load_verdict("load-alloc=2", false, Ok("Alloc(2): refused".into())), Ok(()));
        assert_eq!(
            fired_load_verdict("load-alloc=2", false, Err("after `x`: 1 left".into())),
            Err("after `x`: 1 left".into())
        );
    }

    #[test]
    fn a_leaked_allocation_alone_is_reported() {
        let rt = Runtime::new(SimDevice::new(2, 2));
        let pa = rt.device().mem_alloc(0, 4096, 64).unwrap();
        let result: Result<NrtModel, String> = Err("injected".into());
        assert_eq!(
            faulty_load_verdict(&rt, result, &"Alloc(3)"),
            Err("after `injected`: 1 device allocation(s) left".into())
        );
        rt.device().mem_free(pa).unwrap();
        assert_eq!(faulty_load_verdict(&rt, Err("injected".into()), &"Alloc(3)"), Ok("\"Alloc(3)\": injected".into()));
    }

    #[test]
    fn a_fault_that_is_never_reached_still_needs_a_clean_unload() {
        let rt = Runtime::new(SimDevice::new(2, 2));
        let m = rt.nrt_load(&neff(), -1, -1).map_err(|e| e.to_string());
        assert_eq!(
            faulty_load_verdict(&rt, m, &"Alloc(999)"),
            Ok("\"Alloc(999)\" not reached: the load succeeded".into())
        );
        // A stray allocation next to the model: the unload cannot account for it.
        let m = rt.nrt_load(&neff(), -1, -1).map_err(|e| e.to_string());
        rt.device().mem_alloc(1, 64, 64).unwrap();
        let e = faulty_load_verdict(&rt, m, &"Alloc(999)").unwrap_err();
        assert!(e.contains("not reached, and after the unload 1 device allocation(s) left"), "{e}");
    }
}
