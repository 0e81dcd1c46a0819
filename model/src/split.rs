//! lnc_splitter: one symbolic module into one module per NeuronCoreId.
