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
        .map(|l| (l.name.to_string(), seeded_input(&l.name, l.elem_count, seed)))
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
    let seed = l.init.ok_or_else(|| InterpError::MissingInit(l.name.to_string()))?;
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
            return Err(InterpError::NotI32(l.name.to_string()));
        }
        let v = match l.usage {
            Usage::Input => {
                let v = inputs.get(l.name.as_str()).ok_or_else(|| InterpError::MissingInput(l.name.to_string()))?;
                if v.len() as u64 != l.elem_count {
                    return Err(InterpError::InputLength {
                        name: l.name.to_string(),
                        want: l.elem_count,
                        got: v.len(),
                    });
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
    interpret_verified(m.verified()?, inputs)
}

/// [`interpret`] of a module already verified (no second `verify`).
pub fn interpret_verified(m: Verified<'_>, inputs: &Values) -> Result<Values, InterpError> {
    let m = m.module();
    if m.functions.is_empty() {
        return Err(InterpError::NoFunction);
    }
    let mut mem = FlatMemory::default();
    mem.push_module(m, inputs)?;
    run_function(m, FuncId(0), &mut mem, &mut Vec::new(), 0)?;
    Ok(mem.outputs(m, 0))
}

/// Every location's elements in one buffer, location `i` (in push order) at
/// `data[start[i]..start[i + 1]]`: 4 bytes of table per location and no heap
/// object per location, so a program's accesses probe two flat arrays.
///
/// Holds at most [`MAX_ELEMENTS`] elements per pushed module (checked by
/// [`check_size`] before anything is allocated), so offsets fit `u32`.
#[derive(Debug)]
pub struct FlatMemory {
    /// Every element, location after location.
    pub data: Vec<i32>,
    /// Location `i`'s first element; one more entry than locations.
    pub start: Vec<u32>,
}

impl Default for FlatMemory {
    fn default() -> Self {
        FlatMemory { data: Vec::new(), start: vec![0] }
    }
}

impl FlatMemory {
    /// The number of locations pushed so far (the next one's index).
    pub fn locations(&self) -> usize {
        self.start.len() - 1
    }

    /// Appends `m`'s locations with their initial contents (what [`initial_memory`]
    /// gives them); returns the index of `m`'s first location.
    pub fn push_module(&mut self, m: &Module, inputs: &Values) -> Result<usize, InterpError> {
        let total = check_size(m)?;
        let first = self.locations();
        let end = (self.data.len() as u64).saturating_add(total);
        if u32::try_from(end).is_err() {
            return Err(InterpError::TooLarge(end));
        }
        self.data.reserve(total as usize);
        self.start.reserve(m.memlocs.len());
        for l in &m.memlocs {
            if l.dtype != DType::I32 {
                return Err(InterpError::NotI32(l.name.to_string()));
            }
            match l.usage {
                Usage::Input => {
                    let v = inputs.get(l.name.as_str()).ok_or_else(|| InterpError::MissingInput(l.name.to_string()))?;
                    if v.len() as u64 != l.elem_count {
                        return Err(InterpError::InputLength {
                            name: l.name.to_string(),
                            want: l.elem_count,
                            got: v.len(),
                        });
                    }
                    self.data.extend_from_slice(v);
                }
                Usage::Weight => {
                    let seed = l.init.ok_or_else(|| InterpError::MissingInit(l.name.to_string()))?;
                    self.data.extend((0..l.elem_count).map(|i| init_value(seed, i)));
                }
                _ => self.data.resize(self.data.len() + l.elem_count as usize, 0),
            }
            // Below 2^32: the sum of element counts was checked above.
            self.start.push(self.data.len() as u32);
        }
        Ok(first)
    }

    /// Location `slot`'s elements.
    pub fn values(&self, slot: usize) -> &[i32] {
        &self.data[self.start[slot] as usize..self.start[slot + 1] as usize]
    }

    /// The values of every output location of `m`, whose first location is `first`.
    pub fn outputs(&self, m: &Module, first: usize) -> Values {
        m.memlocs
            .iter()
            .enumerate()
            .filter(|(_, l)| l.usage == Usage::Output)
            .map(|(i, l)| (l.name.to_string(), self.values(first + i).to_vec()))
            .collect()
    }

    /// Location `slot`'s first element in [`FlatMemory::data`].
    pub fn first(&self, slot: usize) -> usize {
        self.start[slot] as usize
    }
}

/// [`execute`] on one flat buffer: `at` gives the first element in `data` of
/// an access pattern's location; `scratch` is a reused buffer for compute results.
///
/// The module must have passed `verify`, which guarantees operands are in bounds.
pub fn execute_at(data: &mut [i32], inst: &Inst, at: &mut dyn FnMut(&AccessPattern) -> usize, scratch: &mut Vec<i32>) {
    match &inst.op {
        // One buffer: a copy is a memmove, whatever the overlap.
        Op::DmaCopy { src, dst } => {
            let s = at(src) + src.offset as usize;
            let d = at(dst) + dst.offset as usize;
            data.copy_within(s..s + src.len as usize, d);
        }
        // Sources borrowed in place (up to four without a heap allocation); the
        // result goes through `scratch`, since the destination may overlap a source.
        Op::Compute { kind, srcs, dst } => {
            let mut range = |a: &AccessPattern| {
                let s = at(a) + a.offset as usize;
                s..s + a.len as usize
            };
            let ro: &[i32] = data;
            if srcs.len() <= 4 {
                let mut arr: [&[i32]; 4] = [&[]; 4];
                for (k, a) in srcs.iter().enumerate() {
                    arr[k] = &ro[range(a)];
                }
                compute_into(*kind, &arr[..srcs.len()], dst.len as usize, scratch);
            } else {
                let v: Vec<&[i32]> = srcs.iter().map(|a| &ro[range(a)]).collect();
                compute_into(*kind, &v, dst.len as usize, scratch);
            }
            let r = range(dst);
            data[r].copy_from_slice(scratch);
        }
        _ => {}
    }
}

/// Keeps in `values` only the outputs of `m` some instruction writes (an
/// output nothing writes has no producing core: the splitter drops it and the
/// linker erases it, so it is no output of the NEFF either).
///
/// Cost: O(n + L) for n instructions and L locations (a flag per location;
/// names are unique in a verified module, so an output's name is its location's).
pub fn retain_written(m: Verified<'_>, values: &mut Values) {
    let mut written = vec![false; m.memlocs.len()];
    for a in m.functions.iter().flat_map(|f| f.insts.iter().filter_map(Inst::write)) {
        if let Some(w) = written.get_mut(a.loc.index()) {
            *w = true;
        }
    }
    let names: std::collections::BTreeSet<&str> = m
        .memlocs
        .iter()
        .zip(&written)
        .filter(|&(l, &w)| w && l.usage == Usage::Output)
        .map(|(l, _)| l.name.as_str())
        .collect();
    values.retain(|name, _| names.contains(name.as_str()));
}

/// The values of every output location.
pub fn outputs(m: &Module, mem: &[Vec<i32>]) -> Values {
    m.memlocs
        .iter()
        .zip(mem)
        .filter(|(l, _)| l.usage == Usage::Output)
        .map(|(l, v)| (l.name.to_string(), v.clone()))
        .collect()
}

const MAX_CALL_DEPTH: usize = 64;

fn run_function(
    m: &Module,
    f: FuncId,
    mem: &mut FlatMemory,
    scratch: &mut Vec<i32>,
    depth: usize,
) -> Result<(), InterpError> {
    if depth > MAX_CALL_DEPTH {
        return Err(InterpError::CallDepth(MAX_CALL_DEPTH));
    }
    let func = &m.functions[f.index()];
    for id in func.order() {
        let inst = &func.insts[id.index()];
        match &inst.op {
            Op::Call { callee } => run_function(m, *callee, mem, scratch, depth + 1)?,
            Op::Return => return Ok(()),
            Op::DmaCopy { .. } | Op::Compute { .. } => {
                let FlatMemory { data, start } = &mut *mem;
                execute_at(data, inst, &mut |ap: &AccessPattern| start[ap.loc.index()] as usize, scratch);
            }
            _ => {}
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
    let mut out = Vec::new();
    compute_into(kind, srcs, out_len, &mut out);
    out
}

/// [`compute`] into `out` (cleared first), reusing its allocation.
pub fn compute_into<S: AsRef<[i32]>>(kind: ComputeKind, srcs: &[S], out_len: usize, out: &mut Vec<i32>) {
    let src = |k: usize| srcs[k].as_ref();
    out.clear();
    match kind {
        ComputeKind::Add => {
            out.extend((0..out_len).map(|i| srcs.iter().fold(0i32, |acc, s| acc.wrapping_add(s.as_ref()[i]))))
        }
        ComputeKind::Mul => out.extend((0..out_len).map(|i| src(0)[i].wrapping_mul(src(1)[i]))),
        ComputeKind::Relu => out.extend(src(0).iter().map(|&v| v.max(0))),
        ComputeKind::Reduce => {
            let k = src(0).len() / out_len.max(1);
            out.extend((0..out_len).map(|i| src(0)[i * k..(i + 1) * k].iter().fold(0i32, |a, &v| a.wrapping_add(v))))
        }
        ComputeKind::MatMul { m, k, n } => {
            let (m, k, n) = (m as usize, k as usize, n as usize);
            let (a, b) = (src(0), src(1));
            out.resize(m * n, 0);
            for r in 0..m {
                for c in 0..n {
                    out[r * n + c] =
                        (0..k).fold(0i32, |acc, j| acc.wrapping_add(a[r * k + j].wrapping_mul(b[j * n + c])));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{GenConfig, SizeClass, generate};

    /// The old one-buffer-per-location run, kept as the reference of the flat one.
    fn per_location_run(m: &Module, inputs: &Values) -> Values {
        let mut mem = initial_memory(m, inputs).expect("memory");
        for id in m.functions[0].order() {
            execute(&m.functions[0].insts[id.index()], &mut |ap: &AccessPattern| ap.loc.index(), &mut mem);
        }
        outputs(m, &mem)
    }

    #[test]
    fn the_flat_memory_run_gives_the_per_location_runs_outputs() {
        for seed in 0..6 {
            let m = generate(&GenConfig::new(seed, 1 + (seed as u32 % 3), SizeClass::Small));
            let inputs = seeded_inputs(&m, seed);
            let flat = interpret(&m, &inputs).expect("interprets");
            assert!(!flat.is_empty(), "seed {seed}: no outputs");
            assert_eq!(flat, per_location_run(&m, &inputs), "seed {seed}");
            assert_eq!(interpret_verified(m.verified().expect("valid"), &inputs), Ok(flat));
        }
    }

    #[test]
    fn an_overlapping_copy_inside_one_location_moves_like_memmove() {
        let mut m =
            Module { name: "m".into(), attrs: ModuleAttrs { lnc_size: 1, neuron_core_id: None }, ..Module::default() };
        let x = m.add_loc(MemoryLocation::dram("x", Usage::Input, 6));
        let y = m.add_loc(MemoryLocation::dram("y", Usage::Output, 6));
        let mut f = Function::new("f");
        let ap = |loc, offset, len| AccessPattern { loc, offset, len };
        f.push_inst(BlockId(0), Inst::new("c", Engine::Sp, Op::DmaCopy { src: ap(x, 0, 6), dst: ap(y, 0, 6) }));
        f.push_inst(BlockId(0), Inst::new("s", Engine::Sp, Op::DmaCopy { src: ap(y, 0, 4), dst: ap(y, 2, 4) }));
        m.functions.push(f);
        let inputs: Values = [("x".to_string(), vec![1, 2, 3, 4, 5, 6])].into_iter().collect();
        let out = interpret(&m, &inputs).expect("interprets");
        assert_eq!(out["y"], vec![1, 2, 1, 2, 3, 4]);
        assert_eq!(out, per_location_run(&m, &inputs));
    }

    #[test]
    fn only_written_outputs_are_kept() {
        let mut m = generate(&GenConfig::new(3, 2, SizeClass::Small));
        m.add_loc(MemoryLocation::dram("lonely", Usage::Output, 1));
        let mut values = seeded_inputs(&m, 1);
        let output = m.memlocs.iter().find(|l| l.usage == Usage::Output).expect("an output");
        values.insert(output.name.to_string(), vec![0]);
        values.insert("lonely".into(), vec![0]);
        values.insert("nowhere".into(), vec![0]);
        let written_before = values.len();
        retain_written(m.verified().expect("valid"), &mut values);
        // Inputs and the output nothing writes are dropped: only the written output survives.
        assert_eq!(values.len(), 1, "{written_before} values -> {:?}", values.keys().collect::<Vec<_>>());
        assert!(values.contains_key(output.name.as_str()));
    }
}
