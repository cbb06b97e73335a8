//! The contract of the nonce state, written against the public API only so that every
//! sender is checked by the same tests: [`contract`] runs every check for one [`Subject`]
//! (a nonce domain, an SA identity, keys, the protocol's limit), and
//! `every_sender_meets_the_contract` runs it for every profile `send` takes and for the
//! SA identities `someip serve|call` use. A new sender (MACsec TAP, gateway, ESP tunnel,
//! MKA) adds its subjects there.

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;

use super::*;
use crate::channel::{open as open_channel, random_keys};
use ivnsec_core::channel::{ChannelOptions, Ends, sa_identity};
use ivnsec_core::suite::IvnAeProfile;
use ivnsec_crypto::ProviderChoice;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

/// A private temporary directory; `state()` (not created) and `record()` live in it.
struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).unwrap();
        let p = std::env::temp_dir().join(format!("ivnsec-hw-{tag}-{}", hex::encode(r)));
        DirBuilder::new().mode(0o700).create(&p).unwrap();
        Dir(p)
    }
    fn state(&self) -> PathBuf {
        self.0.join("state")
    }
    fn record(&self) -> PathBuf {
        self.0.join("k.toml.used")
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One sender's SA, as the contract sees it.
#[derive(Clone, Debug)]
struct Subject {
    domain: String,
    sa: String,
    keys: DirectionKeys,
    protocol_max: u64,
}

impl Subject {
    fn of(profile: &str, sa: Option<String>) -> Subject {
        let fam: Profile = profile.parse().unwrap();
        Subject {
            domain: fam.nonce_domain(),
            sa: sa.unwrap_or_else(|| sa_identity(fam, &ends(), 0)),
            keys: random_keys(fam).unwrap(),
            protocol_max: fam.max_seq(),
        }
    }
    fn opts(&self, d: &Dir, block: u64) -> Options {
        Options {
            block,
            seq_limit: None,
            protocol_max: self.protocol_max,
            used_record: Some(d.record()),
            confirm_new_key: false,
            grow: false,
        }
    }
    fn open_in(&self, dir: &Path, o: Options) -> Result<HighWater, HwError> {
        HighWater::open(dir, &self.domain, &self.sa, &self.keys, o)
    }
    fn open(&self, d: &Dir, block: u64) -> Result<HighWater, HwError> {
        self.open_in(&d.state(), self.opts(d, block))
    }
}

fn ends() -> Ends {
    Ends {
        local_mac: [2, 0, 0, 0, 0, 1],
        peer_mac: [2, 0, 0, 0, 0, 2],
        local_ip: Ipv4Addr::LOCALHOST,
        peer_ip: Ipv4Addr::LOCALHOST,
    }
}

/// Claims `from..=to` and returns them (the numbers this "sender" used).
fn use_numbers(hw: &mut HighWater, from: u64, to: u64) -> Vec<u64> {
    let v: Vec<u64> = (from..=to).collect();
    for &s in &v {
        hw.claim(s).unwrap();
    }
    v
}

fn code(e: HwError) -> u8 {
    crate::error::exit_code(&e.into_anyhow())
}

/// Every check, for one subject.
fn contract(s: &Subject) {
    fresh_then_resume_above_the_mark(s);
    a_second_opener_is_locked_out(s);
    a_deleted_lock_stops_the_holder_and_numbers_stay_disjoint(s);
    a_lock_moved_away_and_back_is_caught_by_the_mark(s);
    a_replaced_directory_stops_the_holder(s);
    a_used_key_without_state_is_refused(s);
    two_fresh_starts_of_one_sa_at_once_leave_one_sender(s);
    links_in_the_state_directory_are_never_followed(s);
    unsafe_directories_are_refused(s);
    corrupt_state_is_refused(s);
    the_limit_stops_exactly_there(s);
    an_idle_top_up_reserves_ahead_and_a_restart_resumes_above_it(s);
    a_fast_sender_grows_its_block_and_a_restart_resumes_above_it(s);
}

/// [`Options::grow`]: reservations less than [`GROW_WITHIN`] apart double the block, up to
/// [`grow_cap`]; one written after a pause does not; every number used is still below the
/// durable mark, and a restart resumes above it. Without `grow` the block never moves.
fn a_fast_sender_grows_its_block_and_a_restart_resumes_above_it(s: &Subject) {
    let d = Dir::new("grow");
    let mut o = s.opts(&d, 4);
    o.grow = true;
    let mut hw = s.open_in(&d.state(), o.clone()).unwrap();
    let first = hw.first_seq().unwrap();
    let cap = grow_cap(4, hw.limit());
    assert_eq!(cap, MAX_BLOCK.min(hw.limit() >> 12).max(4));
    let mut next = first;
    let mut blocks = vec![hw.block()];
    // Reservations back to back: each after the first doubles the block for the next.
    for _ in 0..6 {
        let end = hw.reserved() + 1;
        use_numbers(&mut hw, next, end);
        assert!(
            hw.reserved() >= end,
            "{} used, {} durable",
            end,
            hw.reserved()
        );
        next = end + 1;
        blocks.push(hw.block());
    }
    assert_eq!(
        blocks,
        [4, 4, 8, 16, 32, 64, 128].map(|b: u64| b.min(cap)),
        "{s:?}"
    );
    // After a pause longer than GROW_WITHIN the block stays as it is.
    std::thread::sleep(GROW_WITHIN + std::time::Duration::from_millis(20));
    let b = hw.block();
    let end = hw.reserved() + 1;
    use_numbers(&mut hw, next, end);
    assert_eq!(
        hw.block(),
        b,
        "a reservation after a pause does not grow the block"
    );
    let mark = hw.reserved();
    drop(hw);
    let hw = s.open_in(&d.state(), o).unwrap();
    assert_eq!(hw.first_seq().unwrap(), mark + 1);
    assert_eq!(
        hw.block(),
        4,
        "a new process starts from the configured block"
    );
    drop(hw);
    // Up to the cap and no further; without grow the block stays.
    let d = Dir::new("grow-cap");
    let mut o = s.opts(&d, 4);
    o.grow = true;
    o.seq_limit = Some(1 << 16);
    let mut hw = s.open_in(&d.state(), o).unwrap();
    assert_eq!(grow_cap(4, hw.limit()), 16, "limit/4096 of a 2^16 limit");
    let mut n = hw.first_seq().unwrap();
    for _ in 0..6 {
        let end = hw.reserved() + 1;
        use_numbers(&mut hw, n, end);
        n = end + 1;
    }
    assert_eq!(hw.block(), 16);
    let d = Dir::new("no-grow");
    let mut hw = s.open(&d, 4).unwrap();
    let mut n = hw.first_seq().unwrap();
    for _ in 0..6 {
        let end = hw.reserved() + 1;
        use_numbers(&mut hw, n, end);
        n = end + 1;
    }
    assert_eq!((hw.block(), hw.writes()), (4, 6));
}

/// [`HighWater::top_up`] (a data plane's idle moment): once half of the block is used the next
/// block is reserved ahead, so the claims up to it write nothing; a restart resumes above the
/// mark the top-up wrote; at the limit it writes nothing.
fn an_idle_top_up_reserves_ahead_and_a_restart_resumes_above_it(s: &Subject) {
    let d = Dir::new("topup");
    let mut hw = s.open(&d, 16).unwrap();
    let first = hw.first_seq().unwrap();
    use_numbers(&mut hw, first, first + 4);
    assert_eq!(hw.writes(), 1);
    assert!(!hw.top_up(first + 5).unwrap(), "11 of 16 left: no write");
    use_numbers(&mut hw, first + 5, first + 8);
    assert!(
        hw.top_up(first + 9).unwrap(),
        "7 of 16 left: the next block now"
    );
    let mark = hw.reserved();
    assert_eq!(mark, first + 8 + 16);
    use_numbers(&mut hw, first + 9, mark);
    assert_eq!(hw.writes(), 2, "the claims up to the mark wrote nothing");
    drop(hw);
    let hw = s.open(&d, 16).unwrap();
    assert_eq!(hw.first_seq().unwrap(), mark + 1);
    drop(hw);
    // At the limit: nothing to reserve.
    let d = Dir::new("topup-limit");
    let mut o = s.opts(&d, 16);
    o.seq_limit = Some(20);
    let mut hw = s.open_in(&d.state(), o).unwrap();
    use_numbers(&mut hw, 1, 19);
    assert_eq!(hw.reserved(), 20);
    assert!(!hw.top_up(20).unwrap());
    assert!(!hw.top_up(21).unwrap());
}

fn fresh_then_resume_above_the_mark(s: &Subject) {
    let d = Dir::new("fresh");
    let mut hw = s.open(&d, 5).unwrap();
    assert!(hw.is_fresh(), "{s:?}");
    assert_eq!(hw.first_seq().unwrap(), 1);
    assert_eq!(hw.domain(), s.domain);
    assert!(
        !hw.path().exists(),
        "nothing written before the first claim"
    );
    use_numbers(&mut hw, 1, 8);
    assert_eq!((hw.reserved(), hw.writes()), (10, 2), "{s:?}");
    let path = hw.path().to_path_buf();
    drop(hw);
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], MAGIC);
    assert_eq!(lines[1], format!("profile {}", s.domain));
    assert_eq!(lines[2], format!("sa {}", s.sa));
    assert!(lines[3].starts_with("fingerprint ") && lines[3].len() == 12 + 64);
    assert_eq!(lines[4], "reserved 10");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let mode = fs::metadata(d.state()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "a new state directory is private");
    // The record lists the SA by fingerprint; neither file holds the key.
    let rec = fs::read_to_string(d.record()).unwrap();
    assert!(rec.starts_with(RECORD_MAGIC), "{rec}");
    assert!(rec.contains(&format!("used {}", &lines[3][12..])), "{rec}");
    for t in [&text, &rec] {
        for k in [hex::encode(s.keys.key()), hex::encode(s.keys.mac_key())] {
            assert!(
                k.is_empty() || !t.contains(k.as_str()),
                "key material on disk"
            );
        }
    }
    let mut hw = s.open(&d, 5).unwrap();
    assert!(!hw.is_fresh());
    assert_eq!(
        hw.first_seq().unwrap(),
        11,
        "restart resumes above the mark"
    );
    hw.claim(11).unwrap();
    assert_eq!(hw.reserved(), 15);
    // The record is not rewritten for an SA it lists.
    assert_eq!(fs::read_to_string(d.record()).unwrap(), rec);
}

