//! `store.url`: which backend, and where (`memory://`, `redis://`, `redis+cluster://`,
//! `redis+sentinel://`, and each Redis scheme over TLS: `rediss://`, `rediss+cluster://`,
//! `rediss+sentinel://`).
//!
//! Parsed here rather than by the policy compiler: the store knows which URLs it can open, and
//! its errors say what is wrong with one.

use super::SentinelUrl;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    Memory,
    /// A `redis://` or `rediss://` URL, as the redis client takes it.
    Redis(String),
    /// Node URLs (`redis://` or `rediss://`), each with the cluster's credentials.
    RedisCluster(Vec<String>),
    /// `redis+sentinel://`: the primary that these Sentinels name, followed across failovers.
    RedisSentinel(SentinelUrl),
}

/// Why a `store.url` names no store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreUrlError {
    #[error(
        "unsupported store \"{0}\" (expected memory://, redis://, redis+cluster:// or redis+sentinel://; rediss://, rediss+cluster:// or rediss+sentinel:// for TLS)"
    )]
    Unsupported(String),
    #[error("redis+cluster:// and rediss+cluster:// need at least one host:port")]
    NoClusterNodes,
    /// Credentials on a later node: most often a password with an unescaped `,` or `@`,
    /// which splits it into nodes (so the URL is not shown).
    #[error(
        "a cluster's credentials go on its first node only (the client uses them for every \
         node); a `,` or `@` in a password must be written %2C or %40"
    )]
    ClusterCredentialsAfterFirstNode,
    /// What [`SentinelUrl::parse`] found wrong.
    #[error("{0}")]
    Sentinel(String),
    /// A `redis://` URL (or a cluster node's) the client cannot open: the reason is the
    /// client's.
    #[error("\"{url}\" is no Redis URL the client can open: {reason}")]
    Unopenable { url: String, reason: String },
}

impl StoreUrl {
    pub fn parse(url: &str) -> Result<StoreUrl, StoreUrlError> {
        if url == "memory://" {
            return Ok(StoreUrl::Memory);
        }
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            return openable(url).map(|()| StoreUrl::Redis(url.to_owned()));
        }
        if url.starts_with("redis+sentinel://") || url.starts_with("rediss+sentinel://") {
            return SentinelUrl::parse(url)
                .map(StoreUrl::RedisSentinel)
                .map_err(StoreUrlError::Sentinel);
        }
        if let Some(nodes) = url.strip_prefix("redis+cluster://") {
            return cluster_nodes("redis", nodes).map(StoreUrl::RedisCluster);
        }
        if let Some(nodes) = url.strip_prefix("rediss+cluster://") {
            return cluster_nodes("rediss", nodes).map(StoreUrl::RedisCluster);
        }
        Err(StoreUrlError::Unsupported(unsupported_shown(url)))
    }

    /// The URL as it may be shown in a log line or an error (passwords written `***`).
    pub fn redacted(&self) -> String {
        match self {
            StoreUrl::Memory => "memory://".to_owned(),
            StoreUrl::Redis(url) => redacted_host(url),
            StoreUrl::RedisCluster(nodes) => {
                // As written: one `+cluster` scheme, then the nodes without theirs.
                let tls = nodes.iter().any(|n| n.starts_with("rediss://"));
                let scheme = if tls {
                    "rediss+cluster"
                } else {
                    "redis+cluster"
                };
                let hosts: Vec<String> = nodes
                    .iter()
                    .map(|n| {
                        let shown = redacted(n);
                        shown
                            .split_once("://")
                            .map_or(shown.clone(), |(_, rest)| rest.to_owned())
                    })
                    .collect();
                format!("{scheme}://{}", hosts.join(","))
            }
            StoreUrl::RedisSentinel(url) => url.to_string(),
        }
    }

    /// Whether the store is reached over TLS (the schemes that `store.tls_ca` applies to).
    pub fn is_tls(&self) -> bool {
        match self {
            StoreUrl::Memory => false,
            StoreUrl::Redis(url) => url.starts_with("rediss://"),
            StoreUrl::RedisCluster(nodes) => nodes.iter().any(|n| n.starts_with("rediss://")),
            StoreUrl::RedisSentinel(url) => url.tls,
        }
    }

    /// Scheme and hosts only, for a log line: no user, password, database or path.
    pub fn location(&self) -> String {
        match self {
            StoreUrl::Memory => "memory://".to_owned(),
            StoreUrl::Redis(url) => host_of(url),
            StoreUrl::RedisCluster(nodes) => {
                let hosts: Vec<String> = nodes
                    .iter()
                    .map(|n| {
                        host_of(n)
                            .split_once("://")
                            .map_or(String::new(), |(_, h)| h.to_owned())
                    })
                    .collect();
                let tls = nodes.iter().any(|n| n.starts_with("rediss://"));
                let scheme = if tls {
                    "rediss+cluster"
                } else {
                    "redis+cluster"
                };
                format!("{scheme}://{}", hosts.join(","))
            }
            StoreUrl::RedisSentinel(url) => {
                let hosts: Vec<String> = url
                    .sentinels
                    .iter()
                    .map(|(host, port)| format!("{host}:{port}"))
                    .collect();
                let scheme = if url.tls {
                    "rediss+sentinel"
                } else {
                    "redis+sentinel"
                };
                format!("{scheme}://{}/{}", hosts.join(","), url.primary_name)
            }
        }
    }
}

