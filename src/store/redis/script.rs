//! The request script: encoding checks as KEYS and ARGV, decoding its reply.

use super::super::{Applied, Check, CheckResult, Request};
use crate::algorithm::Outcome;
use crate::clock::Micros;
use crate::limit::{Algorithm, Rate};

pub const SOURCE: &str = include_str!("limits.lua");

/// What the script does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Apply,
    Dry,
    /// Undo a consumption made at this time.
    Refund(Micros),
}

fn algorithm_code(a: Algorithm) -> u8 {
    match a {
        Algorithm::SlidingLog => 1,
        Algorithm::SlidingWindow => 2,
        Algorithm::FixedWindow => 3,
        Algorithm::TokenBucket => 4,
        Algorithm::Gcra => 5,
    }
}

/// The key of one check: `<prefix>:{<subject hash>}:<limit id>`. The braces are a Redis
/// Cluster hash tag: all of a subject's keys live in one slot.
pub fn key(prefix: &str, check: &Check<'_>) -> String {
    format!("{prefix}:{{{}}}:{}", check.subject, check.limit.name)
}

/// KEYS and ARGV for `checks`; `now` of 0 asks the server's clock.
pub fn encode(
    prefix: &str,
    checks: &[&Check<'_>],
    mode: Mode,
    now: Micros,
) -> (Vec<String>, Vec<String>) {
    let mut keys = Vec::with_capacity(checks.len() + 1);
    let mut args = Vec::with_capacity(3 + 11 * checks.len());
    let (mode, at) = match mode {
        Mode::Apply => ("apply", now),
        Mode::Dry => ("dry", now),
        Mode::Refund(at) => ("refund", at),
    };
    args.push(mode.to_owned());
    args.push(at.to_string());
    args.push(checks.len().to_string());
    for check in checks {
        let key = key(prefix, check);
        if check.rate.algorithm == Algorithm::SlidingLog {
            keys.push(key.clone());
            keys.push(format!("{key}#"));
        } else {
            keys.push(key);
        }
        let probe = |p: &Option<Rate>| p.map_or((-1, -1), |r| (r.requests as i64, r.burst as i64));
        let (p1r, p1b) = probe(&check.probes[0]);
        let (p2r, p2b) = probe(&check.probes[1]);
        let r = &check.rate;
        args.extend([
            algorithm_code(r.algorithm).to_string(),
            r.window.to_string(),
            r.requests.to_string(),
            r.burst.to_string(),
            check.cost.to_string(),
            if check.enforce { "1" } else { "0" }.to_owned(),
            p1r.to_string(),
            p1b.to_string(),
            p2r.to_string(),
            p2b.to_string(),
            check.slowest.to_string(),
        ]);
    }
    (keys, args)
}

/// The script's reply: whether all passed, the time it used, and one result per check.
pub fn decode(reply: &[i64], checks: usize) -> Option<(Applied, Micros)> {
    if reply.len() != 2 + 7 * checks {
        return None;
    }
    let to_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
    let results = reply[2..]
        .chunks_exact(7)
        .map(|v| CheckResult {
            outcome: Outcome {
                allowed: v[0] == 1,
                limit: to_u64(v[1]),
                remaining: to_u64(v[2]),
                reset_after: to_u64(v[3]),
                retry_after: (v[4] >= 0).then(|| to_u64(v[4])),
            },
            probes: [v[5] == 1, v[6] == 1],
        })
        .collect();
    Some((
        Applied {
            admitted: reply[0] == 1,
            checks: results,
        },
        to_u64(reply[1]),
    ))
}

/// The request's checks grouped by subject (each group one hash tag, one cluster slot), with
/// their positions in the request.
pub fn groups<'r, 'a>(request: &'r Request<'a>) -> Vec<Vec<(usize, &'r Check<'a>)>> {
    let mut groups: Vec<Vec<(usize, &Check<'a>)>> = Vec::new();
    for (i, check) in request.checks.iter().enumerate() {
        match groups.iter_mut().find(|g| g[0].1.subject == check.subject) {
            Some(group) => group.push((i, check)),
            None => groups.push(vec![(i, check)]),
        }
    }
    groups
}
