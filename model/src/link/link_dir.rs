//! The sgLnk link directory (seed 000 §8, `setupLinkDir`).
//!
//! Under a caller-given root:
//!
//! ```text
//! <root>/<name>/nc<c>/sg<c>/   core c's artifacts: <weight>.npy, debug_info.json,
//!                              and any custom-op blob (*.so) or CPU-node file
//!                              (cpu_node*) the per-core flow left there
//! <root>/<name>/sgLnk/         relative symlinks to every core's .npy (one per
//!                              unified weight), nc<c>.debug_info.json and
//!                              nc<c>_<blob>.so; CPU-node files are copied
//!                              (nc<c>_<file>); plus the unified tensor-map.json
//! ```
//!
//! Names come from modules, so from users: they become paths only through
//! [`safe_rel_path`], which rejects empty, `.`, `..`, absolute and NUL-bearing
//! components and components over [`NAME_MAX`] bytes. [`check_names`] (also
//! the `dry_run` part) checks every path the setup will create — each
//! component against `NAME_MAX`, each whole path and symlink target against
//! [`PATH_MAX`] — so a name the file system would refuse fails before
//! anything is written. Should the setup still fail midway (a full disk, a
//! permission), everything it created is removed again; what existed before
//! is left alone.
//!
//! **The per-core directories** `nc<c>/sg<c>` are the per-core flow's
//! output, which lncsim stands in for by writing each weight's `.npy` and
//! `debug_info.json`. Choice (issue 12 §3): an existing file there is never
//! overwritten: one with exactly the bytes lncsim would write is kept (so a
//! link can be repeated over its own directory), any other is
//! [`LinkDirError::Exists`]. Other files there (custom-op blobs, CPU-node
//! files the flow left) are the scans' input; the scans skip the files lncsim
//! itself writes, so a weight named `cpu_node_w` is linked as a weight and
//! not also copied as a CPU-node file. No directory under the root may already be a symlink, every
//! symlink target is relative and is checked to resolve inside
//! `<root>/<name>`, and nothing is written through an existing symlink.
//! Weights are written as `.npy` v1.0 little-endian int32 (`<i4`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::defs::DefInfo;
use super::tensor_map::TensorMap;
use crate::ir::{Module, Usage, init_value};
use crate::marks;

/// Why the link directory could not be set up. One line each.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkDirError {
    /// A name cannot become a path.
    #[error("name {name:?} cannot become a path: {why}")]
    BadName {
        /// The name.
        name: String,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// A path under the root is a symlink, or a link would point outside.
    #[error("{0} would leave the link root")]
    Escapes(String),
    /// The weights to write as `.npy` are more bytes than the writer materializes.
    #[error("weights hold {0} bytes in all; the link directory allows {max}", max = crate::neff::MAX_WEIGHT_BYTES)]
    TooLarge(u64),
    /// A path would exceed the file system's limits (a component over
    /// `NAME_MAX` or a whole path over `PATH_MAX`).
    #[error("path {path:?} is too long: {why}")]
    TooLong {
        /// The path (or component).
        path: String,
        /// Which limit.
        why: String,
    },
    /// A file in a per-core directory exists with other contents; the link refuses to overwrite it.
    #[error("{0} exists with other contents; refusing to overwrite it")]
    Exists(String),
    /// A filesystem call failed.
    #[error("{path}: {msg}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        msg: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LinkDirError + '_ {
    move |e| LinkDirError::Io { path: path.display().to_string(), msg: e.to_string() }
}

/// Longest file-name component in bytes (POSIX `NAME_MAX` on Linux file systems).
pub const NAME_MAX: usize = 255;
/// Longest path in bytes, NUL excluded (Linux `PATH_MAX` is 4096 with the NUL).
pub const PATH_MAX: usize = 4095;

