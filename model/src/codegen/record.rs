//! The 64-byte instruction record: lncsim's documented reference encoding.
//!
//! Codegen writes records; the loader relocates them in device memory; the
//! simulator fetches and decodes them there. All fields little-endian.
//!
//! ```text
//! off size field
//!  0   1   opcode                  (Opcode)
//!  1   1   flags                   bit0 collective, bit1 signal valid, bit2 relocated
//!  2   1   signal semaphore        incremented by 1 when the instruction completes (if bit1)
//!  3   1   wait count              0..=2
//!  4   4   debug id                index of the IR instruction in its core function
//!  8   8   wait 0                  u8 semaphore, 3 pad, u32 value: run once sem >= value
//! 16   8   wait 1
//! 24  12   operand 0 (dst)         compiler form: u32 var_id, u32 byte offset, u32 byte length
//! 36  12   operand 1 (src0)        relocated form: u64 physical address, u32 byte length
//! 48  12   operand 2 (src1)
//! 60   4   imm                     per opcode (below)
//! ```
//!
//! Per opcode, operands and imm:
//! - `Dma`: operand 0 = (queue index, descriptor index, byte size) in the
//!   compiler form, never relocated (the descriptor is); imm 0.
//! - `Add`, `Mul`: dst, src0, src1. `Relu`, `Reduce`: dst, src0.
//! - `MatMul`: dst, src0, src1; imm = m | k << 10 | n << 20 (each <= 1023).
//! - `PseudoAddN` (a pseudo-instruction the loader expands): dst, src0, src1,
//!   imm = number of `Ext` records that follow, each holding up to three more
//!   sources in its operand slots (imm of an `Ext` = how many are used).
//! - `Barrier`: operand 0 = (slot id, group, participant count); imm 0.
//! - `SemWait`: waits only (a standalone wait when an instruction needs more than two).
//! - `SemSignal`: operand 0 = (semaphore, 0, 0): increments that semaphore.
//! - `SwitchQueue`: operand 0 = (queue index, instance, 0).
//! - `Return`: the end of the engine's stream.

/// Size of one record in bytes.
pub const RECORD_SIZE: usize = 64;
/// Most waits one record carries; more become standalone `SemWait` records.
pub const MAX_WAITS: usize = 2;

/// Record opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// Trigger a DMA descriptor on a queue and wait for it.
    Dma = 1,
    /// `dst = src0 + src1`.
    Add = 2,
    /// `dst = src0 * src1`.
    Mul = 3,
    /// `dst = max(src0, 0)`.
    Relu = 4,
    /// `dst[i] = sum of src0's i-th run`.
    Reduce = 5,
    /// `dst = src0 (m x k) * src1 (k x n)`.
    MatMul = 6,
    /// Arrive at a cross-core barrier and wait for the group.
    Barrier = 7,
    /// Increment a semaphore.
    SemSignal = 8,
    /// Wait for semaphores only.
    SemWait = 9,
    /// Switch a DMA queue's active instance.
    SwitchQueue = 10,
    /// End of stream.
    Return = 11,
    /// n-ary add, expanded by the loader into `Add` records.
    PseudoAddN = 12,
    /// Extra operands of the preceding pseudo-instruction.
    Ext = 13,
}

impl Opcode {
    /// The opcode with byte value `b`, if any.
    pub fn from_u8(b: u8) -> Option<Opcode> {
        use Opcode::*;
        Some(match b {
            1 => Dma,
            2 => Add,
            3 => Mul,
            4 => Relu,
            5 => Reduce,
            6 => MatMul,
            7 => Barrier,
            8 => SemSignal,
            9 => SemWait,
            10 => SwitchQueue,
            11 => Return,
            12 => PseudoAddN,
            13 => Ext,
            _ => return None,
        })
    }
}

/// Flag: the instruction is part of a collective.
pub const FLAG_COLLECTIVE: u8 = 1;
/// Flag: `signal` is valid.
pub const FLAG_SIGNAL: u8 = 2;
/// Flag: operands hold physical addresses (set by the loader's relocation).
pub const FLAG_RELOCATED: u8 = 4;

