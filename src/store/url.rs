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
mod tests {
    use super::{StoreUrl, StoreUrlError, redacted};

    #[test]
    fn passwords_are_never_shown() {
        assert_eq!(
            redacted("rediss://app:s3cret@h:6380/2"),
            "rediss://app:***@h:6380/2"
        );
        assert_eq!(redacted("redis://:s3cret@h/0"), "redis://:***@h/0");
        assert_eq!(redacted("redis://app@h/0"), "redis://app@h/0");
        assert_eq!(redacted("redis://h:6379/0"), "redis://h:6379/0");
        assert_eq!(
            redacted("redis://u:p@w@h1:7000,redis://v:q@h2:7001"),
            "redis://u:***@h1:7000,redis://v:***@h2:7001"
        );
        assert_eq!(redacted("memory://"), "memory://");
        // Unescaped '/', '?' and '#' in a password, and a node written with its own scheme.
        for (url, shown) in [
            ("redis://app:se/cret@h1:7000", "redis://app:***@h1:7000"),
            ("redis://app:se#cret@h1:7000/0", "redis://app:***@h1:7000/0"),
            ("redis://app:s?cret@h1:7000", "redis://app:***@h1:7000"),
            ("rediss://redis://x:y@h2:1", "rediss://redis:***@h2:1"),
            // A ',' in a cluster's password splits it into nodes.
            ("redis://app:pa,ss@h1:1", "redis://app:***,***@h1:1"),
            (
                "redis+cluster://app:pa,ss@h1:1,h2:2",
                "redis+cluster://app:***,***@h1:1,h2:2",
            ),
            (
                "redis://h:6379/0,redis://[::1]:6380",
                "redis://h:6379/0,redis://[::1]:6380",
            ),
            (
                "redis://h:6379?protocol=resp3",
                "redis://h:6379?protocol=resp3",
            ),
        ] {
            assert_eq!(redacted(url), shown);
        }
        let shown = |url: &str| StoreUrl::parse(url).unwrap().redacted();
        assert_eq!(
            shown("redis+cluster://app:pw@h1:7000,h2:7001"),
            "redis+cluster://app:***@h1:7000,app:***@h2:7001"
        );
        assert_eq!(
            shown("rediss+cluster://h1:7000"),
            "rediss+cluster://h1:7000"
        );
        // A password the client would cut short is refused, without showing it.
        let refused = |url: &str| StoreUrl::parse(url).unwrap_err().to_string();
        for url in [
            "redis+cluster://app:2024,Summer@h1:1,h2:2",
            "redis+cluster://app:Xy@Zz,Qq@h1:1,h2:2",
            "redis+cluster://me@x.com:pa,ss@h1:1,h2:2",
        ] {
            assert_eq!(
                refused(url),
                "a cluster's credentials go on its first node only (the client uses them for \
                 every node); a `,` or `@` in a password must be written %2C or %40"
            );
        }
        assert_eq!(
            refused("redis:/app:pa,ss@h:1"),
            "unsupported store \"redis:... (credentials hidden)\" (expected memory://, \
             redis://, redis+cluster:// or redis+sentinel://; rediss://, rediss+cluster:// or \
             rediss+sentinel:// for TLS)"
        );
        for url in [
            "redis://app:2024?Summer@h:1",
            "redis+cluster://app:20/24@h1:1,h2:2",
        ] {
            let message = refused(url);
            assert!(
                !message.contains("2024") && !message.contains("Summer"),
                "{message}"
            );
            assert!(
                message.ends_with("write it as %2F, %3F or %23"),
                "{message}"
            );
        }
    }

    #[test]
    fn locations_show_scheme_and_hosts_only() {
        let location = |url: &str| StoreUrl::parse(url).unwrap().location();
        assert_eq!(location("rediss://app:s3cret@h:6380/2"), "rediss://h:6380");
        assert_eq!(location("redis://h:6379/0"), "redis://h:6379");
        assert_eq!(
            location("redis+cluster://h1:7000,h2:7001"),
            "redis+cluster://h1:7000,h2:7001"
        );
        assert_eq!(
            location("redis+sentinel://u:p@s1:26379,s2:26380/mymaster/1"),
            "redis+sentinel://s1:26379,s2:26380/mymaster"
        );
        assert_eq!(location("memory://"), "memory://");
    }

