//! Fleet-wide control-loop state in Redis, a few keys whatever the number of subjects: one list
//! per window bucket to which every daemon appends one value per interval (its activity, opaque
//! bytes here), a leadership lease, and the leader's standings as one value. Every key carries
//! a TTL and shares the `{control}` hash tag (one cluster slot); values hold only hashes.

use super::RedisStore;
use super::connection::is_noscript;
use crate::clock::Micros;
use crate::store::StoreError;
use redis::{Cmd, Pipeline, Value};
use std::time::Duration;

const LEASE: &str = include_str!("lease.lua");
const PUBLISH: &str = include_str!("publish.lua");

/// The values of a bucket's list from a given index on, and the list's length.
pub type ListTail = (usize, Vec<Vec<u8>>);

/// Fleet values grow with the active subjects (about 100 bytes each): their calls get this many
/// `store.timeout`s, as a read of one large value takes longer than a decision.
const LARGE_VALUE_TIMEOUTS: u32 = 4;

fn sha(source: &str) -> String {
    redis::Script::new(source).get_hash().to_owned()
}

/// `EVALSHA sha` or `EVAL source`, with `keys` and `args`.
fn script_call(command: &str, script: &str, keys: &[String], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd(command);
    cmd.arg(script).arg(keys.len()).arg(keys);
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

impl RedisStore {
    fn control_key(&self, name: &str) -> String {
        format!("{}:{{control}}:{name}", self.prefix)
    }

    /// A bucket's list, named by the bucket length too: after a reload that changes the
    /// window, daemons on the old and the new length never mix their buckets.
    fn activity_key(&self, bucket_len: Micros, bucket: u64) -> String {
        self.control_key(&format!("activity:{bucket_len}:{bucket}"))
    }

    /// Runs a control script by EVALSHA. A NOSCRIPT (Redis restarted, failed over or flushed
    /// its scripts) means the script did not run: it runs by EVAL at once, which also caches it
    /// on the node that holds its keys (all in the `{control}` slot), so a flushed cache is not a
    /// store outage, and a cluster needs no `SCRIPT LOAD` on every primary.
    async fn call_script<T: redis::FromRedisValue>(
        &self,
        source: &str,
        keys: &[String],
        args: &[&[u8]],
        timeout: Duration,
    ) -> Result<T, StoreError> {
        let by_hash = script_call("EVALSHA", &sha(source), keys, args);
        match self.conn.query::<T>(&by_hash, timeout).await {
            Err(error) if is_noscript(&error) => {
                let by_source = script_call("EVAL", source, keys, args);
                self.conn.query::<T>(&by_source, timeout).await
            }
            answered => answered,
        }
    }

    fn large_timeout(&self) -> Duration {
        self.timeout * LARGE_VALUE_TIMEOUTS
    }

    /// Runs commands in one pipeline, or (on a cluster, where the client routes a pipeline by
    /// its first key only) concurrently over the cluster connection.
    async fn run_many(&self, cmds: Vec<Cmd>) -> Result<Vec<Value>, StoreError> {
        let timeout = self.large_timeout();
        if self.conn.is_cluster() {
            let replies = futures_util::future::join_all(
                cmds.iter()
                    .map(|cmd| self.conn.query::<Value>(cmd, timeout)),
            )
            .await;
            return replies.into_iter().collect();
        }
        let mut pipe = Pipeline::new();
        for cmd in cmds {
            pipe.add_command(cmd);
        }
        self.conn.pipeline(&pipe, timeout).await
    }

    /// Appends `value` to the list of bucket `bucket` (of `bucket_len` µs), kept for `ttl`:
    /// one pipeline of two commands.
    pub async fn append_activity(
        &self,
        bucket_len: Micros,
        bucket: u64,
        value: &[u8],
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let key = self.activity_key(bucket_len, bucket);
        let mut push = redis::cmd("RPUSH");
        push.arg(&key).arg(value);
        let mut expire = redis::cmd("PEXPIRE");
        expire.arg(&key).arg(ttl.as_millis().max(1).to_string());
        self.run_many(vec![push, expire]).await.map(|_| ())
    }

    /// For each `(bucket_len, bucket, from)`, the values of the bucket's list from index `from`
    /// on, and the list's length: one pipeline of an `LRANGE` and an `LLEN` per bucket.
    pub async fn activity_since(
        &self,
        from: &[(Micros, u64, usize)],
    ) -> Result<Vec<ListTail>, StoreError> {
        let mut cmds = Vec::with_capacity(from.len() * 2);
        for (bucket_len, bucket, start) in from {
            let key = self.activity_key(*bucket_len, *bucket);
            let mut range = redis::cmd("LRANGE");
            range.arg(&key).arg(*start).arg(-1);
            let mut len = redis::cmd("LLEN");
            len.arg(&key);
            cmds.push(range);
            cmds.push(len);
        }
        let replies = self.run_many(cmds).await?;
        let mut replies = replies.into_iter();
        let mut tails = Vec::with_capacity(from.len());
        while let (Some(values), Some(len)) = (replies.next(), replies.next()) {
            let values: Vec<Vec<u8>> = redis::from_redis_value(values).map_err(unexpected)?;
            let len: usize = redis::from_redis_value(len).map_err(unexpected)?;
            tails.push((len, values));
        }
        Ok(tails)
    }

    /// Takes or renews the lease; `true` while this daemon (`id`) holds it.
    pub async fn try_lead(&self, id: &str, ttl: Duration) -> Result<bool, StoreError> {
        let ttl_ms = ttl.as_millis().max(1).to_string();
        let keys = [self.control_key("leader")];
        let args = [id.as_bytes(), ttl_ms.as_bytes()];
        let held: i64 = self.call_script(LEASE, &keys, &args, self.timeout).await?;
        Ok(held == 1)
    }

    /// Publishes the leader's standings (one value) as `generation`, kept for `ttl`, if `id`
    /// still holds the lease and no newer generation is in place: one script. `false`: the
    /// lease was lost meanwhile, and readers keep the new leader's standings.
    pub async fn publish_standings(
        &self,
        id: &str,
        generation: u64,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let generation = generation.to_string();
        let ttl_ms = ttl.as_millis().max(1).to_string();
        let keys = [self.control_key("leader"), self.control_key("standings")];
        let args = [
            id.as_bytes(),
            generation.as_bytes(),
            ttl_ms.as_bytes(),
            value,
        ];
        let published: i64 = self
            .call_script(PUBLISH, &keys, &args, self.large_timeout())
            .await?;
        Ok(published == 1)
    }

    /// The latest published standings: (generation, value), or `None` when none is live.
    pub async fn read_standings(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let mut get = redis::cmd("HMGET");
        get.arg(self.control_key("standings")).arg("g").arg("v");
        let (generation, value): (Option<u64>, Option<Vec<u8>>) =
            self.conn.query(&get, self.large_timeout()).await?;
        Ok(generation.zip(value))
    }
}

fn unexpected(error: redis::ParsingError) -> StoreError {
    StoreError::Unavailable(format!("unexpected fleet activity reply: {error}"))
}