/// A semaphore wait: run once semaphore `sem` holds at least `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Wait {
    /// Semaphore index on this core.
    pub sem: u8,
    /// Value to reach.
    pub value: u32,
}

/// One 12-byte operand slot, in compiler form `(a, b, c)` = (var_id, offset,
/// length), or relocated form (physical address = a | b << 32, length = c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Operand {
    /// var_id (compiler form) or low 32 bits of the physical address.
    pub a: u32,
    /// Byte offset (compiler form) or high 32 bits of the physical address.
    pub b: u32,
    /// Byte length.
    pub c: u32,
}

impl Operand {
    /// A compiler-form operand.
    pub fn var(var_id: u32, offset: u32, len: u32) -> Self {
        Operand { a: var_id, b: offset, c: len }
    }

    /// A relocated operand.
    pub fn physical(pa: u64, len: u32) -> Self {
        Operand { a: pa as u32, b: (pa >> 32) as u32, c: len }
    }

    /// The physical address of a relocated operand.
    pub fn pa(&self) -> u64 {
        u64::from(self.a) | (u64::from(self.b) << 32)
    }
}

/// A decoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// What it does.
    pub opcode: Opcode,
    /// FLAG_* bits.
    pub flags: u8,
    /// The semaphore incremented on completion (when FLAG_SIGNAL is set).
    pub signal: u8,
    /// Waits before it runs (at most [`MAX_WAITS`]).
    pub waits: [Option<Wait>; MAX_WAITS],
    /// Index of the IR instruction in its core function.
    pub debug_id: u32,
    /// Operand slots.
    pub ops: [Operand; 3],
    /// Opcode-specific immediate.
    pub imm: u32,
}

/// Why 64 bytes are not a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Fewer than 64 bytes.
    #[error("record needs {RECORD_SIZE} bytes, got {0}")]
    Short(usize),
    /// Unknown opcode byte.
    #[error("unknown opcode {0:#04x}")]
    Opcode(u8),
    /// Wait count above the maximum.
    #[error("wait count {0} above {MAX_WAITS}")]
    Waits(u8),
}

impl Record {
    /// A record with no flags, waits or operands.
    pub fn new(opcode: Opcode, debug_id: u32) -> Self {
        Record { opcode, flags: 0, signal: 0, waits: [None; MAX_WAITS], debug_id, ops: [Operand::default(); 3], imm: 0 }
    }

    /// The semaphore this record signals on completion, if any.
    pub fn signal(&self) -> Option<u8> {
        (self.flags & FLAG_SIGNAL != 0).then_some(self.signal)
    }

    /// Encodes to 64 bytes.
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0] = self.opcode as u8;
        b[1] = self.flags;
        b[2] = self.signal;
        // The present waits, packed to the front (no allocation: one call per record).
        let waits = self.waits.iter().flatten();
        b[3] = waits.clone().count() as u8;
        b[4..8].copy_from_slice(&self.debug_id.to_le_bytes());
        for (i, w) in waits.enumerate() {
            let o = 8 + 8 * i;
            b[o] = w.sem;
            b[o + 4..o + 8].copy_from_slice(&w.value.to_le_bytes());
        }
        for (i, op) in self.ops.iter().enumerate() {
            let o = 24 + 12 * i;
            b[o..o + 4].copy_from_slice(&op.a.to_le_bytes());
            b[o + 4..o + 8].copy_from_slice(&op.b.to_le_bytes());
            b[o + 8..o + 12].copy_from_slice(&op.c.to_le_bytes());
        }
        b[60..64].copy_from_slice(&self.imm.to_le_bytes());
        b
    }

    /// Decodes 64 bytes.
    pub fn decode(b: &[u8]) -> Result<Record, RecordError> {
        if b.len() < RECORD_SIZE {
            return Err(RecordError::Short(b.len()));
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let opcode = Opcode::from_u8(b[0]).ok_or(RecordError::Opcode(b[0]))?;
        let n = b[3];
        if usize::from(n) > MAX_WAITS {
            return Err(RecordError::Waits(n));
        }
        let mut waits = [None; MAX_WAITS];
        for (i, w) in waits.iter_mut().enumerate().take(usize::from(n)) {
            *w = Some(Wait { sem: b[8 + 8 * i], value: u32_at(12 + 8 * i) });
        }
        let op = |i: usize| Operand { a: u32_at(24 + 12 * i), b: u32_at(28 + 12 * i), c: u32_at(32 + 12 * i) };
        Ok(Record {
            opcode,
            flags: b[1],
            signal: b[2],
            waits,
            debug_id: u32_at(4),
            ops: [op(0), op(1), op(2)],
            imm: u32_at(60),
        })
    }
}

