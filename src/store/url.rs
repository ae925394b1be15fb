//! `store.url`: which backend, and where (`memory://`, `redis://`, `rediss://`,
//! `redis+cluster://`, `redis+sentinel://`).
//!
//! Parsed here rather than by the policy compiler: the store knows which URLs it can open, and
//! its errors say what is wrong with one.

use super::SentinelUrl;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    Memory,
    Redis(String),
    RedisCluster(Vec<String>),
    /// `redis+sentinel://`: the primary that these Sentinels name, followed across failovers.
    RedisSentinel(SentinelUrl),
}

/// Why a `store.url` names no store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreUrlError {
    #[error(
        "unsupported store \"{0}\" (expected memory://, redis://, rediss://, redis+cluster:// or redis+sentinel://)"
    )]
    Unsupported(String),
    #[error("redis+cluster:// needs at least one host:port")]
    NoClusterNodes,
    /// What [`SentinelUrl::parse`] found wrong.
    #[error("{0}")]
    Sentinel(String),
}

impl StoreUrl {
    pub fn parse(url: &str) -> Result<StoreUrl, StoreUrlError> {
        if url == "memory://" {
            return Ok(StoreUrl::Memory);
        }
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            return Ok(StoreUrl::Redis(url.to_owned()));
        }
        if url.starts_with("redis+sentinel://") {
            return SentinelUrl::parse(url)
                .map(StoreUrl::RedisSentinel)
                .map_err(StoreUrlError::Sentinel);
        }
        if let Some(nodes) = url.strip_prefix("redis+cluster://") {
            let nodes: Vec<String> = nodes
                .split(',')
                .filter(|n| !n.is_empty())
                .map(|n| format!("redis://{n}"))
                .collect();
            if nodes.is_empty() {
                return Err(StoreUrlError::NoClusterNodes);
            }
            return Ok(StoreUrl::RedisCluster(nodes));
        }
        Err(StoreUrlError::Unsupported(url.to_owned()))
    }

    /// Scheme and hosts only, for a log line: no user, password, database or path.
    pub fn location(&self) -> String {
        match self {
            StoreUrl::Memory => "memory://".to_owned(),
            StoreUrl::Redis(url) => host_of(url),
            StoreUrl::RedisCluster(nodes) => {
                let hosts: Vec<String> = nodes
                    .iter()
                    .map(|n| host_of(n).trim_start_matches("redis://").to_owned())
                    .collect();
                format!("redis+cluster://{}", hosts.join(","))
            }
            StoreUrl::RedisSentinel(url) => {
                let hosts: Vec<String> = url
                    .sentinels
                    .iter()
                    .map(|(host, port)| format!("{host}:{port}"))
                    .collect();
                format!("redis+sentinel://{}/{}", hosts.join(","), url.primary_name)
            }
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
        .map(redacted_host)
        .collect::<Vec<_>>()
        .join(",")
}

/// One `[scheme://][user[:password]@]host[/path]`, its password hidden.
fn redacted_host(part: &str) -> String {
    let (scheme, rest) = match part.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), part),
    };
    // The authority ends at the first '/', '?' or '#'; credentials end at its last '@'.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split_once(':') {
            Some((user, _password)) => format!("{scheme}{user}:***@{host}{tail}"),
            None => format!("{scheme}{credentials}@{host}{tail}"),
        },
        None => part.to_owned(),
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
    fn errors_say_what_is_wrong() {
        assert_eq!(
            StoreUrl::parse("redis+cluster://").map_err(|e| e.to_string()),
            Err("redis+cluster:// needs at least one host:port".to_owned())
        );
        assert_eq!(
            StoreUrl::parse("memcached://h").map_err(|e| e.to_string()),
            Err(
                "unsupported store \"memcached://h\" (expected memory://, redis://, rediss://, \
                 redis+cluster:// or redis+sentinel://)"
                    .to_owned()
            )
        );
        assert!(matches!(
            StoreUrl::parse("redis+sentinel://h1"),
            Err(StoreUrlError::Sentinel(_))
        ));
    }
}
