//! CPU and clocks: affinity of the calling thread ([`pin_current_thread`], [`current_affinity`],
//! [`current_cpu`]; on this VM a cross-CPU wake-up costs ≈27 µs per hop, so latency mode pins
//! and busy-polls), the CPU time of this process ([`rusage_self`]) and a monotonic clock that
//! means the same in every network namespace ([`monotonic_ns`]).

use std::io;
use std::mem;

/// CLOCK_MONOTONIC in nanoseconds. Unlike [`std::time::Instant`], the value is a plain number
/// that means the same in every process of the host: network namespaces share this clock (only
/// a time namespace, which the testbed never creates, would offset it), so a time taken in one
/// ECU namespace can be subtracted from one taken in another.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec that lives across the call; CLOCK_MONOTONIC is
    // always available on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// CPU time this process has used so far (`getrusage(RUSAGE_SELF)`): (user ns, system ns),
/// every thread included, at the kernel's accounting resolution.
pub fn rusage_self() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { mem::zeroed() };
    // SAFETY: ru is valid for writes; RUSAGE_SELF is always valid, so the call cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is out of range"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: cpu < CPU_SETSIZE (checked above), so CPU_SET writes inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is valid for reads of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Highest real-time priority [`set_current_thread_realtime`] takes (SCHED_FIFO's range is
/// 1 … 99).
pub const MAX_REALTIME_PRIORITY: u8 = 99;

/// Puts the calling thread under `SCHED_FIFO` at `priority` (1 … 99), or back under the normal
/// policy (`SCHED_OTHER`) for `None`. Threads it creates afterwards inherit the policy. Needs
/// CAP_SYS_NICE (root) to raise it; EPERM otherwise.
pub fn set_current_thread_realtime(priority: Option<u8>) -> io::Result<()> {
    let (policy, prio) = match priority {
        Some(p) if (1..=MAX_REALTIME_PRIORITY).contains(&p) => (libc::SCHED_FIFO, i32::from(p)),
        Some(p) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("real-time priority {p} is outside 1 … {MAX_REALTIME_PRIORITY}"),
            ));
        }
        None => (libc::SCHED_OTHER, 0),
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param that lives across the
    // call, and the kernel only reads it.
    let r = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The real-time priority the calling thread runs at under `SCHED_FIFO`, or `None` under any
/// other policy (`sched_getscheduler`, `sched_getparam`).
pub fn current_thread_realtime() -> Option<u8> {
    // SAFETY: pid 0 is the calling thread; sched_getscheduler takes no pointers.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy != libc::SCHED_FIFO {
        return None;
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid, writable sched_param that lives
    // across the call.
    let r = unsafe { libc::sched_getparam(0, &mut param) };
    (r == 0).then(|| u8::try_from(param.sched_priority).unwrap_or(0))
}

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid for writes of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: every index is < CPU_SETSIZE, so CPU_ISSET reads inside `set`.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The CPU the calling thread runs on right now (`sched_getcpu`), if the kernel tells.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Priorities outside SCHED_FIFO's 1 … 99 are refused before any system call; going back
    /// to the normal policy is always permitted, and raising it works as root (this thread
    /// then reads back SCHED_FIFO at that priority) and is EPERM otherwise.
    #[test]
    fn realtime_priority_is_checked_and_read_back() {
        for p in [0, 100, 255] {
            let e = set_current_thread_realtime(Some(p)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{p}");
        }
        let t = std::thread::spawn(|| {
            let raised = set_current_thread_realtime(Some(7));
            // SAFETY: pid 0 is the calling thread; sched_getscheduler takes no pointers.
            let policy = unsafe { libc::sched_getscheduler(0) };
            set_current_thread_realtime(None).unwrap();
            // SAFETY: as above.
            let after = unsafe { libc::sched_getscheduler(0) };
            (raised.map_err(|e| e.raw_os_error()), policy, after)
        });
        let (raised, policy, after) = t.join().unwrap();
        match raised {
            Ok(()) => assert_eq!(policy, libc::SCHED_FIFO),
            Err(code) => assert_eq!(code, Some(libc::EPERM)),
        }
        assert_eq!(after, libc::SCHED_OTHER);
    }

    #[test]
    fn affinity_round_trip() {
        // Runs in a thread of its own so the test harness thread keeps its affinity.
        std::thread::spawn(|| {
            let cpus = current_affinity().unwrap();
            assert!(!cpus.is_empty());
            pin_current_thread(cpus[0]).unwrap();
            assert_eq!(current_affinity().unwrap(), vec![cpus[0]]);
            assert_eq!(current_cpu(), Some(cpus[0]));
            assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn rusage_grows_with_work() {
        let (u0, s0) = rusage_self();
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (u1, s1) = rusage_self();
        assert!(u1 + s1 > u0 + s0);
    }
}
