#![allow(clippy::unwrap_used)]
//! The CLI against hostile and bad inputs: every bad file, value or path is
//! exit 1 with exactly one line `lncsim: error: ...` on stderr (file:line:col
//! for text), clap usage errors exit 2, nothing panics, nothing too large is
//! allocated, and a failed command leaves no half-written output behind.
//! The NEFF cases are in `cli_hostile/neff.rs`, outputs and arguments in
//! `cli_hostile/outputs.rs`.

mod common;
#[path = "cli_hostile/neff.rs"]
mod neff;
#[path = "cli_hostile/outputs.rs"]
mod outputs;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// One finished command.
pub struct Out {
    /// Exit status (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossy.
    pub stdout: String,
    /// Standard output, raw.
    pub raw: Vec<u8>,
    /// Standard error, lossy.
    pub stderr: String,
}

/// Runs `lncsim args` with `input` on stdin.
pub fn run_with(args: &[&str], input: &[u8]) -> Out {
    let mut child = common::lncsim()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command may exit before reading its input: a broken pipe here is fine.
    let _ = child.stdin.take().unwrap().write_all(input);
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        raw: o.stdout,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs `lncsim args` with empty stdin.
pub fn run(args: &[&str]) -> Out {
    run_with(args, b"")
}

/// Asserts `o` is a rejection: exit 1, exactly one stderr line `lncsim: error: ...` containing `want`.
pub fn assert_rejected(what: &str, o: &Out, want: &str) {
    assert!(!o.stderr.contains("panicked") && !o.stderr.contains("backtrace"), "{what}: {}", o.stderr);
    assert_eq!(o.code, Some(1), "{what}: {}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{what}: {}", o.stderr);
    assert!(o.stderr.starts_with("lncsim: error: "), "{what}: {}", o.stderr);
    assert!(o.stderr.contains(want), "{what}: want {want:?} in {}", o.stderr);
}

/// [`assert_rejected`] of `lncsim args`.
pub fn rejected(args: &[&str], want: &str) -> Out {
    let o = run(args);
    assert_rejected(&args.join(" "), &o, want);
    o
}

/// Asserts `lncsim args` is a clap usage error (exit 2) whose message contains `want`.
pub fn usage_error(args: &[&str], want: &str) {
    let o = run(args);
    let what = args.join(" ");
    assert_eq!(o.code, Some(2), "{what}: {}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{what}: {}", o.stderr);
    assert!(o.stderr.starts_with("error: ") && o.stderr.contains(want), "{what}: want {want:?} in {}", o.stderr);
}

/// A fresh scratch directory for one test.
pub fn scratch(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli_hostile_{}_{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `bytes` to `dir/name` and returns the path as a string.
pub fn file(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_owned()
}

/// A valid two-core program, as `lncsim gen` prints it.
pub fn good_program() -> Vec<u8> {
    let o = run(&["gen", "--seed", "1", "--cores", "2"]);
    assert_eq!(o.code, Some(0));
    o.raw
}

/// A one-function program around `body` (instruction lines) with `locs` declared after x, w, out.
pub fn program(lnc: &str, locs: &str, body: &str) -> Vec<u8> {
    format!(
        "module p lnc {lnc}\nqueue qSyncIO dynamic owner sp sems 2 instances 0,1\nloc x dram input i32[16]\n\
         loc w dram weight i32[16] init 5\nloc out dram output i32[16]\n{locs}\nfunc main\n  args x, out\n  \
         block entry\n{body}\n"
    )
    .into_bytes()
}

#[test]
fn bad_input_files_are_one_line_for_every_reader() {
    let d = scratch("files");
    let missing = d.join("missing.bir").to_str().unwrap().to_owned();
    let dir = d.to_str().unwrap().to_owned();
    let empty = file(&d, "empty.bir", b"");
    let garbage =
        file(&d, "garbage.bin", &(0..3000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<_>>());
    let not_utf8 = file(&d, "latin1.bir", b"module p lnc 1\n# caf\xe9\n");
    let out = d.join("o.neff").to_str().unwrap().to_owned();
    let unpack_dir = d.join("unpacked").to_str().unwrap().to_owned();
    let readers: Vec<Vec<&str>> = vec![
        vec!["fmt"],
        vec!["fmt", "--verify"],
        vec!["interp"],
        vec!["split"],
        vec!["compile"],
        vec!["link"],
        vec!["link", "--modules"],
        vec!["run"],
        vec!["neff", "pack", "-o", &out],
        vec!["neff", "inspect"],
        vec!["neff", "unpack", "--verify-hash"],
        vec!["load"],
        vec!["alloc"],
    ];
    for cmd in &readers {
        for (input, want) in [(&missing, "No such file"), (&dir, "is a directory"), (&empty, ""), (&garbage, "")] {
            let mut args = cmd.clone();
            args.push(input);
            if cmd.starts_with(&["neff", "unpack"]) {
                args.push(&unpack_dir);
            }
            rejected(&args, want);
        }
        let mut args = cmd.clone();
        args.push(&not_utf8);
        if cmd.starts_with(&["neff", "unpack"]) {
            args.push(&unpack_dir);
        }
        let o = run(&args);
        assert_rejected(&args.join(" "), &o, "latin1.bir");
    }
    assert!(!Path::new(&out).exists() && !Path::new(&unpack_dir).exists(), "nothing written");
    // Text readers point at the bad byte; an empty program at its missing header.
    for cmd in ["fmt", "interp", "split", "compile", "link", "run"] {
        rejected(&[cmd, &not_utf8], "latin1.bir:2:6: not UTF-8 text (byte 0xe9)");
        rejected(&[cmd, &empty], "empty.bir:1:1: expected `module NAME lnc N` header");
    }
    rejected(&["run", &garbage], "not a NEFF either");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn parse_errors_carry_file_line_and_column_and_stdin_is_named() {
    let d = scratch("parse");
    let p = file(&d, "p.bir", b"module p lnc 1\nloc x dram input i32[16\n");
    for cmd in ["fmt", "interp", "split", "compile", "link", "run"] {
        rejected(&[cmd, &p], "p.bir:2:24: expected `]`");
    }
    rejected(&["neff", "pack", &p, "-o", d.join("x").to_str().unwrap()], "p.bir:2:24:");
    let o = run_with(&["fmt", "-"], b"module p lnc 1\nloc x dram bogus i32[16]\n");
    assert_rejected("fmt -", &o, "<stdin>:2:");
    let o = run_with(&["interp", "-"], b"\xff");
    assert_rejected("interp -", &o, "<stdin>:1:1: not UTF-8 text (byte 0xff)");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn programs_that_parse_but_fail_are_typed_errors_or_failed_stages() {
    let d = scratch("verify");
    let bad = file(&d, "bad.bir", &program("2", "", "    i0 = dve relu x[0..32] -> out[0..16] core 0"));
    rejected(&["fmt", "--verify", &bad], "bad.bir: function `main`, instruction `i0`: access `x[0..32]`");
    assert_eq!(run(&["fmt", &bad]).code, Some(0), "fmt alone only parses");
    for cmd in ["interp", "split", "compile", "link"] {
        rejected(&[cmd, &bad], "is empty or outside its 16 elements");
    }
    let o = rejected(&["run", &bad], "1 failure(s)");
    assert!(o.stdout.contains("FAIL  program"), "{}", o.stdout);
    // Ops not bound to a core in a two-core program.
    let unbound = file(&d, "unbound.bir", &program("2", "", "    i0 = dve relu x[0..16] -> out[0..16]"));
    for cmd in ["split", "compile", "link"] {
        rejected(&[cmd, &unbound], "instruction `i0` is not bound to a core (add `core N`)");
    }
    rejected(&["neff", "pack", &unbound, "-o", d.join("u.neff").to_str().unwrap()], "is not bound to a core");
    let o = rejected(&["run", &unbound], "1 failure(s), listed above");
    assert!(o.stdout.contains("FAIL  split + allocate split: instruction `i0` is not bound"), "{}", o.stdout);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn huge_programs_are_typed_errors_not_allocation_aborts() {
    let d = scratch("huge");
    let relu = "    i0 = dve relu x[0..16] -> out[0..16] core 0";
    for n in ["4611686018427387904", "99999999999", "999999999"] {
        let p = file(&d, &format!("h{n}.bir"), &program("1", &format!("loc big dram internal i32[{n}]"), relu));
        rejected(&["interp", &p], "the interpreter allows 268435456");
        let o = rejected(&["run", &p], "1 failure(s)");
        assert!(o.stdout.contains("FAIL  interpret        locations hold"), "{}", o.stdout);
    }
    // 1.2 GB of weights: placed, then refused before any byte of them is built.
    let read_big = "    i0 = dve relu big[0..16] -> out[0..16] core 0";
    let weights = program("1", "loc big dram weight i32[300000000] init 9", read_big);
    let p = file(&d, "weights.bir", &weights);
    let neff = d.join("w.neff");
    rejected(&["neff", "pack", &p, "-o", neff.to_str().unwrap()], "the packager allows 1073741824");
    assert!(!neff.exists());
    let link_dir = d.join("lnk");
    rejected(&["compile", &p, "--link-dir", link_dir.to_str().unwrap()], "the link directory allows 1073741824");
    assert!(!link_dir.exists(), "nothing written");
    // More cores than the device has: refused where it is written, before a module per core is built.
    let cores = program("4294967295", "", relu);
    let p = file(&d, "cores.bir", &cores);
    for cmd in ["split", "compile", "link", "run", "interp"] {
        rejected(&[cmd, &p], "cores.bir:1:14: lnc 4294967295 is out of range: the device has 1 to 256 cores");
    }
    rejected(&["fmt", "--verify", &p], "cores.bir:1:14: lnc 4294967295 is out of range");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Text past the 512 MiB limit (a sparse file: no disk is used) is refused
/// by every text reader before it is read, in one line naming the limit.
#[test]
fn text_past_the_size_limit_is_refused_before_it_is_read() {
    let d = scratch("hugetext");
    let p = d.join("big.bir");
    std::fs::File::create(&p).unwrap().set_len((512 << 20) + 1).unwrap();
    let p = p.to_str().unwrap();
    for cmd in [&["fmt", p][..], &["run", p], &["compile", p], &["interp", p], &["alloc", p]] {
        rejected(cmd, "big.bir: larger than 512 MiB, the most lncsim reads as text");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn constructs_the_device_cannot_run_fail_a_stage_of_run() {
    let d = scratch("device");
    let cases = [
        (
            "call",
            program("1", "", "    i0 = dve relu x[0..16] -> out[0..16] core 0\n    i1 = sp call main core 0 after i0"),
            "FAIL  program          function `main`, instruction `i1`: a function calls itself",
        ),
        (
            // The queue the DMA uses gives the core a pool of 2 semaphores: semaphore 0 exists, nobody signals it.
            "deadlock",
            program(
                "1",
                "",
                "    i0 = sp dma x[0..16] -> out[0..16] queue qSyncIO core 0\n    i1 = sp sem_wait 0 value 1 core 0 after i0",
            ),
            // The program's own `sem_wait 0`, not the record semaphore it became.
            "waits for semaphore 0 >= 1 (is 0); nobody left could signal it",
        ),
        (
            // No queue at all: the pool is empty and the simulator refuses semaphore 0.
            "no-pool",
            String::from_utf8(program(
                "1",
                "",
                "    i0 = dve relu x[0..16] -> out[0..16] core 0\n    i1 = sp sem_wait 0 value 1 core 0 after i0",
            ))
            .unwrap()
            .replace("queue qSyncIO dynamic owner sp sems 2 instances 0,1\n", "")
            .into_bytes(),
            "does not exist on the core",
        ),
        (
            // A core that waits keeps every queue of the program: the pool is the program's.
            "kept-pool",
            program("2", "", "    i0 = dve relu x[0..16] -> out[0..16] core 0\n    i1 = sp sem_wait 1 value 1 core 1"),
            "waits for semaphore 1 >= 1 (is 0); nobody left could signal it",
        ),
    ];
    for (name, text, want) in cases {
        let p = file(&d, &format!("{name}.bir"), &text);
        let o = rejected(&["run", &p], "failure(s), listed above");
        assert!(o.stdout.contains(want), "{name}: {}", o.stdout);
        let o = run(&["run", &p, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["passed"], false, "{name}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn what_the_device_cannot_run_is_refused_at_its_line_by_every_command() {
    let d = scratch("device-refusals");
    let body =
        "    i0 = dve relu x[0..16] -> s[0..16] core 0\n    i1 = dve relu s[0..16] -> out[0..16] core 0 after i0";
    let cases = [
        ("sbuf", program("1", "loc s sbuf internal i32[16]", body), "sbuf.bir:6:1: location `s` is in sbuf"),
        ("psum", program("1", "loc s psum internal i32[16]", body), "psum.bir:6:1: location `s` is in psum"),
        (
            "engine",
            program("1", "", "    i0 = dve matmul 4x4x1 x[0..16], w[0..4] -> out[0..4] core 0"),
            "engine.bir:10:5: instruction `i0`: dve cannot run `matmul` (it runs on pe)",
        ),
        (
            "sem",
            program(
                "1",
                "",
                "    i0 = dve relu x[0..16] -> out[0..16] core 0\n    i1 = sp sem_wait 99999 value 1 core 0 after i0",
            ),
            "sem.bir:11:5: instruction `i1`: semaphore 99999: the device's semaphore file holds 251 user semaphores",
        ),
        (
            "addn",
            program(
                "1",
                "loc t dram internal i32[16]",
                "    i0 = dve relu x[0..16] -> t[0..16] core 0\n    i1 = dve add x[0..16], w[0..16], t[0..16] -> t[0..16] core 0 after i0",
            ),
            "addn.bir:11:5: instruction `i1`: an add of more than two sources may not write over a source on the device",
        ),
        (
            "view",
            program("1", "loc s dram internal i32[16]\nloc v dram shared i32[16] remote out core 0", body),
            "view.bir:7:1: location `v` is a view of `out` on core 0: views exist only in per-core modules",
        ),
    ];
    for (name, text, want) in cases {
        let p = file(&d, &format!("{name}.bir"), &text);
        let neff = d.join(format!("{name}.neff"));
        for args in [
            vec!["run", &p],
            vec!["compile", &p],
            vec!["split", &p],
            vec!["interp", &p],
            vec!["link", &p],
            vec!["fmt", "--verify", &p],
            vec!["neff", "pack", &p, "-o", neff.to_str().unwrap()],
        ] {
            rejected(&args, want);
        }
        assert!(!neff.exists());
        assert_eq!(run(&["fmt", &p]).code, Some(0), "fmt alone only formats");
    }
    // A data hazard is a warning (the run then shows the race), not a refusal.
    let p = file(
        &d,
        "hazard.bir",
        &program(
            "1",
            "loc t dram internal i32[16]",
            "    i0 = act relu x[0..16] -> t[0..16] core 0\n    i1 = dve relu t[0..16] -> out[0..16] core 0",
        ),
    );
    let o = run(&["fmt", "--verify", &p]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr.starts_with(&format!(
            "lncsim: warning: {p}:11:5: instruction `i1` (dve) reads what `i0` (act) wrote in `t`, and nothing orders them (add `after i0`)"
        )),
        "{}",
        o.stderr
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn replay_commands_quote_paths_for_the_shell() {
    let d = scratch("replay");
    let p = file(&d, "my 'prog'.bir", &program("2", "", "    i0 = dve relu x[0..16] -> out[0..16]"));
    let o = rejected(&["run", &p], "1 failure(s)");
    let want = format!("replay:  lncsim run '{}' --seed 0", p.replace('\'', "'\\''"));
    assert!(o.stdout.contains(&want), "{want}\n{}", o.stdout);
    std::fs::remove_dir_all(&d).unwrap();
}
