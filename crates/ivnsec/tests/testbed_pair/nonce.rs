//! Nonce safety on a testbed (root): `ivnsec send` killed with SIGKILL and restarted never
//! repeats a sequence number, proven from the receiver's capture; a full state disk stops the
//! sender with exit 3. Over loopback and the refusals: `cli/nonce.rs`.

use std::process::Command;

use serde_json::Value;

use crate::common::nonce::{
    PROFILES, Setup, Sink, assert_no_nonce_repeats, kill_and_restart, start_receiver,
};
use crate::common::{BIN, TempDir, keygen, text};

#[test]
fn kill_9_and_restart_never_repeats_a_nonce_on_a_testbed() {
    require_root!();
    let d = TempDir::new("tb");
    let o = d.run(&["testbed", "up", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    let node = |name: &str| -> (String, String, String, String) {
        let n = st["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap();
        let i = &n["interfaces"][0];
        let ip = i["ipv4"].as_str().unwrap().split('/').next().unwrap();
        (
            n["namespace"].as_str().unwrap().to_string(),
            i["name"].as_str().unwrap().to_string(),
            i["mac"].as_str().unwrap().to_string(),
            ip.to_string(),
        )
    };
    let (ns1, if1, mac1, ip1) = node("ecu1");
    let (ns2, if2, mac2, ip2) = node("ecu2");
    for profile in PROFILES {
        let keys = keygen(&d, profile, &format!("{profile}.toml"));
        let rx_pcap = d.path(&format!("rx-{profile}.pcap"));
        let mut rc = Command::new("ip");
        rc.args(["netns", "exec", &ns2, BIN])
            .args(["receive", "--profile", profile, "--keys"])
            .arg(&keys)
            .args(["--iface", &if2, "--from", &mac1, "--from-ip", &ip1])
            .args(["--to-ip", &ip2, "--replay-window", "0", "--json", "--pcap"])
            .arg(&rx_pcap);
        let (rx, _) = start_receiver(rc);
        let ns = ns1.clone();
        let setup = Setup {
            sender: Box::new(move || {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns, BIN]);
                c
            }),
            link_args: vec![
                "--iface".into(),
                if1.clone(),
                "--to".into(),
                mac2.clone(),
                "--from-ip".into(),
                ip1.clone(),
                "--to-ip".into(),
                ip2.clone(),
            ],
        };
        kill_and_restart(&d, profile, &keys, &setup, rx, &rx_pcap);
    }
    let o = d.run(&["testbed", "down", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// A state directory on a full file system: the sender stops with `state_write_failed` and
/// exit 3 (not `exhausted`, which would send the operator for a new key); with space again it
/// resumes above every number it used. Runs in a mount namespace of its own on a small tmpfs.
#[test]
fn a_full_state_disk_stops_with_state_write_failed_and_exit_3() {
    require_root!();
    let d = TempDir::new("full");
    let profile = "aes128-gcm";
    let keys = keygen(&d, profile, "k.toml");
    let state = d.path("nonce-state");
    std::fs::create_dir(&state).unwrap();
    let sink = Sink::new();
    let script = r#"
set -u
mount -t tmpfs -o size=64k,mode=0700 ivnsec-test "$STATE" || exit 90
"$BIN" send --profile aes128-gcm --keys "$KEYS" --udp "$ADDR" --json --state-dir "$STATE" \
    --reserve-block 10 --rate 400 >"$OUT/1.json" 2>"$OUT/1.err" &
pid=$!
i=0
while ! grep -q "reserved 20" "$STATE"/*.hw 2>/dev/null; do
    i=$((i+1)); [ $i -gt 3000 ] && { kill $pid; exit 91; }; sleep 0.01
done
dd if=/dev/zero of="$STATE/fill" bs=4096 2>/dev/null
wait $pid; echo $? >"$OUT/1.rc"
rm -f "$STATE/fill"
"$BIN" send --profile aes128-gcm --keys "$KEYS" --udp "$ADDR" --json --state-dir "$STATE" \
    --reserve-block 10 --count 15 >"$OUT/2.json" 2>"$OUT/2.err"
echo $? >"$OUT/2.rc"
"#;
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .env("BIN", BIN)
        .env("KEYS", &keys)
        .env("ADDR", &sink.addr)
        .env("STATE", &state)
        .env("OUT", &d.0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let read = |n: &str| std::fs::read_to_string(d.path(n)).unwrap();
    assert_eq!(read("1.rc").trim(), "3", "{}", read("1.err"));
    let first: Value = serde_json::from_str(&read("1.json")).unwrap();
    assert_eq!(first["stopped_by"], "state_write_failed", "{first}");
    assert!(read("1.err").contains("No space left"), "{}", read("1.err"));
    assert_eq!(read("2.rc").trim(), "0", "{}", read("2.err"));
    let second: Value = serde_json::from_str(&read("2.json")).unwrap();
    assert!(
        second["first_seq"].as_u64().unwrap() > first["last_seq"].as_u64().unwrap(),
        "{first} {second}"
    );
    let units = sink.finish();
    assert_eq!(
        units.len() as u64,
        first["sent"].as_u64().unwrap() + 15,
        "every unit sent arrived"
    );
    assert_no_nonce_repeats(profile, &units);
    assert_eq!(
        std::fs::read_dir(&state).unwrap().count(),
        0,
        "the tmpfs went with its namespace"
    );
}
