//! `lncsim link`: the acceptance run, `--modules`, `--json`, `--link-dir`,
//! and one-line typed errors for bad input.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use lncsim_model::ir;
use lncsim_model::link::pipeline::per_core_modules;
use lncsim_model::program::{GenConfig, SizeClass, generate};

fn tmp(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lncsim-linkcli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = common::lncsim().args(args).output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), s(&out.stdout), s(&out.stderr))
}

#[test]
fn acceptance_gen_seed_3_cores_4_links_with_one_call_per_core() {
    let dir = tmp("accept");
    let (code, program, _) = run(&["gen", "--seed", "3", "--cores", "4"]);
    assert_eq!(code, 0);
    let file = dir.join("p.bir");
    std::fs::write(&file, program).unwrap();
    let (code, out, err) = run(&["link", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let pos: Vec<usize> =
        (0..4).map(|c| out.find(&format!("call_def_{c}_instance_0 = sp call nc{c}\n")).unwrap()).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "dispatcher calls out of core order");
    assert!(out.contains("module \"gen_s3_c4/sgLnk\" lnc 4\n"));
    // The printed module parses back (the summary lines are comments).
    let m = ir::parse(&out).unwrap();
    assert_eq!(m.functions[0].name, "dispatcher");

    // The same per-core modules given as files link to the same module.
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let mut args = vec!["link".to_string(), "--modules".into()];
    for (c, mm) in modules.iter().enumerate().rev() {
        let f = dir.join(format!("core{c}.bir"));
        std::fs::write(&f, ir::print(mm)).unwrap();
        args.push(f.to_str().unwrap().into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out2, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out2, out, "module order on the command line does not matter");

    let (code, json, _) = run(&["link", file.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["report"]["cores"], 4);
    assert_eq!(ir::parse(v["module"].as_str().unwrap()).unwrap(), m);

    let root = dir.join("lnk");
    let (code, _, err) = run(&["link", file.to_str().unwrap(), "--link-dir", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(root.join("gen_s3_c4/sgLnk/tensor-map.json").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gets_one_typed_line() {
    let dir = tmp("bad");
    let missing = dir.join("nope.bir");
    // Bad input exits 1 today; the CLI convention is moving to 3 (EXIT_BAD_INPUT) on main.
    let bad_input = |code: i32| code == 1;
    let (code, out, err) = run(&["link", missing.to_str().unwrap()]);
    assert!(bad_input(code) && out.is_empty(), "{code} {out}");
    assert!(err.starts_with("lncsim: error: ") && err.trim_end().lines().count() == 1, "{err}");

    // A view whose remote target does not exist.
    let modules = per_core_modules(&generate(&GenConfig::new(3, 2, SizeClass::Small))).unwrap();
    let mut paths = Vec::new();
    for (c, m) in modules.iter().enumerate() {
        let mut m = m.clone();
        for l in &mut m.memlocs {
            if let Some(r) = &mut l.remote_local_target {
                r.name = "ghost".into();
            }
        }
        let f = dir.join(format!("c{c}.bir"));
        std::fs::write(&f, ir::print(&m)).unwrap();
        paths.push(f.to_str().unwrap().to_string());
    }
    let mut args = vec!["link", "--modules"];
    args.extend(paths.iter().map(String::as_str));
    let (code, _, err) = run(&args);
    assert!(bad_input(code));
    assert!(err.starts_with("lncsim: error: link: missing input '") && err.trim_end().lines().count() == 1, "{err}");

    // A hostile module name with --link-dir.
    let hostile = dir.join("h.bir");
    std::fs::write(&hostile, "module \"../../escape\" lnc 1\nloc x dram input i32[1]\nfunc main\n  block b\n").unwrap();
    let root = dir.join("root");
    let (code, _, err) = run(&["link", hostile.to_str().unwrap(), "--link-dir", root.to_str().unwrap()]);
    assert!(bad_input(code));
    assert!(err.contains("cannot become a path"), "{err}");
    assert!(!dir.join("escape").exists() && !root.exists());

    // Usage errors are clap's (exit 2).
    assert_eq!(run(&["link"]).0, 2);
    assert_eq!(run(&["link", "a.bir", "--modules", "b.bir"]).0, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the per-core modules of `gen --seed 3 --cores 2` and lncsim's link of them; returns (paths, linked text).
fn own_link(dir: &std::path::Path) -> (Vec<String>, String) {
    let modules = per_core_modules(&generate(&GenConfig::new(3, 2, SizeClass::Small))).unwrap();
    let mut paths = Vec::new();
    for (c, m) in modules.iter().enumerate() {
        let f = dir.join(format!("core{c}.bir"));
        std::fs::write(&f, ir::print(m)).unwrap();
        paths.push(f.to_str().unwrap().to_string());
    }
    let mut args = vec!["link", "--modules"];
    args.extend(paths.iter().map(String::as_str));
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    (paths, out)
}

/// `text` with every whole-word `from` (not inside a longer name) replaced by `to`.
fn rename_word(text: &str, from: &str, to: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let before = out.chars().last().or_else(|| rest[..i].chars().last());
        let before = if i > 0 { rest[..i].chars().last() } else { before };
        let after = rest[i + from.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_some_and(word) || after.is_some_and(word) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[i + from.len()..];
    }
    out + rest
}

/// `link --modules ... --linked FILE` on `text`.
fn judge(dir: &std::path::Path, paths: &[String], tag: &str, text: &str, json: bool) -> (i32, String, String) {
    let f = dir.join(format!("{tag}.bir"));
    std::fs::write(&f, text).unwrap();
    let mut args = vec!["link", "--modules"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--linked", f.to_str().unwrap()]);
    if json {
        args.push("--json");
    }
    run(&args)
}

#[test]
fn linked_judges_a_given_linked_module_with_the_link_checker() {
    let dir = tmp("judge");
    let (paths, linked) = own_link(&dir);
    // lncsim's own link output (summary comments and all) passes.
    let (code, out, err) = judge(&dir, &paths, "own", &linked, false);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert!(
        out.contains("against 2 per-core module(s)\n") && out.ends_with("verdict: pass (0 violation(s))\n"),
        "{out}"
    );
    let (code, out, _) = judge(&dir, &paths, "own_json", &linked, true);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((code, v["valid"].clone(), v["modules"].clone()), (0, true.into(), 2.into()));

    // A dropped dependency edge: the first instruction of nc0 with one `after` loses it.
    let body = linked.find("func nc0").unwrap();
    let at = body + linked[body..].find(" after ").unwrap();
    let eol = at + linked[at..].find('\n').unwrap();
    let line_start = linked[..at].rfind('\n').unwrap() + 1;
    let inst = linked[line_start..at].trim().split(' ').next().unwrap().to_string();
    let dropped = format!("{}{}", &linked[..at], &linked[eol..]);
    let (code, out, err) = judge(&dir, &paths, "dropped", &dropped, false);
    assert_eq!(code, 1, "{out}");
    let edge = out.lines().find(|l| l.starts_with("violation: Edge: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(edge.contains(&inst), "{edge} should name {inst}");
    assert!(
        err.starts_with("lncsim: error: ") && err.contains("link checker: ") && err.trim_end().lines().count() == 1
    );
    assert!(out.trim_end().ends_with("violation(s))") && out.contains("verdict: FAIL ("), "{out}");

    // A renamed external location (the runtime binds it by name).
    let input = linked.lines().find(|l| l.starts_with("loc ") && l.contains(" dram input ")).unwrap();
    let name = input.split(' ').nth(1).unwrap().to_string();
    let renamed = rename_word(&linked, &name, &format!("{name}_r"));
    assert_ne!(renamed, linked);
    let (code, out, _) = judge(&dir, &paths, "renamed", &renamed, false);
    assert_eq!(code, 1, "{out}");
    let want = format!("(tensor `{name}`) became `{name}_r`: not its name nor the documented `{name}.nc<core>[.k]`");
    assert!(out.lines().any(|l| l.starts_with("violation: Location: ") && l.contains(&want)), "{out}");

    // Bad input and bad usage.
    let (code, _, err) = judge(&dir, &paths, "garbage", "module x lnc\n", false);
    assert!(code == 1 && err.trim_end().lines().count() == 1 && err.contains("garbage.bir:"), "{err}");
    assert_eq!(run(&["link", "x.bir", "--linked", "l.bir"]).0, 2);
    assert_eq!(run(&["link", "--modules", "a.bir", "--linked", "l.bir", "--link-dir", "d"]).0, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn linked_judges_the_seed_renumbering_order_not_only_unique_dense_ids() {
    let dir = tmp("judge-order");
    let (paths, linked) = own_link(&dir);
    let mut m = ir::parse(&linked).unwrap();
    // Core 1's barriers take the first slots, core 0's the next: unique and
    // dense, but not the seed's order (function order, then instruction order).
    let count = |f: &ir::Function| f.insts.iter().filter(|i| matches!(i.op, ir::Op::CoreBarrier(_))).count() as u32;
    let first = count(&m.functions[2]);
    let mut next = [first, 0];
    for (k, f) in m.functions.iter_mut().skip(1).enumerate() {
        let order: Vec<ir::InstId> = f.order().collect();
        for id in order {
            if let ir::Op::CoreBarrier(b) = &mut f.insts[id.index()].op {
                b.id = next[k];
                next[k] += 1;
            }
        }
    }
    assert_eq!(next, [first + count(&m.functions[1]), first]);
    let (code, out, err) = judge(&dir, &paths, "reversed", &ir::print(&m), false);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("violation: Barrier: "), "the ids are unique and dense: {out}");
    assert!(
        out.lines().any(|l| l.starts_with("violation: Renumbering: `nc0/")
            && l.contains("was flagged: renumbering gives it slot 0, but it has id")),
        "{out}"
    );
    assert!(err.contains("link checker: Renumbering: "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
