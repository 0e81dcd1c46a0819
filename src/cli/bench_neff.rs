//! `lncsim bench neff`: our full NEFF parse against the bare cost of inflating
//! and walking the same bytes with flate2 + tar (no checks), medians of N runs.
//! Target (issue 5): full parse >= 0.8x the bare throughput; exits 1 when
//! it is missed.

use std::io::Read;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use lncsim_model::neff::synth::{SynthSpec, members};
use lncsim_model::neff::{Neff, NeffHeader, NeffWriter, ReadOptions};

use super::CliError;

/// Arguments of `lncsim bench neff`.
#[derive(Debug, Args)]
pub struct BenchNeffArgs {
    /// Approximate member data size in MiB.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=1024), allow_negative_numbers = true)]
    pub mib: u32,
    /// Timed runs of each variant (the median is reported).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=1000), allow_negative_numbers = true)]
    pub runs: u32,
    /// Seed of the synthetic NEFF's contents.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The bare baseline: GzDecoder -> tar::Archive -> every entry read into a Vec.
fn bare(payload: &[u8]) -> Result<(usize, u64), String> {
    let gz = flate2::read::GzDecoder::new(payload);
    let mut ar = tar::Archive::new(gz);
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut total = 0u64;
    for e in ar.entries().map_err(|e| e.to_string())? {
        let mut e = e.map_err(|e| e.to_string())?;
        let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
        let mut v = Vec::new();
        e.read_to_end(&mut v).map_err(|e| e.to_string())?;
        total += v.len() as u64;
        out.push((name, v));
    }
    Ok((out.len(), total))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn mb_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

/// Builds the NEFF, times each variant `runs` times (interleaved), prints medians.
pub fn run(a: BenchNeffArgs) -> Result<ExitCode, CliError> {
    let t0 = Instant::now();
    let table = members(SynthSpec::about_mib(a.mib), a.seed);
    let file = NeffWriter::new("bench.neff", 2).write(&table).map_err(|e| CliError::BadInput(e.to_string()))?;
    let h = NeffHeader::parse(&file).map_err(|e| CliError::BadInput(e.to_string()))?;
    let payload = &file[h.header_size as usize..];
    println!(
        "NEFF: {} members, {:.1} MB member data, {:.1} MB file, built in {:.2} s; flate2 backend: {}",
        table.len(),
        table.total_bytes() as f64 / 1e6,
        file.len() as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        lncsim_model::neff::gzip::BACKEND
    );
    let check = |ok: bool, what: &str| if ok { Ok(()) } else { Err(CliError::CheckFailed(what.to_owned())) };
    let (n, bytes) = bare(payload).map_err(CliError::CheckFailed)?;
    check(n == table.len() && bytes == table.total_bytes(), "baseline saw a different archive")?;
    let (mut t_bare, mut t_ours, mut t_hash) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..a.runs.max(1) {
        let s = Instant::now();
        let r = bare(payload);
        t_bare.push(s.elapsed());
        check(r.is_ok(), "baseline failed")?;
        let s = Instant::now();
        let r = Neff::parse(&file, &ReadOptions::default());
        t_ours.push(s.elapsed());
        check(r.as_ref().is_ok_and(|n| n.members.len() == table.len()), "full parse failed")?;
        let s = Instant::now();
        let r = Neff::parse(&file, &ReadOptions { verify_hash: true, ..ReadOptions::default() });
        t_hash.push(s.elapsed());
        check(r.is_ok(), "full parse with hash failed")?;
    }
    let (b, o, hsh) = (median(t_bare), median(t_ours), median(t_hash));
    let data = table.total_bytes();
    println!("median of {} runs, throughput = member bytes / time:", a.runs.max(1));
    println!("  bare flate2 + tar walk        {:>8.1} ms  {:>7.1} MB/s", b.as_secs_f64() * 1e3, mb_s(data, b));
    println!("  full parse (no hash check)    {:>8.1} ms  {:>7.1} MB/s", o.as_secs_f64() * 1e3, mb_s(data, o));
    println!("  full parse + MD5 hash check   {:>8.1} ms  {:>7.1} MB/s", hsh.as_secs_f64() * 1e3, mb_s(data, hsh));
    let ratio = b.as_secs_f64() / o.as_secs_f64();
    println!("ratio full/bare = {ratio:.2}x (target >= 0.80x): {}", if ratio >= 0.8 { "PASS" } else { "FAIL" });
    println!("ratio full+hash/bare = {:.2}x", b.as_secs_f64() / hsh.as_secs_f64());
    if ratio < 0.8 {
        return Err(CliError::CheckFailed(format!("full parse at {ratio:.2}x the bare throughput (target >= 0.80x)")));
    }
    Ok(ExitCode::SUCCESS)
}
