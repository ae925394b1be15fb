//! A connection to the primary that Redis Sentinel names, which follows a failover.
//!
//! The Sentinels are asked who the primary is (redis-rs `SentinelClient`: `SENTINEL MASTERS`
//! on each Sentinel, skipping a primary they hold down, then `ROLE` on the node named):
//! - when there is no connection yet (at start, or the Sentinels were unreachable);
//! - as soon as a call fails in a way that says the node is gone or no longer the primary
//!   (connection dropped or refused, `READONLY`, `MASTERDOWN`): the connection is dropped and the
//!   question asked again every [`RETRY_MIN`]..[`RETRY_MAX`] until the Sentinels name a primary
//!   that answers, which is the promoted replica once they have failed over;
//! - every [`WATCH_INTERVAL`] anyway, so that a switch no call noticed (the old primary cut off
//!   without its connections closing, or demoted and reachable) is followed within it.
//!
//! While no primary is known a call fails at once, without waiting: the engine then answers per
//! `store.on_error`. Timeouts never drop the connection (a slow primary is still the primary).

use super::SentinelUrl;
use super::connection::{CONNECT_TIMEOUT, to_store_result};
use crate::store::{StoreError, TlsCa};
use arc_swap::ArcSwapOption;
use redis::aio::MultiplexedConnection;
use redis::sentinel::{
    SentinelClient, SentinelClientBuilder, SentinelNodeConnectionInfo, SentinelServerType,
};
use redis::{
    AsyncConnectionConfig, Cmd, ErrorKind, FromRedisValue, IntoConnectionInfo, Pipeline,
    RedisConnectionInfo, RedisError, ServerErrorKind, TlsMode,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Mutex;

/// How often the Sentinels are asked even when every call succeeds.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// Back-off between questions while no primary answers.
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_millis(250);

#[derive(Clone)]
pub struct SentinelConnection {
    shared: Arc<Shared>,
}

struct Shared {
    /// The primary's name, for logs.
    name: String,
    /// Asks the Sentinels; one question at a time (the client caches its Sentinel connections).
    sentinels: Mutex<SentinelClient>,
    primary: ArcSwapOption<Primary>,
    /// The address last followed, kept after its connection is dropped: the log line of a
    /// failover names where it came from.
    followed: ArcSwapOption<String>,
    /// A reconnection loop is running.
    reconnecting: AtomicBool,
}

struct Primary {
    /// `host:port`, as the Sentinels announce it.
    address: String,
    conn: MultiplexedConnection,
}

impl SentinelConnection {
    /// Asks the Sentinels once (a failure is not fatal: the daemon starts with the store down
    /// and keeps asking), then watches for failovers for as long as the connection lives.
    pub async fn connect(url: &SentinelUrl, tls_ca: Option<&TlsCa>) -> Result<Self, RedisError> {
        let client = match url.tls {
            true => tls_client(url, tls_ca)?,
            false => plain_client(url)?,
        };
        let connection = SentinelConnection {
            shared: Arc::new(Shared {
                name: url.primary_name.clone(),
                sentinels: Mutex::new(client),
                primary: ArcSwapOption::empty(),
                followed: ArcSwapOption::empty(),
                reconnecting: AtomicBool::new(false),
            }),
        };
        if let Err(error) = connection.shared.follow().await {
            tracing::warn!(%error, primary = %url.primary_name, "no primary from the sentinels yet");
            connection.reconnect();
        }
        tokio::spawn(watch(Arc::downgrade(&connection.shared)));
        Ok(connection)
    }

    pub async fn query<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        timeout: Duration,
    ) -> Result<T, StoreError> {
        let primary = self.current()?;
        let reply = tokio::time::timeout(timeout, cmd.query_async(&mut primary.conn.clone())).await;
        self.inspect(&primary, &reply);
        to_store_result(reply)
    }

    pub async fn pipeline<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
        timeout: Duration,
    ) -> Result<T, StoreError> {
        let primary = self.current()?;
        let reply =
            tokio::time::timeout(timeout, pipe.query_async(&mut primary.conn.clone())).await;
        self.inspect(&primary, &reply);
        to_store_result(reply)
    }

    fn current(&self) -> Result<Arc<Primary>, StoreError> {
        self.shared.primary.load_full().ok_or_else(|| {
            StoreError::Unavailable(format!(
                "the sentinels name no reachable primary for {}",
                self.shared.name
            ))
        })
    }

    /// Drops the connection and asks the Sentinels again when a reply says the node is gone
    /// or no longer the primary.
    fn inspect<T, E>(&self, used: &Arc<Primary>, reply: &Result<Result<T, RedisError>, E>) {
        let Ok(Err(error)) = reply else { return };
        if !loses_primary(error) {
            return;
        }
        // Only the connection that failed: a newer one may already be in place.
        let previous = self.shared.primary.compare_and_swap(used, None);
        if previous.as_ref().is_some_and(|p| Arc::ptr_eq(p, used)) {
            tracing::warn!(%error, primary = %used.address, "lost the primary; asking the sentinels");
        }
        self.reconnect();
    }

    /// Starts the reconnection loop unless it runs already.
    fn reconnect(&self) {
        if self.shared.reconnecting.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            let mut delay = RETRY_MIN;
            loop {
                let Some(strong) = shared.upgrade() else {
                    return;
                };
                match strong.follow().await {
                    Ok(()) if strong.primary.load().is_some() => {
                        strong.reconnecting.store(false, Ordering::Release);
                        return;
                    }
                    Ok(()) => {}
                    Err(error) => tracing::debug!(%error, "no primary from the sentinels yet"),
                }
                drop(strong);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RETRY_MAX);
            }
        });
    }
}

