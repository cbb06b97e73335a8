//! The key server's state: the CAK of every segment (kept in the state file, written atomically)
//! and the lock beside the state file that keeps a second server off it.

use super::*;

#[derive(Clone, Debug)]
pub(super) struct Segment {
    pub(super) members: BTreeSet<String>,
    pub(super) cak: Cak,
}

/// The key server's state: what the state file holds.
#[derive(Clone, Debug, Default)]
pub(super) struct Keys {
    pub(super) segments: BTreeMap<String, Segment>,
    /// Revoked serials (hex) already acted on.
    pub(super) revoked_seen: BTreeSet<String>,
    /// Bumped on every change (watchers compare it).
    pub(super) generation: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawState {
    version: u32,
    segments: BTreeMap<String, RawSeg>,
    revoked_seen: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSeg {
    number: u64,
    ckn: String,
    cak: String,
    members: Vec<String>,
}

impl Drop for RawSeg {
    fn drop(&mut self) {
        self.cak.zeroize();
    }
}

pub(super) fn load_state(path: &Path) -> Result<Option<Keys>> {
    if !path.exists() {
        return Ok(None);
    }
    let file = path.display();
    let (text, mode) = keyfile::read_secret(
        path,
        "key server state file",
        MAX_STATE_FILE,
        "it is written by `ivnsec keyserver`",
    )?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "key server state file {file} is readable by group or others (mode {:o}); it holds \
             every segment's CAK. Refusing it: `chmod 600 {file}`",
            mode & 0o777
        )));
    }
    let raw: RawState = serde_json::from_str(&text)
        .map_err(|e| usage(format!("key server state file {file}: {e}")))?;
    if raw.version != 1 {
        return Err(usage(format!(
            "key server state file {file}: version {} (this build reads 1)",
            raw.version
        )));
    }
    let mut keys = Keys {
        revoked_seen: raw.revoked_seen.into_iter().collect(),
        ..Keys::default()
    };
    for (name, s) in &raw.segments {
        let cak = Zeroizing::new(
            hex::decode(&s.cak)
                .map_err(|e| usage(format!("key server state file {file}: {name}.cak: {e}")))?,
        );
        let ckn = hex::decode(&s.ckn)
            .map_err(|e| usage(format!("key server state file {file}: {name}.ckn: {e}")))?;
        if cak.len() != CAK_LEN || ckn.is_empty() || ckn.len() > 32 {
            return Err(usage(format!(
                "key server state file {file}: segment {name}: bad CAK or CKN length"
            )));
        }
        keys.segments.insert(
            name.clone(),
            Segment {
                members: s.members.iter().cloned().collect(),
                cak: Cak {
                    number: s.number,
                    ckn,
                    cak,
                },
            },
        );
    }
    Ok(Some(keys))
}

pub(super) fn render_state(keys: &Keys) -> Zeroizing<String> {
    use std::fmt::Write as _;
    // Room for everything up front: a String that grew would leave copies of the CAKs behind
    // in the buffers it gave up (only the last one is wiped).
    let room = 256
        + keys.revoked_seen.len() * 48
        + keys
            .segments
            .iter()
            .map(|(n, s)| 256 + 2 * n.len() + s.members.iter().map(|m| m.len() + 8).sum::<usize>())
            .sum::<usize>();
    let mut out = Zeroizing::new(String::with_capacity(room));
    out.push_str("{\"version\":1,\"segments\":{");
    for (i, (name, s)) in keys.segments.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let cak = Zeroizing::new(hex::encode(&*s.cak.cak));
        let members: Vec<&String> = s.members.iter().collect();
        let _ = write!(
            &mut *out,
            "{}:{{\"number\":{},\"ckn\":\"{}\",\"cak\":\"{}\",\"members\":{}}}",
            json!(name),
            s.cak.number,
            hex::encode(&s.cak.ckn),
            *cak,
            json!(members)
        );
    }
    let _ = writeln!(
        &mut *out,
        "}},\"revoked_seen\":{}}}",
        json!(keys.revoked_seen)
    );
    out
}

pub(super) fn save_state(path: &Path, keys: &Keys) -> Result<()> {
    crate::pki::write_atomic(path, render_state(keys).as_bytes(), 0o600)
}

/// The lock file beside the state file: `STATE.lock`.
pub fn lock_path(state: &Path) -> PathBuf {
    let mut name = state
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".lock");
    state.with_file_name(name)
}

/// Takes the exclusive lock of the state file for this process's life, or says which server
/// holds it (exit 2: one state file, one key server; two would hand out different CAKs under
/// the same number and keep only one of them).
pub(super) fn lock_state(state: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = lock_path(state);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            usage(format!(
                "key server lock file {} (beside the state file): {e}",
                path.display()
            ))
        })?;
    let held = ivnsec_net::sys::try_lock_exclusive(&f)
        .map_err(|e| env_error(format!("locking {}: {e}", path.display())))?;
    if !held {
        let mut text = String::new();
        let _ = (&f).take(4096).read_to_string(&mut text);
        let holder = serde_json::from_str::<serde_json::Value>(text.trim())
            .ok()
            .map(|v| {
                let mut h = format!("pid {}", v["pid"]);
                if let Some(l) = v["listen"].as_str() {
                    h.push_str(&format!(", listening on {l}"));
                }
                h
            })
            .unwrap_or_else(|| "a process that has not recorded itself yet".to_string());
        return Err(usage(format!(
            "key server state file {} is in use by another key server ({holder}; lock {}): two \
             servers on one state file would hand out different CAKs under one number. Stop \
             that one, or give this one a state file of its own with --state",
            state.display(),
            path.display()
        )));
    }
    write_lock_owner(&mut f, None);
    Ok(f)
}

/// Records who holds the lock (pid, and the listen address once bound) in the lock file.
pub(super) fn write_lock_owner(f: &mut std::fs::File, listen: Option<SocketAddr>) {
    use std::io::Seek;
    let mut v = json!({"pid": std::process::id()});
    if let Some(l) = listen {
        v["listen"] = json!(l.to_string());
    }
    let _ = f.set_len(0);
    let _ = f.seek(std::io::SeekFrom::Start(0));
    let _ = writeln!(f, "{v}");
}
