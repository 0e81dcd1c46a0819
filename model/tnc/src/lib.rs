//! lncsim-tnc: the runtime's TNC parse cache (seed 002, Stage 1) as an explicit
//! state machine, with the std / loom shim (the only place that names either).
