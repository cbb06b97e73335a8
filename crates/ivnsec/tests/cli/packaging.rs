//! ivnsec as a system tool: the Debian package of `scripts/package` unpacked into a temporary
//! root (its files, every man page rendered by `man -l`, the completions loaded by bash), the
//! systemd units checked by `systemd-analyze verify`, `--version`, `--config` and the daemons'
//! readiness (sd_notify). Tests whose tool is missing skip with the reason printed; CI installs
//! them (scripts/setup).

use crate::common;

use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::common::{BIN, TempDir, repo, text};

/// man's output without its overstrike (bold as `N\bN`, underline as `_\bx`).
fn plain(b: &[u8]) -> String {
    let mut out = String::new();
    for c in text(b).chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out
}

/// Builds the package of the test binary into `d` and unpacks it into `d/root`.
fn package(d: &TempDir) -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("scripts/package"))
        .args(["--binary", BIN, "--compression", "none", "--out"])
        .arg(d.path("deb"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/package: {}",
        text(&out.stderr)
    );
    let deb = PathBuf::from(text(&out.stdout).trim());
    assert!(deb.exists(), "{deb:?}");
    let root = d.path("root");
    let x = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .output()
        .unwrap();
    assert!(x.status.success(), "dpkg-deb -x: {}", text(&x.stderr));
    let info = Command::new("dpkg-deb")
        .arg("-f")
        .arg(&deb)
        .args(["Package", "Version", "Depends"])
        .output()
        .unwrap();
    let info = text(&info.stdout);
    assert!(info.contains("Package: ivnsec"), "{info}");
    assert!(info.contains("Version: 0.1.0"), "{info}");
    assert!(
        info.contains("libc6"),
        "Depends names the C library: {info}"
    );
    root
}

