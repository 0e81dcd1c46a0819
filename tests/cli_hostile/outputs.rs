//! Output paths (checked first, written all or nothing), bad argument values,
//! `--json` staying one JSON object, and `--help` on every subcommand.

use lncsim_model::neff::NeffHeader;

use super::{file, good_program, program, rejected, run, run_with, scratch, usage_error};

/// Entries of `dir`, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn output_paths_are_checked_before_work_and_never_half_written() {
    let d = scratch("outputs");
    let good = file(&d, "good.bir", &good_program());
    // A location named as codegen's scratch variable: valid IR, refused by codegen.
    let reserved = program(
        "1",
        "loc __scratch dram internal i32[16]",
        "    i0 = dve relu x[0..16] -> __scratch[0..16] core 0\n    i1 = dve relu __scratch[0..16] -> out[0..16] core 0 after i0",
    );
    let fails = file(&d, "fails.bir", &reserved);
    let missing = d.join("no/such/dir/x.neff");
    rejected(&["neff", "pack", &good, "-o", missing.to_str().unwrap()], "directory");
    rejected(&["neff", "pack", &good, "-o", d.to_str().unwrap()], "is a directory");
    // A pack that fails in codegen keeps the old file and leaves no temporary behind.
    let old = file(&d, "old.neff", b"old contents");
    let before = listing(&d);
    rejected(&["neff", "pack", &fails, "-o", &old], "location name `__scratch` is reserved");
    assert_eq!(std::fs::read(&old).unwrap(), b"old contents");
    assert_eq!(listing(&d), before, "no temporary left");
    // Success replaces it whole; `-o -` writes the NEFF to stdout and the summary to stderr.
    let o = run(&["neff", "pack", &good, "-o", &old]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(NeffHeader::parse(&std::fs::read(&old).unwrap()).is_ok());
    assert_eq!(listing(&d), before);
    let o = run(&["neff", "pack", &good, "-o", "-"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.raw, std::fs::read(&old).unwrap(), "same bytes to stdout");
    assert!(o.stderr.starts_with("-: ") && o.stderr.contains("2 subgraphs"), "{}", o.stderr);
    // run --trace: a bad path fails before the run (nothing on stdout); no trace is never claimed.
    let o = rejected(&["run", "--trace", missing.to_str().unwrap()], "--trace");
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let trace = d.join("t.json");
    let o = rejected(&["run", &fails, "--trace", trace.to_str().unwrap()], "1 failure(s)");
    assert!(o.stdout.contains("not written: the simulation did not run"), "{}", o.stdout);
    assert!(!trace.exists());
    // The other writers.
    let csv = file(&d, "p.csv", b"id,lower,upper,size\na,0,5,4\n");
    rejected(&["alloc", &csv, "--out", missing.to_str().unwrap()], "--out");
    rejected(&["alloc", &csv, "--svg", d.to_str().unwrap()], "is a directory");
    for cmd in ["compile", "link"] {
        rejected(&[cmd, &good, "--link-dir", &csv], "--link-dir");
    }
    assert_eq!(std::fs::read(&csv).unwrap(), b"id,lower,upper,size\na,0,5,4\n");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_values_are_usage_errors_or_one_line_with_a_reason() {
    let d = scratch("values");
    let good = file(&d, "good.bir", &good_program());
    for cmd in [vec!["gen"], vec!["run"], vec!["split", &good], vec!["compile", &good], vec!["link", &good]] {
        for n in ["0", "257", "-1"] {
            let mut args = cmd.clone();
            args.extend(["--cores", n]);
            usage_error(&args, "is not in 1..=256");
        }
    }
    usage_error(&["run", &good, "--cores", "8"], "cannot be used with");
    usage_error(&["gen", "--seed", "-5"], "is negative");
    usage_error(&["gen", "--seed", "18446744073709551616"], "out of range");
    usage_error(&["load", &good, "--fail-alloc", "-1"], "is negative");
    usage_error(&["alloc", &good, "--capacity", "-1"], "is negative");
    usage_error(&["compile", &good, "--dram-region-mib", "-1"], "is not in 1..=16777216");
    usage_error(&["swarm", "--seeds", "-1..2"], "is negative");
    usage_error(&["swarm", "--seeds", "5..5"], "empty range");
    usage_error(&["run", "--loaders", "65"], "is not in 0..=64");
    // Values clap cannot judge are usage errors too (exit 2), in our one-line form.
    let ours = |args: &[&str], want: &str| {
        let o = run(args);
        assert_eq!(o.code, Some(2), "{args:?}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{args:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("lncsim: error: ") && o.stderr.contains(want), "{args:?}: {}", o.stderr);
    };
    ours(&["run", "--faults", "nope"], "unknown fault `nope`");
    ours(&["run", "--faults", "load-alloc=1,load-copyin=2"], "at most one load-alloc/load-copyin fault");
    ours(&["run", "--faults", "load-alloc=-1"], "is negative");
    ours(&["run", "--plant", "nope"], "duplicate-barrier-id");
    ours(&["swarm", "--seeds", "0..2", "--plant", "nope"], "duplicate-barrier-id");
    // bench: argument errors only (no benchmark runs here).
    usage_error(&["bench", "alloc", "--reps", "0"], "is not in 1..=1000");
    usage_error(&["bench", "alloc", "--max-intervals", "18446744073709551615"], "invalid value");
    usage_error(&["bench", "neff", "--mib", "5000"], "is not in 0..=1024");
    usage_error(&["bench", "neff", "--runs", "0"], "is not in 1..=1000");
    usage_error(&["bench", "load", "--loads", "0"], "is not in 1..=1000000");
    usage_error(&["bench", "sim", "--elems", "18446744073709551615"], "is not in 1..=1048576");
    usage_error(&["bench", "sim", "--ops", "0"], "is not in 1..=100000");
    usage_error(&["bench", "link", "--runs", "-1"], "is not in 1..=50");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn json_output_is_one_valid_object_even_on_failure() {
    let d = scratch("json");
    let good = file(&d, "good.bir", &good_program());
    let neff = d.join("g.neff");
    assert_eq!(run(&["neff", "pack", &good, "-o", neff.to_str().unwrap()]).code, Some(0));
    let neff = neff.to_str().unwrap();
    let cases: [(&[&str], i32); 9] = [
        (&["interp", &good, "--json"], 0),
        (&["compile", &good, "--json"], 0),
        (&["link", &good, "--json"], 0),
        (&["neff", "inspect", neff, "--json"], 0),
        (&["load", neff, "--json"], 0),
        (&["load", neff, "--json", "--fail-alloc", "0"], 1),
        (&["run", &good, "--json"], 0),
        (&["run", "--plant", "drop-sem-signal", "--json", "--shrink"], 1),
        (&["swarm", "--seeds", "0..2", "--json"], 0),
    ];
    for (args, code) in cases {
        let o = run(args);
        assert_eq!(o.code, Some(code), "{args:?}: {}", o.stderr);
        let v: serde_json::Value =
            serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", o.stdout));
        assert!(v.is_object(), "{args:?}");
        if code == 1 {
            assert_eq!(o.stderr.lines().count(), 1, "{args:?}: {}", o.stderr);
        }
    }
    let o = run(&["run", "--plant", "drop-sem-signal", "--json", "--shrink"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["passed"], false);
    assert!(v["shrunk"]["program"].as_str().unwrap().starts_with("module "), "{v}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn every_subcommand_and_option_has_help() {
    let subcommands = [
        "gen",
        "fmt",
        "interp",
        "split",
        "compile",
        "run",
        "swarm",
        "neff",
        "neff pack",
        "neff inspect",
        "neff unpack",
        "load",
        "bench",
        "bench alloc",
        "bench link",
        "bench neff",
        "bench load",
        "bench sim",
        "alloc",
        "link",
    ];
    let top = run(&["--help"]);
    assert_eq!(top.code, Some(0));
    assert!(!top.stdout.contains("later"), "stale help: {}", top.stdout);
    for sub in subcommands {
        let mut args: Vec<&str> = sub.split(' ').collect();
        args.push("-h");
        let o = run_with(&args, b"");
        assert_eq!(o.code, Some(0), "{sub}");
        assert!(o.stdout.contains(&format!("Usage: lncsim {sub}")), "{sub}: {}", o.stdout);
        let lines: Vec<&str> = o.stdout.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            if !(t.starts_with("--") || t.starts_with("-h") || t.starts_with("-o") || t.starts_with("-V")) {
                continue;
            }
            // `  --flag <V>  help` on one line, or the help indented on the next one.
            let described = t.split("  ").filter(|s| !s.trim().is_empty()).count() >= 2
                || lines.get(i + 1).is_some_and(|n| n.len() > 10 && n.starts_with("          "));
            assert!(described, "{sub}: option without help: {l}");
        }
    }
}
