//! Where usage lives: the [`Store`] trait and its backends.
//!
//! A store knows keys, rates and costs, nothing of policies. It applies one request (several
//! limit checks) atomically: every enforced check passes and all are consumed, or nothing is.
//! The request is one value so that a remote store can send it in one round trip (one Lua
//! script), and a batch is a slice so that it can pipeline many.

mod memory;
mod redis;
mod settings;
mod tls;
mod url;

use crate::algorithm::Outcome;
use crate::limit::{KeyHash, LimitId, Rate};
use smallvec::SmallVec;
use std::future::Future;

pub use memory::MemoryStore;
pub use redis::{RedisStore, SentinelUrl, TIER_STORE_TTL, TIER_TTL_REFRESH};
pub use settings::{OnError, StoreSettings};
pub use tls::{TlsCa, TlsCaError};
pub use url::{StoreUrl, StoreUrlError};

/// One limit to check within a request.
#[derive(Debug, Clone)]
pub struct Check<'a> {
    pub subject: KeyHash,
    pub limit: LimitId<'a>,
    pub rate: Rate,
    pub cost: u64,
    /// `false` for a shadow limit: it never denies, and is consumed when the request passes.
    pub enforce: bool,
    /// Other rates to evaluate without consuming ("would this pass at that rate?"); the
    /// engine uses them to explain a denial. `None` means the same as `rate`.
    pub probes: [Option<Rate>; 2],
    /// The limit as written in the policy, evaluated without consuming when `rate` is scaled
    /// away from it: a subject's features read its usage and denials against the limits as
    /// written, whatever the load or anomaly factor made of them. `None` means the same as
    /// `rate`.
    pub written: Option<Rate>,
    /// Requests per window at the smallest scale the limit can later be checked at (at least
    /// 1). A `token_bucket` key is kept until it would have refilled at this rate, so a limit
    /// that shrinks after the request never finds its usage expired early.
    pub slowest: u64,
}

/// A request's checks: a handful, kept inline to spare the allocator on the hot path.
pub type Checks<'a> = SmallVec<[Check<'a>; 4]>;
pub type CheckResults = SmallVec<[CheckResult; 4]>;

/// All limits of one request, applied together.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    pub checks: Checks<'a>,
    /// Evaluate only; consume nothing (the admin view of a subject).
    pub dry_run: bool,
}

/// What the store found for one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckResult {
    pub outcome: Outcome,
    /// Whether the check would pass at each probe rate (`outcome.allowed` where no probe).
    pub probes: [bool; 2],
    /// The check at the limit as written (`outcome`'s figures where `written` was `None`).
    pub written: Written,
}

/// A check evaluated at the limit as written, consuming nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub allowed: bool,
    /// The limit as written (the burst for bucket algorithms).
    pub limit: u64,
    /// What it leaves: after the request's cost when it would pass, as in [`Outcome`].
    pub remaining: u64,
}

impl From<Outcome> for Written {
    fn from(outcome: Outcome) -> Self {
        Self {
            allowed: outcome.allowed,
            limit: outcome.limit,
            remaining: outcome.remaining,
        }
    }
}

/// The result of applying one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Every enforced check passed, and (unless a dry run) all checks were consumed.
    pub admitted: bool,
    pub checks: CheckResults,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("the embedded store holds store.max_keys keys and none has expired")]
    Full,
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("store call timed out")]
    Timeout,
}

/// Which backend served a request, for metrics (`store` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Memory,
    Redis,
    RedisCluster,
}

impl StoreKind {
    pub fn label(self) -> &'static str {
        match self {
            StoreKind::Memory => "memory",
            StoreKind::Redis => "redis",
            StoreKind::RedisCluster => "redis_cluster",
        }
    }
}