#[test]
fn the_package_holds_binary_man_pages_completions_units_docs_and_plans() {
    require_tools!("dpkg-deb", "man", "bash", "gzip");
    let d = TempDir::new("pkg");
    let root = package(&d);
    let f = |p: &str| root.join(p);
    // The binary runs and says its version.
    let v = Command::new(f("usr/bin/ivnsec"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(v.status.success());
    assert!(
        text(&v.stdout).contains("ivnsec 0.1.0"),
        "{}",
        text(&v.stdout)
    );
    // One man page per visible subcommand, each rendered by man without a warning.
    let man1 = f("usr/share/man/man1");
    let pages: Vec<PathBuf> = std::fs::read_dir(&man1)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for name in [
        "ivnsec.1.gz",
        "ivnsec-gateway.1.gz",
        "ivnsec-keyserver.1.gz",
        "ivnsec-macsec-up.1.gz",
        "ivnsec-esp-up.1.gz",
        "ivnsec-pcap-verify.1.gz",
        "ivnsec-suites.1.gz",
    ] {
        assert!(man1.join(name).exists(), "{name} missing from {pages:?}");
    }
    assert!(
        !man1.join("ivnsec-node.1.gz").exists(),
        "hidden subcommands get no page"
    );
    assert!(pages.len() >= 40, "{} pages", pages.len());
    for p in &pages {
        let o = Command::new("man")
            .arg("-l")
            .arg(p)
            .env("MANWIDTH", "100")
            .env("MAN_KEEP_FORMATTING", "0")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        assert!(o.status.success(), "man -l {p:?}: {}", text(&o.stderr));
        let out = plain(&o.stdout);
        assert!(
            out.contains("NAME") && out.contains("SYNOPSIS"),
            "{p:?}: {out}"
        );
        let err = text(&o.stderr);
        assert!(!err.contains("warning"), "man -l {p:?}: {err}");
    }
    let gw = Command::new("man")
        .arg("-l")
        .arg(man1.join("ivnsec-gateway.1.gz"))
        .env("MANPAGER", "cat")
        .output()
        .unwrap();
    assert!(
        plain(&gw.stdout).contains("--protected"),
        "the page holds the options"
    );
    // Completions: bash loads its script and completes a subcommand; zsh and fish are there.
    let bash = f("usr/share/bash-completion/completions/ivnsec");
    let script = format!(
        "set -e; source '{}'; COMP_WORDS=(ivnsec gatew); COMP_CWORD=1; COMP_LINE='ivnsec gatew'; \
         COMP_POINT=${{#COMP_LINE}}; _ivnsec ivnsec gatew ivnsec; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        bash.display()
    );
    let o = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "bash completion: {}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "gateway", "{}", text(&o.stderr));
    let zsh = std::fs::read_to_string(f("usr/share/zsh/vendor-completions/_ivnsec")).unwrap();
    assert!(zsh.starts_with("#compdef ivnsec"));
    let fish =
        std::fs::read_to_string(f("usr/share/fish/vendor_completions.d/ivnsec.fish")).unwrap();
    assert!(fish.contains("complete -c ivnsec"));
    // Units, docs, example plans and configs, dissectors.
    for u in [
        "ivnsec-macsec@.service",
        "ivnsec-gateway@.service",
        "ivnsec-esp@.service",
        "ivnsec-keyserver.service",
    ] {
        assert!(f("usr/lib/systemd/system").join(u).exists(), "{u}");
    }
    for p in [
        "usr/share/doc/ivnsec/README.md",
        "usr/share/doc/ivnsec/wire-ivnae.md",
        "usr/share/doc/ivnsec/systemd.md",
        "usr/share/doc/ivnsec/copyright",
        "usr/share/doc/ivnsec/examples/plans/quick.toml",
        "usr/share/doc/ivnsec/examples/plans/seed000.toml",
        "usr/share/doc/ivnsec/examples/config/gateway.toml",
        "usr/share/doc/ivnsec/examples/config/keyserver.toml",
    ] {
        assert!(f(p).exists(), "{p}");
    }
    // The example configs are valid for their commands (no unknown key).
    for (cfg, cmd) in [
        ("gateway", &["gateway"][..]),
        ("macsec", &["macsec", "up"][..]),
        ("esp", &["esp", "up"][..]),
        ("keyserver", &["keyserver"][..]),
    ] {
        let file = f(&format!("usr/share/doc/ivnsec/examples/config/{cfg}.toml"));
        let o = Command::new(BIN)
            .args(cmd)
            .arg("--config")
            .arg(&file)
            .arg("--help")
            .output()
            .unwrap();
        assert!(o.status.success(), "{cfg}.toml: {}", text(&o.stderr));
    }
}

#[test]
fn every_unit_passes_systemd_analyze_verify() {
    require_tools!("systemd-analyze");
    let d = TempDir::new("units");
    // The units as shipped, the binary path pointed at the test binary (verify checks that
    // ExecStart's program exists) and templates given an instance name.
    let units = repo().join("contrib/systemd");
    let out = d.path("units");
    std::fs::create_dir_all(&out).unwrap();
    let mut files = Vec::new();
    for e in std::fs::read_dir(&units).unwrap() {
        let p = e.unwrap().path();
        let name = p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace("@.", "@test.");
        let body = std::fs::read_to_string(&p)
            .unwrap()
            .replace("/usr/bin/ivnsec", BIN);
        let to = out.join(&name);
        std::fs::write(&to, body).unwrap();
        files.push(to);
    }
    assert_eq!(files.len(), 4, "{files:?}");
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(&files)
        .output()
        .unwrap();
    // Only what it says about our units counts: it also loads the host's units that ours
    // order against, and warns about those (e.g. a distribution's FreeRADIUS unit).
    let ours: Vec<&str> = std::str::from_utf8(&o.stderr)
        .unwrap_or_default()
        .lines()
        .filter(|l| !(l.starts_with("/lib/systemd/") || l.starts_with("/usr/lib/systemd/")))
        .collect();
    assert!(
        o.status.success() && ours.is_empty(),
        "systemd-analyze verify: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    // Each is Type=notify, restarts on failure and keeps its nonce state in a StateDirectory.
    for f in &files {
        let s = std::fs::read_to_string(f).unwrap();
        for k in [
            "Type=notify",
            "Restart=on-failure",
            "StateDirectory=ivnsec/",
            "ProtectSystem=strict",
            "CapabilityBoundingSet=",
            "--config /etc/ivnsec/",
        ] {
            assert!(s.contains(k), "{f:?} lacks {k}");
        }
    }
}

#[test]
fn version_names_build_and_providers() {
    let o = Command::new(BIN).arg("--version").output().unwrap();
    let s = text(&o.stdout);
    assert!(o.status.success());
    assert!(s.starts_with("ivnsec 0.1.0\nbuild: "), "{s}");
    assert!(
        s.contains("providers: fast (") && s.contains("openssl (") && s.contains("portable ("),
        "{s}"
    );
    assert!(s.contains("auto table: "), "{s}");
    assert!(s.contains("aes128-gcm: "), "{s}");
    let o = Command::new(BIN).arg("-V").output().unwrap();
    assert!(
        text(&o.stdout).starts_with("ivnsec 0.1.0 ("),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn man_and_completions_refuse_bad_input() {
    let d = TempDir::new("man");
    std::fs::write(d.path("file"), "x").unwrap();
    let o = d.run(&["man", "--out", d.path("file").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("not a folder"));
    let o = d.run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    let o = d.run(&["man", "--out", d.path("pages").to_str().unwrap()]);
    assert!(o.status.success());
    assert!(d.path("pages/ivnsec-gateway.1").exists());
}

#[test]
fn config_errors_name_file_and_key_and_exit_2() {
    let d = TempDir::new("cfg");
    let f = d.path("ks.toml");
    std::fs::write(
        &f,
        "pki = \"p\"\nlisten = \"127.0.0.1:1\"\nsegmnts = \"s.toml\"\n",
    )
    .unwrap();
    let o = d.run(&["keyserver", "--config", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("ks.toml") && e.contains("key `segmnts`"), "{e}");
    let o = d.run(&[
        "gateway",
        "--config",
        d.path("missing.toml").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("missing.toml"),
        "{}",
        text(&o.stderr)
    );
}

/// A key server from a config file (flags win over it) tells systemd it is ready once it
/// listens, on the socket of $NOTIFY_SOCKET, and serves its metrics.
#[test]
fn keyserver_from_config_notifies_readiness_when_listening() {
    require_tools!("curl");
    let d = TempDir::new("notify");
    let pki = d.path("pki");
    let p = pki.to_str().unwrap();
    for args in [
        &["pki", "init", "--dir", p, "--vehicle", "WVWZZZ1JZXW000001"][..],
        &["pki", "issue", "--dir", p, "--ecu", "keyserver"][..],
        &["pki", "issue", "--dir", p, "--ecu", "brake1"][..],
    ] {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    }
    std::fs::write(
        d.path("seg.toml"),
        "[[segment]]\nname = \"chassis\"\necus = [\"brake1\"]\n",
    )
    .unwrap();
    std::fs::write(
        d.path("ks.toml"),
        format!(
            "pki = \"{p}\"\nlisten = \"127.0.0.1:1\"\nsegments = \"{}\"\nmetrics = \"127.0.0.1:0\"\n",
            d.path("seg.toml").display()
        ),
    )
    .unwrap();
    let sock_path = d.path("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut c = d.cmd();
    c.args(["keyserver", "--config"])
        .arg(d.path("ks.toml"))
        // The flag wins over the file's port 1 (which would need a privilege).
        .args(["--listen", "127.0.0.1:0"])
        .env("NOTIFY_SOCKET", &sock_path);
    let proc = common::spawn_until_ready(c, "metrics: http://", "keyserver");
    let mut buf = [0u8; 512];
    let n = sock.recv(&mut buf).expect("READY=1 from the key server");
    let msg = text(&buf[..n]);
    assert!(msg.contains("READY=1"), "{msg}");
    assert!(
        msg.contains("STATUS=keyserver listening on 127.0.0.1:"),
        "{msg}"
    );
    drop(proc);
}
