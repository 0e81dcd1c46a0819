//! `lncsim neff inspect FILE.neff [--json] [--verify-hash]`.
//!
//! After the summary, the loader's number bounds (`load::mem_ref::refuse_absurd_numbers`:
//! var ids, sizes, offsets, alignments) are applied to every subgraph: a NEFF
//! that `nrt_load` would refuse for them is reported with the loader's own
//! message and exits 1, so inspect never passes what load refuses.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::load::mem_ref::refuse_absurd_numbers;
use lncsim_model::neff::container::payload;
use lncsim_model::neff::{Neff, NeffError, ReadOptions, Summary};

use super::{CliError, read_bytes, shown};

/// Arguments of `lncsim neff inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The NEFF file (`-` reads standard input).
    pub file: PathBuf,
    /// Print one JSON object (fixed key order) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Fail (exit 1) when the stored hash does not match the payload, as NEURON_RT_VALIDATE_HASH does.
    #[arg(long)]
    pub verify_hash: bool,
}

/// Parses the NEFF, prints its summary; the hash status is always reported.
pub fn run(a: InspectArgs) -> Result<ExitCode, CliError> {
    let bytes = read_bytes(&a.file)?;
    let opts = ReadOptions { verify_hash: a.verify_hash, ..ReadOptions::default() };
    let neff = Neff::parse(&bytes, &opts).map_err(|e| match e {
        NeffError::HashMismatch { .. } => CliError::CheckFailed(format!("{}: {e}", shown(&a.file))),
        e => CliError::BadInput(format!("{}: {e} [{}]", shown(&a.file), e.status())),
    })?;
    let s = Summary::new(&neff, bytes.len() as u64, payload(&bytes, &neff.header));
    if a.json {
        let text = serde_json::to_string_pretty(&s).map_err(|e| CliError::BadInput(e.to_string()))?;
        println!("{text}");
    } else {
        print_text(&s);
    }
    for sg in &neff.subgraphs {
        if let Err(e) = refuse_absurd_numbers(sg) {
            let (file, status) = (shown(&a.file), e.status);
            return Err(CliError::BadInput(format!("{file}: nrt_load would refuse it: {} [{status}]", e.message)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(s: &Summary) {
    let h = &s.header;
    println!("file size        {}", s.file_size);
    println!("pkg_version      {} (hash {} {})", h.pkg_version, s.hash_algorithm, s.hash);
    println!("header_size      {}", h.header_size);
    println!("data_size        {}", h.data_size);
    println!("neff_version     {}.{}", h.neff_version_major, h.neff_version_minor);
    println!("build_version    {:?}", h.neff_build_version);
    println!("name             {:?}", h.name);
    println!("uuid             {}", h.uuid);
    println!("hash             {}", h.hash);
    println!("num_tpb          {} (requested {}, per node {:?})", h.num_tpb, h.requested_tpb_count, h.tpb_per_node);
    println!("feature_bits     {}", h.feature_bits_hex);
    println!("lnc_size         {}", h.lnc_size);
    println!("compression      {} ({} stream bytes, {} inflated)", s.compression, s.stream_len, s.inflated_len);
    println!("members          {}", s.member_count);
    for m in &s.members {
        println!("  {:>10}  {}", m.size, m.name);
    }
    println!(
        "kelf             {} version {} target {} graphs {:?}",
        s.kelf.member, s.kelf.version, s.kelf.target, s.kelf.graphs
    );
    for sg in &s.subgraphs {
        println!("subgraph {} ({})", sg.name, sg.def);
        for v in &sg.vars {
            let mut extra = String::new();
            if let Some(f) = &v.file_name {
                extra += &format!(" file={f}");
            }
            if let Some(o) = v.backing_variable_off {
                extra += &format!(" backing_off={o}");
            }
            let size = v.size.map_or("-".to_owned(), |s| s.to_string());
            println!("  var   {:>3} {:<13} {:>10}  {}{}", v.var_id, v.var_type, size, v.name, extra);
        }
        for q in &sg.queues {
            println!(
                "  queue {} type={} owner={} num_queues={} semaphores={:?}",
                q.name, q.queue_type, q.owner, q.num_queues, q.semaphore_set
            );
        }
        for e in &sg.engines {
            println!(
                "  engine {:<4} {} {} instructions ({} bytes), {} dma",
                e.engine, e.instr, e.instructions, e.instr_bytes, e.dma_descriptors
            );
        }
    }
}
