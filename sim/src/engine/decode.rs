//! Decoding one engine's fetched records into the simulator's instruction
//! form: opcode checks (pseudo-instructions, unrelocated operands, operand
//! shapes, semaphore and queue ranges, DMA descriptor agreement) and the
//! memory accesses each record makes, with the var each access named.

use lncsim_model::codegen::record::{DeviceDescriptor, FLAG_RELOCATED, Opcode, Record, matmul_dims};

use crate::check::violation::Illegal;
use crate::engine::cost::CostModel;
use crate::engine::vars::NONE;

/// One memory access of an instruction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemRef {
    /// Physical address.
    pub pa: u64,
    /// Length in bytes.
    pub len: u64,
    /// True for the destination.
    pub write: bool,
    /// var_id the access named on its core (NONE when unknown).
    pub var_id: u32,
    /// Located in the mirror: (region, offset); `None` when unmapped.
    pub loc: Option<(u32, usize)>,
    /// Global var index (NONE when unknown).
    pub var: u32,
    /// Ownership identity of the var (NONE when unknown).
    pub owner: u32,
    /// The access leaves its var.
    pub out_of_var: bool,
    /// A shared tensor whose var is not where the first core has it: the canonical address of this access.
    pub unequal: Option<u64>,
    /// Through a shared tensor's var on another core than the first one declaring
    /// it: an access the equalization check compares (counted as it runs).
    pub compared: bool,
}

/// A wait `sem >= value`, with its slot in the semaphore's wanted-value list.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WaitRef {
    pub sem: u8,
    pub value: u32,
    pub slot: u32,
}

/// A decoded record.
#[derive(Clone, Debug)]
pub(crate) struct Instr {
    pub op: Option<Opcode>,
    pub signal: Option<u8>,
    pub waits: [Option<WaitRef>; 2],
    pub debug_id: u32,
    pub imm: u32,
    /// Memory accesses; index 0 is the destination when there is one.
    pub mem: [MemRef; 3],
    pub nmem: u8,
    /// `SemSignal`: the semaphore it increments.
    pub sem_signal: Option<u8>,
    /// `Barrier`: (slot, group, participant count).
    pub barrier: (u32, u32, u32),
    /// `Dma`: queue index; `SwitchQueue`: (queue, instance) in `barrier.0/1` is not used.
    pub queue: u32,
    /// Base latency from the cost model (DMA: the fixed part).
    pub latency: u64,
    /// Why it cannot run (boxed: rare, and it keeps every record small).
    pub illegal: Option<Box<Illegal>>,
}

impl Instr {
    fn new(debug_id: u32) -> Instr {
        Instr {
            op: None,
            signal: None,
            waits: [None; 2],
            debug_id,
            imm: 0,
            mem: [MemRef::default(); 3],
            nmem: 0,
            sem_signal: None,
            barrier: (0, 0, 0),
            queue: 0,
            latency: 0,
            illegal: None,
        }
    }

    /// The memory accesses.
    pub(crate) fn mems(&self) -> &[MemRef] {
        &self.mem[..usize::from(self.nmem)]
    }
}

/// What decoding needs to know about the record's core and stream.
pub(crate) struct DecodeCtx<'a> {
    pub semaphores: u32,
    pub queues: u32,
    pub ring: &'a [Option<DeviceDescriptor>],
    pub descriptor_vars: &'a [(u32, u32)],
    pub cost: &'a CostModel,
}

fn mem(pa: u64, len: u64, write: bool, var_id: Option<u32>) -> MemRef {
    MemRef { pa, len, write, var_id: var_id.unwrap_or(NONE), var: NONE, owner: NONE, ..MemRef::default() }
}

/// Checks compute operand lengths: (dst, srcs) in bytes.
fn shapes(op: Opcode, imm: u32, lens: &[u64]) -> Result<(), String> {
    if lens.iter().any(|l| l % 4 != 0) {
        return Err(format!("lengths {lens:?} are not whole i32 elements"));
    }
    let d = lens[0];
    let ok = match op {
        Opcode::Add | Opcode::Mul => lens[1] == d && lens[2] == d,
        Opcode::Relu => lens[1] == d,
        Opcode::Reduce => d > 0 && lens[1].is_multiple_of(d),
        Opcode::MatMul => {
            let (m, k, n) = matmul_dims(imm);
            let (m, k, n) = (u64::from(m), u64::from(k), u64::from(n));
            d == 4 * m * n && lens[1] == 4 * m * k && lens[2] == 4 * k * n
        }
        _ => true,
    };
    if ok { Ok(()) } else { Err(format!("{op:?} with byte lengths {lens:?} (imm {imm:#x})")) }
}

