//! The Redis store (`redis://`, `redis+cluster://`, `redis+sentinel://`, and over TLS
//! `rediss://`, `rediss+cluster://`, `rediss+sentinel://`): one Lua script applies all the
//! limits of a request atomically, in one round trip, with time from the Redis server. The
//! script is a function library called with FCALL where the server takes functions
//! (`function.rs`), else EVALSHA.
//!
//! Several daemons on one Redis share limits exactly. Keys hold only hashes: `<prefix>:{<subject
//! hash>}:<limit id>`. In a cluster, the subject hash is the hash tag, so a request's keys share
//! a slot; a request that mixes two subjects (a user and an IP-keyed rule) is applied one
//! subject at a time, and what the first part consumed is refunded if a later part denies.

mod activity;
mod connection;
mod function;
mod script;
mod sentinel;
mod sentinel_url;
mod tiers;

pub use sentinel_url::SentinelUrl;
pub use tiers::{TIER_STORE_TTL, TIER_TTL_REFRESH};

use super::{Applied, Check, CheckResult, Request, Store, StoreError, StoreKind, StoreUrl, TlsCa};
use crate::clock::{Clock, Micros};
use crate::limit::KeyHash;
use connection::Connection;
use function::{Call, Library, LoadFailure, Refusal};
use redis::{ErrorKind, Pipeline};
use script::{Invocation, Mode, SOURCE};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Batch items that share one `store.timeout` of deadline.
const BATCH_PER_TIMEOUT: usize = 50;

#[derive(Clone)]
pub struct RedisStore {
    conn: Connection,
    prefix: String,
    timeout: Duration,
    /// The script's SHA1, for EVALSHA.
    sha: String,
    /// The script as a function library, for FCALL.
    library: Arc<Library>,
    /// Whether to call the library (`false` once the server has refused to load it).
    functions: Arc<AtomicBool>,
    /// Time from this clock instead of the server's (tests that need exact time).
    clock: Option<Arc<dyn Clock>>,
    /// When a lookup of this store (and its clones) last refreshed the tier hash's TTL, in µs
    /// (0: never).
    tiers_kept_at: Arc<AtomicU64>,
}

impl RedisStore {
    /// The store a Redis `store.url` names; over TLS, server certificates chain to `tls_ca`
    /// when given, else to the system's roots.
    pub async fn open(
        url: &StoreUrl,
        tls_ca: Option<&TlsCa>,
        prefix: &str,
        timeout: Duration,
    ) -> Result<Self, redis::RedisError> {
        let conn = match url {
            StoreUrl::Redis(url) => Connection::single(url, tls_ca)?,
            StoreUrl::RedisCluster(nodes) => Connection::cluster(nodes, tls_ca).await?,
            StoreUrl::RedisSentinel(url) => Connection::sentinel(url, tls_ca).await?,
            StoreUrl::Memory => {
                return Err(redis::RedisError::from((
                    ErrorKind::InvalidClientConfig,
                    "memory:// is not a Redis store",
                )));
            }
        };
        Ok(Self::with_connection(conn, prefix, timeout))
    }

    /// A store on one Redis server; connects lazily and reconnects by itself.
    pub fn connect(url: &str, prefix: &str, timeout: Duration) -> Result<Self, redis::RedisError> {
        Ok(Self::with_connection(
            Connection::single(url, None)?,
            prefix,
            timeout,
        ))
    }

    /// A store on a Redis Cluster, given some of its nodes (`redis://host:port`).
    pub async fn connect_cluster(
        nodes: &[String],
        prefix: &str,
        timeout: Duration,
    ) -> Result<Self, redis::RedisError> {
        Ok(Self::with_connection(
            Connection::cluster(nodes, None).await?,
            prefix,
            timeout,
        ))
    }

