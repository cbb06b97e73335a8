use super::*;

// Real output of linuxptp 3.1.1's pmc (Debian bookworm), captured on the project's test
// machine against ptp4l -2 -S on a veth pair between two namespaces.
const MASTER: &str = include_str!("testdata/pmc-master.txt");
const FREE_SLAVE: &str = include_str!("testdata/pmc-free-running-slave.txt");
const LISTENING: &str = include_str!("testdata/pmc-listening.txt");
const NO_PTP4L: &str = include_str!("testdata/pmc-no-ptp4l.txt");

#[test]
fn parses_the_grand_master() {
    let a = parse_pmc(MASTER).unwrap();
    assert_eq!(a.responses, 3);
    assert_eq!(a.clock_identity.as_deref(), Some("3623e4.fffe.dc27d6"));
    let t = a.time_status.as_ref().unwrap();
    assert_eq!(t.master_offset_ns, 0);
    assert!(!t.gm_present);
    assert_eq!(t.gm_identity, "3623e4.fffe.dc27d6");
    let c = a.current.as_ref().unwrap();
    assert_eq!(c.steps_removed, 0);
    assert_eq!(c.offset_from_master_ns, 0.0);
    assert_eq!(c.mean_path_delay_ns, 0.0);
    assert_eq!(
        a.ports,
        vec![PortDataSet {
            port_identity: "3623e4.fffe.dc27d6-1".into(),
            port_state: "MASTER".into()
        }]
    );
    let h = classify(&a, DEFAULT_MAX_OFFSET_NS);
    assert_eq!(h.state, PtpState::Synchronised, "{}", h.reason);
    assert!(h.reason.contains("grand master"));
}

#[test]
fn parses_a_free_running_slave() {
    let a = parse_pmc(FREE_SLAVE).unwrap();
    assert_eq!(a.clock_identity.as_deref(), Some("5e716d.fffe.ce1f6d"));
    let t = a.time_status.as_ref().unwrap();
    assert_eq!(t.master_offset_ns, -876);
    assert!(t.gm_present);
    assert_eq!(t.gm_identity, "3623e4.fffe.dc27d6");
    let c = a.current.as_ref().unwrap();
    assert_eq!(c.steps_removed, 1);
    assert_eq!(c.offset_from_master_ns, -876.0);
    assert_eq!(c.mean_path_delay_ns, 2297.0);
    assert_eq!(a.ports[0].port_state, "UNCALIBRATED");
    let h = classify(&a, DEFAULT_MAX_OFFSET_NS);
    assert_eq!(h.state, PtpState::Unsynchronised);
    assert!(h.reason.contains("UNCALIBRATED"), "{}", h.reason);
    assert_eq!(h.offset_ns, Some(-876.0));
    assert_eq!(h.mean_path_delay_ns, Some(2297.0));
    assert_eq!(h.steps_removed, Some(1));
    assert_eq!(h.gm_identity.as_deref(), Some("3623e4.fffe.dc27d6"));
}

/// The free-running capture with the port state a locked servo reports (ptp4l moves the
/// port from UNCALIBRATED to SLAVE when its servo locks): synchronised within the bound,
/// not beyond it.
#[test]
fn a_locked_slave_is_synchronised_within_the_bound() {
    let locked = FREE_SLAVE.replace("UNCALIBRATED", "SLAVE");
    let a = parse_pmc(&locked).unwrap();
    let h = classify(&a, DEFAULT_MAX_OFFSET_NS);
    assert_eq!(h.state, PtpState::Synchronised, "{}", h.reason);
    assert_eq!(h.port_state.as_deref(), Some("SLAVE"));
    let h = classify(&a, 500);
    assert_eq!(h.state, PtpState::Unsynchronised);
    assert!(h.reason.contains("-876 ns exceeds ±500 ns"), "{}", h.reason);
    let absent = locked.replace("gmPresent                  true", "gmPresent false");
    let h = classify(&parse_pmc(&absent).unwrap(), DEFAULT_MAX_OFFSET_NS);
    assert_eq!(h.state, PtpState::Unsynchronised);
    assert!(h.reason.contains("no grand master"), "{}", h.reason);
}

