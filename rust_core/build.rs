//! Stages the Alembic scripts (the top-level `migrations/`) in OUT_DIR, from where maturin packs them into every
//! wheel as `slugline/migrations/` (`[tool.maturin] include`), however the wheel is built: from a checkout, a git
//! URL or the sdist. The crate itself does not use them.

use std::path::Path;
use std::{env, fs, io};

fn main() -> io::Result<()> {
    let source = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("migrations");
    let staged = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("migrations");
    // A directory: cargo looks at every file below it, so a new migration is picked up too.
    println!("cargo:rerun-if-changed={}", source.display());
    if staged.exists() {
        fs::remove_dir_all(&staged)?; // a migration deleted from the source must not linger in the wheel
    }
    copy_scripts(&source, &staged)
}

fn copy_scripts(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "__pycache__" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            copy_scripts(&entry.path(), &to.join(&name))?;
        } else {
            fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}
