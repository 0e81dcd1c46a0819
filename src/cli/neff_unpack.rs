//! `lncsim neff unpack FILE.neff DIR`: extract members, never outside DIR.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use lncsim_model::neff::{ReadOptions, normalize_name, read_container};

use super::{CliError, read_bytes, write_file};

/// Arguments of `lncsim neff unpack`.
#[derive(Debug, Args)]
pub struct UnpackArgs {
    /// The NEFF file (`-` reads standard input).
    pub file: PathBuf,
    /// The directory to extract into (created when missing).
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

/// Creates the parents of `path` below `dir`, refusing to pass through a symlink.
fn make_parents(dir: &Path, name: &str) -> Result<(), CliError> {
    let mut cur = dir.to_path_buf();
    let parts: Vec<&str> = name.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        cur.push(part);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(CliError::BadInput(format!("refusing to write through symlink {}", cur.display())));
            }
            Ok(m) if i + 1 < parts.len() && !m.is_dir() => {
                return Err(CliError::BadInput(format!("{} exists and is not a directory", cur.display())));
            }
            Ok(_) => {}
            Err(_) if i + 1 < parts.len() => std::fs::create_dir(&cur).map_err(|e| io_err(&cur, e))?,
            Err(_) => {}
        }
    }
    Ok(())
}

/// Reads the container and writes each member under `dir`.
pub fn run(a: UnpackArgs) -> Result<ExitCode, CliError> {
    let bytes = read_bytes(&a.file)?;
    let opts = ReadOptions { verify_hash: a.verify_hash, ..ReadOptions::default() };
    let c = read_container(&bytes, &opts)
        .map_err(|e| CliError::BadInput(format!("{}: {e} [{}]", a.file.display(), e.status())))?;
    std::fs::create_dir_all(&a.dir).map_err(|e| io_err(&a.dir, e))?;
    for m in c.members.iter() {
        let path = target(&a.dir, &m.name)?;
        make_parents(&a.dir, &m.name)?;
        write_file(&path, &m.data)?;
    }
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
}
