//! Build information for `ivnsec --version`: `git describe` of the source tree, or
//! `$IVNSEC_GIT_DESCRIBE` where the source is not a git checkout (a source tarball; the
//! packaging script sets it), else `unknown`.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=IVNSEC_GIT_DESCRIBE");
    let describe = std::env::var("IVNSEC_GIT_DESCRIBE")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["describe", "--always", "--dirty", "--tags"]))
        .unwrap_or_else(|| "unknown".to_string());
    // A new commit or checkout changes HEAD or a ref: describe again then (not on every edit, so
    // `-dirty` is as of the last commit or checkout).
    for dir in ["--git-dir", "--git-common-dir"] {
        if let Some(d) = git(&["rev-parse", dir]) {
            let d = PathBuf::from(d);
            for f in ["HEAD", "packed-refs", "refs/heads", "refs/tags"] {
                let p = d.join(f);
                if p.exists() {
                    println!("cargo:rerun-if-changed={}", p.display());
                }
            }
        }
    }
    println!("cargo:rustc-env=IVNSEC_GIT_DESCRIBE={describe}");
    let profile = std::env::var("PROFILE").unwrap_or_default();
    println!("cargo:rustc-env=IVNSEC_BUILD_PROFILE={profile}");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=IVNSEC_BUILD_TARGET={target}");
}
