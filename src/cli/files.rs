//! Output files for every subcommand: checked before any work is done, and
//! written all or nothing (a temporary file beside the target, renamed over
//! it), so a failure never leaves a partial file behind.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::CliError;

/// `-`: standard input for a file argument, standard output where an output allows it.
pub const STDIO: &str = "-";

/// Whether `path` is `-`.
pub fn is_stdio(path: &Path) -> bool {
    path == Path::new(STDIO)
}

/// The directory an output file goes into (`.` for a bare file name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks that `path` can be written as an output file (`flag` names the
/// option in the message): not a directory, and its directory exists. Run
/// before any work, so a typo in an output path fails at once.
pub fn check_output(flag: &str, path: &Path) -> Result<(), CliError> {
    let bad = |why: String| CliError::BadInput(format!("{flag} {}: {why}", path.display()));
    if path.as_os_str().is_empty() {
        return Err(CliError::BadInput(format!("{flag}: empty file name")));
    }
    if fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(bad("is a directory".into()));
    }
    let dir = parent_of(path);
    match fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(bad(format!("{} is not a directory", dir.display()))),
        Err(_) => Err(bad(format!("directory {} does not exist", dir.display()))),
    }
}

/// Checks that `dir` can be used as an output directory (created when missing): not an existing non-directory.
pub fn check_output_dir(flag: &str, dir: &Path) -> Result<(), CliError> {
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            Err(CliError::BadInput(format!("{flag} {}: exists and is not a directory", dir.display())))
        }
        _ => Ok(()),
    }
}

/// Writes `bytes` to `path`, all or nothing.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_with(path, |w| w.write_all(bytes))
}

/// Writes what `fill` produces to `path`, all or nothing: into a temporary
/// file in the same directory, renamed over `path` once complete (an existing
/// file's permissions are kept, a symlink is written through). A device or
/// FIFO (`/dev/stdout`, `/dev/null`) is written directly.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    let err = |p: &Path, e: std::io::Error| CliError::BadInput(format!("{}: {e}", p.display()));
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    };
    let existing = fs::metadata(&target).ok();
    if let Some(m) = &existing {
        if m.is_dir() {
            return Err(CliError::BadInput(format!("{}: is a directory", path.display())));
        }
        if !m.is_file() {
            let mut w = BufWriter::new(fs::OpenOptions::new().write(true).open(&target).map_err(|e| err(path, e))?);
            return fill(&mut w).and_then(|()| w.flush()).map_err(|e| err(path, e));
        }
    }
    let (tmp, file) = temp_beside(&target).map_err(|e| err(path, e))?;
    let written = (|| {
        let mut w = BufWriter::new(file);
        fill(&mut w)?;
        drop(w.into_inner().map_err(|e| e.into_error())?);
        if let Some(m) = &existing {
            fs::set_permissions(&tmp, m.permissions())?;
        }
        fs::rename(&tmp, &target)
    })();
    written.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        err(path, e)
    })
}

/// A new file `.<name>.lncsim-<pid>-<n>.tmp` beside `target`.
fn temp_beside(target: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = parent_of(target);
    let mut n = 0u32;
    loop {
        let tmp = dir.join(format!(".{name}.lncsim-{}-{n}.tmp", std::process::id()));
        match fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lncsim-files-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_failed_write_leaves_neither_the_file_nor_a_temporary() {
        let d = scratch("fail");
        let p = d.join("out.bin");
        let r = write_with(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("disk on fire"))
        });
        assert!(r.unwrap_err().to_string().contains("disk on fire"));
        assert_eq!(fs::read_dir(&d).unwrap().count(), 0, "nothing left behind");
        fs::write(&p, b"old").unwrap();
        assert!(write_with(&p, |_| Err(std::io::Error::other("no"))).is_err());
        assert_eq!(fs::read(&p).unwrap(), b"old", "the old contents survive a failed write");
        write_file(&p, b"new").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn outputs_are_checked_before_any_work() {
        let d = scratch("check");
        assert!(check_output("-o", &d.join("x")).is_ok());
        let e = check_output("-o", &d.join("missing/x")).unwrap_err().to_string();
        assert!(e.starts_with("-o ") && e.contains("does not exist"), "{e}");
        assert!(check_output("-o", &d).unwrap_err().to_string().contains("is a directory"));
        fs::write(d.join("f"), b"").unwrap();
        assert!(check_output("-o", &d.join("f/x")).unwrap_err().to_string().contains("is not a directory"));
        assert!(check_output_dir("--link-dir", &d.join("f")).is_err());
        assert!(check_output_dir("--link-dir", &d.join("new")).is_ok());
        assert!(check_output("-o", Path::new("")).is_err());
        fs::remove_dir_all(&d).unwrap();
    }
}