#[test]
fn listening_and_silent() {
    let h = classify(&parse_pmc(LISTENING).unwrap(), DEFAULT_MAX_OFFSET_NS);
    assert_eq!(h.state, PtpState::Unsynchronised);
    assert!(h.reason.contains("LISTENING"));
    let a = parse_pmc(NO_PTP4L).unwrap();
    assert_eq!(a.responses, 0);
    assert_eq!(classify(&a, 1).state, PtpState::NoPtp4l);
}

#[test]
fn hostile_output_is_an_error_or_ignored_never_a_panic() {
    for bad in [
        "\tx-0 seq 0 RESPONSE MANAGEMENT CURRENT_DATA_SET\n\t\tstepsRemoved 99999999\n",
        "\tx-0 seq 0 RESPONSE MANAGEMENT CURRENT_DATA_SET\n\t\toffsetFromMaster NaN\n",
        "\tx-0 seq 0 RESPONSE MANAGEMENT CURRENT_DATA_SET\n\t\tmeanPathDelay inf\n",
        "\tx-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP\n\t\tgmPresent maybe\n",
        "\tx-0 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET\n\t\tportState \u{1b}[31mSLAVE\n",
        "\t\u{0}-0 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET\n",
    ] {
        assert!(parse_pmc(bad).is_err(), "{bad:?}");
    }
    let long = format!(
        "\tx-0 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET\n\t\tportState {}\n",
        "A".repeat(100_000)
    );
    assert!(parse_pmc(&long).is_err());
    // Truncated answers, stray lines, other IDs: no panic, missing parts stay None.
    for i in 0..MASTER.len() {
        if MASTER.is_char_boundary(i) {
            let _ = parse_pmc(&MASTER[..i]);
        }
    }
    let a = parse_pmc("garbage\n\t\tportState SLAVE\nseq seq seq\n").unwrap();
    assert_eq!(a.responses, 0);
    assert!(a.ports.is_empty());
    let a = parse_pmc("\tx-0 seq 0 RESPONSE MANAGEMENT CURRENT_DATA_SET\n\t\tstepsRemoved 1\n")
        .unwrap();
    assert_eq!(a.responses, 1);
    assert!(a.current.is_none());
    // Many ports: bounded.
    let many = "\tx-0 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET\n\t\tportIdentity x-1\n\t\tportState MASTER\n"
        .repeat(1000);
    assert_eq!(parse_pmc(&many).unwrap().ports.len(), 256);
}

proptest::proptest! {
    /// Any text, and the captured answers with bytes changed, parse to a value or an
    /// error; classifying whatever parses never panics either.
    #[test]
    fn any_pmc_output_parses_or_errs(
        text in "\\PC{0,400}",
        at in 0usize..1000,
        with in proptest::prelude::any::<char>(),
    ) {
        if let Ok(a) = parse_pmc(&text) {
            let _ = classify(&a, DEFAULT_MAX_OFFSET_NS);
        }
        for capture in [MASTER, FREE_SLAVE, LISTENING] {
            let mut chars: Vec<char> = capture.chars().collect();
            let i = at % chars.len();
            chars[i] = with;
            let changed: String = chars.into_iter().collect();
            if let Ok(a) = parse_pmc(&changed) {
                let _ = classify(&a, 0);
            }
        }
    }
}

fn fake(
    name: &str,
    this_host: bool,
    out: Result<RunOutput, String>,
) -> FnRunner<impl Fn(&[String]) -> Result<RunOutput, String>> {
    FnRunner {
        name: name.into(),
        via: if this_host { "netns" } else { "ssh" },
        on_this_host: this_host,
        run: move |argv: &[String]| {
            assert_eq!(argv[0], "sh");
            assert!(argv.iter().any(|a| a == "GET TIME_STATUS_NP"));
            out.clone()
        },
    }
}

fn ok(text: &str) -> Result<RunOutput, String> {
    Ok(RunOutput {
        code: Some(0),
        stdout: text.as_bytes().to_vec(),
        stderr: Vec::new(),
    })
}

