//! The reference interpreter: executes a symbolic module by names (no
//! addresses) on given inputs and returns its outputs. This is the golden
//! result every later stage is compared against, so it is deliberately plain:
//! sequential program order, one buffer per location, wrapping i32 arithmetic.

use std::collections::BTreeMap;

use crate::ir::*;

/// Tensor values by location name.
pub type Values = BTreeMap<String, Vec<i32>>;

/// Why a module could not be interpreted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// The module is not valid IR.
    #[error("invalid module: {0}")]
    Invalid(#[from] VerifyErrors),
    /// The module has no function to run.
    #[error("module has no function")]
    NoFunction,
    /// An input location has no value.
    #[error("missing input `{0}`")]
    MissingInput(String),
    /// An input value has the wrong number of elements.
    #[error("input `{name}` has {got} elements, expected {want}")]
    InputLength {
        /// The input.
        name: String,
        /// Its declared element count.
        want: u64,
        /// The given element count.
        got: usize,
    },
    /// A weight has no seeded contents.
    #[error("weight `{0}` has no init seed")]
    MissingInit(String),
    /// Calls nest deeper than the interpreter allows.
    #[error("calls nest deeper than {0}")]
    CallDepth(usize),
    /// The module's locations hold more elements than the interpreter allows.
    #[error("locations hold {0} elements in all; the interpreter allows {MAX_ELEMENTS}")]
    TooLarge(u64),
    /// A non-i32 location cannot be interpreted.
    #[error("location `{0}` is not i32; the interpreter computes on i32 only")]
    NotI32(String),
}