fn a_second_opener_is_locked_out(s: &Subject) {
    let d = Dir::new("lock");
    let hw = s.open(&d, 5).unwrap();
    let e = s.open(&d, 5).unwrap_err();
    assert!(matches!(e, HwError::Locked { .. }), "{e}");
    assert!(e.to_string().contains("locked by another process"));
    assert_eq!(code(e), 2);
    drop(hw);
    s.open(&d, 5).expect("the lock is released with its holder");
}

/// Issue 15 item 2: `rm STATE/*.lock` under a running sender. A second sender gets in (it
/// cannot see the first), starts above the first's mark, and the first stops at its next
/// reservation: the two never use one number.
fn a_deleted_lock_stops_the_holder_and_numbers_stay_disjoint(s: &Subject) {
    let d = Dir::new("rmlock");
    let mut a = s.open(&d, 5).unwrap();
    let mut used = use_numbers(&mut a, 1, 3);
    let lock = a.path().with_extension("lock");
    fs::remove_file(&lock).unwrap();
    let mut b = s.open(&d, 5).unwrap();
    let first_b = b.first_seq().unwrap();
    assert_eq!(first_b, 6, "{s:?}");
    // A goes on inside its block (4, 5 are reserved), then must stop.
    used.extend(use_numbers(&mut a, 4, 5));
    let e = a.claim(6).unwrap_err();
    assert!(matches!(e, HwError::LockLost { .. }), "{e}");
    assert!(e.to_string().contains("was deleted"), "{e}");
    assert_eq!(e.stop_reason(), "state_lock_lost");
    assert_eq!(code(e), 3);
    used.extend(use_numbers(&mut b, first_b, first_b + 7));
    let set: BTreeSet<u64> = used.iter().copied().collect();
    assert_eq!(set.len(), used.len(), "a number was used twice: {used:?}");
}