impl Shared {
    /// Asks the Sentinels for the primary and connects to it unless already connected there.
    async fn follow(&self) -> Result<(), RedisError> {
        let client = {
            let mut sentinels = self.sentinels.lock().await;
            within(CONNECT_TIMEOUT, sentinels.async_get_client()).await?
        };
        let address = client.get_connection_info().addr().to_string();
        if self
            .primary
            .load()
            .as_ref()
            .is_some_and(|p| p.address == address)
        {
            return Ok(());
        }
        // Each call's deadline is ours (`store.timeout`), not the client's 500 ms default.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(None);
        let conn = within(
            CONNECT_TIMEOUT,
            client.get_multiplexed_async_connection_with_config(&config),
        )
        .await?;
        self.primary.store(Some(Arc::new(Primary {
            address: address.clone(),
            conn,
        })));
        let before = self.followed.swap(Some(Arc::new(address.clone())));
        let from = before.as_deref().map_or("none", String::as_str);
        tracing::info!(primary = %address, previous = %from, name = %self.name, "following the primary the sentinels name");
        Ok(())
    }
}

/// Every [`WATCH_INTERVAL`], follows the primary the Sentinels name; a failed question keeps
/// the connection in use (the calls' own errors decide whether it is lost).
async fn watch(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(WATCH_INTERVAL).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.reconnecting.load(Ordering::Acquire) {
            continue;
        }
        if let Err(error) = shared.follow().await {
            tracing::debug!(%error, "the sentinels did not answer the periodic check");
        }
    }
}

/// Whether an error means the connection no longer reaches a working primary.
fn loses_primary(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_unrecoverable_error()
        || matches!(
            error.kind(),
            ErrorKind::Server(ServerErrorKind::ReadOnly | ServerErrorKind::MasterDown)
        )
}

async fn within<T>(
    limit: Duration,
    call: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, RedisError> {
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no answer in time",
        )))
    })
}

/// Plain TCP to the Sentinels and to the primary.
fn plain_client(url: &SentinelUrl) -> Result<SentinelClient, RedisError> {
    let mut primary_login = RedisConnectionInfo::default().set_db(url.db);
    if let Some(user) = &url.username {
        primary_login = primary_login.set_username(user);
    }
    if let Some(password) = &url.password {
        primary_login = primary_login.set_password(password);
    }
    SentinelClient::build(
        url.sentinel_urls(),
        url.primary_name.clone(),
        Some(SentinelNodeConnectionInfo::default().set_redis_connection_info(primary_login)),
        SentinelServerType::Master,
    )
}

/// TLS to the Sentinels and to the primary they name, both verified against `tls_ca` (else the
/// system's roots).
fn tls_client(url: &SentinelUrl, tls_ca: Option<&TlsCa>) -> Result<SentinelClient, RedisError> {
    let sentinels = url
        .sentinel_urls()
        .into_iter()
        .map(|u| u.into_connection_info().map(|info| info.addr().clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut builder =
        SentinelClientBuilder::new(sentinels, &url.primary_name, SentinelServerType::Master)?
            .set_client_to_sentinel_tls_mode(TlsMode::Secure)
            .set_client_to_redis_tls_mode(TlsMode::Secure)
            .set_client_to_redis_db(url.db);
    if let Some(user) = &url.username {
        builder = builder.set_client_to_redis_username(user);
    }
    if let Some(password) = &url.password {
        builder = builder.set_client_to_redis_password(password);
    }
    if let Some(ca) = tls_ca {
        builder = builder
            .set_client_to_sentinel_certificates(ca.certificates())
            .set_client_to_redis_certificates(ca.certificates());
    }
    builder.build()
}
