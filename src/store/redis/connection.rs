//! One Redis, Redis Cluster or Sentinel-named primary connection that reconnects by itself, with
//! a deadline on every call.

use super::super::StoreError;
use super::super::TlsCa;
use super::super::tls::install_crypto_provider;
use super::SentinelUrl;
use super::sentinel::SentinelConnection;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, FromRedisValue, Pipeline, RedisError};
use std::future::Future;
use std::time::Duration;

#[derive(Clone)]
pub enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// The primary the Sentinels name, followed across failovers.
    Sentinel(SentinelConnection),
}

/// How long a first connection (or a reconnection) may take; the per-call deadline is
/// `store.timeout`.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

impl Connection {
    /// Connects lazily: the daemon starts while Redis is down and follows it when it comes up.
    /// A `rediss://` server's certificate chains to `tls_ca`, else to the system's roots.
    pub fn single(url: &str, tls_ca: Option<&TlsCa>) -> Result<Self, RedisError> {
        install_crypto_provider();
        let client = match tls_ca {
            Some(ca) => redis::Client::build_with_tls(url, ca.certificates())?,
            None => redis::Client::open(url)?,
        };
        // The client's own response timeout (500 ms by default) would cut every call there,
        // whatever `store.timeout` says, and a batch, whose deadline grows with its size, at
        // 500 ms too: each call's deadline is ours alone.
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_millis(250));
        Ok(Connection::Single(ConnectionManager::new_lazy_with_config(
            client, config,
        )?))
    }

    /// `rediss://` nodes (and those the cluster names) are reached over TLS.
    pub async fn cluster(nodes: &[String], tls_ca: Option<&TlsCa>) -> Result<Self, RedisError> {
        install_crypto_provider();
        let mut builder = ClusterClient::builder(nodes.iter().map(String::as_str))
            .connection_timeout(CONNECT_TIMEOUT)
            .retries(2)
            .min_retry_wait(20)
            .max_retry_wait(250);
        if let Some(ca) = tls_ca {
            builder = builder.certs(ca.certificates());
        }
        let client = builder.build()?;
        Ok(Connection::Cluster(client.get_async_connection().await?))
    }

    pub async fn sentinel(url: &SentinelUrl, tls_ca: Option<&TlsCa>) -> Result<Self, RedisError> {
        install_crypto_provider();
        Ok(Connection::Sentinel(
            SentinelConnection::connect(url, tls_ca).await?,
        ))
    }

    pub fn is_cluster(&self) -> bool {
        matches!(self, Connection::Cluster(_))
    }

    pub async fn query<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        timeout: Duration,
    ) -> Result<T, StoreError> {
        match self {
            Connection::Single(c) => deadline(timeout, cmd.query_async(&mut c.clone())).await,
            Connection::Cluster(c) => deadline(timeout, cmd.query_async(&mut c.clone())).await,
            Connection::Sentinel(c) => c.query(cmd, timeout).await,
        }
    }

    pub async fn pipeline<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
        timeout: Duration,
    ) -> Result<T, StoreError> {
        match self {
            Connection::Single(c) => deadline(timeout, pipe.query_async(&mut c.clone())).await,
            Connection::Cluster(c) => deadline(timeout, pipe.query_async(&mut c.clone())).await,
            Connection::Sentinel(c) => c.pipeline(pipe, timeout).await,
        }
    }
}

async fn deadline<T>(
    timeout: Duration,
    call: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, StoreError> {
    to_store_result(tokio::time::timeout(timeout, call).await)
}

/// A call's result under a deadline, as the store reports it.
pub(super) fn to_store_result<T, E>(
    reply: Result<Result<T, RedisError>, E>,
) -> Result<T, StoreError> {
    match reply {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(StoreError::Unavailable(error.to_string())),
        Err(_) => Err(StoreError::Timeout),
    }
}

/// Whether an error is Redis saying it does not know the script (it restarted, or flushed).
pub fn is_noscript(error: &StoreError) -> bool {
    matches!(error, StoreError::Unavailable(text) if text.to_ascii_lowercase().contains("noscript"))
}
