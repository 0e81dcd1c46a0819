//! Codegen: per core and engine, 64-byte instruction records (issue 5).
