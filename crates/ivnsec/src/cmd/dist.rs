//! `ivnsec completions SHELL` and `ivnsec man --out DIR`: shell completion scripts and man pages
//! generated from the clap definitions themselves (clap_complete, clap_mangen), so they never
//! drift from `--help`. `scripts/package` puts both into the Debian package.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap_complete::Shell;

use crate::error::usage;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  ivnsec completions bash > /etc/bash_completion.d/ivnsec
  ivnsec completions zsh > ~/.zfunc/_ivnsec          # a folder on $fpath
  ivnsec completions fish > ~/.config/fish/completions/ivnsec.fish
  source <(ivnsec completions bash)                   # this shell only
The Debian package installs all three (scripts/package).")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Writes ivnsec.1 and one page per subcommand (ivnsec-gateway.1, ivnsec-macsec-up.1, …), the \
text of each `--help`, into DIR (created if missing).

Example:
  ivnsec man --out target/man && man -l target/man/ivnsec-gateway.1")]
pub struct ManArgs {
    /// The folder to write the pages into, e.g. target/man.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `cmd`: the whole command as the completions show it (with the long version).
pub fn completions(a: CompletionsArgs, mut cmd: clap::Command) -> Result<ExitCode> {
    clap_complete::generate(a.shell, &mut cmd, "ivnsec", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// `cmd`: the whole command as the pages show it (with the long version).
pub fn man(a: ManArgs, cmd: clap::Command) -> Result<ExitCode> {
    if a.out.exists() && !a.out.is_dir() {
        return Err(usage(format!(
            "--out {}: exists and is not a folder; give a folder (created if missing)",
            a.out.display()
        )));
    }
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("--out {}: creating the folder", a.out.display()))?;
    clap_mangen::generate_to(cmd, &a.out)
        .with_context(|| format!("--out {}: writing the man pages", a.out.display()))?;
    let n = std::fs::read_dir(&a.out)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".1"))
        .count();
    eprintln!("man: {n} pages in {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