/// THE name-to-path function: `name` split on `/` into components, each
/// non-empty, not `.` or `..`, without NUL, at most [`NAME_MAX`] bytes; a
/// leading `/` (absolute) is refused.
pub fn safe_rel_path(name: &str) -> Result<PathBuf, LinkDirError> {
    let bad = |why| {
        marks::hit("link.dir.bad_name");
        Err(LinkDirError::BadName { name: name.to_string(), why })
    };
    if name.starts_with('/') {
        return bad("absolute");
    }
    let mut p = PathBuf::new();
    for c in name.split('/') {
        match c {
            "" => return bad("empty component"),
            "." | ".." => return bad("`.` or `..` component"),
            c if c.contains('\0') => return bad("NUL byte"),
            c if c.len() > NAME_MAX => {
                marks::hit("link.dir.name_too_long");
                return Err(LinkDirError::TooLong {
                    path: name.to_string(),
                    why: format!("a component of {} bytes exceeds NAME_MAX {NAME_MAX}", c.len()),
                });
            }
            c => p.push(c),
        }
    }
    // Belt and braces: only plain components may remain.
    if !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return bad("not a plain relative path");
    }
    Ok(p)
}

/// `<root>/<name>`.
pub fn module_dir(root: &Path, name: &str) -> Result<PathBuf, LinkDirError> {
    Ok(root.join(safe_rel_path(name)?))
}

/// `<root>/<name>/sgLnk`.
pub fn lnk_dir(root: &Path, name: &str) -> Result<PathBuf, LinkDirError> {
    Ok(module_dir(root, name)?.join("sgLnk"))
}

/// The weights of core module `m` that have contents, with their relative file paths.
fn weight_files(m: &Module) -> Result<Vec<(usize, PathBuf)>, LinkDirError> {
    let mut out = Vec::new();
    for (i, l) in m.memlocs.iter().enumerate() {
        if l.usage == Usage::Weight && l.init.is_some() && l.remote_local_target.is_none() {
            out.push((i, safe_rel_path(&format!("{}.npy", l.name))?));
        }
    }
    Ok(out)
}

/// Refuses `path` when it is longer than [`PATH_MAX`] bytes.
fn check_path_len(path: &Path) -> Result<(), LinkDirError> {
    let n = path.as_os_str().len();
    if n > PATH_MAX {
        marks::hit("link.dir.path_too_long");
        let shown: String = path.display().to_string().chars().take(80).collect();
        return Err(LinkDirError::TooLong {
            path: format!("{shown}..."),
            why: format!("{n} bytes exceed PATH_MAX {PATH_MAX}"),
        });
    }
    Ok(())
}

/// The sgLnk name of a scanned per-core file `file` of core `core`: `nc<core>_<file>`.
fn scanned_link_name(core: u32, file: &str) -> Result<PathBuf, LinkDirError> {
    safe_rel_path(&format!("nc{core}_{file}"))
}

/// Every name that would become a path is valid (the `dry_run` part of §8):
/// every component within [`NAME_MAX`], every file path, link path and link
/// target within [`PATH_MAX`] (the scanned custom-op and CPU-node files of
/// per-core directories that already exist included), and the weights are
/// small enough to write. Reads directories, writes nothing.
///
/// Cost: O(W + F) in weights and scanned files.
pub fn check_names(root: &Path, modules: &[Module], info: &DefInfo) -> Result<(), LinkDirError> {
    let mod_dir = module_dir(root, &info.name)?;
    let lnk = mod_dir.join("sgLnk");
    check_path_len(&lnk.join("tensor-map.json"))?;
    let mut bytes = 0u64;
    for d in &info.defs {
        let sg = safe_rel_path(&d.sg_dir)?;
        let core_dir = mod_dir.join(&sg);
        check_path_len(&core_dir.join("debug_info.json"))?;
        check_path_len(&lnk.join(format!("nc{}.debug_info.json", d.core)))?;
        let m = &modules[d.module];
        for (i, rel) in weight_files(m)? {
            bytes = bytes.saturating_add(m.memlocs[i].elem_count.saturating_mul(4)); // written as i32
            let link_rel = Path::new("sgLnk").join(&rel);
            check_path_len(&core_dir.join(&rel))?;
            check_path_len(&mod_dir.join(&link_rel))?;
            check_path_len(&relative_target(&link_rel, &sg.join(&rel)))?;
        }
        // The scans' link names, for the per-core files that already exist.
        if core_dir.is_dir() {
            let own = own_files(m)?;
            for f in files_where(&core_dir, |n| !own.contains(n) && is_scanned(n))? {
                let name = scanned_link_name(d.core, &f)?;
                check_path_len(&lnk.join(&name))?;
            }
        }
    }
    // Weights are materialized as `.npy` in memory: refuse a huge total before writing anything.
    if bytes > crate::neff::MAX_WEIGHT_BYTES {
        marks::hit("link.dir.too_large");
        return Err(LinkDirError::TooLarge(bytes));
    }
    Ok(())
}

