//! The IR: arena-based modules, functions, blocks, instructions, memory locations.