/// A 64-bit FNV-1a digest of the values' little-endian bytes.
pub fn digest(values: &[i32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Deterministic inputs for every input location of `m`, derived from `seed` and each name.
///
/// Allocates every input: for a module from outside (a file), call
/// [`seeded_inputs_checked`], which refuses one too large to interpret first.
pub fn seeded_inputs(m: &Module, seed: u64) -> Values {
    m.memlocs
        .iter()
        .filter(|l| l.usage == Usage::Input)
        .map(|l| (l.name.clone(), seeded_input(&l.name, l.elem_count, seed)))
        .collect()
}

/// [`seeded_inputs`] after [`check_size`]: a typed error instead of an
/// allocation failure for a module whose locations are too large to interpret.
pub fn seeded_inputs_checked(m: &Module, seed: u64) -> Result<Values, InterpError> {
    check_size(m)?;
    Ok(seeded_inputs(m, seed))
}

/// The seeded values of one input named `name` with `elems` elements (what
/// [`seeded_inputs`] gives it; a NEFF's inputs are seeded the same way by name).
pub fn seeded_input(name: &str, elems: u64, seed: u64) -> Vec<i32> {
    let s = seed ^ digest(&name.bytes().map(i32::from).collect::<Vec<_>>());
    (0..elems).map(|i| init_value(s, i)).collect()
}

/// The contents of a weight location.
pub fn weight_values(l: &MemoryLocation) -> Result<Vec<i32>, InterpError> {
    let seed = l.init.ok_or_else(|| InterpError::MissingInit(l.name.clone()))?;
    Ok((0..l.elem_count).map(|i| init_value(seed, i)).collect())
}

/// The most elements (all locations together) the interpreter will allocate: 1 GiB of i32.
pub const MAX_ELEMENTS: u64 = 1 << 28;

/// The element count of all of `m`'s locations together, or [`InterpError::TooLarge`]
/// past [`MAX_ELEMENTS`]: checked before anything is allocated for them.
pub fn check_size(m: &Module) -> Result<u64, InterpError> {
    let total = m.memlocs.iter().fold(0u64, |a, l| a.saturating_add(l.elem_count));
    if total > MAX_ELEMENTS {
        crate::marks::hit("interp.too_large");
        return Err(InterpError::TooLarge(total));
    }
    Ok(total)
}

/// Initial memory of `m`: inputs from `inputs`, weights from their seeds, the rest zero.
pub fn initial_memory(m: &Module, inputs: &Values) -> Result<Vec<Vec<i32>>, InterpError> {
    check_size(m)?;
    let mut mem = Vec::with_capacity(m.memlocs.len());
    for l in &m.memlocs {
        if l.dtype != DType::I32 {
            return Err(InterpError::NotI32(l.name.clone()));
        }
        let v = match l.usage {
            Usage::Input => {
                let v = inputs.get(&l.name).ok_or_else(|| InterpError::MissingInput(l.name.clone()))?;
                if v.len() as u64 != l.elem_count {
                    return Err(InterpError::InputLength { name: l.name.clone(), want: l.elem_count, got: v.len() });
                }
                v.clone()
            }
            Usage::Weight => weight_values(l)?,
            _ => vec![0; usize::try_from(l.elem_count).unwrap_or(usize::MAX)],
        };
        mem.push(v);
    }
    Ok(mem)
}

/// Runs `m`'s first function in program order and returns every output location's values.
///
/// Calls run the callee to completion at the call (sequential semantics);
/// barriers, semaphores and queue switches are ordering-only and do nothing here.
pub fn interpret(m: &Module, inputs: &Values) -> Result<Values, InterpError> {
    m.verify()?;
    if m.functions.is_empty() {
        return Err(InterpError::NoFunction);
    }
    let mut mem = initial_memory(m, inputs)?;
    run_function(m, FuncId(0), &mut mem, 0)?;
    Ok(outputs(m, &mem))
}

/// The values of every output location.
pub fn outputs(m: &Module, mem: &[Vec<i32>]) -> Values {
    m.memlocs
        .iter()
        .zip(mem)
        .filter(|(l, _)| l.usage == Usage::Output)
        .map(|(l, v)| (l.name.clone(), v.clone()))
        .collect()
}

const MAX_CALL_DEPTH: usize = 64;

fn run_function(m: &Module, f: FuncId, mem: &mut [Vec<i32>], depth: usize) -> Result<(), InterpError> {
    if depth > MAX_CALL_DEPTH {
        return Err(InterpError::CallDepth(MAX_CALL_DEPTH));
    }
    let func = &m.functions[f.index()];
    for id in func.order() {
        let inst = &func.insts[id.index()];
        match &inst.op {
            Op::Call { callee } => run_function(m, *callee, mem, depth + 1)?,
            Op::Return => return Ok(()),
            _ => execute(inst, &mut |ap: &AccessPattern| ap.loc.index(), mem),
        }
    }
    Ok(())
}

/// Executes one data instruction (DMA copy or compute) on `mem`, where
/// `slot` maps an access pattern's location to its buffer. Other ops do nothing.
///
/// The module must have passed `verify`, which guarantees operands are in bounds.
pub fn execute(inst: &Inst, slot: &mut dyn FnMut(&AccessPattern) -> usize, mem: &mut [Vec<i32>]) {
    let range = |a: &AccessPattern| a.offset as usize..(a.offset + a.len) as usize;
    match &inst.op {
        // A copy moves the elements directly (no temporary), within one buffer or between two.
        Op::DmaCopy { src, dst } => {
            let (s, d) = (slot(src), slot(dst));
            let at = dst.offset as usize;
            if s == d {
                mem[s].copy_within(range(src), at);
            } else {
                let (from, to) = if s < d {
                    let (lo, hi) = mem.split_at_mut(d);
                    (&lo[s], &mut hi[0])
                } else {
                    let (lo, hi) = mem.split_at_mut(s);
                    (&hi[0], &mut lo[d])
                };
                to[at..at + dst.len as usize].copy_from_slice(&from[range(src)]);
            }
        }
        // Sources are borrowed in place (up to four without a heap allocation); the
        // result is one buffer, since the destination may overlap a source.
        Op::Compute { kind, srcs, dst } => {
            let ro: &[Vec<i32>] = mem;
            let result = if srcs.len() <= 4 {
                let mut arr: [&[i32]; 4] = [&[]; 4];
                for (k, a) in srcs.iter().enumerate() {
                    arr[k] = &ro[slot(a)][range(a)];
                }
                compute(*kind, &arr[..srcs.len()], dst.len as usize)
            } else {
                let v: Vec<&[i32]> = srcs.iter().map(|a| &ro[slot(a)][range(a)]).collect();
                compute(*kind, &v, dst.len as usize)
            };
            let d = slot(dst);
            mem[d][range(dst)].copy_from_slice(&result);
        }
        _ => {}
    }
}

/// The arithmetic of one compute op, on wrapping i32.
pub fn compute<S: AsRef<[i32]>>(kind: ComputeKind, srcs: &[S], out_len: usize) -> Vec<i32> {
    let src = |k: usize| srcs[k].as_ref();
    match kind {
        ComputeKind::Add => {
            (0..out_len).map(|i| srcs.iter().fold(0i32, |acc, s| acc.wrapping_add(s.as_ref()[i]))).collect()
        }
        ComputeKind::Mul => (0..out_len).map(|i| src(0)[i].wrapping_mul(src(1)[i])).collect(),
        ComputeKind::Relu => src(0).iter().map(|&v| v.max(0)).collect(),
        ComputeKind::Reduce => {
            let k = src(0).len() / out_len.max(1);
            (0..out_len).map(|i| src(0)[i * k..(i + 1) * k].iter().fold(0i32, |a, &v| a.wrapping_add(v))).collect()
        }
        ComputeKind::MatMul { m, k, n } => {
            let (m, k, n) = (m as usize, k as usize, n as usize);
            let (a, b) = (src(0), src(1));
            let mut out = vec![0i32; m * n];
            for r in 0..m {
                for c in 0..n {
                    out[r * n + c] =
                        (0..k).fold(0i32, |acc, j| acc.wrapping_add(a[r * k + j].wrapping_mul(b[j * n + c])));
                }
            }
            out
        }
    }
}