/// A custom-op blob (`*.so`), found by `symLinkCustomOpFiles`.
fn is_custom_op(n: &str) -> bool {
    n.ends_with(".so")
}

/// A CPU-node file (`cpu_node*`), found by `copyCpuNodeFiles`.
fn is_cpu_node(n: &str) -> bool {
    n.starts_with("cpu_node")
}

fn is_scanned(n: &str) -> bool {
    is_custom_op(n) || is_cpu_node(n)
}

/// The top-level names lncsim itself writes in a core's directory (weights'
/// first components and `debug_info.json`): the scans skip them.
fn own_files(m: &Module) -> Result<BTreeSet<String>, LinkDirError> {
    let mut own: BTreeSet<String> = BTreeSet::from(["debug_info.json".to_string()]);
    for (_, rel) in weight_files(m)? {
        if let Some(Component::Normal(c)) = rel.components().next() {
            own.insert(c.to_string_lossy().into_owned());
        }
    }
    Ok(own)
}

/// What one setup created (paths that did not exist before it), so a failed
/// setup can remove exactly that.
#[derive(Default)]
struct Created {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

impl Created {
    /// Removes what was created, files first, then directories deepest first
    /// (each only if empty). Best effort: the setup's error is what is reported.
    fn undo(self) {
        for f in self.files.iter().rev() {
            let _ = fs::remove_file(f);
        }
        for d in self.dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
}

/// Creates `base/rel` directory by directory, refusing any existing symlink on the way.
fn ensure_dir(base: &Path, rel: &Path) -> Result<PathBuf, LinkDirError> {
    ensure_dir_in(base, rel, &mut Created::default())
}

/// [`ensure_dir`], recording the directories it creates in `created`.
fn ensure_dir_in(base: &Path, rel: &Path, created: &mut Created) -> Result<PathBuf, LinkDirError> {
    let mut p = base.to_path_buf();
    for c in rel.components() {
        p.push(c);
        match fs::symlink_metadata(&p) {
            Ok(md) if md.file_type().is_symlink() => {
                marks::hit("link.dir.symlink_refused");
                return Err(LinkDirError::Escapes(p.display().to_string()));
            }
            Ok(md) if md.is_dir() => {}
            Ok(_) => return Err(LinkDirError::Io { path: p.display().to_string(), msg: "not a directory".into() }),
            Err(_) => {
                fs::create_dir(&p).map_err(io(&p))?;
                created.dirs.push(p.clone());
            }
        }
    }
    Ok(p)
}

/// Writes `bytes` at `path`, replacing a regular file but never writing through a symlink.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), LinkDirError> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::remove_file(path).map_err(io(path))?;
    }
    fs::write(path, bytes).map_err(io(path))
}

/// Writes `bytes` at `path` in a sgLnk directory (replacing what is there), recording a new file.
fn write_file_in(path: &Path, bytes: &[u8], created: &mut Created) -> Result<(), LinkDirError> {
    let existed = fs::symlink_metadata(path).is_ok();
    write_file(path, bytes)?;
    if !existed {
        created.files.push(path.to_path_buf());
    }
    Ok(())
}

/// Writes a per-core artifact: never overwrites. A file with exactly `bytes`
/// is kept; any other existing entry (a file with other bytes, a symlink, a
/// directory) is [`LinkDirError::Exists`].
fn write_new_file(path: &Path, bytes: &[u8], created: &mut Created) -> Result<(), LinkDirError> {
    match fs::symlink_metadata(path) {
        Ok(md) if md.is_file() && fs::read(path).is_ok_and(|old| old == bytes) => {
            marks::hit("link.dir.artifact_kept");
            Ok(())
        }
        Ok(_) => {
            marks::hit("link.dir.artifact_exists");
            Err(LinkDirError::Exists(path.display().to_string()))
        }
        Err(_) => {
            fs::write(path, bytes).map_err(io(path))?;
            created.files.push(path.to_path_buf());
            Ok(())
        }
    }
}

