//! `lncsim neff unpack FILE.neff DIR`: extract members, never outside DIR.
//!
//! All or nothing, as far as a directory tree allows: every member's path is
//! planned and checked against the filesystem (no symlink on the way, no file
//! where a directory must go, no directory where a file must go) before
//! anything is written; each file is written whole (a temporary renamed over
//! it); and when a write still fails, the files and directories this run
//! created are removed again. Files that existed before and were overwritten
//! keep their new contents.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use lncsim_model::neff::{ReadOptions, normalize_name, read_container};

use super::files::write_file;
use super::{CliError, read_bytes, shown};

/// Arguments of `lncsim neff unpack`.
#[derive(Debug, Args)]
pub struct UnpackArgs {
    /// The NEFF file (`-` reads standard input).
    pub file: PathBuf,
    /// The directory to extract into (created, with missing parents, when missing); existing files are overwritten.
    pub dir: PathBuf,
    /// Verify the header hash before extracting.
    #[arg(long)]
    pub verify_hash: bool,
}

fn io_err(p: &Path, e: std::io::Error) -> CliError {
    CliError::BadInput(format!("{}: {e}", p.display()))
}

/// `dir/name` for a member name, refusing anything that is not plain relative
/// components (the reader already refuses such names; this is a second fence).
fn target(dir: &Path, name: &str) -> Result<PathBuf, CliError> {
    let refuse = || CliError::BadInput(format!("refusing to write member {name:?} outside {}", dir.display()));
    if normalize_name(name, false).ok().as_deref() != Some(name) {
        return Err(refuse());
    }
    let rel = Path::new(name);
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refuse());
    }
    Ok(dir.join(rel))
}

/// What extraction will do: directories to create (parents first) and files to write.
#[derive(Debug, Default)]
struct Plan<'a> {
    dirs: Vec<PathBuf>,
    files: Vec<(PathBuf, &'a [u8])>,
}

/// Plans the extraction of `members` under `dir`, checking every path first.
fn plan<'a>(dir: &Path, members: impl Iterator<Item = (&'a str, &'a [u8])>) -> Result<Plan<'a>, CliError> {
    let mut p = Plan::default();
    let mut new_dirs = BTreeSet::new();
    // DIR itself and its missing parents, outermost first.
    let mut missing = Vec::new();
    let mut cur = dir.to_path_buf();
    loop {
        match std::fs::metadata(&cur) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => return Err(CliError::BadInput(format!("{}: exists and is not a directory", cur.display()))),
            Err(_) => missing.push(cur.clone()),
        }
        match cur.parent() {
            Some(up) if !up.as_os_str().is_empty() => cur = up.to_path_buf(),
            _ => break,
        }
    }
    for d in missing.into_iter().rev() {
        new_dirs.insert(d.clone());
        p.dirs.push(d);
    }
    let mut file_set = BTreeSet::new();
    for (name, data) in members {
        let path = target(dir, name)?;
        let parts: Vec<&str> = name.split('/').collect();
        let mut cur = dir.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            cur.push(part);
            let last = i + 1 == parts.len();
            if if last { new_dirs.contains(&cur) } else { file_set.contains(&cur) } {
                return Err(CliError::BadInput(format!(
                    "member {name:?}: {} is both a file and a directory",
                    cur.display()
                )));
            }
            if last && !file_set.insert(cur.clone()) {
                return Err(CliError::BadInput(format!("member {name:?} appears twice")));
            }
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(CliError::BadInput(format!("refusing to write through symlink {}", cur.display())));
                }
                Ok(m) if !last && !m.is_dir() => {
                    return Err(CliError::BadInput(format!("{} exists and is not a directory", cur.display())));
                }
                Ok(m) if last && m.is_dir() => {
                    return Err(CliError::BadInput(format!("{} exists and is a directory", cur.display())));
                }
                Ok(_) => {}
                Err(_) if !last && new_dirs.insert(cur.clone()) => p.dirs.push(cur.clone()),
                Err(_) => {}
            }
        }
        p.files.push((path, data));
    }
    Ok(p)
}

