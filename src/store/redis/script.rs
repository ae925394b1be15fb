//! The request script: encoding checks as KEYS and ARGV, decoding its reply.

use super::super::{Applied, Check, CheckResult, Request, Written};
use super::function::Call;
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

/// One run of the script: its KEYS and ARGV, numbers kept as numbers so that writing the
/// command formats them straight into its buffer (no string per argument: a decision of two
/// limits has 25).
#[derive(Debug, Clone)]
pub struct Invocation {
    keys: Vec<String>,
    mode: &'static str,
    /// ARGV after the mode: the time, the number of checks, then 13 values per check.
    numbers: Vec<i64>,
}

impl Invocation {
    /// The invocation for `checks`; `now` of 0 asks the server's clock.
    pub fn new(prefix: &str, checks: &[&Check<'_>], mode: Mode, now: Micros) -> Self {
        let mut keys = Vec::with_capacity(checks.len() + 1);
        let mut numbers = Vec::with_capacity(2 + 13 * checks.len());
        let (mode, at) = match mode {
            Mode::Apply => ("apply", now),
            Mode::Dry => ("dry", now),
            Mode::Refund(at) => ("refund", at),
        };
        // Times, limits and counts are far below i64::MAX; saturate rather than wrap.
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        numbers.push(int(at));
        numbers.push(int(checks.len() as u64));
        for check in checks {
            let key = key(prefix, check);
            if check.rate.algorithm == Algorithm::SlidingLog {
                let total_key = format!("{key}#");
                keys.push(key);
                keys.push(total_key);
            } else {
                keys.push(key);
            }
            let probe = |p: &Option<Rate>| p.map_or((-1, -1), |r| (int(r.requests), int(r.burst)));
            let (p1r, p1b) = probe(&check.probes[0]);
            let (p2r, p2b) = probe(&check.probes[1]);
            let (wr, wb) = probe(&check.written);
            let r = &check.rate;
            numbers.extend([
                i64::from(algorithm_code(r.algorithm)),
                int(r.window),
                int(r.requests),
                int(r.burst),
                int(check.cost),
                i64::from(check.enforce),
                p1r,
                p1b,
                p2r,
                p2b,
                int(check.slowest),
                wr,
                wb,
            ]);
        }
        Self {
            keys,
            mode,
            numbers,
        }
    }

    /// The command that runs it, in the form `call` names.
    pub fn command(&self, call: Call<'_>) -> redis::Cmd {
        let mut cmd = match call {
            Call::Function(name) => {
                let mut c = redis::cmd("FCALL");
                c.arg(name);
                c
            }
            Call::Sha(sha) => {
                let mut c = redis::cmd("EVALSHA");
                c.arg(sha);
                c
            }
            Call::Source => {
                let mut c = redis::cmd("EVAL");
                c.arg(SOURCE);
                c
            }
        };
        cmd.arg(self.keys.len()).arg(&self.keys).arg(self.mode);
        for n in &self.numbers {
            cmd.arg(*n);
        }
        cmd
    }
}

/// The script's reply: whether all passed, the time it used, and one result per check.
pub fn decode(reply: &[i64], checks: usize) -> Option<(Applied, Micros)> {
    if reply.len() != 2 + 10 * checks {
        return None;
    }
    let to_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
    let results = reply[2..]
        .chunks_exact(10)
        .map(|v| CheckResult {
            outcome: Outcome {
                allowed: v[0] == 1,
                limit: to_u64(v[1]),
                remaining: to_u64(v[2]),
                reset_after: to_u64(v[3]),
                retry_after: (v[4] >= 0).then(|| to_u64(v[4])),
            },
            probes: [v[5] == 1, v[6] == 1],
            written: Written {
                allowed: v[7] == 1,
                limit: to_u64(v[8]),
                remaining: to_u64(v[9]),
            },
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
