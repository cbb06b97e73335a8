//! What a plan's run hands each experiment ([`RunContext`]): where its nodes run (`--on`,
//! `--testbed`, the plan's hosts), the report directory, and the run's one capture.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::hosts::Host;
use crate::site::{Layout, OpenSite, Site, Where};

/// One capture for a whole plan: each node writes its part, which is appended in order.
pub struct Capture {
    writer: ivnsec_net::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
    part: PathBuf,
}

impl Capture {
    pub fn create(p: &Path) -> Result<Capture> {
        Ok(Capture {
            writer: ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
            part: crate::site::part_path(p),
        })
    }

    /// The file the next node writes its part of the capture to.
    pub fn part(&self) -> &Path {
        &self.part
    }

    /// Appends what the last node wrote to the part file.
    pub fn absorb(&mut self) -> Result<()> {
        crate::site::append_pcap(&mut self.writer, &self.part)
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> Result<()> {
        Ok(self.writer.flush()?)
    }
}

/// Where and with what a plan's experiments run.
pub struct RunContext<'a> {
    /// `--on`: a testbed, loopback, or either.
    pub on: Where,
    /// `--testbed`: a running testbed to use instead of building one.
    pub testbed: Option<&'a str>,
    /// The report directory (files the run writes beside the report, e.g. a preset's timeline).
    pub out: &'a Path,
    /// The plan's initiator and responder hosts, when it has `[[host]]` tables.
    pub hosts: Option<(&'a Host, &'a Host)>,
    /// Across hosts, the site between them where the experiments that run across hosts run.
    pub hosts_site: Option<Site>,
    /// The run's one capture (`--pcap`).
    pub capture: Option<Capture>,
}

impl RunContext<'_> {
    /// The file the next node writes its part of the capture to, when the run captures.
    pub fn part(&self) -> Option<PathBuf> {
        self.capture.as_ref().map(|c| c.part().to_path_buf())
    }

    /// Appends the last node's part to the run's capture, when it captures.
    pub fn absorb(&mut self) -> Result<()> {
        match self.capture.as_mut() {
            Some(c) => c.absorb(),
            None => Ok(()),
        }
    }

    /// The site of one experiment: across hosts the plan's two hosts (the first sends, the
    /// second receives), otherwise a fresh testbed of `layout` (or what `--on`/`--testbed`
    /// say).
    pub fn open(&self, layout: &Layout) -> Result<OpenSite> {
        match &self.hosts_site {
            Some(s) => Ok(OpenSite {
                site: s.clone(),
                testbed: None,
                fallback_reason: None,
            }),
            None => crate::site::open_site(self.on, self.testbed, layout),
        }
    }

    /// Runs `run` on a site of its own ([`RunContext::open`]), announced as `what`; its nodes'
    /// capture parts join the run's capture. Interrupted, what it measured so far is not kept
    /// and it returns without error (the rest of the plan is skipped).
    pub fn on_site(
        &mut self,
        what: String,
        layout: Layout,
        run: &mut dyn FnMut(&Site, Option<&Path>) -> Result<()>,
    ) -> Result<()> {
        if crate::interrupt::requested() {
            return Ok(());
        }
        eprintln!("ivnsec run: {what}");
        let site = self.open(&layout)?;
        if let Some(why) = &site.fallback_reason {
            eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
        }
        let part = self.part();
        match run(&site.site, part.as_deref()) {
            Err(_) if crate::interrupt::requested() => return Ok(()),
            r => r.with_context(|| what.clone())?,
        }
        drop(site);
        self.absorb()
    }
}

/// Runs each of the jobs `name` in this process, announced with `describe`, and gathers their
/// results; interrupted, it stops before the next job.
pub fn in_process<T, U>(
    name: &'static str,
    jobs: &[T],
    describe: impl Fn(&T) -> String,
    run: impl Fn(&T) -> Result<U>,
    mut gather: impl FnMut(U),
) -> Result<()> {
    for (i, job) in jobs.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: {name} {}/{}: {}",
            i + 1,
            jobs.len(),
            describe(job)
        );
        gather(run(job).context(name)?);
    }
    Ok(())
}