/// The lock file moved away (a second sender gets in and reserves) and moved back: the
/// identity check passes again, but the mark on disk is above the first sender's.
fn a_lock_moved_away_and_back_is_caught_by_the_mark(s: &Subject) {
    let d = Dir::new("mvlock");
    let mut a = s.open(&d, 5).unwrap();
    a.claim(1).unwrap();
    let lock = a.path().with_extension("lock");
    let aside = d.0.join("aside");
    fs::rename(&lock, &aside).unwrap();
    let mut b = s.open(&d, 5).unwrap();
    b.claim(6).unwrap();
    fs::rename(&aside, &lock).unwrap();
    // 2..=5 are A's; 6 is B's already. A's next reservation must not happen.
    for seq in 2..=5 {
        a.claim(seq).unwrap();
    }
    let e = a.claim(6).unwrap_err();
    assert!(
        matches!(e, HwError::LockLost { .. }) && e.to_string().contains("reserved 10"),
        "{e}"
    );
    // And B's lock is no longer at the name: B stops too.
    for seq in 7..=10 {
        b.claim(seq).unwrap();
    }
    let e = b.claim(11).unwrap_err();
    assert!(matches!(e, HwError::LockLost { .. }), "{e}");
}

fn a_replaced_directory_stops_the_holder(s: &Subject) {
    let d = Dir::new("mvdir");
    let mut a = s.open(&d, 5).unwrap();
    a.claim(1).unwrap();
    fs::rename(d.state(), d.0.join("state.old")).unwrap();
    DirBuilder::new().mode(0o700).create(d.state()).unwrap();
    let e = a.claim(6).unwrap_err();
    assert!(matches!(e, HwError::LockLost { .. }), "{e}");
    assert!(e.to_string().contains("no longer the directory"), "{e}");
    assert_eq!(
        fs::read_dir(d.state()).unwrap().count(),
        0,
        "nothing was written into the new directory"
    );
    // Removed outright: the same.
    drop(a);
    fs::remove_dir_all(d.state()).unwrap();
    let mut a = s.open(&d, 5).unwrap_err();
    assert!(matches!(a, HwError::UsedKeyNoState { .. }), "{a}");
    let mut o = s.opts(&d, 5);
    o.confirm_new_key = true;
    let mut hw = s.open_in(&d.state(), o).unwrap();
    hw.claim(1).unwrap();
    fs::remove_dir_all(d.state()).unwrap();
    a = hw.claim(6).unwrap_err();
    assert!(a.to_string().contains("is gone"), "{a}");
}