/// `[user:password@]host:port,host:port...` as node URLs. The client requires the same
/// credentials on every node: the first node's apply to all, and a later node may have none.
fn cluster_nodes(scheme: &str, list: &str) -> Result<Vec<String>, StoreUrlError> {
    let nodes: Vec<&str> = list.split(',').filter(|n| !n.is_empty()).collect();
    let credentials = match nodes.first().and_then(|n| n.rsplit_once('@')) {
        Some((credentials, _)) => format!("{credentials}@"),
        None => String::new(),
    };
    if nodes.is_empty() {
        return Err(StoreUrlError::NoClusterNodes);
    }
    // The client wants one set of credentials; a later node's `@` is most often a password's
    // `,` or `@` (so the URL is not shown).
    if nodes.iter().skip(1).any(|n| n.contains('@')) {
        return Err(StoreUrlError::ClusterCredentialsAfterFirstNode);
    }
    let urls: Vec<String> = nodes
        .iter()
        .map(|n| match n.contains('@') {
            true => format!("{scheme}://{n}"),
            false => format!("{scheme}://{credentials}{n}"),
        })
        .collect();
    urls.iter().try_for_each(|url| openable(url))?;
    // The client would send SELECT, which a cluster refuses: only database 0 exists there.
    for url in &urls {
        let db = redis::IntoConnectionInfo::into_connection_info(url.as_str())
            .map_or(0, |info| info.redis_settings().db());
        if db != 0 {
            return Err(StoreUrlError::Unopenable {
                url: redacted(url),
                reason: format!("a cluster has only database 0, not {db}"),
            });
        }
    }
    Ok(urls)
}

/// Whether the Redis client takes `url` (a host, a port that is a port, a database number):
/// refused here, `check-policy` says so too, not only `serve` when it connects.
fn openable(url: &str) -> Result<(), StoreUrlError> {
    let refused = |reason: &str| StoreUrlError::Unopenable {
        url: redacted_host(url),
        reason: reason.to_owned(),
    };
    // The client ends the credentials at the first of these, and would connect to a host
    // made of the password's first half.
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    if let Some((credentials, _)) = rest.rsplit_once('@') {
        if credentials.contains(['/', '?', '#']) {
            return Err(refused(
                "its credentials hold a `/`, `?` or `#`, which ends them early: write it as \
                 %2F, %3F or %23",
            ));
        }
    }
    match redis::IntoConnectionInfo::into_connection_info(url) {
        // The client's text is "<reason> - <kind>": the reason is what a reader needs.
        Err(error) => {
            let text = error.to_string();
            Err(refused(
                text.split_once(" - ").map_or(&text, |(reason, _)| reason),
            ))
        }
        Ok(info) if info.redis_settings().db() < 0 => Err(refused("Invalid database number")),
        Ok(info)
            if matches!(
                info.addr(),
                redis::ConnectionAddr::Tcp(_, 0) | redis::ConnectionAddr::TcpTls { port: 0, .. }
            ) =>
        {
            Err(refused("port 0 is no port (1 to 65535)"))
        }
        Ok(_) => Ok(()),
    }
}

/// A URL of no scheme ratewarden knows, as an error may show it: whole unless it has an `@`,
/// since a mistyped scheme (`redis:/app:pa,ss@h`) leaves no shape to find a password in.
fn unsupported_shown(url: &str) -> String {
    match url.contains('@') {
        false => url.to_owned(),
        true => {
            let scheme_end = url.find([':', '/']).unwrap_or(url.len());
            format!("{}:... (credentials hidden)", &url[..scheme_end])
        }
    }
}

/// `scheme://host:port` of one `scheme://[credentials@]host:port[/path]`.
fn host_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}")
}

/// `url` as it may be shown in a log line or an error: a password (`user:password@`, or
/// `:password@`) is written `***`, in every host of a comma-separated list.
pub fn redacted(url: &str) -> String {
    url.split(',')
        .enumerate()
        .map(|(i, part)| match part.rsplit_once('@') {
            // The rest of a password a ',' split off: hide up to its '@'.
            Some((_, host)) if i > 0 && !part.contains("://") => format!("***@{host}"),
            _ => redacted_host(part),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// One `[scheme://][user[:password]@]host[/path]`, its password hidden.
fn redacted_host(part: &str) -> String {
    let (scheme, rest) = match part.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), part),
    };
    // Credentials end at the last '@' of all: a password written with an unescaped '/', '?'
    // or '#' (base64 has '/') must not end the authority early and be shown. A Redis URL's
    // path and query hold no '@', so at worst more than the password is hidden.
    match rest.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split_once(':') {
            Some((user, _password)) => format!("{scheme}{user}:***@{host}"),
            None => format!("{scheme}{credentials}@{host}"),
        },
        // No '@': a `:` not followed by a port is the start of a password cut off by a ','
        // in it (`redis+cluster://app:pa,ss@h1,h2` splits into nodes there).
        None => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(end);
            match authority.rsplit_once(':') {
                Some((user, after))
                    if !authority.ends_with(']') && !after.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    format!("{scheme}{user}:***{tail}")
                }
                _ => part.to_owned(),
            }
        }
    }
}

#[cfg(test)]
mod tests;
