//! Fleet-wide control-loop state in Redis: each daemon's activity added to per-subject window
//! buckets (counters and HyperLogLogs), the set of active subjects, a leadership lease, and the
//! leader's published standings. Every key carries a TTL; keys hold only hashes.

use super::RedisStore;
use super::connection::is_noscript;
use super::counts::{ActivityCounts, ActivityDelta, SharedTotals};
use crate::clock::Micros;
use crate::limit::KeyHash;
use crate::store::StoreError;
use redis::{Cmd, Pipeline};
use std::sync::atomic::Ordering;
use std::time::Duration;

const FLUSH: &str = include_str!("activity_flush.lua");
const READ: &str = include_str!("activity_read.lua");
const LEASE: &str = include_str!("lease.lua");
const PUBLISH: &str = include_str!("publish.lua");

/// Subjects per pipeline: large enough to amortise round trips, small enough for one timeout.
const CHUNK: usize = 500;

fn sha(source: &str) -> String {
    redis::Script::new(source).get_hash().to_owned()
}

impl RedisStore {
    /// The fleet's control keys share one hash tag (one cluster slot), so one script can check
    /// the lease and move the standings pointer together.
    fn control_key(&self, name: &str) -> String {
        format!("{}:{{control}}:{name}", self.prefix)
    }

    fn bucket_keys(&self, subject: KeyHash, bucket: u64) -> [String; 3] {
        let base = format!("{}:{{{subject}}}:a:{bucket}", self.prefix);
        [base.clone(), format!("{base}:e"), format!("{base}:i")]
    }

    /// Loads the control scripts (on every primary of a cluster) so EVALSHA finds them: once,
    /// and again after Redis said NOSCRIPT (see [`Self::noting_noscript`]), not every cycle.
    async fn load_control_scripts(&self) -> Result<(), StoreError> {
        if self.control_scripts_loaded.load(Ordering::Relaxed) {
            return Ok(());
        }
        let loads = [FLUSH, READ, LEASE, PUBLISH].map(|source| {
            let mut cmd = redis::cmd("SCRIPT");
            cmd.arg("LOAD").arg(source);
            cmd
        });
        if self.conn.is_cluster() {
            // A cluster connection sends SCRIPT LOAD to every primary, one command at a time.
            for cmd in &loads {
                self.conn.query::<redis::Value>(cmd, self.timeout).await?;
            }
        } else {
            let mut pipe = Pipeline::new();
            for cmd in loads {
                pipe.add_command(cmd).ignore();
            }
            self.conn.pipeline::<()>(&pipe, self.timeout).await?;
        }
        self.control_scripts_loaded.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// A control call's result; a NOSCRIPT (Redis restarted or flushed its scripts) makes the
    /// next call load the scripts again, so one cycle fails and the next one works.
    fn noting_noscript<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if let Err(error) = &result {
            if is_noscript(error) {
                self.control_scripts_loaded.store(false, Ordering::Relaxed);
            }
        }
        result
    }

    /// Runs commands in one pipeline, or (on a cluster, where a pipeline must not cross slots)
    /// concurrently over the cluster connection.
    async fn run_many(&self, cmds: Vec<Cmd>) -> Result<Vec<redis::Value>, StoreError> {
        if self.conn.is_cluster() {
            let replies = futures_util::future::join_all(
                cmds.iter()
                    .map(|cmd| self.conn.query::<redis::Value>(cmd, self.timeout)),
            )
            .await;
            return replies.into_iter().collect();
        }
        let mut pipe = Pipeline::new();
        for cmd in cmds {
            pipe.add_command(cmd);
        }
        self.conn.pipeline(&pipe, self.timeout).await
    }

