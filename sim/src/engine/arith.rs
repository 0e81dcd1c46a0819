//! The simulator's own arithmetic on little-endian wrapping i32 bytes (not the
//! reference interpreter's: the interpreter is the oracle the simulator is
//! checked against, so they share no code). Shapes were checked at decode.

use lncsim_model::codegen::record::{Opcode, matmul_dims};

#[inline]
fn get(b: &[u8], i: usize) -> i32 {
    i32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
}

fn push_all(out: &mut Vec<u8>, vals: impl Iterator<Item = i32>) {
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Computes `op` into `out` (cleared first): `dst_len` result bytes from sources `a` and `b`.
pub(crate) fn compute(op: Opcode, imm: u32, dst_len: usize, a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let n = dst_len / 4;
    match op {
        Opcode::Add => {
            push_all(out, a.chunks_exact(4).zip(b.chunks_exact(4)).map(|(x, y)| get(x, 0).wrapping_add(get(y, 0))))
        }
        Opcode::Mul => {
            push_all(out, a.chunks_exact(4).zip(b.chunks_exact(4)).map(|(x, y)| get(x, 0).wrapping_mul(get(y, 0))))
        }
        Opcode::Relu => push_all(out, a.chunks_exact(4).map(|x| get(x, 0).max(0))),
        Opcode::Reduce => {
            let k = (a.len() / 4).checked_div(n).unwrap_or(0);
            push_all(out, (0..n).map(|i| (0..k).fold(0i32, |s, j| s.wrapping_add(get(a, i * k + j)))));
        }
        Opcode::MatMul => {
            let (m, k, nn) = matmul_dims(imm);
            let (m, k, nn) = (m as usize, k as usize, nn as usize);
            out.resize(4 * m * nn, 0);
            for r in 0..m {
                for c in 0..nn {
                    let mut s = 0i32;
                    for j in 0..k {
                        s = s.wrapping_add(get(a, r * k + j).wrapping_mul(get(b, j * nn + c)));
                    }
                    out[4 * (r * nn + c)..4 * (r * nn + c + 1)].copy_from_slice(&s.to_le_bytes());
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::codegen::record::matmul_imm;

    fn bytes(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn ints(b: &[u8]) -> Vec<i32> {
        b.chunks_exact(4).map(|c| get(c, 0)).collect()
    }

    #[test]
    fn kernels_compute_wrapping_i32() {
        let mut out = Vec::new();
        compute(Opcode::Add, 0, 8, &bytes(&[i32::MAX, 2]), &bytes(&[1, 3]), &mut out);
        assert_eq!(ints(&out), vec![i32::MIN, 5]);
        compute(Opcode::Mul, 0, 8, &bytes(&[-2, 1 << 30]), &bytes(&[3, 4]), &mut out);
        assert_eq!(ints(&out), vec![-6, 0]);
        compute(Opcode::Relu, 0, 12, &bytes(&[-1, 0, 7]), &[], &mut out);
        assert_eq!(ints(&out), vec![0, 0, 7]);
        compute(Opcode::Reduce, 0, 8, &bytes(&[1, 2, 3, 4, 5, 6]), &[], &mut out);
        assert_eq!(ints(&out), vec![6, 15]);
        // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]
        let imm = matmul_imm(2, 2, 2).unwrap_or(0);
        compute(Opcode::MatMul, imm, 16, &bytes(&[1, 2, 3, 4]), &bytes(&[5, 6, 7, 8]), &mut out);
        assert_eq!(ints(&out), vec![19, 22, 43, 50]);
    }
}