/// A place that applies requests atomically.
pub trait Store: Send + Sync + 'static {
    fn kind(&self) -> StoreKind;

    fn apply(
        &self,
        request: &Request<'_>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Applies each request as if sent alone, in order; one round trip where the store allows.
    fn apply_batch(
        &self,
        requests: &[Request<'_>],
    ) -> impl Future<Output = Vec<Result<Applied, StoreError>>> + Send;

    /// Whether the store answers (for `/readyz`).
    fn ping(&self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Whether any subject may have a stored tier (lets the request path skip the lookup).
    fn has_tiers(&self) -> bool;

    /// The tier stored for a subject (the tier store: `<prefix>:tiers` on Redis).
    fn tier(
        &self,
        subject: KeyHash,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// The tiers stored for several subjects, in one round trip.
    fn tiers(
        &self,
        subjects: &[KeyHash],
    ) -> impl Future<Output = Result<Vec<Option<String>>, StoreError>> + Send;

    /// Stores (or with `None` removes) a subject's tier.
    fn set_tier(
        &self,
        subject: KeyHash,
        tier: Option<&str>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The store a daemon runs on, chosen at start-up from `store.url`.
pub enum Backend {
    Memory(MemoryStore),
    Redis(RedisStore),
}

impl Store for Backend {
    fn kind(&self) -> StoreKind {
        match self {
            Backend::Memory(s) => s.kind(),
            Backend::Redis(s) => s.kind(),
        }
    }

    async fn apply(&self, request: &Request<'_>) -> Result<Applied, StoreError> {
        match self {
            Backend::Memory(s) => s.apply(request).await,
            Backend::Redis(s) => s.apply(request).await,
        }
    }

    async fn apply_batch(&self, requests: &[Request<'_>]) -> Vec<Result<Applied, StoreError>> {
        match self {
            Backend::Memory(s) => s.apply_batch(requests).await,
            Backend::Redis(s) => s.apply_batch(requests).await,
        }
    }

    async fn ping(&self) -> Result<(), StoreError> {
        match self {
            Backend::Memory(s) => s.ping().await,
            Backend::Redis(s) => s.ping().await,
        }
    }

    fn has_tiers(&self) -> bool {
        match self {
            Backend::Memory(s) => s.has_tiers(),
            Backend::Redis(s) => s.has_tiers(),
        }
    }

    async fn tier(&self, subject: KeyHash) -> Result<Option<String>, StoreError> {
        match self {
            Backend::Memory(s) => s.tier(subject).await,
            Backend::Redis(s) => s.tier(subject).await,
        }
    }

    async fn tiers(&self, subjects: &[KeyHash]) -> Result<Vec<Option<String>>, StoreError> {
        match self {
            Backend::Memory(s) => s.tiers(subjects).await,
            Backend::Redis(s) => s.tiers(subjects).await,
        }
    }

    async fn set_tier(&self, subject: KeyHash, tier: Option<&str>) -> Result<(), StoreError> {
        match self {
            Backend::Memory(s) => s.set_tier(subject, tier).await,
            Backend::Redis(s) => s.set_tier(subject, tier).await,
        }
    }
}

impl Backend {
    /// The Redis store under this backend: one that several daemons may share.
    pub fn as_redis(&self) -> Option<&RedisStore> {
        match self {
            Backend::Memory(_) => None,
            Backend::Redis(s) => Some(s),
        }
    }

    /// Periodic upkeep: the embedded store drops expired keys.
    pub fn sweep(&self) {
        match self {
            Backend::Memory(s) => s.sweep_expired(),
            // Redis expires keys by their TTLs.
            Backend::Redis(_) => {}
        }
    }
}

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open store {url}: {error}")]
    Redis {
        url: String,
        error: ::redis::RedisError,
    },
}

/// Opens the store that `settings` name.
pub async fn open(
    settings: &StoreSettings,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
) -> Result<Backend, OpenError> {
    match &settings.url {
        StoreUrl::Memory => Ok(Backend::Memory(MemoryStore::new(
            clock,
            settings.max_keys.get(),
        ))),
        url => RedisStore::open(
            url,
            settings.tls_ca.as_ref(),
            &settings.key_prefix,
            settings.timeout,
        )
        .await
        .map(Backend::Redis)
        .map_err(|source| OpenError::Redis {
            url: url.redacted(),
            error: source,
        }),
    }
}
