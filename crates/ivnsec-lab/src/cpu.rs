//! CPU accounting for every experiment, as seed 002 §5.2.2 measures it with `sar`: the whole
//! machine from `/proc/stat` sampled once a second, and each node process's own user/system time
//! (`getrusage`, taken by the node itself). Figures are % of the whole machine (all cores = 100 %),
//! so they compare directly with 002's "CPU increase < 5 %" rule.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Parses the first (`cpu `) line of `/proc/stat` text.
    pub fn parse(proc_stat: &str) -> Option<CpuTimes> {
        let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_ascii_whitespace()
            .skip(1)
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        if v.len() < 4 {
            return None;
        }
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(CpuTimes {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        })
    }

    /// Reads `/proc/stat` now.
    pub fn now() -> io::Result<CpuTimes> {
        let s = std::fs::read_to_string("/proc/stat")?;
        CpuTimes::parse(&s)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no cpu line in /proc/stat"))
    }

    /// Ticks spent not idle (iowait counts as idle, as sar's %idle + %iowait; steal is time the
    /// hypervisor took away and counts as not ours: it is excluded from both sides).
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }

    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait
    }

    /// Busy share of the whole machine between `self` (earlier) and `later`, in %.
    pub fn busy_pct_until(&self, later: &CpuTimes) -> Option<f64> {
        let total = later.total().checked_sub(self.total())?;
        let busy = later.busy().checked_sub(self.busy())?;
        (total > 0).then(|| 100.0 * busy as f64 / total as f64)
    }
}

/// Samples `/proc/stat` in a thread every `interval` (like `sar -u 1`) until stopped.
pub struct SystemSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<CpuTimes>>>,
}

impl SystemSampler {
    /// Starts sampling; the first sample is taken at once.
    pub fn start(interval: Duration) -> SystemSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut samples = Vec::new();
            let mut next = Instant::now();
            loop {
                if let Ok(t) = CpuTimes::now() {
                    samples.push(t);
                }
                if s.load(Ordering::Relaxed) {
                    return samples;
                }
                next += interval;
                // Sleep in small steps so stop() returns quickly.
                while Instant::now() < next && !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10).min(interval));
                }
            }
        });
        SystemSampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops (taking one last sample) and summarises.
    pub fn stop(mut self) -> SystemCpu {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        SystemCpu::of(&samples)
    }
}

impl Drop for SystemSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Whole-machine CPU use over a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemCpu {
    /// Busy % of the machine from the first sample to the last.
    pub pct: f64,
    /// Busy % in each interval between two samples (sar's per-second lines).
    pub per_interval_pct: Vec<f64>,
}

impl SystemCpu {
    pub fn of(samples: &[CpuTimes]) -> SystemCpu {
        let pct = match (samples.first(), samples.last()) {
            (Some(a), Some(b)) => a.busy_pct_until(b).unwrap_or(0.0),
            _ => 0.0,
        };
        let per_interval_pct = samples
            .windows(2)
            .filter_map(|w| w[0].busy_pct_until(&w[1]))
            .map(|p| (p * 100.0).round() / 100.0)
            .collect();
        SystemCpu {
            pct,
            per_interval_pct,
        }
    }
}

/// CPU time one process used over a wall-clock window (from its own `getrusage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessCpu {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub wall_ns: u64,
}

impl ProcessCpu {
    /// Share of the whole machine (`cores` CPUs = 100 %) used over the window, in %.
    pub fn pct_of_machine(&self, cores: usize) -> f64 {
        if self.wall_ns == 0 || cores == 0 {
            return 0.0;
        }
        100.0 * (self.user_ns + self.sys_ns) as f64 / (self.wall_ns as f64 * cores as f64)
    }

    /// CPU nanoseconds per byte of `bytes` (0 bytes: `None`).
    pub fn ns_per_byte(&self, bytes: u64) -> Option<f64> {
        (bytes > 0).then(|| (self.user_ns + self.sys_ns) as f64 / bytes as f64)
    }

    /// Sum of several processes (their windows overlap: the longest wall time is kept).
    pub fn sum<'a>(it: impl IntoIterator<Item = &'a ProcessCpu>) -> ProcessCpu {
        it.into_iter()
            .fold(ProcessCpu::default(), |a, b| ProcessCpu {
                user_ns: a.user_ns + b.user_ns,
                sys_ns: a.sys_ns + b.sys_ns,
                wall_ns: a.wall_ns.max(b.wall_ns),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 800 10 3 2 7 0 0\ncpu0 50 2 25 400 5 1 1 3 0 0\nintr 1\n";

    #[test]
    fn parses_proc_stat() {
        let t = CpuTimes::parse(STAT).unwrap();
        assert_eq!(t.user, 100);
        assert_eq!(t.idle, 800);
        assert_eq!(t.steal, 7);
        assert_eq!(t.busy(), 100 + 5 + 50 + 3 + 2);
        assert_eq!(t.total(), 160 + 800 + 10);
        assert!(CpuTimes::parse("intr 1\n").is_none());
        assert!(CpuTimes::parse("cpu  1 x 3 4\n").is_none());
    }

    #[test]
    fn busy_share_between_samples() {
        let a = CpuTimes::parse(STAT).unwrap();
        let mut b = a;
        b.user += 30;
        b.softirq += 10;
        b.idle += 60;
        // 40 busy of 100 ticks.
        assert_eq!(a.busy_pct_until(&b), Some(40.0));
        let s = SystemCpu::of(&[a, b, b]);
        assert_eq!(s.pct, 40.0);
        assert_eq!(s.per_interval_pct, vec![40.0]);
        assert_eq!(SystemCpu::of(&[]).pct, 0.0);
    }

    #[test]
    fn process_share_of_the_machine() {
        let p = ProcessCpu {
            user_ns: 300_000_000,
            sys_ns: 100_000_000,
            wall_ns: 1_000_000_000,
        };
        assert!((p.pct_of_machine(2) - 20.0).abs() < 1e-9);
        assert_eq!(p.ns_per_byte(4_000_000), Some(100.0));
        assert_eq!(p.ns_per_byte(0), None);
        let s = ProcessCpu::sum(&[p, p]);
        assert_eq!(s.user_ns, 600_000_000);
        assert_eq!(s.wall_ns, 1_000_000_000);
    }

    #[test]
    fn sampler_reads_this_machine() {
        let s = SystemSampler::start(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(70));
        let r = s.stop();
        assert!((0.0..=100.0).contains(&r.pct));
        assert!(!r.per_interval_pct.is_empty());
    }
}
