//! `ivnsec attack --eap` (docs/attacks.md, "802.1X (--eap)"): on a testbed of its own, a
//! supplicant and an authenticator with FreeRADIUS secure the link by EAP-TLS and MKA; none of
//! the four 802.1X classes is accepted, each moves the drop reasons it is judged by, and the
//! ping across the TAPs loses nothing. Needs root and freeradius (skips with the reason
//! otherwise).

use serde_json::Value;

use crate::common::{TempDir, have, text};

#[test]
fn attack_eap_accepts_nothing_and_the_ping_flows() {
    require_root!();
    if !have("freeradius") {
        eprintln!("SKIPPED {}: freeradius is not installed", module_path!());
        return;
    }
    let d = TempDir::new("eapatk");
    let o = d.run(&["attack", "--eap", "--count", "200", "--json"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "pass");
    let results = v["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["attack"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "eap-logoff-spoofed",
            "eap-failure-spoofed",
            "radius-forged-accept",
            "eapol-start-flood"
        ]
    );
    for (r, reasons) in results.iter().zip([
        &["unexpected"][..],
        &["wrong_source"],
        &["radius.bad_response_authenticator", "radius.unknown_id"],
        &["too_many_sessions", "rate_limited", "quiet"],
    ]) {
        assert_eq!(r["profile"], "macsec-gcm-aes-128");
        assert!(r["injected"].as_u64().unwrap() >= 200, "{r}");
        assert_eq!(r["accepted"], 0, "{r}");
        let e = &r["eap"];
        assert_eq!(e["forged_state_changes"], 0, "{r}");
        assert_eq!(e["foreign_ckns"], 0, "{r}");
        assert_eq!(e["extra_accepts"], 0, "{r}");
        assert_eq!(e["supplicant_kept"], true, "{r}");
        assert!(
            e["sessions_after"].as_u64() <= e["max_sessions"].as_u64(),
            "{r}"
        );
        let moved: u64 = reasons
            .iter()
            .map(|k| r["dropped"][*k].as_u64().unwrap_or(0))
            .sum();
        assert!(moved > 0, "{r}");
        let sent = r["legit_sent"].as_u64().unwrap();
        assert!(sent >= 50, "{r}");
        assert_eq!(r["legit_delivered"], sent, "the ping lost frames: {r}");
    }
    // The forged Access-Accepts answered Access-Requests of the re-authentications.
    assert!(
        results[2]["eap"]["requests_answered"].as_u64().unwrap() > 0,
        "{}",
        results[2]
    );
    assert!(d.leftover_testbeds().is_empty());
}
