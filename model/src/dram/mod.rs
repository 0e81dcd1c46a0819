//! The DRAM allocator (seed 004): interval tree, first fit, shared-DRAM equalization.