/// A `.npy` v1.0 file of little-endian int32 values, shape `(n,)` (the NEFF's writer).
fn npy_i32(values: &[i32]) -> Vec<u8> {
    // A one-dimensional shape always matches its data, so the writer cannot refuse it.
    crate::neff::npy::write_i4(&[values.len() as u64], values).unwrap_or_default()
}

/// `<up>/<target>` such that a link at `<mod_dir>/<link_rel>` points at `<mod_dir>/<target_rel>`.
fn relative_target(link_rel: &Path, target_rel: &Path) -> PathBuf {
    let ups = link_rel.components().count().saturating_sub(1);
    let mut t = PathBuf::new();
    for _ in 0..ups {
        t.push("..");
    }
    t.join(target_rel)
}

/// True when `target` (relative to the link's directory) resolves lexically inside `mod_dir`.
pub fn stays_inside(mod_dir: &Path, link: &Path, target: &Path) -> bool {
    let mut p: Vec<Component<'_>> = link.parent().map(|x| x.components().collect()).unwrap_or_default();
    for c in target.components() {
        match c {
            Component::ParentDir => {
                p.pop();
            }
            Component::Normal(_) => p.push(c),
            _ => return false,
        }
    }
    p.iter().collect::<PathBuf>().starts_with(mod_dir)
}

/// Creates the symlink `<mod_dir>/<link_rel>` -> `<mod_dir>/<target_rel>` (relative).
fn symlink_files(
    mod_dir: &Path,
    link_rel: &Path,
    target_rel: &Path,
    created: &mut Created,
) -> Result<(), LinkDirError> {
    let link = mod_dir.join(link_rel);
    let target = relative_target(link_rel, target_rel);
    if !stays_inside(mod_dir, &link, &target) {
        return Err(LinkDirError::Escapes(link.display().to_string()));
    }
    if let Some(parent) = link_rel.parent() {
        ensure_dir_in(mod_dir, parent, created)?;
    }
    let existed = fs::symlink_metadata(&link).is_ok();
    if existed {
        fs::remove_file(&link).map_err(io(&link))?;
    }
    symlink(&target, &link).map_err(io(&link))?;
    if !existed {
        created.files.push(link);
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("symlinks need a unix host"))
}

/// The stand-in for the per-core flow's artifacts: each weight as `.npy`
/// and a `debug_info.json` naming the core's instructions; never overwrites
/// ([`write_new_file`]).
fn write_core_artifacts(core_dir: &Path, m: &Module, created: &mut Created) -> Result<(), LinkDirError> {
    for (i, rel) in weight_files(m)? {
        let l = &m.memlocs[i];
        let seed = l.init.unwrap_or(0);
        if let Some(parent) = rel.parent() {
            ensure_dir_in(core_dir, parent, created)?;
        }
        let values: Vec<i32> = (0..l.elem_count).map(|k| init_value(seed, k)).collect();
        write_new_file(&core_dir.join(&rel), &npy_i32(&values), created)?;
    }
    let names: Vec<&str> = m.functions.iter().flat_map(|f| f.insts.iter().map(|i| i.name.as_str())).collect();
    let debug = serde_json::json!({ "module": m.name, "core": m.attrs.neuron_core_id, "instructions": names });
    write_new_file(&core_dir.join("debug_info.json"), debug.to_string().as_bytes(), created)
}

/// Files directly in `dir` whose name satisfies `pred`, in name order.
fn files_where(dir: &Path, pred: impl Fn(&str) -> bool) -> Result<Vec<String>, LinkDirError> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let is_file = e.file_type().map_err(io(dir))?.is_file();
        if let Some(n) = e.file_name().to_str()
            && is_file
            && pred(n)
        {
            out.push(n.to_string());
        }
    }
    out.sort();
    Ok(out)
}

/// `setupLinkDir`: writes each core's artifacts, links them into `sgLnk`, and
/// writes `tensor-map.json`. All or nothing: on an error, everything this
/// call created is removed again (see the module doc).
pub fn setup_link_dir(root: &Path, modules: &[Module], info: &DefInfo, tm: &TensorMap) -> Result<(), LinkDirError> {
    check_names(root, modules, info)?;
    let mut created = Created::default();
    let r = setup_link_dir_in(root, modules, info, tm, &mut created);
    if r.is_err() {
        marks::hit("link.dir.rolled_back");
        created.undo();
    }
    r
}

