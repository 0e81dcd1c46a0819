//! The seeded transforms behind [`super::Features`]: each edits the run's own
//! program (or the split's barriers, which the run could have written in its
//! program text) so that a seed contract's end-to-end check has something
//! to see. Each draws from its own stream of the run seed.

use lncsim_model::ir::{AccessPattern, ComputeKind, Dep, EdgeKind, Engine, Inst, InstId, MemType, Module, Op, Usage};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `partial-writes`: a seeded third of the elementwise writes (relu, add,
/// mul, DMA) of at least two elements, none in place, becomes two: `<name>.p0`
/// writes the first half, then the instruction itself (its name, engine,
/// core and edges, and a control edge on `<name>.p0`) writes the second half
/// from the second half of every source. So destinations start past element
/// 0 and a tensor is written in two pieces, which a codegen or loader that
/// loses a destination offset gets wrong (generated programs write whole
/// tensors from offset 0). The program's outputs are unchanged. Returns how
/// many writes it split. O(n) plus one renumbering of the arena.
pub(crate) fn partial_writes(program: &mut Module, seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9A47_1A15);
    let Some(f) = program.functions.first_mut() else { return 0 };
    let names: std::collections::BTreeSet<String> = f.insts.iter().map(|i| i.name.to_string()).collect();
    let n = f.insts.len();
    // (instruction, its first half), in arena order.
    let mut halves: Vec<(usize, InstId)> = Vec::new();
    for i in 0..n {
        let inst = &f.insts[i];
        let (srcs, dst): (Vec<AccessPattern>, AccessPattern) = match &inst.op {
            Op::Compute { kind: ComputeKind::Relu | ComputeKind::Add | ComputeKind::Mul, srcs, dst } => {
                (srcs.to_vec(), *dst)
            }
            Op::DmaCopy { src, dst } => (vec![*src], *dst),
            _ => continue,
        };
        if dst.len < 2 || srcs.iter().any(|s| s.loc == dst.loc || s.len != dst.len) {
            continue;
        }
        if rng.random_range(0..3) != 0 {
            continue;
        }
        let name = format!("{}.p0", inst.name);
        if names.contains(&name) {
            continue;
        }
        let h = dst.len / 2;
        let head = |a: &AccessPattern| AccessPattern { len: h, ..*a };
        let tail = |a: &AccessPattern| AccessPattern { offset: a.offset + h, len: a.len - h, ..*a };
        let (head_op, tail_op) = match &inst.op {
            Op::Compute { kind, .. } => (
                Op::Compute { kind: *kind, srcs: srcs.iter().map(head).collect(), dst: head(&dst) },
                Op::Compute { kind: *kind, srcs: srcs.iter().map(tail).collect(), dst: tail(&dst) },
            ),
            _ => (
                Op::DmaCopy { src: head(&srcs[0]), dst: head(&dst) },
                Op::DmaCopy { src: tail(&srcs[0]), dst: tail(&dst) },
            ),
        };
        let mut first = inst.clone();
        first.name = name.into();
        first.op = head_op;
        let id = InstId::from_index(f.insts.len());
        f.insts.push(first);
        let second = &mut f.insts[i];
        second.op = tail_op;
        second.deps.push(Dep { inst: id, kind: EdgeKind::Control });
        halves.push((i, id));
    }
    let split = halves.len();
    if split > 0 {
        let mut first_half: Vec<Option<InstId>> = vec![None; n];
        for &(i, id) in &halves {
            first_half[i] = Some(id);
        }
        for b in &mut f.blocks {
            let mut listed = Vec::with_capacity(b.insts.len());
            for &id in &b.insts {
                if let Some(h) = first_half.get(id.index()).copied().flatten() {
                    listed.push(h);
                }
                listed.push(id);
            }
            b.insts = listed;
        }
        f.canonicalize();
    }
    split
}

/// `placed-shared`: every DRAM internal, spill or output tensor of `program`
/// gets a seeded (partition 1..=3, bank 0..=3), so that a shared tensor's
/// views must receive all three of (address, partition, bank) from its owner.
/// Returns how many tensors it placed.
pub(crate) fn place_shared(program: &mut Module, seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9A27_BA4C);
    let mut n = 0;
    for l in &mut program.memlocs {
        if l.mem_type == MemType::Dram && matches!(l.usage, Usage::Internal | Usage::Spill | Usage::Output) {
            l.partition = rng.random_range(1..=3);
            l.bank = rng.random_range(0..=3);
            n += 1;
        }
    }
    n
}

