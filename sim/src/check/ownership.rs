//! Shadow ownership (issue 7, item 3b), from the var table and the loader's
//! `operand_vars`: an access outside the var its operand named is reported,
//! and so is a read of bytes last written through a different tensor (a
//! clobber: two live tensors placed over each other). Ownership identity of a
//! var is described in [`crate::engine::vars`]; preset vars (inputs, outputs,
//! weights) own their bytes before the run. The per-byte state is in
//! [`crate::check::shadow`]; this file holds the rules. Cost: O(1) per access here
//! (the out-of-var bound is computed once per access at build time).
//!
//! Choice: the clobber check is made on reads. Without liveness information
//! a write over another tensor's bytes is legal (the allocator reuses the
//! space of dead tensors); it is wrong exactly when the other tensor is read
//! afterwards, which is when the read finds the bytes owned by the writer.

use crate::engine::vars::NONE;

/// True when `[pa, pa + len)` leaves `[var_pa, var_pa + var_size)`.
pub(crate) fn outside_var(pa: u64, len: u64, var_pa: u64, var_size: u64) -> bool {
    pa < var_pa || pa.saturating_add(len) > var_pa.saturating_add(var_size)
}

/// True when a read through a var of `reader` finds bytes last written (or
/// preset) through a var of another tensor `owner` (NONE: unknown, never a clobber).
pub(crate) fn clobbered(owner: u32, reader: u32) -> bool {
    owner != NONE && reader != NONE && owner != reader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_owners() {
        assert!(!outside_var(100, 10, 100, 10));
        assert!(outside_var(99, 10, 100, 10));
        assert!(outside_var(101, 10, 100, 10));
        assert!(!outside_var(105, 0, 100, 10));
        assert!(!clobbered(3, 3));
        assert!(clobbered(3, 4));
        assert!(!clobbered(3, NONE));
        assert!(!clobbered(NONE, 4));
    }
}
