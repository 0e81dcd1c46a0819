//! Proof that a module passed [`Module::verify`], so a later stage of the
//! flow can skip verifying it again: [`Verified`] (one module) and
//! [`VerifiedModules`] (every module of a slice). Both are made only by a
//! successful verify and hold a shared borrow, so the module cannot be
//! mutated, moved or dropped while the proof lives.
//!
//! A stage that can skip the verify takes the proof as an argument (for
//! example `link::link_verified`, `link::check_linked_verified`): no hidden
//! state, and a module without a proof is verified as before.
//!
//! Cost: making a proof is one `verify` (O(n log n) in names and
//! instructions); holding or passing one costs nothing.

use std::ops::Deref;

use super::module::Module;
use super::verify::VerifyErrors;

/// A module that passed [`Module::verify`]; made only by [`Module::verified`].
#[derive(Clone, Copy, Debug)]
pub struct Verified<'a>(&'a Module);

impl<'a> Verified<'a> {
    /// The verified module.
    pub fn module(self) -> &'a Module {
        self.0
    }
}

impl Deref for Verified<'_> {
    type Target = Module;
    fn deref(&self) -> &Module {
        self.0
    }
}

/// Every module of a slice passed [`Module::verify`]; made only by [`VerifiedModules::new`].
#[derive(Clone, Copy, Debug)]
pub struct VerifiedModules<'a>(&'a [Module]);

impl<'a> VerifiedModules<'a> {
    /// Verifies every module of `modules`; the first invalid one's index and errors otherwise.
    pub fn new(modules: &'a [Module]) -> Result<Self, (usize, VerifyErrors)> {
        for (i, m) in modules.iter().enumerate() {
            m.verify().map_err(|e| (i, e))?;
        }
        Ok(VerifiedModules(modules))
    }

    /// The verified modules.
    pub fn modules(self) -> &'a [Module] {
        self.0
    }

    /// Module `i`'s proof, if there is a module `i`.
    pub fn get(self, i: usize) -> Option<Verified<'a>> {
        self.0.get(i).map(Verified)
    }
}

impl Deref for VerifiedModules<'_> {
    type Target = [Module];
    fn deref(&self) -> &[Module] {
        self.0
    }
}

impl<'a> From<Verified<'a>> for VerifiedModules<'a> {
    fn from(v: Verified<'a>) -> Self {
        VerifiedModules(std::slice::from_ref(v.0))
    }
}

impl Module {
    /// [`Module::verify`], returning the proof that it passed.
    pub fn verified(&self) -> Result<Verified<'_>, VerifyErrors> {
        self.verify().map(|()| Verified(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::*;

    /// One copy of an input into an output, both of 4 elements.
    fn valid() -> Module {
        let mut m =
            Module { name: "m".into(), attrs: ModuleAttrs { lnc_size: 1, neuron_core_id: None }, ..Module::default() };
        let x = m.add_loc(MemoryLocation::dram("x", Usage::Input, 4));
        let y = m.add_loc(MemoryLocation::dram("y", Usage::Output, 4));
        let mut f = Function::new("f");
        let src = AccessPattern { loc: x, offset: 0, len: 4 };
        let dst = AccessPattern { loc: y, offset: 0, len: 4 };
        f.push_inst(BlockId(0), Inst::new("c0", Engine::Sp, Op::DmaCopy { src, dst }));
        m.functions.push(f);
        assert_eq!(m.verify(), Ok(()));
        m
    }

    /// A module whose one instruction reads past its location.
    fn invalid() -> Module {
        let mut m = valid();
        if let crate::ir::Op::DmaCopy { src, .. } = &mut m.functions[0].insts[0].op {
            src.offset = 3;
        }
        m
    }

    #[test]
    fn an_invalid_module_has_no_proof() {
        let bad = invalid();
        assert!(bad.verified().is_err());
        let mods = vec![valid(), bad];
        let (i, errs) = VerifiedModules::new(&mods).expect_err("module 1 is invalid");
        assert_eq!(i, 1);
        assert_eq!(errs, mods[1].verify().expect_err("invalid"));
    }
}
