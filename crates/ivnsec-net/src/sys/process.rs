//! Child processes: [`die_with_parent`] makes a process ivnsec starts die with it, even when
//! ivnsec is killed by SIGKILL. This process's own limits: [`raise_open_files_limit`].

use std::io;

/// Makes the process `cmd` starts die with ivnsec: the kernel sends it `SIGKILL` when the
/// thread that spawns it ends, so an ivnsec killed by `SIGKILL` (no destructor, no signal
/// handler runs) leaves no node role, sockperf or iperf3 behind. Returns `cmd` for chaining:
/// `die_with_parent(&mut cmd).spawn()`. Every place ivnsec starts a process calls it.
///
/// How: a `pre_exec` hook sets `PR_SET_PDEATHSIG` in the forked child before it execs. Mind:
/// - The signal follows the *thread* that forked, not the process: spawn from a thread that
///   outlives the child (ivnsec's experiments spawn from the main thread). A child spawned
///   from a short-lived thread is killed when that thread returns.
/// - The parent may die between `fork` and `prctl`; the hook then sees another parent
///   (`getppid` changed) and the child exits before it execs anything.
/// - The setting survives `execve` of programs that gain no privilege (no set-user-ID bit, no
///   file capabilities): `ip netns exec NS PROGRAM` execs PROGRAM in the same process (no
///   fork), so PROGRAM itself dies with ivnsec.
/// - Processes the child forks itself are not covered; none of the programs ivnsec starts
///   (ivnsec node roles, sockperf, iperf3, ip, openssl) leaves one running.
///
/// Not for `CommandExt::exec` (no fork: the hook would compare against ivnsec's own pid).
pub fn die_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // std::process::id() fits a pid_t (the kernel hands out positive pid_t values).
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // operations are allowed: it makes two system calls (prctl, getppid) with integer
    // arguments and builds io::Errors from an errno (no allocation, no lock). It touches no
    // memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // The parent died before the death signal was armed: do not start at all.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// Raises this process's soft limit of open descriptors (`RLIMIT_NOFILE`) towards `want`, up to
/// the hard limit (which an unprivileged process may not pass); never lowers it. Returns the
/// soft limit in force afterwards. A server that holds many connections calls it at start
/// (the usual soft limit is 1024).
pub fn raise_open_files_limit(want: u64) -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid rlimit the kernel writes into; RLIMIT_NOFILE is a valid resource.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let target = want.min(lim.rlim_max);
    if target <= lim.rlim_cur {
        return Ok(lim.rlim_cur);
    }
    let new = libc::rlimit {
        rlim_cur: target,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: new is a valid rlimit the kernel only reads; the soft limit is at most the hard.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(target)
}
