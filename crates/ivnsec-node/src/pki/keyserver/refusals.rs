//! Refusals: counted per reason, logged as JSON lines on stderr at most [`LOG_BURST`] a second,
//! the rest summed in a `refused_summary` line; the counters of the `stats` answer.

use super::*;

/// Refusal lines of the current second, and what was not logged of it.
pub(super) struct RefusalLog {
    pub(super) window: Instant,
    pub(super) lines: u32,
    pub(super) suppressed: BTreeMap<&'static str, u64>,
}

pub(super) fn log(event: &str, mut fields: serde_json::Value) {
    if let Some(o) = fields.as_object_mut() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        o.insert("time".into(), json!((t * 1e4).round() / 1e4));
        o.insert("event".into(), json!(event));
    }
    eprintln!("{fields}");
}

impl Shared {
    /// Counts a refusal and logs it, unless [`LOG_BURST`] lines were logged this second already:
    /// then it is summed in the second's `refused_summary` line.
    pub(super) fn refuse(
        &self,
        peer: SocketAddr,
        reason: &'static str,
        detail: &str,
        ecu: Option<&str>,
    ) {
        let n = {
            let mut c = lock(&self.counters);
            let n = c.entry(reason).or_default();
            *n += 1;
            *n
        };
        let mut l = lock(&self.refusal_log);
        Self::roll_refusal_window(&mut l, false);
        if l.lines < LOG_BURST {
            l.lines += 1;
            drop(l);
            log(
                "refused",
                json!({"peer": peer.to_string(), "reason": reason, "detail": detail, "ecu": ecu,
                       "count": n}),
            );
        } else {
            *l.suppressed.entry(reason).or_default() += 1;
            self.log_suppressed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes the summary of refusals not logged once their second is over (or now, `force`).
    pub(super) fn flush_refusal_log(&self, force: bool) {
        Self::roll_refusal_window(&mut lock(&self.refusal_log), force);
    }

    pub(super) fn roll_refusal_window(l: &mut RefusalLog, force: bool) {
        let elapsed = l.window.elapsed();
        if elapsed < Duration::from_secs(1) && !force {
            return;
        }
        if !l.suppressed.is_empty() {
            let total: u64 = l.suppressed.values().sum();
            log(
                "refused_summary",
                json!({"seconds": (elapsed.as_secs_f64() * 1e3).round() / 1e3,
                       "not_logged": total, "by_reason": std::mem::take(&mut l.suppressed)}),
            );
        }
        l.window = Instant::now();
        l.lines = 0;
    }
}

pub(super) fn counters_json(sh: &Shared) -> serde_json::Value {
    let c = lock(&sh.counters);
    let refused: serde_json::Map<String, serde_json::Value> = REASONS
        .iter()
        .map(|r| (r.to_string(), json!(c.get(r).copied().unwrap_or(0))))
        .collect();
    json!({"served": sh.served.load(Ordering::Relaxed), "refused": refused,
           "refusals_not_logged": sh.log_suppressed.load(Ordering::Relaxed)})
}
