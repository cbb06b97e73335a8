//! The clocks the crypto benchmark reads besides `Instant`: the CPU time of the benchmarking
//! thread (to compare with `openssl speed`, which divides by CPU time) and the nominal clock rate
//! (for the cycles/byte estimate). Both come from /proc; without it they are `None`.

use std::time::Instant;

use anyhow::{Result, anyhow};

/// Linux USER_HZ: the unit of the times in /proc/*/stat (100 on every mainstream architecture).
const CLK_TCK: u64 = 100;

/// ns of this thread's CPU time per frame, over at least `secs` of CPU time, counted from one
/// clock tick to another (like `openssl speed`, whose figures divide by CPU time). `None` when
/// /proc/thread-self/stat is unavailable or the machine is so busy that the CPU time does not
/// accumulate within 20 × `secs` of wall time.
pub fn cpu_time_per_frame(
    batch: &mut dyn FnMut(usize) -> Result<f64>,
    m: usize,
    secs: f64,
) -> Result<Option<f64>> {
    let Some(mut start) = thread_cpu_ticks() else {
        return Ok(None);
    };
    let target = (secs * CLK_TCK as f64).ceil() as u64;
    let wall = Instant::now();
    let deadline = secs * 20.0;
    // Start on a tick boundary.
    loop {
        batch(m.div_ceil(8))?;
        match thread_cpu_ticks() {
            Some(t) if t != start => {
                start = t;
                break;
            }
            Some(_) if wall.elapsed().as_secs_f64() < deadline => {}
            _ => return Ok(None),
        }
    }
    let mut frames = 0u64;
    loop {
        batch(m)?;
        frames += m as u64;
        let now = thread_cpu_ticks().ok_or_else(|| anyhow!("/proc/thread-self/stat vanished"))?;
        if now - start >= target {
            return Ok(Some(
                (now - start) as f64 * 1e9 / CLK_TCK as f64 / frames as f64,
            ));
        }
        if wall.elapsed().as_secs_f64() >= deadline {
            return Ok(None);
        }
    }
}

/// utime + stime of the calling thread, in `CLK_TCK` ticks.
fn thread_cpu_ticks() -> Option<u64> {
    stat_cpu_ticks(&std::fs::read_to_string("/proc/thread-self/stat").ok()?)
}

/// utime + stime from the text of a /proc/[pid]/stat or /proc/[pid]/task/[tid]/stat file.
fn stat_cpu_ticks(s: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may contain spaces: split after it.
    let rest = s.get(s.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts with field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    utime.checked_add(stime)
}

/// "cpu MHz" of the first processor in /proc/cpuinfo (Linux), for the cycles/byte estimate.
pub fn cpu_mhz() -> Option<f64> {
    cpuinfo_mhz(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// The first "cpu MHz" of /proc/cpuinfo text, when it is a positive number.
fn cpuinfo_mhz(info: &str) -> Option<f64> {
    info.lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// proc_pid_stat(5): (1) pid (2) comm in parentheses (3) state … (14) utime (15) stime.
    #[test]
    fn thread_stat_fields() {
        let line = "4242 (ivnsec crypto) R 1 4242 4242 0 -1 4194304 120 0 0 0 \
                    250 17 0 0 20 0 3 0 100 1000000 500 18446744073709551615";
        assert_eq!(stat_cpu_ticks(line), Some(267));
        // A command name with ") " inside does not shift the fields.
        let odd = "7 (a) b (c) S 1 7 7 0 -1 0 0 0 0 0 5 6 0 0";
        assert_eq!(stat_cpu_ticks(odd), Some(11));
        assert_eq!(stat_cpu_ticks("7 (x) S 1 2"), None);
        assert_eq!(stat_cpu_ticks("no parenthesis"), None);
        // This thread's own file parses (Linux).
        if std::path::Path::new("/proc/thread-self/stat").exists() {
            assert!(thread_cpu_ticks().is_some());
        }
    }

    #[test]
    fn cpuinfo_clock() {
        let info = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.132\n\
                    processor\t: 1\ncpu MHz\t\t: 3000.000\n";
        assert_eq!(cpuinfo_mhz(info), Some(2596.132));
        assert_eq!(cpuinfo_mhz("cpu MHz\t: 0\n"), None);
        assert_eq!(cpuinfo_mhz("processor\t: 0\n"), None);
    }
}
