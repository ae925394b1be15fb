//! The reference the differential tests judge by, and Redis expiry replayed on the manual
//! clock.
//!
//! [`Reference`] is `ratewarden::algorithm` on a map of states, applied as the `Store` trait
//! says (all enforced checks pass, or nothing is consumed). It also says when each written
//! state decays, which is when its Redis key must expire.
//!
//! Redis TTLs run in real time, the tests' clock does not. [`ManualExpiry`] checks the TTL of
//! every key a step wrote against the reference, makes the key persistent, and deletes it once
//! the manual clock reaches its decay: Redis's expiry, on the tests' time.

use crate::support::key;
use ratewarden::algorithm::{self, State};
use ratewarden::limit::KeyHash;
use ratewarden::limit::{Algorithm, Rate};
use ratewarden::store::{Applied, CheckResult, CheckResults, Request};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;
use std::time::Instant;

/// A state written by a request: its key, its rate, and when it decays.
pub struct Written {
    pub subject: KeyHash,
    pub limit: String,
    pub rate: Rate,
    pub decays_at: u64,
}

#[derive(Default)]
pub struct Reference {
    slots: HashMap<(KeyHash, String), (Option<State>, u64)>,
}

impl Reference {
    fn live(&self, subject: KeyHash, limit: &str, now: u64) -> Option<State> {
        match self.slots.get(&(subject, limit.to_owned())) {
            Some((state, decays_at)) if *decays_at > now => state.clone(),
            _ => None,
        }
    }

    /// Applies a request at `now`: the result, and the states it wrote.
    pub fn apply(&mut self, request: &Request<'_>, now: u64) -> (Applied, Vec<Written>) {
        let mut checks = CheckResults::new();
        let mut admitted = true;
        for c in &request.checks {
            let state = self.live(c.subject, c.limit.name, now);
            let outcome = algorithm::peek(state.as_ref(), now, &c.rate, c.cost);
            let probe = |p: &Option<Rate>| {
                p.map_or(outcome.allowed, |r| {
                    algorithm::peek(state.as_ref(), now, &r, c.cost).allowed
                })
            };
            let as_written = c.written.map_or(outcome, |r| {
                algorithm::peek(state.as_ref(), now, &r, c.cost)
            });
            checks.push(CheckResult {
                outcome,
                probes: [probe(&c.probes[0]), probe(&c.probes[1])],
                written: as_written.into(),
            });
            admitted &= outcome.allowed || !c.enforce;
        }
        let mut written = Vec::new();
        if admitted && !request.dry_run {
            for c in &request.checks {
                let mut state = self.live(c.subject, c.limit.name, now);
                let decays_at = algorithm::consume(&mut state, now, &c.rate, c.cost)
                    .max(algorithm::decayed_at_slowest(&state, &c.rate, c.slowest));
                let slot = (c.subject, c.limit.name.to_owned());
                self.slots.insert(slot, (state, decays_at));
                written.push(Written {
                    subject: c.subject,
                    limit: c.limit.name.to_owned(),
                    rate: c.rate,
                    decays_at,
                });
            }
        }
        (Applied { admitted, checks }, written)
    }
}

/// Redis keys, made persistent, and when the manual clock expires them.
///
/// A key whose state decays within the milliseconds between the store's call and the TTL
/// check may have expired in real time already: it is *lost* until the manual clock reaches
/// its decay, and the caller must not use it until then (the stores would rightly differ).
#[derive(Default)]
pub struct ManualExpiry {
    due: HashMap<String, u64>,
    lost: HashMap<String, u64>,
    pub checked: usize,
    pub lost_keys: usize,
}

impl ManualExpiry {
    /// Deletes every key whose state has decayed at `now`, as its TTL would have.
    pub async fn expire(&mut self, conn: &mut MultiplexedConnection, now: u64) {
        self.lost.retain(|_, at| *at > now);
        let due: Vec<String> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        let _: i64 = redis::cmd("DEL")
            .arg(&due)
            .query_async(conn)
            .await
            .expect("DEL");
        for key in due {
            self.due.remove(&key);
        }
    }

    /// Whether `key` expired in real time and its state has not decayed on the manual clock.
    pub fn is_lost(&self, key: &str) -> bool {
        self.lost.contains_key(key)
    }

    /// Checks that each key written since `started` expires when its state decays (in whole
    /// milliseconds, rounded up), then makes it persistent until then.
    pub async fn written(
        &mut self,
        conn: &mut MultiplexedConnection,
        prefix: &str,
        now: u64,
        written: &[Written],
        started: Instant,
        context: &str,
    ) {
        // The last write of a key in a batch sets its TTL.
        let mut last: HashMap<String, (Algorithm, u64)> = HashMap::new();
        for w in written {
            let key = key(prefix, w.subject, &w.limit);
            last.insert(key, (w.rate.algorithm, w.decays_at));
        }
        let mut keys = Vec::new();
        let mut decays = Vec::new();
        for (key, (algorithm, decays_at)) in last {
            if algorithm == Algorithm::SlidingLog {
                keys.push(format!("{key}#"));
                decays.push(decays_at);
            }
            keys.push(key);
            decays.push(decays_at);
        }
        if keys.is_empty() {
            return;
        }
        let script = "local t = {} for i, k in ipairs(KEYS) do \
                      t[i] = redis.call('PTTL', k) redis.call('PERSIST', k) end return t";
        let ttls: Vec<i64> = redis::cmd("EVAL")
            .arg(script)
            .arg(keys.len())
            .arg(&keys)
            .query_async(conn)
            .await
            .expect("PTTL");
        let slack = started.elapsed().as_millis() as i64 + 1;
        for ((key, ttl), decays_at) in keys.into_iter().zip(ttls).zip(decays) {
            let ms = (decays_at - now).div_ceil(1000).max(1) as i64;
            if ttl == -2 && ms <= slack {
                self.lost_keys += 1;
                self.lost.insert(key, decays_at);
                continue;
            }
            assert!(
                ttl <= ms && ttl >= ms - slack,
                "{context}: {key} has PTTL {ttl} ms; its state decays in {ms} ms"
            );
            self.checked += 1;
            self.due.insert(key, decays_at);
        }
    }
}