/// Decodes record `bytes` (64 bytes) with the operand vars the loader recorded.
pub(crate) fn decode(bytes: &[u8], op_vars: [Option<u32>; 3], ctx: &DecodeCtx<'_>) -> Instr {
    let r = match Record::decode(bytes) {
        Ok(r) => r,
        Err(e) => {
            let mut i = Instr::new(u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]));
            i.illegal = Some(Box::new(Illegal::Decode(e.to_string())));
            return i;
        }
    };
    let mut i = Instr::new(r.debug_id);
    i.op = Some(r.opcode);
    i.imm = r.imm;
    i.signal = r.signal();
    for (slot, w) in i.waits.iter_mut().zip(r.waits) {
        *slot = w.map(|w| WaitRef { sem: w.sem, value: w.value, slot: 0 });
    }
    if let Err(e) = body(&r, op_vars, ctx, &mut i) {
        i.illegal = Some(Box::new(e));
    }
    let sems = r.waits.iter().flatten().map(|w| w.sem).chain(i.signal).chain(i.sem_signal);
    if let Some(s) = sems.into_iter().find(|&s| u32::from(s) >= ctx.semaphores) {
        i.illegal.get_or_insert_with(|| Box::new(Illegal::Semaphore(u32::from(s))));
    }
    let bytes: u64 = i.mems().iter().map(|m| m.len).sum();
    i.latency = ctx.cost.latency(r.opcode, bytes, r.imm);
    i
}

