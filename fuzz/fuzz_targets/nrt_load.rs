//! Structure-aware loader fuzzing: edits to a valid NEFF, re-packed with a
//! correct hash, loaded on the simulated device with a seeded fault plan;
//! READY must pass the load checker and unload clean, an error must be typed
//! and leave nothing behind (`lncsim_sim::device::fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lncsim_sim::device::fuzz::nrt_load(data));