/// What a run created, to remove again when it fails.
#[derive(Debug, Default)]
struct Undo {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

impl Undo {
    /// Removes the created files, then the created directories (innermost first; only when empty).
    fn rollback(self) {
        for f in self.files.iter().rev() {
            let _ = std::fs::remove_file(f);
        }
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Writes one planned file.
type WriteFn<'w> = dyn FnMut(&Path, &[u8]) -> Result<(), CliError> + 'w;

/// Carries out `plan` with `write` for each file; on failure, undoes what it created.
fn extract(plan: &Plan, write: &mut WriteFn) -> Result<(), CliError> {
    let mut undo = Undo::default();
    let r = (|| {
        for d in &plan.dirs {
            std::fs::create_dir(d).map_err(|e| io_err(d, e))?;
            undo.dirs.push(d.clone());
        }
        for (path, data) in &plan.files {
            let existed = std::fs::symlink_metadata(path).is_ok();
            write(path, data)?;
            if !existed {
                undo.files.push(path.clone());
            }
        }
        Ok(())
    })();
    if r.is_err() {
        undo.rollback();
    }
    r
}

/// Reads the container and writes each member under `dir`.
pub fn run(a: UnpackArgs) -> Result<ExitCode, CliError> {
    let bytes = read_bytes(&a.file)?;
    let opts = ReadOptions { verify_hash: a.verify_hash, ..ReadOptions::default() };
    let c = read_container(&bytes, &opts)
        .map_err(|e| CliError::BadInput(format!("{}: {e} [{}]", shown(&a.file), e.status())))?;
    let p = plan(&a.dir, c.members.iter().map(|m| (m.name.as_str(), m.data.as_slice())))?;
    extract(&p, &mut |path, data| write_file(path, data))?;
    println!("unpacked {} members ({} bytes) into {}", c.members.len(), c.members.total_bytes(), a.dir.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_that_escape_are_refused() {
        let d = Path::new("/tmp/x");
        assert_eq!(target(d, "sg00/def.json").unwrap(), PathBuf::from("/tmp/x/sg00/def.json"));
        for bad in ["../a", "/etc/passwd", "a/../../b", "", "./a", "a//b", "a/./b"] {
            assert!(target(d, bad).is_err(), "{bad:?}");
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lncsim-unpack-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const MEMBERS: [(&str, &[u8]); 4] =
        [("a.json", b"1"), ("sg00/x.bin", b"2"), ("sg00/y.bin", b"3"), ("sg01/z", b"4")];

    #[test]
    fn a_write_failing_midway_removes_what_the_run_created() {
        let d = scratch("midway");
        std::fs::write(d.join("keep"), b"k").unwrap();
        let out = d.join("out/deeper");
        let p = plan(&out, MEMBERS.into_iter()).unwrap();
        let mut n = 0;
        let r = extract(&p, &mut |path, data| {
            n += 1;
            if n == 3 { Err(CliError::BadInput("disk full".into())) } else { write_file(path, data) }
        });
        assert!(r.is_err());
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["keep"], "only what was there before");
        extract(&p, &mut |path, data| write_file(path, data)).unwrap();
        assert_eq!(std::fs::read(out.join("sg00/y.bin")).unwrap(), b"3");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn conflicts_are_found_before_anything_is_written() {
        let d = scratch("conflict");
        std::fs::write(d.join("sg01"), b"a file").unwrap();
        let e = plan(&d, MEMBERS.into_iter()).unwrap_err().to_string();
        assert!(e.contains("sg01 exists and is not a directory"), "{e}");
        std::fs::remove_file(d.join("sg01")).unwrap();
        std::fs::create_dir_all(d.join("a.json")).unwrap();
        assert!(plan(&d, MEMBERS.into_iter()).unwrap_err().to_string().contains("is a directory"));
        let both: [(&str, &[u8]); 2] = [("x", b"1"), ("x/y", b"2")];
        assert!(plan(&d.join("n"), both.into_iter()).unwrap_err().to_string().contains("both a file and a directory"));
        let both: [(&str, &[u8]); 2] = [("x/y", b"1"), ("x", b"2")];
        assert!(plan(&d.join("n"), both.into_iter()).unwrap_err().to_string().contains("both a file and a directory"));
        let file = d.join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(plan(&file, MEMBERS.into_iter()).unwrap_err().to_string().contains("not a directory"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