/// Issue 15 item 3: a deleted state file or a mistyped directory under a key whose record
/// lists the SA is refused; the confirmation starts at 1 (and warns).
fn a_used_key_without_state_is_refused(s: &Subject) {
    let d = Dir::new("used");
    let mut hw = s.open(&d, 5).unwrap();
    hw.claim(1).unwrap();
    let path = hw.path().to_path_buf();
    drop(hw);
    let other = d.0.join("typo");
    for (dir, why) in [(other.clone(), "mistyped"), (d.state(), "deleted")] {
        if why == "deleted" {
            fs::remove_file(&path).unwrap();
        }
        let e = s.open_in(&dir, s.opts(&d, 5)).unwrap_err();
        assert!(matches!(e, HwError::UsedKeyNoState { .. }), "{why}: {e}");
        let msg = e.to_string();
        for w in [
            d.record().to_str().unwrap(),
            d.state().to_str().unwrap(),
            CONFIRM_OPTION,
            "reuse",
        ] {
            assert!(msg.contains(w), "{why}: `{w}` missing: {msg}");
        }
        assert_eq!(code(e), 2);
    }
    let mut o = s.opts(&d, 5);
    o.confirm_new_key = true;
    let hw = s.open_in(&other, o).unwrap();
    assert_eq!(hw.first_seq().unwrap(), 1);
    assert!(hw.is_fresh());
    drop(hw);
    // Without a record (keys not from a key file) a missing state only warns.
    let mut o = s.opts(&d, 5);
    o.used_record = None;
    let hw = s.open_in(&d.0.join("norecord"), o).unwrap();
    assert_eq!(hw.first_seq().unwrap(), 1);
}

/// Two senders of one SA under one key, with different state directories, started at the
/// same moment: both read the record before either wrote it, so both start fresh; the second
/// to reserve finds the first's entry under the record's lock and stops before using a number
/// (else every nonce would be used twice). A record created but not yet written (another SA of
/// the key starting at that moment) lists nothing, and is not taken for corrupt.
fn two_fresh_starts_of_one_sa_at_once_leave_one_sender(s: &Subject) {
    let d = Dir::new("race");
    fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(d.record())
        .unwrap();
    let mut first = s.open_in(&d.0.join("one"), s.opts(&d, 5)).unwrap();
    let mut second = s.open_in(&d.0.join("two"), s.opts(&d, 5)).unwrap();
    assert!(first.is_fresh() && second.is_fresh());
    first.claim(1).unwrap();
    let e = second.claim(1).unwrap_err();
    assert!(matches!(e, HwError::UsedKeyNoState { .. }), "{e}");
    assert!(
        e.to_string().contains(d.0.join("one").to_str().unwrap()),
        "{e}"
    );
    assert_eq!(code(e), 2);
    // The first goes on; the record lists the SA once.
    use_numbers(&mut first, 2, 12);
    let listed = crate::keys::highwater::used_record_entries(&d.record()).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
}