/// Packs matmul dimensions into an imm (each must be at most 1023).
pub fn matmul_imm(m: u32, k: u32, n: u32) -> Option<u32> {
    (m <= 1023 && k <= 1023 && n <= 1023).then_some(m | (k << 10) | (n << 20))
}

/// Unpacks matmul dimensions from an imm.
pub fn matmul_dims(imm: u32) -> (u32, u32, u32) {
    (imm & 1023, (imm >> 10) & 1023, (imm >> 20) & 1023)
}

/// Size of one DMA descriptor in device memory.
pub const DESCRIPTOR_SIZE: usize = 32;

/// A DMA descriptor as the loader writes it into an engine's ring in device
/// memory, after relocation (seed 002 §Stage 5, sub-layer b): absolute
/// physical addresses. Layout: u64 src, u64 dst, u64 size, u32 queue, u32 flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DeviceDescriptor {
    /// Source physical address.
    pub src: u64,
    /// Destination physical address.
    pub dst: u64,
    /// Bytes to move.
    pub size: u64,
    /// Queue index on its core.
    pub queue: u32,
    /// Reserved, zero.
    pub flags: u32,
}

impl DeviceDescriptor {
    /// Encodes to 32 bytes.
    pub fn encode(&self) -> [u8; DESCRIPTOR_SIZE] {
        let mut b = [0u8; DESCRIPTOR_SIZE];
        b[0..8].copy_from_slice(&self.src.to_le_bytes());
        b[8..16].copy_from_slice(&self.dst.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..28].copy_from_slice(&self.queue.to_le_bytes());
        b[28..32].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// Decodes 32 bytes (`None` when shorter).
    pub fn decode(b: &[u8]) -> Option<DeviceDescriptor> {
        let b = b.get(..DESCRIPTOR_SIZE)?;
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
        Some(DeviceDescriptor {
            src: u64_at(0),
            dst: u64_at(8),
            size: u64_at(16),
            queue: u32_at(24),
            flags: u32_at(28),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_bytes_are_rejected() {
        let mut r = Record::new(Opcode::MatMul, 7);
        r.flags = FLAG_SIGNAL | FLAG_COLLECTIVE;
        r.signal = 2;
        r.waits = [Some(Wait { sem: 1, value: 9 }), Some(Wait { sem: 4, value: 1 })];
        r.ops = [Operand::var(3, 64, 16), Operand::physical(0x1_2345_6789, 8), Operand::var(1, 0, 4)];
        r.imm = matmul_imm(2, 3, 4).unwrap();
        let b = r.encode();
        assert_eq!(Record::decode(&b), Ok(r));
        assert_eq!(matmul_dims(r.imm), (2, 3, 4));
        assert_eq!(r.ops[1].pa(), 0x1_2345_6789);
        assert_eq!(Record::decode(&b[..10]), Err(RecordError::Short(10)));
        let mut bad = b;
        bad[0] = 0xee;
        assert_eq!(Record::decode(&bad), Err(RecordError::Opcode(0xee)));
        bad = b;
        bad[3] = 3;
        assert_eq!(Record::decode(&bad), Err(RecordError::Waits(3)));
        assert_eq!(matmul_imm(1024, 1, 1), None);
    }
}
