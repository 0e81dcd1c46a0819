//! lncsim-sim: a seeded discrete-event simulator of N NeuronCores sharing one HBM.