#[test]
fn probe_states_and_exit_codes() {
    let m = fake("gm", false, ok(MASTER));
    let s = fake("ecu2", false, ok(FREE_SLAVE));
    let set = ClockSet::probe(&[&m, &s], |_| DEFAULT_UDS.into(), DEFAULT_MAX_OFFSET_NS);
    assert!(!set.shared_clock);
    assert_eq!(set.hosts[0].state, PtpState::Synchronised);
    assert_eq!(set.hosts[1].state, PtpState::Unsynchronised);
    assert_eq!(set.owd_trust(), OwdTrust::Unsynchronised);
    assert_eq!(set.exit_code(), 1);
    assert!(set.verdict().contains("ecu2 (unsynchronised)"));

    // The same answers from namespaces of this machine: one clock.
    let m = fake("gm", true, ok(MASTER));
    let s = fake("ecu2", true, ok(FREE_SLAVE));
    let set = ClockSet::probe(&[&m, &s], |_| DEFAULT_UDS.into(), DEFAULT_MAX_OFFSET_NS);
    assert!(set.shared_clock);
    assert_eq!(set.owd_trust(), OwdTrust::SharedClock);
    assert_eq!(set.exit_code(), 0);

    let missing = fake(
        "bare",
        false,
        Ok(RunOutput {
            code: Some(127),
            ..Default::default()
        }),
    );
    let h = probe(&missing, DEFAULT_UDS, 1);
    assert_eq!(h.state, PtpState::PmcMissing);
    assert!(h.reason.contains("linuxptp"));
    let down = fake(
        "down",
        false,
        Ok(RunOutput {
            code: Some(255),
            stdout: Vec::new(),
            stderr: b"ssh: connect to host 192.0.2.1 port 22: Connection refused\n".to_vec(),
        }),
    );
    let h = probe(&down, DEFAULT_UDS, 1);
    assert_eq!(h.state, PtpState::Unreachable);
    assert!(h.reason.contains("Connection refused"), "{}", h.reason);
    let silent = fake("quiet", false, ok(NO_PTP4L));
    let h = probe(&silent, "/run/x.sock", 1);
    assert_eq!(h.state, PtpState::NoPtp4l);
    assert!(h.reason.contains("/run/x.sock"), "{}", h.reason);
    // pmc 3.1.1 as a non-root user, as captured on this machine.
    let denied = fake(
        "user",
        false,
        Ok(RunOutput {
            code: Some(PMC_FAILED),
            stdout: Vec::new(),
            stderr: b"pmc[26097.065]: uds: bind failed: Permission denied\n\
                      pmc[26097.065]: failed to open transport\nfailed to create pmc\n"
                .to_vec(),
        }),
    );
    let h = probe(&denied, DEFAULT_UDS, 1);
    assert_eq!(h.state, PtpState::Unreachable);
    assert!(
        h.reason.contains("bind failed: Permission denied") && h.reason.contains("as root"),
        "{}",
        h.reason
    );
    let gone = fake(
        "gone",
        false,
        Err("`ssh` is not installed on this machine".into()),
    );
    let set = ClockSet::probe(&[&m, &gone], |_| DEFAULT_UDS.into(), 1);
    assert_eq!(set.exit_code(), 3);
}

#[test]
fn environment_entries_and_the_owd_flag() {
    let mut env = serde_json::Map::new();
    record_this_host(
        &mut env,
        &[("ecu1", Some("ivn-000000-ecu1")), ("ecu2", None)],
        std::path::Path::new("/nonexistent"),
    );
    assert_eq!(env[OWD_CLOCK_KEY], "shared clock");
    assert!(
        env[CLOCK_STATE_KEY]
            .as_str()
            .unwrap()
            .starts_with("shared clock: ecu1, ecu2")
    );
    assert!(owd_flag(&env).is_none());

    let m = fake("gm", false, ok(MASTER));
    let s = fake("ecu2", false, ok(FREE_SLAVE));
    let set = ClockSet::probe(&[&m, &s], |_| DEFAULT_UDS.into(), DEFAULT_MAX_OFFSET_NS);
    let mut env = serde_json::Map::new();
    record_environment(&mut env, &set);
    assert_eq!(env[OWD_CLOCK_KEY], "unsynchronised");
    let state = env[CLOCK_STATE_KEY].as_str().unwrap();
    assert!(
        state.contains("ecu2 unsynchronised, port UNCALIBRATED, offset -876 ns"),
        "{state}"
    );
    let flag = owd_flag(&env).unwrap();
    assert!(
        flag.starts_with("FLAGGED") && flag.contains("RTT/2"),
        "{flag}"
    );

    let locked = FREE_SLAVE.replace("UNCALIBRATED", "SLAVE");
    let s = fake("ecu2", false, ok(&locked));
    let set = ClockSet::probe(&[&m, &s], |_| DEFAULT_UDS.into(), DEFAULT_MAX_OFFSET_NS);
    let mut env = serde_json::Map::new();
    record_environment(&mut env, &set);
    assert_eq!(env[OWD_CLOCK_KEY], "synchronised");
    assert!(owd_flag(&env).is_none());
}

