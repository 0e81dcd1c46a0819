//! The documented cost model (issue 7, item 2): every instruction takes a
//! fixed cost per opcode plus its bytes over a bandwidth; DMA transfers share
//! their queue's bandwidth. All figures are nanoseconds and bytes per
//! nanosecond (1 byte/ns = 1 GB/s); the defaults are round numbers of the
//! right order for a NeuronCore, not measurements.
//!
//! | record | latency |
//! |---|---|
//! | `Add`, `Mul`, `Relu`, `Reduce` | `elementwise_ns + ceil(bytes / engine_bytes_per_ns)`, bytes = all operand lengths |
//! | `MatMul` | `matmul_ns + ceil(m*k*n / macs_per_ns) + ceil(bytes / engine_bytes_per_ns)` |
//! | `Dma` | waits for its queue, then `dma_fixed_ns + ceil(size / dma_bytes_per_ns)`; the queue is busy for the transfer part |
//! | `Barrier` | `sync_ns` to arrive; the group releases `barrier_ns` after its last arrival |
//! | `SemWait`, `SemSignal`, `SwitchQueue`, `Return` | `sync_ns` |
//!
//! Jitter (when a run asks for schedule exploration) adds a seeded extra of
//! `0..=latency * pct / 100 + floor_ns` to every latency (see [`crate::Jitter`]).

use lncsim_model::codegen::record::{Opcode, matmul_dims};

/// Fixed costs and bandwidths of the simulated core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostModel {
    /// Fixed cost of an elementwise compute record (`Add`, `Mul`, `Relu`, `Reduce`).
    pub elementwise_ns: u64,
    /// Fixed cost of a `MatMul` record.
    pub matmul_ns: u64,
    /// Multiply-accumulates per nanosecond of the PE array.
    pub macs_per_ns: u64,
    /// Bytes per nanosecond a compute engine reads and writes.
    pub engine_bytes_per_ns: u64,
    /// Fixed cost of a DMA transfer (descriptor fetch and HBM latency).
    pub dma_fixed_ns: u64,
    /// Bytes per nanosecond of one DMA queue.
    pub dma_bytes_per_ns: u64,
    /// Cost of a synchronisation record and of a barrier arrival.
    pub sync_ns: u64,
    /// Cross-core latency from a barrier group's last arrival to its release.
    pub barrier_ns: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            elementwise_ns: 40,
            matmul_ns: 64,
            macs_per_ns: 256,
            engine_bytes_per_ns: 64,
            dma_fixed_ns: 400,
            dma_bytes_per_ns: 32,
            sync_ns: 4,
            barrier_ns: 300,
        }
    }
}

fn over(bytes: u64, per_ns: u64) -> u64 {
    bytes.div_ceil(per_ns.max(1))
}

impl CostModel {
    /// Latency of a non-DMA record whose memory operands total `bytes`.
    pub fn latency(&self, op: Opcode, bytes: u64, imm: u32) -> u64 {
        match op {
            Opcode::Add | Opcode::Mul | Opcode::Relu | Opcode::Reduce => {
                self.elementwise_ns + over(bytes, self.engine_bytes_per_ns)
            }
            Opcode::MatMul => {
                let (m, k, n) = matmul_dims(imm);
                let macs = u64::from(m) * u64::from(k) * u64::from(n);
                self.matmul_ns + over(macs, self.macs_per_ns) + over(bytes, self.engine_bytes_per_ns)
            }
            Opcode::Dma => self.dma_fixed_ns,
            _ => self.sync_ns,
        }
    }

    /// Time a DMA of `size` bytes occupies its queue.
    pub fn dma_transfer(&self, size: u64) -> u64 {
        over(size, self.dma_bytes_per_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::codegen::record::matmul_imm;

    #[test]
    fn latencies_follow_the_documented_formulas() {
        let c = CostModel::default();
        assert_eq!(c.latency(Opcode::Add, 3 * 256, 0), 40 + 12);
        assert_eq!(c.latency(Opcode::Relu, 1, 0), 41);
        let imm = matmul_imm(16, 16, 16).unwrap_or(0);
        assert_eq!(c.latency(Opcode::MatMul, 3 * 1024, imm), 64 + 16 + 48);
        assert_eq!(c.latency(Opcode::SemSignal, 0, 0), 4);
        assert_eq!(c.dma_transfer(64), 2);
        assert_eq!(c.dma_transfer(65), 3);
    }
}