fn setup_link_dir_in(
    root: &Path,
    modules: &[Module],
    info: &DefInfo,
    tm: &TensorMap,
    created: &mut Created,
) -> Result<(), LinkDirError> {
    // The root is the caller's (trusted); everything under it goes through `ensure_dir`.
    if !root.is_dir() {
        // Record the directories `create_dir_all` makes, outermost first.
        let mut missing: Vec<PathBuf> =
            root.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).map(Path::to_path_buf).collect();
        missing.reverse();
        fs::create_dir_all(root).map_err(io(root))?;
        created.dirs.extend(missing);
    }
    let name_rel = safe_rel_path(&info.name)?;
    let mod_dir = ensure_dir_in(root, &name_rel, created)?;
    ensure_dir_in(&mod_dir, Path::new("sgLnk"), created)?; // createLinkDir
    let mut linked_weights = BTreeSet::new();
    for d in &info.defs {
        let sg = safe_rel_path(&d.sg_dir)?;
        let core_dir = ensure_dir_in(&mod_dir, &sg, created)?;
        let m = &modules[d.module];
        write_core_artifacts(&core_dir, m, created)?;
        // symlinkNpyFiles: one link per weight name, to the first core's file
        // (weights of one name are identical: the linker unified them).
        for (_, rel) in weight_files(m)? {
            if linked_weights.insert(rel.clone()) {
                symlink_files(&mod_dir, &Path::new("sgLnk").join(&rel), &sg.join(&rel), created)?;
            }
        }
        // symLinkDebugInfoFiles
        symlink_files(
            &mod_dir,
            &Path::new("sgLnk").join(format!("nc{}.debug_info.json", d.core)),
            &sg.join("debug_info.json"),
            created,
        )?;
        // The scans see only what the per-core flow left, never lncsim's own files.
        let own = own_files(m)?;
        // symLinkCustomOpFiles
        for f in files_where(&core_dir, |n| is_custom_op(n) && !own.contains(n))? {
            marks::hit("link.dir.custom_op");
            let link = Path::new("sgLnk").join(scanned_link_name(d.core, &f)?);
            symlink_files(&mod_dir, &link, &sg.join(safe_rel_path(&f)?), created)?;
        }
        // copyCpuNodeFiles: copied, not linked.
        for f in files_where(&core_dir, |n| is_cpu_node(n) && !own.contains(n))? {
            marks::hit("link.dir.cpu_node_copied");
            let to = mod_dir.join("sgLnk").join(scanned_link_name(d.core, &f)?);
            let bytes = fs::read(core_dir.join(safe_rel_path(&f)?)).map_err(io(&core_dir))?;
            write_file_in(&to, &bytes, created)?;
        }
    }
    let dir = mod_dir.join("sgLnk");
    write_file_in(&dir.join("tensor-map.json"), tm.to_json().as_bytes(), created)?;
    marks::hit("link.dir.setup");
    Ok(())
}

/// `tryUpdateTensorMapFile`: (re)writes `<root>/<name>/sgLnk/tensor-map.json`.
pub fn try_update_tensor_map_file(root: &Path, name: &str, tm: &TensorMap) -> Result<(), LinkDirError> {
    let dir = ensure_dir(root, &safe_rel_path(name)?.join("sgLnk"))?;
    write_file(&dir.join("tensor-map.json"), tm.to_json().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_v1_aligned_and_little_endian() {
        let b = npy_i32(&[1, -2]);
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&b[10..10 + hlen]).unwrap_or("");
        assert!(header.starts_with("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"));
        assert!(header.ends_with('\n'));
        assert_eq!(&b[10 + hlen..], &[1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn relative_targets_stay_inside_and_escapes_are_caught() {
        let m = Path::new("/r/demo");
        let t = relative_target(Path::new("sgLnk/a/b.npy"), Path::new("nc0/sg0/a/b.npy"));
        assert_eq!(t, Path::new("../../nc0/sg0/a/b.npy"));
        assert!(stays_inside(m, &m.join("sgLnk/a/b.npy"), &t));
        assert!(!stays_inside(m, &m.join("sgLnk/x"), Path::new("../../etc/passwd")));
        assert!(!stays_inside(m, &m.join("sgLnk/x"), Path::new("/etc/passwd")));
    }
}