    /// A store on the primary that Redis Sentinels name, followed across failovers.
    pub async fn connect_sentinel(
        url: &SentinelUrl,
        prefix: &str,
        timeout: Duration,
    ) -> Result<Self, redis::RedisError> {
        Ok(Self::with_connection(
            Connection::sentinel(url, None).await?,
            prefix,
            timeout,
        ))
    }

    fn with_connection(conn: Connection, prefix: &str, timeout: Duration) -> Self {
        let sha = redis::Script::new(SOURCE).get_hash().to_owned();
        Self {
            conn,
            prefix: prefix.to_owned(),
            timeout,
            sha: sha.clone(),
            library: Arc::new(Library::new(SOURCE, &sha)),
            functions: Arc::new(AtomicBool::new(true)),
            clock: None,
            tiers_kept_at: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Takes time from `clock` instead of the Redis server's `TIME`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    fn now_arg(&self) -> Micros {
        self.clock.as_ref().map_or(0, |c| c.now())
    }

    /// Runs the script once: FCALL (or EVALSHA), and EVAL when the server does not have it.
    async fn run(
        &self,
        checks: &[&Check<'_>],
        mode: Mode,
    ) -> Result<(Applied, Micros), StoreError> {
        let reply = self.eval(checks, mode).await?;
        script::decode(&reply, checks.len())
            .ok_or_else(|| StoreError::Unavailable("unexpected script reply".into()))
    }

    /// The script's raw reply (a refund's is only `{1, now}`: no results to decode).
    async fn eval(&self, checks: &[&Check<'_>], mode: Mode) -> Result<Vec<i64>, StoreError> {
        let invocation = Invocation::new(&self.prefix, checks, mode, self.now_arg());
        let call = self.first_call();
        match self
            .conn
            .query(&invocation.command(call), self.timeout)
            .await
        {
            Err(StoreError::Unavailable(text)) => match Refusal::of(&text, call) {
                Some(refusal) => {
                    let reply = self
                        .conn
                        .query(&invocation.command(Call::Source), self.timeout)
                        .await;
                    self.after_refusal(refusal, call).await;
                    reply
                }
                None => Err(StoreError::Unavailable(text)),
            },
            other => other,
        }
    }

    /// FCALL while the server takes functions, else EVALSHA.
    fn first_call(&self) -> Call<'_> {
        if self.functions.load(Ordering::Relaxed) {
            Call::Function(&self.library.name)
        } else {
            Call::Sha(&self.sha)
        }
    }

    /// After the server turned `refused_call` away and the refused work ran by EVAL, which needs
    /// nothing loaded: loads the library again for the calls that follow, or keeps to EVALSHA.
    /// EVAL goes first so that refused calls run in the order they were refused (a cluster
    /// batch counts on it), and a library flushed again before a second FCALL could not fail
    /// them twice.
    async fn after_refusal(&self, refusal: Refusal, refused_call: Call<'_>) {
        match refusal {
            Refusal::Missing if matches!(refused_call, Call::Function(_)) => {
                self.load_library().await
            }
            Refusal::Unsupported => self.stop_functions(&refusal),
            Refusal::Missing | Refusal::OutOfMemory => {}
        }
    }

    /// From now on the script is called by EVALSHA.
    fn stop_functions(&self, why: &dyn std::fmt::Debug) {
        if self.functions.swap(false, Ordering::Relaxed) {
            tracing::warn!(?why, "Redis does not take functions: using EVALSHA");
        }
    }

    /// Loads the library; a server that will not load functions is called by EVALSHA from now
    /// on.
    async fn load_library(&self) {
        let load = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg(&self.library.source)
            .to_owned();
        let Err(error) = self.conn.query::<redis::Value>(&load, self.timeout).await else {
            return;
        };
        if LoadFailure::of(&error) == LoadFailure::Unsupported {
            self.stop_functions(&error);
        }
    }

    /// A request whose checks span several subjects, on a cluster: one subject at a time.
    async fn apply_across_slots(&self, request: &Request<'_>) -> Result<Applied, StoreError> {
        let mut results: Vec<Option<CheckResult>> = vec![None; request.checks.len()];
        let mut consumed = Vec::new();
        let mut admitted = true;
        for group in script::groups(request) {
            let checks: Vec<&Check<'_>> = group.iter().map(|(_, c)| *c).collect();
            let mode = if admitted && !request.dry_run {
                Mode::Apply
            } else {
                Mode::Dry
            };
            let (applied, now) = match self.run(&checks, mode).await {
                Ok(done) => done,
                Err(error) => {
                    self.refund(&consumed).await;
                    return Err(error);
                }
            };
            admitted &= applied.admitted;
            if mode == Mode::Apply && applied.admitted {
                consumed.push((checks, now));
            }
            for ((i, _), result) in group.iter().zip(applied.checks) {
                results[*i] = Some(result);
            }
        }
        if !admitted {
            self.refund(&consumed).await;
        }
        let checks = results.into_iter().flatten().collect();
        Ok(Applied { admitted, checks })
    }

    /// Best effort: a refund that fails leaves the usage counted (never more admitted).
    async fn refund(&self, consumed: &[(Vec<&Check<'_>>, Micros)]) {
        for (checks, at) in consumed {
            if let Err(error) = self.eval(checks, Mode::Refund(*at)).await {
                tracing::warn!(%error, "could not refund a partly applied request");
            }
        }
    }

    /// Each request's own result: a script Redis refused for one (an `OOM` under `noeviction`
    /// when it would write) fails that one alone; the error of the round trip fails them all.
    async fn apply_pipelined(
        &self,
        requests: &[Request<'_>],
    ) -> Result<Vec<Result<Applied, StoreError>>, StoreError> {
        let encoded: Vec<_> = requests
            .iter()
            .map(|r| {
                let checks: Vec<&Check<'_>> = r.checks.iter().collect();
                let mode = if r.dry_run { Mode::Dry } else { Mode::Apply };
                Invocation::new(&self.prefix, &checks, mode, self.now_arg())
            })
            .collect();
        let pipeline = |which: &[usize], call: Call<'_>| {
            let mut pipe = Pipeline::new();
            for &i in which {
                pipe.add_command(encoded[i].command(call));
            }
            pipe.ignore_errors();
            pipe
        };
        // store.timeout is per round trip of one request's work; a batch carries many.
        let timeout = self.timeout
            * u32::try_from(encoded.len().div_ceil(BATCH_PER_TIMEOUT))
                .unwrap_or(u32::MAX)
                .max(1);
        let all: Vec<usize> = (0..encoded.len()).collect();
        let call = self.first_call();
        let mut replies: Vec<redis::RedisResult<Vec<i64>>> =
            self.conn.pipeline(&pipeline(&all, call), timeout).await?;
        // Each call ran or was refused on its own: the script can be flushed, or loaded by
        // another daemon, midway through the pipeline. Only the refused ones run again:
        // running the whole pipeline again would count the others twice.
        let refusals: Vec<(usize, Refusal)> = all
            .into_iter()
            .filter_map(|i| match &replies[i] {
                Err(e) => Refusal::of(&e.to_string(), call).map(|r| (i, r)),
                Ok(_) => None,
            })
            .collect();
        if !refusals.is_empty() {
            let refused: Vec<usize> = refusals.iter().map(|(i, _)| *i).collect();
            let again: Vec<redis::RedisResult<Vec<i64>>> = self
                .conn
                .pipeline(&pipeline(&refused, Call::Source), timeout)
                .await?;
            // Each kind of refusal is answered once (a missing library is loaded once).
            let mut answered: Vec<Refusal> = Vec::new();
            for (_, refusal) in &refusals {
                if !answered.contains(refusal) {
                    answered.push(*refusal);
                    self.after_refusal(*refusal, call).await;
                }
            }
            for (i, reply) in refused.into_iter().zip(again) {
                replies[i] = reply;
            }
        }
        Ok(requests
            .iter()
            .zip(replies)
            .map(|(r, reply)| {
                let reply = reply.map_err(|e| StoreError::Unavailable(e.to_string()))?;
                script::decode(&reply, r.checks.len())
                    .map(|(applied, _)| applied)
                    .ok_or_else(|| StoreError::Unavailable("unexpected script reply".into()))
            })
            .collect())
    }
}

impl Store for RedisStore {
    fn kind(&self) -> StoreKind {
        if self.conn.is_cluster() {
            StoreKind::RedisCluster
        } else {
            StoreKind::Redis
        }
    }

    async fn apply(&self, request: &Request<'_>) -> Result<Applied, StoreError> {
        if self.conn.is_cluster() && script::groups(request).len() > 1 {
            return self.apply_across_slots(request).await;
        }
        let checks: Vec<&Check<'_>> = request.checks.iter().collect();
        let mode = if request.dry_run {
            Mode::Dry
        } else {
            Mode::Apply
        };
        Ok(self.run(&checks, mode).await?.0)
    }

    async fn apply_batch(&self, requests: &[Request<'_>]) -> Vec<Result<Applied, StoreError>> {
        if !self.conn.is_cluster() {
            // One pipelined round trip; each request is still one script, decided as if alone.
            return match self.apply_pipelined(requests).await {
                Ok(each) => each,
                Err(error) => requests.iter().map(|_| Err(error.clone())).collect(),
            };
        }
        if requests.iter().any(|r| script::groups(r).len() > 1) {
            // An item applied part by part must not interleave with the others: in order.
            let mut results = Vec::with_capacity(requests.len());
            for request in requests {
                results.push(self.apply(request).await);
            }
            return results;
        }
        // A cluster routes each request to its slot's node; sent together, answered together.
        futures_util::future::join_all(requests.iter().map(|r| self.apply(r))).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.conn
            .query::<String>(&redis::cmd("PING"), self.timeout)
            .await?;
        if self.conn.is_cluster() {
            // A cluster client PINGs only the masters it still holds a connection to: one that
            // died is skipped. The cluster's own view says whether every slot is served.
            let info: String = self
                .conn
                .query(redis::cmd("CLUSTER").arg("INFO"), self.timeout)
                .await?;
            if !info.contains("cluster_state:ok") {
                return Err(StoreError::Unavailable(
                    "the cluster does not serve every slot".into(),
                ));
            }
        }
        Ok(())
    }

    fn has_tiers(&self) -> bool {
        true
    }

    async fn tier(&self, subject: KeyHash) -> Result<Option<String>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET")
            .arg(self.tiers_key())
            .arg(subject.to_string());
        if self.tier_refresh_due() {
            self.keep_tiers(&mut pipe);
        }
        let (tier,): (Option<String>,) = self.conn.pipeline(&pipe, self.timeout).await?;
        Ok(tier)
    }

    async fn tiers(&self, subjects: &[KeyHash]) -> Result<Vec<Option<String>>, StoreError> {
        if subjects.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        let lookup = pipe.cmd("HMGET").arg(self.tiers_key());
        for subject in subjects {
            lookup.arg(subject.to_string());
        }
        if self.tier_refresh_due() {
            self.keep_tiers(&mut pipe);
        }
        let (tiers,): (Vec<Option<String>>,) = self.conn.pipeline(&pipe, self.timeout).await?;
        Ok(tiers)
    }

    async fn set_tier(&self, subject: KeyHash, tier: Option<&str>) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        match tier {
            Some(tier) => pipe
                .cmd("HSET")
                .arg(self.tiers_key())
                .arg(subject.to_string())
                .arg(tier),
            None => pipe
                .cmd("HDEL")
                .arg(self.tiers_key())
                .arg(subject.to_string()),
        }
        .ignore();
        self.keep_tiers(&mut pipe);
        self.conn.pipeline::<()>(&pipe, self.timeout).await
    }
}
