//! lncsim-model: the executable reference model of the multi-core (LNC) Neuron flow.
//!
//! Every stage of DESIGN.md's flow is a public function with typed input and
//! output, usable alone: [`split`] (lnc_splitter), [`dram`] (the DRAM
//! allocator, seed 004), [`link`] (bir_linker, seed 000), [`codegen`],
//! [`neff`] (the container), and [`load`] (nrt_load, seed 002); [`pipeline`]
//! chains split and the allocator passes behind one `compile`.
//!
//! The model is pure: no threads of its own, no clock, no filesystem except
//! where a seed says so (the sgLnk link directory).

pub mod codegen;
pub mod dram;
pub mod ir;
pub mod link;
pub mod load;
pub mod marks;
pub mod namehash;
pub mod neff;
pub mod pipeline;
pub mod program;
pub mod split;
pub mod testdata;