fn body(r: &Record, op_vars: [Option<u32>; 3], ctx: &DecodeCtx<'_>, i: &mut Instr) -> Result<(), Illegal> {
    match r.opcode {
        Opcode::PseudoAddN | Opcode::Ext => Err(Illegal::Pseudo(r.opcode)),
        Opcode::Add | Opcode::Mul | Opcode::MatMul | Opcode::Relu | Opcode::Reduce => {
            if r.flags & FLAG_RELOCATED == 0 {
                return Err(Illegal::Unrelocated);
            }
            let n = if matches!(r.opcode, Opcode::Relu | Opcode::Reduce) { 2 } else { 3 };
            let lens = r.ops.map(|o| u64::from(o.c));
            shapes(r.opcode, r.imm, &lens[..n]).map_err(Illegal::Operands)?;
            for (k, (op, var)) in r.ops.iter().zip(op_vars).take(n).enumerate() {
                i.mem[k] = mem(op.pa(), u64::from(op.c), k == 0, var);
            }
            i.nmem = n as u8;
            Ok(())
        }
        Opcode::Dma => {
            let (q, idx, size) = (r.ops[0].a, r.ops[0].b, u64::from(r.ops[0].c));
            if q >= ctx.queues {
                return Err(Illegal::Queue(q));
            }
            let ring_len = ctx.ring.len();
            let d = ctx
                .ring
                .get(idx as usize)
                .copied()
                .ok_or_else(|| Illegal::Descriptor(format!("descriptor {idx} past the ring of {ring_len}")))?;
            let d = d.ok_or_else(|| Illegal::Descriptor(format!("descriptor {idx} is unreadable")))?;
            if d.queue != q || d.size != size {
                return Err(Illegal::Descriptor(format!(
                    "record says queue {q}, {size} bytes; descriptor {idx} says queue {}, {} bytes",
                    d.queue, d.size
                )));
            }
            let (sv, dv) = ctx.descriptor_vars.get(idx as usize).map_or((None, None), |&(s, d)| (Some(s), Some(d)));
            i.mem[0] = mem(d.dst, size, true, dv);
            i.mem[1] = mem(d.src, size, false, sv);
            i.nmem = 2;
            i.queue = q;
            Ok(())
        }
        Opcode::Barrier => {
            i.barrier = (r.ops[0].a, r.ops[0].b, r.ops[0].c);
            Ok(())
        }
        Opcode::SemSignal => {
            let s = r.ops[0].a;
            if s >= ctx.semaphores.min(256) {
                return Err(Illegal::Semaphore(s));
            }
            i.sem_signal = Some(s as u8);
            Ok(())
        }
        Opcode::SwitchQueue => {
            if r.ops[0].a >= ctx.queues {
                return Err(Illegal::Queue(r.ops[0].a));
            }
            i.queue = r.ops[0].a;
            Ok(())
        }
        Opcode::SemWait | Opcode::Return => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::codegen::record::{Operand, Wait, matmul_imm};

    fn ctx<'a>(ring: &'a [Option<DeviceDescriptor>], cost: &'a CostModel) -> DecodeCtx<'a> {
        DecodeCtx { semaphores: 6, queues: 1, ring, descriptor_vars: &[(1, 2)], cost }
    }

    fn relocated(op: Opcode, lens: [u32; 3]) -> Record {
        let mut r = Record::new(op, 9);
        r.flags = FLAG_RELOCATED;
        r.ops = lens.map(|l| Operand::physical(0x1000, l));
        r
    }

    fn illegal(r: &Record, ring: &[Option<DeviceDescriptor>]) -> Option<Illegal> {
        let cost = CostModel::default();
        decode(&r.encode(), [None; 3], &ctx(ring, &cost)).illegal.map(|b| *b)
    }

    #[test]
    fn good_records_decode_with_their_accesses() {
        let cost = CostModel::default();
        let r = relocated(Opcode::Add, [64, 64, 64]);
        let i = decode(&r.encode(), [Some(1), Some(2), Some(3)], &ctx(&[], &cost));
        assert!(i.illegal.is_none());
        assert_eq!(i.mems().len(), 3);
        assert!(i.mem[0].write && !i.mem[1].write);
        assert_eq!((i.mem[0].var_id, i.mem[2].var_id), (1, 3));
        let d = DeviceDescriptor { src: 0x10, dst: 0x20, size: 8, queue: 0, flags: 0 };
        let mut r = Record::new(Opcode::Dma, 1);
        r.ops[0] = Operand::var(0, 0, 8);
        let i = decode(&r.encode(), [None; 3], &ctx(&[Some(d)], &cost));
        assert!(i.illegal.is_none());
        assert_eq!((i.mem[0].pa, i.mem[1].pa, i.mem[0].var_id, i.mem[1].var_id), (0x20, 0x10, 2, 1));
    }

    #[test]
    fn broken_records_are_illegal() {
        let mut bytes = relocated(Opcode::Add, [64, 64, 64]).encode();
        bytes[0] = 0xee;
        let cost = CostModel::default();
        assert!(matches!(decode(&bytes, [None; 3], &ctx(&[], &cost)).illegal.as_deref(), Some(Illegal::Decode(_))));
        assert_eq!(illegal(&Record::new(Opcode::Ext, 0), &[]), Some(Illegal::Pseudo(Opcode::Ext)));
        let mut r = relocated(Opcode::Mul, [64, 64, 64]);
        r.flags = 0;
        assert_eq!(illegal(&r, &[]), Some(Illegal::Unrelocated));
        assert!(matches!(illegal(&relocated(Opcode::Add, [64, 60, 64]), &[]), Some(Illegal::Operands(_))));
        assert!(matches!(illegal(&relocated(Opcode::Reduce, [12, 16, 0]), &[]), Some(Illegal::Operands(_))));
        let mut mm = relocated(Opcode::MatMul, [16, 16, 16]);
        mm.imm = matmul_imm(2, 3, 2).unwrap_or(0);
        assert!(matches!(illegal(&mm, &[]), Some(Illegal::Operands(_))));
        let mut w = Record::new(Opcode::SemWait, 0);
        w.waits[0] = Some(Wait { sem: 6, value: 1 });
        assert_eq!(illegal(&w, &[]), Some(Illegal::Semaphore(6)));
        let mut s = Record::new(Opcode::SemSignal, 0);
        s.ops[0] = Operand::var(7, 0, 0);
        assert_eq!(illegal(&s, &[]), Some(Illegal::Semaphore(7)));
        let mut d = Record::new(Opcode::Dma, 0);
        d.ops[0] = Operand::var(1, 0, 8);
        assert_eq!(illegal(&d, &[]), Some(Illegal::Queue(1)));
        d.ops[0] = Operand::var(0, 3, 8);
        assert!(matches!(illegal(&d, &[]), Some(Illegal::Descriptor(m)) if m.contains("past the ring")));
        let desc = DeviceDescriptor { src: 0, dst: 0, size: 16, queue: 0, flags: 0 };
        d.ops[0] = Operand::var(0, 0, 8);
        assert!(matches!(illegal(&d, &[Some(desc)]), Some(Illegal::Descriptor(m)) if m.contains("16 bytes")));
        let mut q = Record::new(Opcode::SwitchQueue, 0);
        q.ops[0] = Operand::var(4, 0, 0);
        assert_eq!(illegal(&q, &[]), Some(Illegal::Queue(4)));
    }
}
