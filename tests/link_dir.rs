//! The sgLnk link directory: layout, relative symlinks that resolve inside the
//! root, `.npy` weights, the unified tensor map, and hostile names refused
//! before anything is written.
#![allow(clippy::unwrap_used)]

mod link_fixtures;

use std::fs;
use std::path::{Path, PathBuf};

use lncsim_model::ir::{self, *};
use lncsim_model::link::pipeline::per_core_modules;
use lncsim_model::link::{LinkDirError, LinkError, LinkOptions, dry_run, link_with};
use lncsim_model::marks::Recorder;
use lncsim_model::program::{GenConfig, SizeClass, generate};

/// A fresh empty directory for one test, removed by `Drop`.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("lncsim-linkdir-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn opts(root: &Path) -> LinkOptions {
    LinkOptions { link_dir: Some(root.to_path_buf()) }
}

/// Every symlink under `dir`, recursively.
fn symlinks(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let md = fs::symlink_metadata(&p).unwrap();
        if md.file_type().is_symlink() {
            out.push(p);
        } else if md.is_dir() {
            symlinks(&p, out);
        }
    }
}

fn entries(dir: &Path) -> usize {
    fs::read_dir(dir).unwrap().count()
}

#[test]
fn the_link_dir_holds_core_artifacts_relative_symlinks_and_the_tensor_map() {
    let tmp = TempDir::new("layout");
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let l = link_with(&modules, &opts(&tmp.0)).unwrap();
    let base = tmp.0.join("gen_s3_c4");
    for c in 0..4 {
        assert!(base.join(format!("nc{c}/sg{c}/debug_info.json")).is_file());
        let link = base.join(format!("sgLnk/nc{c}.debug_info.json"));
        assert_eq!(fs::read_link(&link).unwrap(), Path::new(&format!("../nc{c}/sg{c}/debug_info.json")));
    }
    // The weight w0 is read on several cores: one link, to the lowest core's file.
    let w0 = base.join("sgLnk/w0.npy");
    let target = fs::read_link(&w0).unwrap();
    assert!(target.starts_with("../nc0/sg0") || target.starts_with("../nc1/sg1"), "{target:?}");
    let bytes = fs::read(&w0).unwrap();
    let w = modules[0].loc(modules[0].loc_by_name("w0").unwrap());
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!(bytes.len(), 10 + hlen + 4 * w.elem_count as usize);
    let first = i32::from_le_bytes(bytes[10 + hlen..14 + hlen].try_into().unwrap());
    assert_eq!(first, init_value(w.init.unwrap(), 0));
    // Every symlink resolves, and inside the root.
    let mut links = Vec::new();
    symlinks(&tmp.0, &mut links);
    assert!(links.len() >= 5);
    let root = tmp.0.canonicalize().unwrap();
    for p in links {
        assert!(fs::read_link(&p).unwrap().is_relative());
        assert!(p.canonicalize().unwrap().starts_with(&root), "{p:?} leaves the root");
    }
    // tensor-map.json: every external, with the seed's fields.
    let tm: serde_json::Value = serde_json::from_slice(&fs::read(base.join("sgLnk/tensor-map.json")).unwrap()).unwrap();
    let tensors = tm["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), l.tensor_map.entries.len());
    let w0e = tensors.iter().find(|t| t["layer_name"] == "w0").unwrap();
    assert_eq!(w0e["tf_file"], "w0.npy");
    assert_eq!(w0e["sim_format"], "int32");
    assert_eq!(w0e["sim_shape"][0], w.elem_count);
    assert_eq!(w0e["sbuf_compatible"], false);
    assert!(tensors.iter().any(|t| t["kind"] == "output"));
    assert_eq!(l.report.link_dir.as_deref(), Some(base.join("sgLnk").to_str().unwrap()));
}

#[test]
fn the_tensor_map_file_is_rewritten_after_fix_output_kind() {
    let tmp = TempDir::new("fixout");
    let modules: Vec<Module> =
        [link_fixtures::OUTPUTS_0, link_fixtures::OUTPUTS_1].iter().map(|t| ir::parse(t).unwrap()).collect();
    link_with(&modules, &opts(&tmp.0)).unwrap();
    let text = fs::read_to_string(tmp.0.join("demo/sgLnk/tensor-map.json")).unwrap();
    let tm: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> =
        tm["tensors"].as_array().unwrap().iter().map(|t| t["layer_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["out0", "out1", "x"], "y is an intermediate, unused was erased");
}

fn shared_pair(name: &str) -> Vec<Module> {
    let mut v: Vec<Module> =
        [link_fixtures::SHARED_0, link_fixtures::SHARED_1].iter().map(|t| ir::parse(t).unwrap()).collect();
    for m in &mut v {
        m.name = name.into();
    }
    v
}

#[test]
fn hostile_names_are_refused_before_anything_is_written() {
    let tmp = TempDir::new("hostile");
    let r = Recorder::start();
    for name in ["../evil", "/abs", "", ".", "a/../../b", "a//b", "x/", "a\0b", ".."] {
        let modules = shared_pair(name);
        let err = link_with(&modules, &opts(&tmp.0)).unwrap_err();
        assert!(matches!(err, LinkError::LinkDir(LinkDirError::BadName { .. })), "{name:?}: {err}");
        assert_eq!(dry_run(&modules, &opts(&tmp.0)).unwrap_err(), err);
        assert!(!err.to_string().contains('\n'));
    }
    assert!(r.hits("link.dir.bad_name") >= 9);
    // A hostile weight name is refused the same way.
    let mut modules = shared_pair("demo");
    let mut w = MemoryLocation::dram("../../../etc/x", Usage::Weight, 4);
    w.init = Some(1);
    modules[0].add_loc(w);
    let err = link_with(&modules, &opts(&tmp.0)).unwrap_err();
    assert!(matches!(err, LinkError::LinkDir(LinkDirError::BadName { .. })), "{err}");
    assert_eq!(entries(&tmp.0), 0, "nothing may be written for a refused name");
    assert!(!tmp.0.parent().unwrap().join("etc/x.npy").exists());
    // A nested (but harmless) name makes nested directories, still inside the root.
    let mut modules = shared_pair("team/demo");
    let mut w = MemoryLocation::dram("sub/w", Usage::Weight, 2);
    w.init = Some(7);
    modules[1].add_loc(w);
    link_with(&modules, &opts(&tmp.0)).unwrap();
    let link = tmp.0.join("team/demo/sgLnk/sub/w.npy");
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("../../nc1/sg1/sub/w.npy"));
    assert!(link.canonicalize().unwrap().starts_with(tmp.0.canonicalize().unwrap()));
}

#[test]
fn a_symlinked_directory_under_the_root_is_refused() {
    let tmp = TempDir::new("escape");
    let outside = TempDir::new("escape-outside");
    fs::create_dir_all(tmp.0.join("demo")).unwrap();
    std::os::unix::fs::symlink(&outside.0, tmp.0.join("demo/nc0")).unwrap();
    let err = link_with(&shared_pair("demo"), &opts(&tmp.0)).unwrap_err();
    assert!(matches!(err, LinkError::LinkDir(LinkDirError::Escapes(_))), "{err}");
    assert_eq!(entries(&outside.0), 0, "nothing written through the symlink");
}

#[test]
fn custom_op_blobs_are_linked_and_cpu_node_files_copied() {
    let tmp = TempDir::new("blobs");
    let sg1 = tmp.0.join("demo/nc1/sg1");
    fs::create_dir_all(&sg1).unwrap();
    fs::write(sg1.join("kern.so"), b"\x7fELF").unwrap();
    fs::write(sg1.join("cpu_node_0.json"), b"{}").unwrap();
    let r = Recorder::start();
    link_with(&shared_pair("demo"), &opts(&tmp.0)).unwrap();
    let lnk = tmp.0.join("demo/sgLnk");
    assert_eq!(fs::read_link(lnk.join("nc1_kern.so")).unwrap(), Path::new("../nc1/sg1/kern.so"));
    let md = fs::symlink_metadata(lnk.join("nc1_cpu_node_0.json")).unwrap();
    assert!(md.is_file() && !md.file_type().is_symlink(), "CPU-node files are copied");
    assert_eq!(r.hits("link.dir.custom_op"), 1);
    assert_eq!(r.hits("link.dir.cpu_node_copied"), 1);
    // Linking again over an existing directory succeeds (links are replaced).
    link_with(&shared_pair("demo"), &opts(&tmp.0)).unwrap();
}

#[test]
fn dry_run_checks_without_building_or_writing() {
    let tmp = TempDir::new("dry");
    let modules = per_core_modules(&generate(&GenConfig::new(3, 4, SizeClass::Small))).unwrap();
    let r = Recorder::start();
    let rep = dry_run(&modules, &opts(&tmp.0)).unwrap();
    assert_eq!(r.hits("link.dry_run"), 1);
    assert_eq!(r.hits("link.copy_modules_as_functions"), 0, "no module built");
    assert_eq!(entries(&tmp.0), 0, "nothing written");
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(rep.unified_shared, l.report.unified_shared);
    assert_eq!(rep.views, l.report.views);
}

/// `shared_pair("demo")` plus a weight `name` of 4 elements on core `core`.
fn with_weight(core: usize, name: &str) -> Vec<Module> {
    let mut modules = shared_pair("demo");
    let mut w = MemoryLocation::dram(name, Usage::Weight, 4);
    w.init = Some(3);
    modules[core].add_loc(w);
    modules
}

#[test]
fn names_too_long_for_the_file_system_are_refused_before_anything_is_written() {
    let tmp = TempDir::new("toolong");
    let r = Recorder::start();
    // 252 bytes: fine as a location name, but `<name>.npy` is 256 > NAME_MAX.
    let long = "w".repeat(252);
    let modules = with_weight(0, &long);
    let err = dry_run(&modules, &opts(&tmp.0)).unwrap_err();
    assert!(matches!(err, LinkError::LinkDir(LinkDirError::TooLong { .. })), "{err}");
    assert!(err.to_string().contains("NAME_MAX 255"), "{err}");
    assert_eq!(link_with(&modules, &opts(&tmp.0)).unwrap_err(), err);
    assert_eq!(entries(&tmp.0), 0, "nothing written (before: nc0/sg0 and sgLnk were left behind)");
    assert!(r.hits("link.dir.name_too_long") >= 2);
    // 251 bytes fit exactly.
    link_with(&with_weight(0, &"w".repeat(251)), &opts(&tmp.0)).unwrap();
    // Every component fits but the whole path does not: PATH_MAX.
    let tmp = TempDir::new("toolong-path");
    let deep = vec!["d".repeat(200); 21].join("/");
    let err = link_with(&with_weight(1, &deep), &opts(&tmp.0)).unwrap_err();
    assert!(matches!(err, LinkError::LinkDir(LinkDirError::TooLong { .. })), "{err}");
    assert!(err.to_string().contains("PATH_MAX 4095"), "{err}");
    assert_eq!(entries(&tmp.0), 0);
    assert!(r.hits("link.dir.path_too_long") >= 1);
}

#[test]
fn a_failed_setup_removes_what_it_created_and_never_overwrites_a_core_artifact() {
    let tmp = TempDir::new("rollback");
    // The per-core flow left its own debug_info.json for core 1: the link must not replace it.
    let sg1 = tmp.0.join("demo/nc1/sg1");
    fs::create_dir_all(&sg1).unwrap();
    fs::write(sg1.join("debug_info.json"), b"theirs").unwrap();
    let r = Recorder::start();
    let err = link_with(&with_weight(0, "w"), &opts(&tmp.0)).unwrap_err();
    assert!(
        matches!(err, LinkError::LinkDir(LinkDirError::Exists(ref p)) if p.ends_with("nc1/sg1/debug_info.json")),
        "{err}"
    );
    assert_eq!(r.hits("link.dir.artifact_exists"), 1);
    assert_eq!(r.hits("link.dir.rolled_back"), 1);
    assert_eq!(fs::read(sg1.join("debug_info.json")).unwrap(), b"theirs", "not overwritten");
    // Core 0's directory and sgLnk were created by the failed run: gone again.
    assert!(!tmp.0.join("demo/nc0").exists(), "nc0 left behind");
    assert!(!tmp.0.join("demo/sgLnk").exists(), "sgLnk left behind");
    let mut left: Vec<String> = fs::read_dir(tmp.0.join("demo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["nc1"]);
    assert_eq!(entries(&sg1), 1);
    // With the foreign file gone the link succeeds, and repeating it keeps its own identical files.
    fs::remove_file(sg1.join("debug_info.json")).unwrap();
    link_with(&with_weight(0, "w"), &opts(&tmp.0)).unwrap();
    let before = fs::read(tmp.0.join("demo/nc0/sg0/w.npy")).unwrap();
    let r = Recorder::start();
    link_with(&with_weight(0, "w"), &opts(&tmp.0)).unwrap();
    assert!(r.hits("link.dir.artifact_kept") >= 3, "w.npy and both debug_info.json kept");
    assert_eq!(fs::read(tmp.0.join("demo/nc0/sg0/w.npy")).unwrap(), before);
}

#[test]
fn the_scans_skip_the_linkers_own_weight_files() {
    let tmp = TempDir::new("ownfiles");
    let sg0 = tmp.0.join("demo/nc0/sg0");
    fs::create_dir_all(&sg0).unwrap();
    fs::write(sg0.join("cpu_node_host.json"), b"{}").unwrap();
    // A weight whose file looks like a CPU-node file (`cpu_node_w.npy`).
    let modules = with_weight(0, "cpu_node_w");
    let r = Recorder::start();
    link_with(&modules, &opts(&tmp.0)).unwrap();
    let lnk = tmp.0.join("demo/sgLnk");
    assert_eq!(fs::read_link(lnk.join("cpu_node_w.npy")).unwrap(), Path::new("../nc0/sg0/cpu_node_w.npy"));
    assert!(!lnk.join("nc0_cpu_node_w.npy").exists(), "the weight was also copied as a CPU-node file");
    assert!(lnk.join("nc0_cpu_node_host.json").is_file(), "the flow's own CPU-node file is still copied");
    assert_eq!(r.hits("link.dir.cpu_node_copied"), 1);
}
