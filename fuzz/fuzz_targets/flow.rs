//! Whole-flow fuzzing: `arbitrary` bytes choose generator parameters, cores,
//! jitter and faults; the flow of `lncsim run` must pass every check (a typed
//! refusal of the input before packaging is fine). Differential: the
//! simulated outputs are compared with the reference interpreter's.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lncsim_sim::fuzz::flow(data));