#[test]
fn down_removes_only_the_testbeds_ptp_files() {
    let state = std::env::temp_dir().join(format!("ivnsec-clock-rm-{}", std::process::id()));
    let dir = state.join("ptp");
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        "ivn-aaaaaa-ecu1.sock",
        "ivn-aaaaaa-ecu1.log",
        "ivn-bbbbbb-ecu1.sock",
        "other",
    ] {
        std::fs::write(dir.join(f), b"").unwrap();
    }
    remove_testbed_files(&state, "ivn-aaaaaa");
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["ivn-bbbbbb-ecu1.sock", "other"]);
    remove_testbed_files(&state, "ivn-bbbbbb");
    assert!(dir.exists(), "not empty: kept");
    std::fs::remove_file(dir.join("other")).unwrap();
    remove_testbed_files(&state, "ivn-cccccc");
    assert!(!dir.exists());
    std::fs::remove_dir_all(&state).unwrap();
}

#[test]
fn quoting_for_the_remote_shell() {
    assert_eq!(shell_quote("pmc"), "pmc");
    assert_eq!(shell_quote("GET PORT_DATA_SET"), "'GET PORT_DATA_SET'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("$(reboot)"), "'$(reboot)'");
}

/// The words ssh hands the remote shell, joined as [`Target::Ssh`] joins them, parsed by a
/// real `sh -c` here: the probe runs the same as without the extra shell.
#[test]
fn the_quoted_probe_survives_a_remote_shell() {
    let dir = std::env::temp_dir().join(format!("ivnsec-clock-q-{}", std::process::id()));
    let uds = dir.join("it's none.sock");
    let argv = probe_argv(uds.to_str().unwrap());
    let remote: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
    let direct = Target::Local.run(&argv).unwrap();
    let via_shell = Target::Local
        .run(&["sh".into(), "-c".into(), remote.join(" ")])
        .unwrap();
    assert_eq!(direct.code, via_shell.code);
    assert_eq!(
        String::from_utf8_lossy(&direct.stdout),
        String::from_utf8_lossy(&via_shell.stdout)
    );
    if direct.code == Some(0) {
        // pmc echoes each command it sends: the words arrived whole.
        let out = String::from_utf8_lossy(&via_shell.stdout);
        assert!(out.contains("sending: GET PORT_DATA_SET"), "{out}");
    }
}

/// The probe's shell wrapper, run for real on this machine: exit 127 without pmc, and
/// pmc's own (empty) answer when it is installed and no ptp4l listens on the socket.
#[test]
fn the_real_probe_on_this_host() {
    let dir = std::env::temp_dir().join(format!("ivnsec-clock-{}", std::process::id()));
    let uds = dir.join("none.sock");
    let h = probe(&Target::Local, uds.to_str().unwrap(), 1);
    let has_pmc = ["/usr/sbin/pmc", "/sbin/pmc", "/usr/bin/pmc"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    if has_pmc {
        assert_eq!(h.state, PtpState::NoPtp4l, "{}", h.reason);
    } else {
        assert_eq!(h.state, PtpState::PmcMissing, "{}", h.reason);
    }
    assert_eq!(h.host, "local");
    assert!(h.this_host);
}