    #[test]
    fn each_scheme_names_its_backend() {
        assert_eq!(StoreUrl::parse("memory://"), Ok(StoreUrl::Memory));
        assert_eq!(
            StoreUrl::parse("rediss://h:6380/2"),
            Ok(StoreUrl::Redis("rediss://h:6380/2".into()))
        );
        assert_eq!(
            StoreUrl::parse("redis+cluster://h1:7000,,h2:7001"),
            Ok(StoreUrl::RedisCluster(vec![
                "redis://h1:7000".into(),
                "redis://h2:7001".into()
            ]))
        );
        assert!(matches!(
            StoreUrl::parse("redis+sentinel://h1/mymaster"),
            Ok(StoreUrl::RedisSentinel(_))
        ));
    }

    #[test]
    fn tls_schemes_are_tls_and_cluster_credentials_reach_every_node() {
        let tls = |url: &str| StoreUrl::parse(url).unwrap().is_tls();
        assert!(tls("rediss://u:p@h:6380/0"));
        assert!(tls("rediss+cluster://h1:7000,h2:7001"));
        assert!(tls("rediss+sentinel://h1/mymaster"));
        assert!(!tls("redis://h:6379/0"));
        assert!(!tls("redis+cluster://h1:7000"));
        assert!(!tls("redis+sentinel://h1/mymaster"));
        assert!(!tls("memory://"));
        assert_eq!(
            StoreUrl::parse("rediss+cluster://app:s3cret@h1:7000,h2:7001,h3:7002"),
            Ok(StoreUrl::RedisCluster(vec![
                "rediss://app:s3cret@h1:7000".into(),
                "rediss://app:s3cret@h2:7001".into(),
                "rediss://app:s3cret@h3:7002".into()
            ]))
        );
        // The client refuses other credentials on another node: refused here already.
        assert_eq!(
            StoreUrl::parse("rediss+cluster://app:s3cret@h1:7000,h2:7001,u:q@h3:7002"),
            Err(StoreUrlError::ClusterCredentialsAfterFirstNode)
        );
    }

    #[test]
    fn urls_the_client_cannot_open_are_refused_by_name() {
        for (url, shown, reason) in [
            (
                "redis://app:s3cret@127.0.0.1:1/x",
                "redis://app:***@127.0.0.1:1/x",
                "Invalid database number",
            ),
            (
                "redis://h:6379/-1",
                "redis://h:6379/-1",
                "Invalid database number",
            ),
            (
                "redis://127.0.0.1:99999/0",
                "redis://127.0.0.1:99999/0",
                "Redis URL did not parse",
            ),
            ("redis://", "redis://", "Missing hostname"),
            (
                "redis://h:0/0",
                "redis://h:0/0",
                "port 0 is no port (1 to 65535)",
            ),
            (
                "redis+cluster://h1:7000,h2:0",
                "redis://h2:0",
                "port 0 is no port (1 to 65535)",
            ),
            (
                "redis+cluster://:pw@h1:70x0",
                "redis://:***@h1:70x0",
                "Redis URL did not parse",
            ),
            (
                "redis+cluster://h1:7000/3,h2:7001",
                "redis://h1:7000/3",
                "a cluster has only database 0, not 3",
            ),
        ] {
            assert_eq!(
                StoreUrl::parse(url).map_err(|e| e.to_string()),
                Err(format!(
                    "\"{shown}\" is no Redis URL the client can open: {reason}"
                )),
                "{url}"
            );
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            StoreUrl::parse("redis+cluster://").map_err(|e| e.to_string()),
            Err("redis+cluster:// and rediss+cluster:// need at least one host:port".to_owned())
        );
        assert_eq!(
            StoreUrl::parse("memcached://u:pw@h").map_err(|e| e.to_string()),
            Err(
                "unsupported store \"memcached:... (credentials hidden)\" (expected memory://, redis://, \
                 redis+cluster:// or redis+sentinel://; rediss://, rediss+cluster:// or \
                 rediss+sentinel:// for TLS)"
                    .to_owned()
            )
        );
        assert!(matches!(
            StoreUrl::parse("redis+sentinel://h1"),
            Err(StoreUrlError::Sentinel(_))
        ));
    }
}
