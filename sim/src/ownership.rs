//! Shadow ownership (issue 7, item 3b), from the var table and the loader's
//! `operand_vars`: an access outside the var its operand named is reported,
//! and so is a read of bytes last written through a different tensor (a
//! clobber: two live tensors placed over each other). Ownership identity of a
//! var is described in [`crate::vars`]; preset vars (inputs, outputs,
//! weights) own their bytes before the run.
//!
//! Choice: the clobber check is made on reads. Without liveness information
//! a write over another tensor's bytes is legal (the allocator reuses the
//! space of dead tensors); it is wrong exactly when the other tensor is read
//! afterwards, which is when the read finds the bytes owned by the writer.

use crate::race::Tag;
use crate::vars::NONE;

/// True when `[pa, pa + len)` leaves `[var_pa, var_pa + var_size)`.
pub(crate) fn outside_var(pa: u64, len: u64, var_pa: u64, var_size: u64) -> bool {
    pa < var_pa || pa.saturating_add(len) > var_pa.saturating_add(var_size)
}

/// Ownership state of one shadow segment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnerCell {
    /// The tensor whose bytes these are (NONE: unknown or never written).
    pub owner: u32,
    /// The write that made it so (`Tag::NONE` for preset contents).
    pub writer: Tag,
}

impl OwnerCell {
    /// A cell owned by `owner` before the run.
    pub(crate) fn preset(owner: u32) -> OwnerCell {
        OwnerCell { owner, writer: Tag::NONE }
    }

    /// A write through a var of `owner` (NONE when the access named no var).
    pub(crate) fn write(&mut self, owner: u32, tag: Tag) {
        self.owner = owner;
        self.writer = tag;
    }

    /// True when a read through a var of `reader` finds another tensor's bytes.
    pub(crate) fn clobbered_for(&self, reader: u32) -> bool {
        self.owner != NONE && reader != NONE && self.owner != reader
    }
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
        let mut c = OwnerCell::preset(3);
        assert!(!c.clobbered_for(3));
        assert!(c.clobbered_for(4));
        assert!(!c.clobbered_for(NONE));
        c.write(NONE, Tag::NONE);
        assert!(!c.clobbered_for(4));
        c.write(4, Tag::NONE);
        assert!(!c.clobbered_for(4));
    }
}