/// `unflagged-barriers`: a seeded third of the logical barrier groups (at
/// least one when there is any) is left unflagged, each arrival with a slot id
/// of its own above every id the renumbering can give (the barrier count plus
/// one completion barrier per core), which the linker must keep. Returns how
/// many arrivals it unflagged.
pub(crate) fn unflag_barriers(per_core: &mut [Module], seed: u64) -> usize {
    let barriers = |m: &Module| -> usize {
        m.functions.iter().flat_map(|f| &f.insts).filter(|i| matches!(i.op, Op::CoreBarrier(_))).count()
    };
    let total: usize = per_core.iter().map(barriers).sum();
    let mut groups: Vec<u32> = per_core
        .iter()
        .flat_map(|m| m.functions.iter().flat_map(|f| &f.insts))
        .filter_map(|i| if let Op::CoreBarrier(b) = &i.op { Some(b.group) } else { None })
        .collect();
    groups.sort_unstable();
    groups.dedup();
    if groups.is_empty() {
        return 0;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0BF1_A66D);
    let mut chosen: Vec<u32> = groups.iter().copied().filter(|_| rng.random_range(0..3) == 0).collect();
    if chosen.is_empty() {
        chosen.push(groups[rng.random_range(0..groups.len())]);
    }
    // Above every id the renumbering can give and every id an arrival already holds
    // (a program's own unflagged barriers keep theirs).
    let held = per_core
        .iter()
        .flat_map(|m| m.functions.iter().flat_map(|f| &f.insts))
        .filter_map(|i| if let Op::CoreBarrier(b) = &i.op { Some(b.id.saturating_add(1)) } else { None })
        .max()
        .unwrap_or(0);
    let base = u32::try_from(total.saturating_add(per_core.len())).unwrap_or(u32::MAX / 2).max(held);
    let mut next = base;
    for m in per_core.iter_mut() {
        for f in &mut m.functions {
            for i in &mut f.insts {
                if let Op::CoreBarrier(b) = &mut i.op
                    && chosen.binary_search(&b.group).is_ok()
                {
                    b.flagged = false;
                    b.id = next;
                    next = next.saturating_add(1);
                }
            }
        }
    }
    (next - base) as usize
}

/// `sem-pool`: every queue of core `k` declares `k` more semaphores than the
/// program did, and every core uses the highest semaphore of the merged pool
/// the linker must provide (per queue the largest core's count, seed 000
/// section 6; the pool is their sum): a POOL-engine `sem_signal` then
/// `sem_wait value 1` at the end of its function. Returns how many cores use it.
pub(crate) fn use_sem_pool(per_core: &mut [Module]) -> usize {
    let mut merged: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
    for (k, m) in per_core.iter_mut().enumerate() {
        for q in &mut m.queues {
            q.semaphores = q.semaphores.saturating_add(k as u32);
            let e = merged.entry(q.name.clone()).or_insert(0);
            *e = (*e).max(q.semaphores);
        }
    }
    let pool = merged.values().fold(0u32, |t, &c| t.saturating_add(c));
    let Some(idx) = pool.checked_sub(1) else { return 0 };
    let mut n = 0;
    for (k, m) in per_core.iter_mut().enumerate() {
        let core = m.attrs.neuron_core_id.unwrap_or(k as u32);
        let Some(f) = m.functions.iter_mut().rfind(|f| !f.blocks.is_empty()) else { continue };
        let block = lncsim_model::ir::BlockId::from_index(f.blocks.len() - 1);
        for (name, op) in [
            (format!("sem_pool_signal_c{core}"), Op::SemSignal { sem: idx }),
            (format!("sem_pool_wait_c{core}"), Op::SemWait { sem: idx, value: 1 }),
        ] {
            let mut i = Inst::new(name, Engine::Pool, op);
            i.core = Some(core);
            f.push_inst(block, i);
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use lncsim_model::ir::{Op, parse};
    use lncsim_model::split::split;

    #[test]
    fn partial_writes_keep_the_outputs_and_write_past_element_zero() {
        use lncsim_model::program::{GenConfig, SizeClass, generate, interpret, seeded_inputs};
        let mut split_any = 0;
        for seed in 0..16u64 {
            let p = generate(&GenConfig::new(seed, 1 + (seed % 4) as u32, SizeClass::Small));
            let inputs = seeded_inputs(&p, seed);
            let mut q = p.clone();
            let n = super::partial_writes(&mut q, seed);
            split_any += n;
            q.verify().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(q.functions[0].insts.len(), p.functions[0].insts.len() + n);
            assert_eq!(interpret(&q, &inputs).unwrap(), interpret(&p, &inputs).unwrap(), "seed {seed}");
            let past_zero = q.functions[0].insts.iter().filter_map(|i| i.write()).filter(|w| w.offset > 0).count();
            assert!(past_zero >= n, "seed {seed}: every split writes a second half past 0");
        }
        assert!(split_any > 16, "the feature split only {split_any} writes over 16 programs");
    }

    #[test]
    fn unflagged_ids_clear_every_id_an_arrival_already_holds() {
        // A program barrier keeps ids 6 and 7 (unflagged, above the renumbering range); a handoff adds the split's own group.
        let p = parse(
            "module u lnc 2\nloc x dram input i32[8]\nloc t dram internal i32[8]\nloc y dram output i32[8]\nfunc main\n  args x, y\n  block entry\n    a = dve relu x[0..8] -> t[0..8] core 0\n    b0 = sp barrier group 0 cores 0, 1 id 6 core 0 after a\n    b1 = sp barrier group 0 cores 0, 1 id 7 core 1\n    c = dve relu t[0..8] -> y[0..8] core 1 after b1\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let per_core = split(&p).unwrap_or_else(|e| panic!("{e}"));
        for seed in 0..8 {
            let mut ms = per_core.clone();
            assert!(super::unflag_barriers(&mut ms, seed) > 0);
            let mut ids: Vec<u32> = ms
                .iter()
                .flat_map(|m| &m.functions[0].insts)
                .filter_map(|i| if let Op::CoreBarrier(b) = &i.op { (!b.flagged).then_some(b.id) } else { None })
                .collect();
            ids.sort_unstable();
            let n = ids.len();
            ids.dedup();
            assert_eq!(ids.len(), n, "seed {seed}: unflagged ids unique: {ids:?}");
        }
    }
}
