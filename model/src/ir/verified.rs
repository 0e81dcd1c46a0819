//! Proof that a module passed [`Module::verify`], so a later stage of the
//! flow can skip verifying it again: [`Verified`] (one module) and
//! [`VerifiedModules`] (every module of a slice). Both are made only by a
//! successful verify and hold a shared borrow, so the module cannot be
//! mutated, moved or dropped while the proof lives.
//!
//! Stages whose signature takes plain modules (the linker, the link checker)
//! learn of a proof through [`trusting`]: inside it, [`Module::verify_unless_trusted`]
//! skips a module that is one of the proven ones (the same address, borrowed
//! for the whole call, hence the same unchanged module) and verifies any other.
//!
//! Cost: making a proof is one `verify` (O(n log n) in names and
//! instructions); [`Module::verify_unless_trusted`] is O(t) for t trusted
//! slices (one or two in the flow) before it verifies or skips.

use std::cell::RefCell;
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

    /// [`Module::verify`], skipped (Ok) when this very module is proven
    /// verified by an enclosing [`trusting`] call.
    pub fn verify_unless_trusted(&self) -> Result<(), VerifyErrors> {
        let addr = self as *const Module as usize;
        let trusted = TRUSTED.with(|t| t.borrow().iter().any(|&(start, len)| within(addr, start, len)));
        if trusted { Ok(()) } else { self.verify() }
    }
}

/// True when `addr` is the address of one of the `len` modules from `start`.
fn within(addr: usize, start: usize, len: usize) -> bool {
    let size = std::mem::size_of::<Module>().max(1);
    addr >= start && (addr - start).is_multiple_of(size) && (addr - start) / size < len
}

thread_local! {
    /// The proven slices of the enclosing [`trusting`] calls: (address of the first module, count).
    static TRUSTED: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// Restores the trusted list on the way out of [`trusting`], panics included.
struct Untrust(usize);

impl Drop for Untrust {
    fn drop(&mut self) {
        TRUSTED.with(|t| t.borrow_mut().truncate(self.0));
    }
}

/// Runs `f` with `proof`'s modules trusted by [`Module::verify_unless_trusted`].
///
/// The proof's borrow outlives `f`, so every trusted module stays exactly as
/// verified throughout; the trust ends when `trusting` returns.
pub fn trusting<R>(proof: VerifiedModules<'_>, f: impl FnOnce() -> R) -> R {
    let depth = TRUSTED.with(|t| {
        let mut t = t.borrow_mut();
        t.push((proof.0.as_ptr() as usize, proof.0.len()));
        t.len() - 1
    });
    let _restore = Untrust(depth);
    f()
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

    #[test]
    fn trust_covers_exactly_the_proven_modules_and_ends_with_the_call() {
        let good = vec![valid(), valid()];
        let bad = invalid();
        let proof = VerifiedModules::new(&good).expect("valid");
        trusting(proof, || {
            assert_eq!(good[0].verify_unless_trusted(), Ok(()));
            assert_eq!(good[1].verify_unless_trusted(), Ok(()));
            // Not proven: verified, and refused.
            assert!(bad.verify_unless_trusted().is_err());
        });
        // A copy of a proven module is another module: verified as any other.
        let mut copy = good[0].clone();
        copy.functions[0].insts[0] = bad.functions[0].insts[0].clone();
        trusting(proof, || assert!(copy.verify_unless_trusted().is_err()));
        assert_eq!(TRUSTED.with(|t| t.borrow().len()), 0);
    }

    #[test]
    fn trust_ends_even_when_the_call_panics() {
        let good = vec![valid()];
        let proof = VerifiedModules::new(&good).expect("valid");
        let r = std::panic::catch_unwind(|| trusting(proof, || panic!("inside")));
        assert!(r.is_err());
        assert_eq!(TRUSTED.with(|t| t.borrow().len()), 0);
    }

    #[test]
    fn an_address_inside_a_module_is_not_a_module() {
        let size = std::mem::size_of::<Module>();
        assert!(within(1000, 1000, 1));
        assert!(within(1000 + size, 1000, 2));
        assert!(!within(1000 + size, 1000, 1));
        assert!(!within(1000 + 8, 1000, 2));
        assert!(!within(999, 1000, 2));
    }
}