/// Issue 15 item 4: links at the lock, state, temporary and record names are refused or
/// replaced, never written through.
fn links_in_the_state_directory_are_never_followed(s: &Subject) {
    let d = Dir::new("links");
    let victim = d.0.join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let hw = s.open(&d, 5).unwrap();
    let (path, lock) = (hw.path().to_path_buf(), hw.path().with_extension("lock"));
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    drop(hw);
    fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let e = s.open(&d, 5).unwrap_err();
    assert!(
        matches!(e, HwError::Unsafe { .. }) && e.to_string().contains("symbolic link"),
        "{e}"
    );
    assert_eq!(code(e), 2);
    fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    let mut hw = s.open(&d, 5).unwrap();
    hw.claim(1).unwrap();
    assert!(
        fs::symlink_metadata(&tmp).is_err(),
        "the stale link is gone"
    );
    assert!(
        !fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    drop(hw);
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let e = s.open(&d, 5).unwrap_err();
    assert!(matches!(e, HwError::Unsafe { .. }), "{e}");
    fs::remove_file(&path).unwrap();
    fs::remove_file(d.record()).unwrap();
    std::os::unix::fs::symlink(&victim, d.record()).unwrap();
    let e = s.open(&d, 5).unwrap_err();
    assert!(matches!(e, HwError::Unsafe { .. }), "{e}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

fn unsafe_directories_are_refused(s: &Subject) {
    let d = Dir::new("perm");
    drop(s.open(&d, 5).unwrap());
    for mode in [0o777, 0o720, 0o702] {
        fs::set_permissions(d.state(), fs::Permissions::from_mode(mode)).unwrap();
        let e = s.open(&d, 5).unwrap_err();
        assert!(
            matches!(e, HwError::Unsafe { .. }) && e.to_string().contains("chmod go-w"),
            "{mode:o}: {e}"
        );
        assert_eq!(code(e), 2);
    }
    fs::set_permissions(d.state(), fs::Permissions::from_mode(0o755)).unwrap();
    drop(s.open(&d, 5).expect("0755 is not writable by others"));
    if sys::effective_uid() == 0 {
        std::os::unix::fs::chown(d.state(), Some(65534), None).unwrap();
        let e = s.open(&d, 5).unwrap_err();
        assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
    }
}

fn corrupt_state_is_refused(s: &Subject) {
    let d = Dir::new("corrupt");
    let mut hw = s.open(&d, 8).unwrap();
    hw.claim(1).unwrap();
    let path = hw.path().to_path_buf();
    let good = fs::read_to_string(&path).unwrap();
    drop(hw);
    let bad = [
        String::new(),
        "garbage\n".to_string(),
        good.replace("reserved 8\n", "reserved 8"),
        good.replace("reserved 8", "reserved -8"),
        good.replace("reserved 8", "reserved 99999999999999999999999"),
        good.replace("reserved 8", "reserved"),
        good.replace(&format!("sa {}", s.sa), "sa other"),
        good.replace("reserved 8\n", "reserved 8\nextra\n"),
        format!("{good}{}", " ".repeat(5000)),
    ];
    for b in bad {
        fs::write(&path, &b).unwrap();
        let e = s.open(&d, 8).unwrap_err();
        assert!(matches!(e, HwError::Corrupt { .. }), "{b:?}: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains(path.to_str().unwrap()) && msg.contains("refusing"),
            "{msg}"
        );
        assert_eq!(code(e), 2);
    }
}

fn the_limit_stops_exactly_there(s: &Subject) {
    let d = Dir::new("limit");
    let mut o = s.opts(&d, 3);
    o.seq_limit = Some(7);
    let mut hw = s.open_in(&d.state(), o.clone()).unwrap();
    use_numbers(&mut hw, 1, 7);
    assert_eq!(hw.reserved(), 7, "the reservation never passes the limit");
    let e = hw.claim(8).unwrap_err();
    assert!(matches!(
        e,
        HwError::Exhausted {
            limit: 7,
            configured: true
        }
    ));
    assert!(e.to_string().contains("new key must be installed"), "{e}");
    assert_eq!(e.stop_reason(), "exhausted");
    assert_eq!(code(e), 1);
    drop(hw);
    let hw = s.open_in(&d.state(), o).unwrap();
    assert!(matches!(hw.first_seq(), Err(HwError::Exhausted { .. })));
}

/// Every profile `send` takes (one subject per nonce domain, with the SA identity the
/// channel uses) and the SA identities of `someip serve|call`.
fn subjects() -> Vec<Subject> {
    let mut profiles: Vec<String> = IvnAeProfile::all().map(|p| p.to_string()).collect();
    for s in ivnsec_core::sa::macsec::CipherSuite::ALL {
        profiles.push(s.profile().to_string());
    }
    for a in ivnsec_core::sa::esp::EspAlg::ALL {
        profiles.push(a.name().to_string());
    }
    for a in ivnsec_core::sa::secoc::SecocAlg::ALL {
        profiles.push(a.name().to_string());
    }
    for p in ivnsec_core::profile::SomeipProfile::all() {
        profiles.push(p.to_string());
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for p in profiles {
        let s = Subject::of(&p, None);
        if seen.insert(s.domain.clone()) {
            out.push(s);
        }
    }
    for sa in [
        "someip service 0x1234 key-id 1 sender server",
        "someip service 0x1234 key-id 1 sender client 0x0042",
    ] {
        out.push(Subject::of("someip-aes128-gcm", Some(sa.to_string())));
    }
    out
}

/// `macsec up --keys` (the MACsec TAP): the transmit SA of a CA member (its SCI, or for XPN
/// its SSCI by SCI order), as `macsec::static_keys` names it, meets the same contract.
#[test]
fn the_macsec_tap_meets_the_contract() {
    let member = ivnsec_core::wire::macsec::Sci::from_u64(0x0200_0000_000a_0001);
    let subjects: Vec<Subject> = ivnsec_core::sa::macsec::CipherSuite::ALL
        .iter()
        .map(|&suite| {
            let sa = ivnsec_core::sa::secy::tx_sa_identity(suite, member, Some(3));
            Subject::of(suite.profile(), Some(sa))
        })
        .collect();
    std::thread::scope(|sc| {
        for s in &subjects {
            sc.spawn(move || contract(s));
        }
    });
}

/// `macsec up --psk` (MKA): the transmit SA of an agreed SAK (a SAK's bytes and salt, the
/// member's SCI or, for XPN, the SSCI MKA assigns by descending SCI order) meets the same
/// contract; opened as an agreed key, a fresh SAK starts at 1 without a warning, a SAK met
/// again after the member died resumes above its mark, and another SAK is another state.
#[test]
fn mka_saks_meet_the_contract() {
    use ivnsec_core::sa::macsec::CipherSuite;
    use ivnsec_core::wire::macsec::Sci;
    let member = Sci::from_u64(0x0200_0000_000b_0001);
    let others = [Sci::from_u64(0x0200_0000_000a_0001), member];
    let subjects: Vec<Subject> = CipherSuite::ALL
        .iter()
        .map(|&suite| {
            let ssci = ivnsec_core::mka::participant::assign_sscis(&mut others.clone())
                .into_iter()
                .find(|(s, _)| *s == member)
                .map(|(_, n)| n)
                .filter(|_| suite.is_xpn());
            let sa = ivnsec_core::sa::secy::tx_sa_identity(suite, member, ssci);
            Subject::of(suite.profile(), Some(sa))
        })
        .collect();
    assert!(subjects.iter().any(|s| s.sa == "macsec-xpn ssci 1"));
    std::thread::scope(|sc| {
        for s in &subjects {
            sc.spawn(move || contract(s));
        }
    });
    for s in &subjects {
        let d = Dir::new("mka");
        let opts = || Options {
            used_record: None,
            ..s.opts(&d, 16)
        };
        let open =
            |k: &DirectionKeys| HighWater::open_agreed(&d.state(), &s.domain, &s.sa, k, opts());
        let mut hw = open(&s.keys).unwrap();
        assert!(hw.is_fresh());
        assert_eq!(hw.first_seq().unwrap(), 1);
        use_numbers(&mut hw, 1, 20);
        let mark = hw.reserved();
        assert!(mark >= 20, "{mark}");
        assert!(matches!(open(&s.keys), Err(HwError::Locked { .. })));
        drop(hw);
        let again = open(&s.keys).unwrap();
        assert!(!again.is_fresh());
        assert_eq!(again.first_seq().unwrap(), mark + 1, "{}", s.domain);
        let fresh = random_keys(s.domain.parse().unwrap()).unwrap();
        assert_eq!(open(&fresh).unwrap().first_seq().unwrap(), 1);
    }
}

#[test]
fn every_sender_meets_the_contract() {
    let subjects = subjects();
    assert!(subjects.len() >= 45, "{}", subjects.len());
    // fsync-bound: a few subjects at a time.
    std::thread::scope(|sc| {
        for chunk in subjects.chunks(subjects.len().div_ceil(6)) {
            sc.spawn(move || chunk.iter().for_each(contract));
        }
    });
}

/// Issue 15 item 1: every spelling of a profile names one nonce domain, and the domain is
/// the canonical suite name (the stable names of DESIGN.md / docs/nonce-safety.md).
#[test]
fn spellings_of_one_suite_share_one_nonce_domain() {
    let cases: [(&[&str], &str); 8] = [
        (
            &[
                "aes128-gcm",
                "aes128-gcm/conf",
                "aes128-gcm/auth",
                " aes128-gcm ",
            ],
            "aes128-gcm",
        ),
        (
            &["chacha20-poly1305/auth", "chacha20-poly1305"],
            "chacha20-poly1305",
        ),
        (&["hmac-sha256", "hmac-sha256/auth"], "hmac-sha256"),
        (
            &["aes256-cbc-hmac-sha256", "aes256-cbc-hmac-sha256/conf"],
            "aes256-cbc-hmac-sha256",
        ),
        (
            &[
                "macsec-gcm-aes-128",
                "macsec-gcm-aes-128/auth",
                "macsec-gcm-aes-128/conf",
            ],
            "macsec-gcm-aes-128",
        ),
        (
            &["macsec-gcm-aes-xpn-256/auth", "macsec-gcm-aes-xpn-256"],
            "macsec-gcm-aes-xpn-256",
        ),
        (
            &[
                "someip-aes128-gcm",
                "someip-aes128-gcm/auth",
                "someip-aes128-gcm/conf",
            ],
            "someip-aes128-gcm",
        ),
        (&["esp-aes128-gcm"], "esp-aes128-gcm"),
    ];
    for (spellings, want) in cases {
        for p in spellings {
            assert_eq!(p.parse::<Profile>().unwrap().nonce_domain(), want, "{p}");
        }
    }
    // Different suites are different domains.
    let all: Vec<String> = subjects().iter().map(|s| s.domain.clone()).collect();
    let set: BTreeSet<&String> = all.iter().collect();
    assert_eq!(
        set.len(),
        all.len() - 2,
        "only the two extra SOME/IP subjects repeat"
    );
    // A spelling is refused as a domain: state must never be keyed by one.
    let d = Dir::new("spelling");
    let s = Subject::of("aes128-gcm", None);
    for bad in ["aes128-gcm/conf", "aes128-gcm/auth", " aes128-gcm", "nope"] {
        let e = HighWater::open(&d.state(), bad, &s.sa, &s.keys, s.opts(&d, 5)).unwrap_err();
        assert!(matches!(e, HwError::BadOption(_)), "{bad}: {e}");
    }
}

/// The fingerprint is HMAC-SHA256 over the documented layout (docs/nonce-safety.md),
/// computed here by the other provider (aws-lc-rs) as an independent implementation.
fn documented_fingerprint(profile: &str, sa: &str, key: &[u8], mac_key: &[u8]) -> String {
    let mac = ivnsec_crypto_fast::PROVIDER
        .keys
        .mac(MacAlg::HmacSha256, b"ivnsec highwater fingerprint v1")
        .unwrap();
    let mut msg = Vec::new();
    for f in [profile.as_bytes(), sa.as_bytes(), key, mac_key] {
        msg.extend_from_slice(&(f.len() as u64).to_be_bytes());
        msg.extend_from_slice(f);
    }
    let mut out = [0u8; MAX_MAC_LEN];
    let n = mac.compute(&[&msg], &mut out);
    assert_eq!(n, 32);
    hex::encode(&out[..32])
}

#[test]
fn fingerprint_follows_the_documented_layout() {
    let key = hex::decode("00112233445566778899aabbccddeeff").unwrap();
    for (p, sa, mk) in [
        ("aes128-gcm", "ivnae key-id 1", &[][..]),
        ("aes128-gcm/conf", "ivnae key-id 1", &[][..]),
        ("aes128-cbc-hmac-sha256", "ivnae key-id 2", &[7u8; 32][..]),
    ] {
        assert_eq!(
            fingerprint(p, sa, &key, mk),
            documented_fingerprint(p, sa, &key, mk)
        );
    }
}

/// The previous version named the state after the raw `--profile`: a state written under
/// `aes128-gcm/conf` must be honoured by the `aes128-gcm` domain (not restarted at 1), and
/// the old file becomes a note the previous version refuses.
#[test]
fn state_of_the_previous_version_under_another_spelling_is_honoured() {
    let d = Dir::new("migrate");
    let s = Subject::of("aes128-gcm", None);
    let key = s.keys.key().to_vec();
    let write_old = |profile: &str, sa: &str, key: &[u8], reserved: u64| -> PathBuf {
        let fp = documented_fingerprint(profile, sa, key, &[]);
        let name = format!("{}-{}.hw", safe_name(profile), &fp[..32]);
        let p = d.state().join(name);
        fs::write(
            &p,
            format!("{MAGIC}\nprofile {profile}\nsa {sa}\nfingerprint {fp}\nreserved {reserved}\n"),
        )
        .unwrap();
        p
    };
    DirBuilder::new().mode(0o700).create(d.state()).unwrap();
    let conf = write_old("aes128-gcm/conf", &s.sa, &key, 8192);
    let auth = write_old("aes128-gcm/auth", &s.sa, &key, 4096);
    // Not ours: another key, another SA, another suite.
    let other_key = write_old("aes128-gcm/conf", &s.sa, &[9u8; 16], 99_999);
    let other_sa = write_old("aes128-gcm/conf", "ivnae key-id 2", &key, 99_999);
    let other_suite = write_old("aes128-ccm/conf", &s.sa, &key, 99_999);
    assert_eq!(
        conf.file_name().unwrap().to_str().unwrap()[..16],
        *"aes128-gcm_conf-"
    );

    // While a sender of the previous version holds an old spelling's lock: locked out.
    let held = File::create(conf.with_extension("lock")).unwrap();
    assert!(sys::try_lock_exclusive(&held).unwrap());
    let e = s.open(&d, 5).unwrap_err();
    assert!(matches!(e, HwError::Locked { .. }), "{e}");
    drop(held);

    let mut hw = s.open(&d, 5).unwrap();
    assert!(!hw.is_fresh());
    assert_eq!(hw.first_seq().unwrap(), 8193, "above the highest old mark");
    let mut m = hw.migrated().to_vec();
    m.sort();
    let mut want = vec![
        auth.file_name().unwrap().to_str().unwrap().to_string(),
        conf.file_name().unwrap().to_str().unwrap().to_string(),
    ];
    want.sort();
    assert_eq!(m, want);
    assert!(
        fs::read_to_string(hw.path())
            .unwrap()
            .ends_with("reserved 8192\n")
    );
    hw.claim(8193).unwrap();
    for p in [&conf, &auth] {
        let t = fs::read_to_string(p).unwrap();
        assert!(t.starts_with(MOVED_MAGIC), "{t}");
        // The previous version's parser (first line must be the magic) refuses it.
        assert_ne!(t.lines().next(), Some(MAGIC));
    }
    for p in [&other_key, &other_sa, &other_suite] {
        assert!(
            fs::read_to_string(p).unwrap().ends_with("reserved 99999\n"),
            "untouched"
        );
    }
    drop(hw);
    // Later starts continue from the new state; the notes are not read as states.
    let hw = s.open(&d, 5).unwrap();
    assert_eq!(hw.first_seq().unwrap(), 8198);
    assert!(hw.migrated().is_empty());
}

#[test]
fn used_key_records_are_checked_strictly() {
    let d = Dir::new("record");
    let s = Subject::of("aes128-gcm", None);
    for body in [
        "garbage\n".to_string(),
        format!("{RECORD_MAGIC}\nused 1234 x\n"),
        format!("{RECORD_MAGIC}\nsomething else\n"),
        format!("{RECORD_MAGIC}\nused {} x", "a".repeat(64)),
        format!("{RECORD_MAGIC}\n{}", "#".repeat(300_000)),
    ] {
        fs::write(d.record(), &body).unwrap();
        fs::set_permissions(d.record(), fs::Permissions::from_mode(0o600)).unwrap();
        let e = s.open(&d, 5).unwrap_err();
        assert!(matches!(e, HwError::Corrupt { .. }), "{body:.40}: {e}");
        assert!(e.to_string().contains("used-key record"), "{e}");
    }
    fs::write(d.record(), format!("{RECORD_MAGIC}\n")).unwrap();
    fs::set_permissions(d.record(), fs::Permissions::from_mode(0o666)).unwrap();
    let e = s.open(&d, 5).unwrap_err();
    assert!(matches!(e, HwError::Unsafe { .. }), "{e}");
    fs::set_permissions(d.record(), fs::Permissions::from_mode(0o600)).unwrap();
    let mut hw = s.open(&d, 5).unwrap();
    hw.claim(1).unwrap();
    let t = fs::read_to_string(d.record()).unwrap();
    assert_eq!(
        t.lines().filter(|l| l.starts_with("used ")).count(),
        1,
        "{t}"
    );
    assert!(t.contains(&format!("aes128-gcm | {} | ", s.sa)), "{t}");
}

/// Two SAs under one key file record themselves side by side; one listed SA does not make
/// another SA of the key (another SCI: its own nonce space) count as used.
#[test]
fn the_record_is_per_sa() {
    let d = Dir::new("persa");
    let a = Subject::of("macsec-gcm-aes-128", None);
    let mut b = a.clone();
    let mut e2 = ends();
    e2.local_mac = [2, 0, 0, 0, 0, 9];
    b.sa = sa_identity("macsec-gcm-aes-128".parse().unwrap(), &e2, 0);
    assert_ne!(a.sa, b.sa);
    a.open(&d, 5).unwrap().claim(1).unwrap();
    let mut hb = b.open(&d, 5).expect("another SA of the key is not refused");
    assert!(hb.is_fresh());
    hb.claim(1).unwrap();
    let t = fs::read_to_string(d.record()).unwrap();
    assert_eq!(
        t.lines().filter(|l| l.starts_with("used ")).count(),
        2,
        "{t}"
    );
}

#[test]
fn bad_options_are_usage_errors() {
    let d = Dir::new("opts");
    let s = Subject::of("aes128-gcm", None);
    for o in [
        s.opts(&d, 0),
        s.opts(&d, MAX_BLOCK + 1),
        Options {
            seq_limit: Some(0),
            ..s.opts(&d, 1)
        },
    ] {
        let e = s.open_in(&d.state(), o).unwrap_err();
        assert_eq!(code(e), 2);
    }
    s.open(&d, MAX_BLOCK).expect("the bound itself is allowed");
}

/// Another spelling of the same key, or another IV under it, must find the same state (a new
/// file would restart at 1); another SA identity under the same key gets its own.
#[test]
fn the_state_follows_the_key_bytes_not_their_spelling() {
    let d = Dir::new("keyspelling");
    let mut s = Subject::of("aes128-gcm", None);
    let key = hex::decode("00112233445566778899aabbccddeeff").unwrap();
    s.keys = DirectionKeys::new(&key, &[], *s.keys.iv());
    let mut hw = s.open(&d, 8).unwrap();
    hw.claim(1).unwrap();
    let path = hw.path().to_path_buf();
    drop(hw);
    let mut k = s.clone();
    // The same key bytes (a key file may spell them `0x00:11:…`; they are parsed first)
    // under another IV.
    k.keys = DirectionKeys::new(&key, &[], [0xff; 12]);
    let hw = k.open(&d, 8).unwrap();
    assert_eq!(hw.path(), path);
    assert_eq!(hw.first_seq().unwrap(), 9);
    drop(hw);
    k.sa = "ivnae key-id 2".into();
    let other = k.open(&d, 8).unwrap();
    assert_ne!(other.path(), path);
}

/// The state says 2^32 − 3 for macsec-gcm-aes-128 (32-bit PN): exactly the two remaining
/// PNs go out, then the sender stops with the exhaustion error instead of wrapping.
#[test]
fn macsec_sa_driven_to_the_protocol_limit() {
    let profile = "macsec-gcm-aes-128";
    let d = Dir::new("macsec");
    let s = Subject::of(profile, None);
    let k = s.keys.clone();
    let fam: Profile = profile.parse().unwrap();
    let hw = s.open(&d, 4096).unwrap();
    let path = hw.path().to_path_buf();
    let header = hw.header.clone();
    drop(hw);
    let start = (1u64 << 32) - 3;
    fs::write(&path, format!("{header}reserved {start}\n")).unwrap();
    let mut hw = s.open(&d, 4096).unwrap();
    let first = hw.first_seq().unwrap();
    assert_eq!(first, start + 1);
    let copts = ChannelOptions {
        replay_window: 0,
        first_seq: first,
        spi_offset: 0,
    };
    let auto = ProviderChoice::Auto;
    let mut ch = open_channel(fam, auto, &k, &k, ends(), 0, copts).unwrap();
    let mut rx = open_channel(
        fam,
        auto,
        &k,
        &k,
        ends().reversed(),
        1,
        ChannelOptions::default(),
    )
    .unwrap();
    let mut buf = vec![0u8; ivnsec_core::channel::Channel::buffer_len(64)];
    let mut sent = Vec::new();
    let err = loop {
        let Some(seq) = ch.next_seq() else {
            break HwError::Exhausted {
                limit: fam.max_seq(),
                configured: false,
            };
        };
        if let Err(e) = hw.claim(seq) {
            break e;
        }
        let n = ch.protect(&[1u8; 64], &mut buf).unwrap();
        let pn = u32::from_be_bytes(buf[16..20].try_into().unwrap());
        sent.push(u64::from(pn));
        rx.verify(&mut buf, n).unwrap();
    };
    assert_eq!(sent, vec![(1 << 32) - 2, (1 << 32) - 1]);
    assert_eq!(hw.reserved(), u64::from(u32::MAX));
    assert!(err.to_string().contains("protocol's limit"), "{err}");
    assert!(
        err.to_string().contains("new key must be installed"),
        "{err}"
    );
    // The channel refuses too (belt and braces), and a restart refuses at once.
    assert!(ch.protect(&[1u8; 64], &mut buf).is_err());
    drop(hw);
    let hw = s.open(&d, 4096).unwrap();
    assert!(matches!(hw.first_seq(), Err(HwError::Exhausted { .. })));
}

/// No file I/O inside a block: a million claims, one reservation per block.
#[test]
fn claims_inside_a_block_do_no_io() {
    let d = Dir::new("noio");
    let s = Subject::of("aes256-gcm", None);
    let mut hw = s.open(&d, MAX_BLOCK).unwrap();
    use_numbers(&mut hw, 1, MAX_BLOCK + 1);
    assert_eq!(hw.writes(), 2);
    assert_eq!(hw.reserved(), 2 * MAX_BLOCK);
}
