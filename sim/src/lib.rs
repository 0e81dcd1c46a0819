//! lncsim-sim: a seeded discrete-event simulator of N NeuronCores sharing one HBM.
//!
//! [`device`]: the simulated device (HBM, first-fit allocator, fault plan)
//! that implements the loader's [`lncsim_model::load::Device`].

pub mod device;
