//! `ivnsec report DIR [--out DIR2]`: rebuild summary.json, summary.md and index.html of a
//! report directory from its samples.csv.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use ivnsec_lab::report::{INDEX_HTML, Report, ReportError, SAMPLES_CSV};

use crate::error::usage;

#[derive(clap::Args, Debug)]
// The subcommand's one-line description is the doc comment of `Command::Report` in cli.rs; the
// details go after the options so that line does not replace them.
#[command(
    after_help = "Rebuild a report directory's summary.json, summary.md and index.html from its \
samples.csv (one row per message), keeping the environment, requirements and sockperf baseline of \
an existing summary.json. Prints the path of the rebuilt index.html.\n\n\
With --out, the report is written to another directory (created if missing) together with a copy \
of samples.csv; the input directory is left untouched.\n\n\
Exit codes: 0 rebuilt, 2 a missing or malformed input (the message names the file, line and \
column), 1 the output could not be written."
)]
pub struct Args {
    /// Report directory holding samples.csv (and optionally summary.json).
    pub dir: PathBuf,
    /// Write the rebuilt report here instead of into DIR.
    #[arg(long, value_name = "DIR2")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let samples = args.dir.join(SAMPLES_CSV);
    if !args.dir.is_dir() {
        return Err(usage(format!(
            "{}: not a directory (expected a report directory holding {SAMPLES_CSV})",
            args.dir.display()
        )));
    }
    if !samples.is_file() {
        return Err(usage(format!(
            "{}: missing; a report directory holds the {SAMPLES_CSV} that `ivnsec run` or `ivnsec validate` wrote",
            samples.display()
        )));
    }
    // Everything from_dir reports is about its input: the CSV or the JSON beside it.
    let report = Report::from_dir(&args.dir).map_err(|e| match e {
        ReportError::Io { path, source } => usage(format!("{}: {source}", path.display())),
        other => usage(other.to_string()),
    })?;
    if report.scenarios.is_empty() && report.experiments.is_empty() {
        return Err(usage(format!(
            "{}: no samples (only a header) and no experiments in summary.json",
            samples.display()
        )));
    }
    let out: &Path = args.out.as_deref().unwrap_or(&args.dir);
    let same = out == args.dir
        || matches!(
            (out.canonicalize(), args.dir.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        );
    let written = if same {
        report.write_summaries(out)
    } else {
        report.write_dir(out)
    };
    let summary = written.with_context(|| format!("writing the report into {}", out.display()))?;
    let n = summary.scenarios.len();
    eprintln!(
        "{n} scenarios: {} meet the control-data deadline, {} the sensor-data bound",
        n - summary.control_failures().count(),
        n - summary.sensor_failures().count(),
    );
    if !summary.experiments.is_empty() {
        let failed = summary.experiment_failures();
        eprintln!(
            "experiments: {}",
            if failed.is_empty() {
                "every verdict passed".to_string()
            } else {
                format!("failed: {}", failed.join(", "))
            }
        );
    }
    println!("{}", out.join(INDEX_HTML).display());
    Ok(ExitCode::SUCCESS)
}