    fn evalsha(source: &str, keys: &[String], args: Vec<String>) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(sha(source)).arg(keys.len()).arg(keys).arg(args);
        cmd
    }

    /// Adds one interval of activity to the bucket of `now` (bucket = `now / bucket_len`), and
    /// marks the subjects active.
    pub async fn flush_activity(
        &self,
        now: Micros,
        bucket_len: Micros,
        ttl: Duration,
        items: &[(KeyHash, ActivityDelta<'_>)],
    ) -> Result<(), StoreError> {
        if items.is_empty() {
            return Ok(());
        }
        self.load_control_scripts().await?;
        let ttl_ms = ttl.as_millis().max(1).to_string();
        let bucket = now / bucket_len.max(1);
        let active = self.control_key("active");
        for chunk in items.chunks(CHUNK) {
            let mut cmds = Vec::with_capacity(chunk.len() + 2);
            for (subject, delta) in chunk {
                let c = &delta.counts;
                let mut args = vec![
                    ttl_ms.clone(),
                    c.requests.to_string(),
                    c.denied.to_string(),
                    c.reports.to_string(),
                    c.client_errors.to_string(),
                    c.first.min(now).to_string(),
                    c.last.to_string(),
                    c.gaps.to_string(),
                    c.gap_sum.to_string(),
                    c.gap_sum_sq.to_string(),
                    c.auth_failures.to_string(),
                    c.not_found.to_string(),
                    c.usage_sum.to_string(),
                    delta.endpoints.len().to_string(),
                ];
                args.extend(delta.endpoints.iter().map(|h| format!("{h:x}")));
                args.extend(delta.ips.iter().map(|h| format!("{h:x}")));
                cmds.push(Self::evalsha(
                    FLUSH,
                    &self.bucket_keys(*subject, bucket),
                    args,
                ));
            }
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(&active);
            for (subject, _) in chunk {
                zadd.arg(now / 1000).arg(subject.to_string());
            }
            cmds.push(zadd);
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(&active).arg(&ttl_ms);
            cmds.push(expire);
            let flushed = self.run_many(cmds).await;
            self.noting_noscript(flushed)?;
        }
        Ok(())
    }

    /// Subjects active since `since` (µs); older ones are dropped from the set.
    pub async fn active_subjects(&self, since: Micros) -> Result<Vec<KeyHash>, StoreError> {
        let active = self.control_key("active");
        let mut trim = redis::cmd("ZREMRANGEBYSCORE");
        trim.arg(&active)
            .arg("-inf")
            .arg(format!("({}", since / 1000));
        self.conn.query::<()>(&trim, self.timeout).await?;
        let mut range = redis::cmd("ZRANGE");
        range.arg(&active).arg(0).arg(-1);
        let members: Vec<String> = self.conn.query(&range, self.timeout * 4).await?;
        Ok(members
            .iter()
            .filter_map(|m| u128::from_str_radix(m, 16).ok().map(KeyHash))
            .collect())
    }

    /// The summed buckets `first_bucket..=last_bucket` of each subject.
    pub async fn activity_totals(
        &self,
        subjects: &[KeyHash],
        first_bucket: u64,
        last_bucket: u64,
    ) -> Result<Vec<SharedTotals>, StoreError> {
        self.load_control_scripts().await?;
        let mut totals = Vec::with_capacity(subjects.len());
        for chunk in subjects.chunks(CHUNK) {
            let cmds = chunk
                .iter()
                .map(|subject| {
                    let keys: Vec<String> = (first_bucket..=last_bucket)
                        .flat_map(|b| self.bucket_keys(*subject, b))
                        .collect();
                    Self::evalsha(READ, &keys, Vec::new())
                })
                .collect();
            let replies = self.run_many(cmds).await;
            for reply in self.noting_noscript(replies)? {
                let redis::Value::Array(reply) = reply else {
                    return Err(StoreError::Unavailable("unexpected activity reply".into()));
                };
                totals.push(
                    decode_totals(&reply).ok_or_else(|| {
                        StoreError::Unavailable("unexpected activity reply".into())
                    })?,
                );
            }
        }
        Ok(totals)
    }

    /// Takes or renews the lease; `true` while this daemon (`id`) holds it.
    pub async fn try_lead(&self, id: &str, ttl: Duration) -> Result<bool, StoreError> {
        self.load_control_scripts().await?;
        let cmd = Self::evalsha(
            LEASE,
            &[self.control_key("leader")],
            vec![id.to_owned(), ttl.as_millis().max(1).to_string()],
        );
        let held = self.conn.query::<i64>(&cmd, self.timeout).await;
        let held = self.noting_noscript(held)?;
        Ok(held == 1)
    }

    /// Publishes the leader's standings as a new generation, then, if `id` still holds the
    /// lease, points readers at it and lets the previous generation expire within `lease`.
    /// `false`: the lease was lost meanwhile, and readers keep the new leader's standings.
    pub async fn publish_standings(
        &self,
        id: &str,
        generation: u64,
        entries: &[(KeyHash, String)],
        ttl: Duration,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let key = self.control_key(&format!("standings:{generation}"));
        let ttl_ms = ttl.as_millis().max(1).to_string();
        for chunk in entries.chunks(CHUNK * 4) {
            let mut hset = redis::cmd("HSET");
            hset.arg(&key);
            for (subject, entry) in chunk {
                hset.arg(subject.to_string()).arg(entry);
            }
            let mut pipe = Pipeline::new();
            pipe.add_command(hset).ignore();
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(&key).arg(&ttl_ms);
            pipe.add_command(expire).ignore();
            self.conn.pipeline::<()>(&pipe, self.timeout).await?;
        }
        self.load_control_scripts().await?;
        let point = Self::evalsha(
            PUBLISH,
            &[self.control_key("leader"), self.control_key("standings")],
            vec![id.to_owned(), generation.to_string(), ttl_ms],
        );
        let previous = self.conn.query::<i64>(&point, self.timeout).await;
        let previous = self.noting_noscript(previous)?;
        if previous < 0 {
            return Ok(previous == -1);
        }
        // Readers that took the old pointer a moment ago still find its hash.
        let mut expire = redis::cmd("PEXPIRE");
        expire
            .arg(self.control_key(&format!("standings:{previous}")))
            .arg(lease.as_millis().max(1).to_string());
        self.conn.query::<()>(&expire, self.timeout).await?;
        Ok(true)
    }

    /// The latest published standings: (generation, entries), or `None` when none is live.
    pub async fn read_standings(
        &self,
    ) -> Result<Option<(u64, Vec<(KeyHash, String)>)>, StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.control_key("standings"));
        let generation: Option<u64> = self.conn.query(&get, self.timeout).await?;
        let Some(generation) = generation else {
            return Ok(None);
        };
        let mut all = redis::cmd("HGETALL");
        all.arg(self.control_key(&format!("standings:{generation}")));
        let fields: Vec<(String, String)> = self.conn.query(&all, self.timeout * 4).await?;
        let entries = fields
            .into_iter()
            .filter_map(|(subject, entry)| {
                u128::from_str_radix(&subject, 16)
                    .ok()
                    .map(|s| (KeyHash(s), entry))
            })
            .collect();
        Ok(Some((generation, entries)))
    }
}

fn decode_totals(reply: &[redis::Value]) -> Option<SharedTotals> {
    let int = |i: usize| -> Option<i64> {
        match reply.get(i)? {
            redis::Value::Int(n) => Some(*n),
            _ => None,
        }
    };
    let text = |i: usize| -> Option<f64> {
        match reply.get(i)? {
            redis::Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
            redis::Value::SimpleString(s) => s.parse().ok(),
            _ => None,
        }
    };
    let count = |i: usize| int(i).map(|n| n.max(0) as u64);
    let first = text(4)?;
    Some(SharedTotals {
        counts: ActivityCounts {
            requests: count(0)?,
            denied: count(1)?,
            reports: count(2)?,
            client_errors: count(3)?,
            auth_failures: count(11)?,
            not_found: count(12)?,
            usage_sum: text(13)?,
            first: if first < 0.0 {
                Micros::MAX
            } else {
                first as Micros
            },
            last: text(5)?.max(0.0) as Micros,
            gaps: count(6)?,
            gap_sum: text(7)?,
            gap_sum_sq: text(8)?,
        },
        distinct_endpoints: count(9)?,
        distinct_ips: count(10)?,
    })
}
