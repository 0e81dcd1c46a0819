//! The `dram_alloc` fuzz entry point: arbitrary bytes -> a valid allocation
//! problem -> [`allocate`]; the independent checker must pass, or allocate must
//! return its typed out-of-space error. Anything else is a finding.
//!
//! The fuzz target (`fuzz/fuzz_targets/dram_alloc.rs`) panics on `Err`; this
//! function itself never panics.

use arbitrary::{Result as ArbResult, Unstructured};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::checker::check;
use super::config::{AllocConfig, Order, cc_buffer_size};
use super::error::AllocError;
use super::problem::{CcOperand, DRAM_PAGE, LiveInterval, Location, Problem, round_up};
use super::select::allocate;

/// What one fuzz input did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Placed and checked clean.
    Placed {
        /// Number of locations.
        locations: usize,
    },
    /// The typed out-of-space error.
    OutOfSpace,
    /// Too few bytes to build a case.
    TooShort,
}

/// Builds a valid problem and config from `u`: pins disjoint and below the
/// ceiling, every movable location with at least one interval.
pub fn arbitrary_case(u: &mut Unstructured<'_>) -> ArbResult<(Problem, AllocConfig)> {
    let page = *u.choose(&[1u64, 64, 256, DRAM_PAGE])?;
    let n = u.int_in_range(0..=32usize)?;
    let mut locations = Vec::with_capacity(n);
    let mut cursor = u64::from(u.int_in_range(0..=8191u16)?);
    for i in 0..n {
        let byte_size = u64::from(u.int_in_range(0..=20000u16)?);
        let alignment = *u.choose(&[1u64, page, DRAM_PAGE])?;
        let pinned = u.ratio(1, 6)?;
        let k = u.int_in_range(if pinned { 0..=2 } else { 1..=3usize })?;
        let mut intervals = Vec::with_capacity(k);
        for _ in 0..k {
            let def = u64::from(u.int_in_range(0..=63u8)?);
            intervals.push(LiveInterval::new(def, def + u64::from(u.int_in_range(0..=31u8)?)));
        }
        let mut loc = Location::new(format!("f{i}"), byte_size, alignment, intervals);
        if pinned {
            loc = loc.pinned_at(cursor);
            cursor += round_up(byte_size, alignment).unwrap_or(0) + u64::from(u.int_in_range(0..=4096u16)?);
        } else {
            loc.address_multiple = *u.choose(&[1u64, 1, 1, 2, 8, 64])?;
        }
        locations.push(loc);
    }
    let mut cc_operands = Vec::new();
    for (i, l) in locations.iter().enumerate() {
        if l.fixed_address.is_none() && u.ratio(1, 5)? {
            cc_operands.push(CcOperand { location: i, ap_bytes: u64::from(u.int_in_range(0..=4096u16)?) });
        }
    }
    let problem = Problem { locations, cc_operands };
    let hwm = match u.int_in_range(0..=2u8)? {
        0 => problem.preplaced_hwm().unwrap_or(0),
        1 => 0,
        _ => u64::from(u.int_in_range(0..=65535u16)?),
    };
    let mib = *u.choose(&[-1i64, 0, 1])?;
    let cc_limit = match mib {
        -1 => round_up(cc_buffer_size(&problem).unwrap_or(0), DRAM_PAGE).unwrap_or(0),
        m => (m as u64) << 20,
    };
    let start = if hwm == 0 { 0 } else { hwm + 1 };
    let general = u64::from(u.int_in_range(0..=1u32 << 20)?);
    let config = AllocConfig {
        page,
        hwm,
        region_ceiling: (start + general + cc_limit).max(cursor),
        allreduce_buffer_size_mib: mib,
        order: if u.arbitrary::<bool>()? { Order::Size } else { Order::Seed },
    };
    Ok((problem, config))
}

/// The fuzz oracle: `Err` describes a finding (a violation, a non-deterministic
/// result, or a valid problem rejected by something other than out-of-space).
pub fn dram_alloc(data: &[u8]) -> Result<Outcome, String> {
    let mut u = Unstructured::new(data);
    let Ok((problem, config)) = arbitrary_case(&mut u) else {
        return Ok(Outcome::TooShort);
    };
    match allocate(&problem, &config) {
        Ok(a) => {
            let v = check(&problem, &config, &a.addresses);
            if !v.is_empty() {
                let all: Vec<String> = v.iter().map(ToString::to_string).collect();
                return Err(format!("checker found {} violations: {}", v.len(), all.join("; ")));
            }
            match allocate(&problem, &config) {
                Ok(b) if b == a => Ok(Outcome::Placed { locations: problem.locations.len() }),
                _ => Err("allocation is not deterministic".into()),
            }
        }
        Err(AllocError::OutOfSpace { .. }) => Ok(Outcome::OutOfSpace),
        Err(e) => Err(format!("valid problem rejected: {e}")),
    }
}

/// The seed corpus: deterministic byte strings of varied lengths (ChaCha8, seed 4).
pub fn seed_corpus() -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    [16usize, 64, 128, 256, 384, 512, 768, 1024]
        .iter()
        .map(|&len| (0..len).map(|_| rng.random::<u8>()).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_corpus_inputs_pass_and_some_place_something() {
        let mut placed = 0;
        for input in seed_corpus() {
            match dram_alloc(&input) {
                Ok(Outcome::Placed { locations }) if locations > 0 => placed += 1,
                Ok(_) => {}
                Err(e) => panic!("finding: {e}"),
            }
        }
        assert!(placed >= 3, "only {placed} corpus inputs placed something");
        assert_eq!(dram_alloc(&[]), Ok(Outcome::Placed { locations: 0 }));
    }
}
