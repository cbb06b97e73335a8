//! The version texts of `-V` and `--version` (package version, build, providers and the table
//! `--provider auto` reads), shared by the parser, the man pages and `suites --calibrate`.

/// The version line of `-V`: the package version and the build (`git describe`).
pub fn short_version() -> String {
    format!(
        "{} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("IVNSEC_GIT_DESCRIBE")
    )
}

/// What `--version` prints after the name: version, build and the crypto providers with the
/// table `--provider auto` reads.
pub fn long_version() -> String {
    let providers = ivnsec_crypto::PROVIDERS
        .iter()
        .map(|p| {
            if p.name == "openssl" {
                format!(
                    "{} ({}, {})",
                    p.name,
                    p.library,
                    ivnsec_crypto::openssl_version()
                )
            } else {
                format!("{} ({})", p.name, p.library)
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{}\nbuild: {} ({} profile, {})\nproviders: {providers}\nauto table: {}\n  {}",
        env!("CARGO_PKG_VERSION"),
        env!("IVNSEC_GIT_DESCRIBE"),
        env!("IVNSEC_BUILD_PROFILE"),
        env!("IVNSEC_BUILD_TARGET"),
        ivnsec_crypto::auto_table_source(),
        ivnsec_crypto::describe_auto_table().replace("; ", "\n  "),
    )
}

/// The command with the build's version texts.
pub fn with_version(cmd: clap::Command) -> clap::Command {
    cmd.version(short_version()).long_version(long_version())
}
