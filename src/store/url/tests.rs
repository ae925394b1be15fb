//! `store.url` parsing: every scheme, and the message of each way a URL can be wrong.

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
