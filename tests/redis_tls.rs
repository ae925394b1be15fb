//! `rediss://` and `rediss+cluster://` against real `redis-server` processes serving TLS
//! (`--tls-port`) with certificates this test makes with the `openssl` CLI: the CA named by
//! `store.tls_ca` is trusted, ACL credentials in the URL log in and are never shown, a server
//! that another CA signed is refused with a clear error, and without `store.tls_ca` the system's
//! roots (which do not know the test's CA) are used.

mod common;

use common::daemon::Daemon;
use common::redis::{RedisCluster, RedisServer};
use common::redis_tls::TlsCerts;
use ratewarden::clock::SystemClock;
use ratewarden::engine::{CheckRequest, Engine, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::store::{self, Backend, Store};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const USER: &str = "app";
const PASSWORD: &str = "s3cret-pw";
const CREDENTIALS: &str = "app:s3cret-pw@";

/// A policy on `url` (with `store.tls_ca: CA` when given, relative to `dir`) and one limit of
/// 3 requests an hour.
fn policy_yaml(url: &str, ca: Option<&str>) -> String {
    let ca = ca.map_or(String::new(), |c| format!("  tls_ca: {c}\n"));
    format!(
        "store:\n  url: \"{url}\"\n  timeout: 2s\n  on_error: deny\n{ca}default_tier: free\n\
         tiers:\n  free:\n    limits: [ {{ name: hourly, algorithm: fixed_window, requests: 3, window: 1h }} ]\n"
    )
}

fn policy(dir: &Path, url: &str, ca: Option<&str>) -> Policy {
    Policy::from_yaml(&policy_yaml(url, ca), dir).expect("a valid policy")
}

async fn open(policy: &Policy) -> Backend {
    store::open(&policy.store, Arc::new(SystemClock::new()))
        .await
        .expect("connections are made lazily")
}

/// The store's error for a ping, which must not show the password.
async fn ping_error(policy: &Policy) -> String {
    let error = open(policy).await.ping().await.unwrap_err().to_string();
    assert!(!error.contains(PASSWORD), "{error}");
    error
}

/// Three requests pass and the fourth is denied, none degraded: the store counted them.
async fn three_an_hour(policy: Policy, backend: Backend) {
    let engine = Engine::new(policy, backend, SubjectHasher::from_secret("tls test"));
    for remaining in [2, 1, 0] {
        let d = engine
            .check(&CheckRequest::new("alice", "/a"))
            .await
            .unwrap();
        assert!(d.allowed && !d.degraded, "{d:?}");
        assert_eq!(d.remaining, Some(remaining));
    }
    let d = engine
        .check(&CheckRequest::new("alice", "/a"))
        .await
        .unwrap();
    assert!(!d.allowed && !d.degraded, "{d:?}");
}

#[tokio::test]
async fn rediss_with_the_configured_ca_and_acl_credentials_serves_decisions() {
    let certs = TlsCerts::make();
    let server = RedisServer::start_tls(&certs, &[]);
    server.add_user(USER, PASSWORD);

    // The CA path is relative to the policy file's folder.
    let p = policy(certs.dir(), &server.tls_url(CREDENTIALS), Some("ca.pem"));
    let ca = p.store.tls_ca.as_ref().expect("tls_ca compiled");
    assert_eq!(ca.path(), certs.dir().join("ca.pem"));
    let backend = open(&p).await;
    backend.ping().await.expect("TLS with the configured CA");
    three_an_hour(p, backend).await;
    assert!(
        !server.keys().is_empty(),
        "the counters are in the TLS server"
    );
    let clients = server.cli(&["CLIENT", "LIST"]);
    assert!(clients.contains(&format!("user={USER}")), "{clients}");

    // A wrong password is refused by Redis, and the error does not show it.
    let wrong = format!("{USER}:wrong-pw@");
    let p = policy(certs.dir(), &server.tls_url(&wrong), Some("ca.pem"));
    let error = ping_error(&p).await;
    assert!(!error.contains("wrong-pw"), "{error}");
    assert_eq!(
        error,
        "store unavailable: Password authentication failed - AuthenticationFailed"
    );
}

#[tokio::test]
async fn a_server_signed_by_another_ca_is_refused_with_a_clear_error() {
    let certs = TlsCerts::make();
    let server = RedisServer::start_tls(&certs, &[]);
    server.add_user(USER, PASSWORD);
    let url = server.tls_url(CREDENTIALS);

    let p = policy(certs.dir(), &url, Some("other-ca.pem"));
    assert_eq!(
        ping_error(&p).await,
        "store unavailable: invalid peer certificate: UnknownIssuer"
    );
    // Without store.tls_ca the system's roots apply, and they do not know the test's CA.
    let p = policy(certs.dir(), &url, None);
    assert_eq!(
        ping_error(&p).await,
        "store unavailable: invalid peer certificate: UnknownIssuer"
    );
    assert!(server.keys().is_empty(), "nothing was written");
}

#[test]
fn the_daemon_never_logs_the_password() {
    let certs = TlsCerts::make();
    let server = RedisServer::start_tls(&certs, &[]);
    server.add_user(USER, PASSWORD);
    let file = certs.dir().join("policy.yaml");
    let yaml = policy_yaml(&server.tls_url(CREDENTIALS), Some("other-ca.pem"));
    std::fs::write(&file, yaml).unwrap();

    let mut daemon = Daemon::start(&file, &[("RATEWARDEN_LOG", "debug")]);
    let (status, body) = daemon.get("/readyz");
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains(
            "store unreachable: store unavailable: invalid peer certificate: UnknownIssuer"
        ),
        "{body}"
    );
    let (status, _, body) = daemon.post_json("/v1/check", r#"{"user":"alice","endpoint":"/a"}"#);
    assert!(!body.contains(PASSWORD), "{status} {body}");
    std::thread::sleep(Duration::from_millis(300));
    let log = daemon.drain_log().join("\n");
    assert!(
        log.contains("store=rediss://127.0.0.1:"),
        "the log names the store by scheme and host, without its credentials:\n{log}"
    );
    assert!(!log.contains(PASSWORD), "{log}");
    daemon.stop(Duration::from_secs(10));
}

#[tokio::test]
async fn a_cluster_over_tls_with_acl_credentials_serves_decisions() {
    let certs = TlsCerts::make();
    let cluster = RedisCluster::start_tls(3, &certs);
    for node in &cluster.nodes {
        node.add_user(USER, PASSWORD);
    }
    let p = policy(certs.dir(), &cluster.tls_url(CREDENTIALS), Some("ca.pem"));
    let backend = open(&p).await;
    backend
        .ping()
        .await
        .expect("TLS to the cluster with the configured CA");
    three_an_hour(p, backend).await;
    let keys: usize = cluster.nodes.iter().map(|n| n.keys().len()).sum();
    assert!(keys > 0, "the counters are in the cluster");

    let p = policy(
        certs.dir(),
        &cluster.tls_url(CREDENTIALS),
        Some("other-ca.pem"),
    );
    let error = match store::open(&p.store, Arc::new(SystemClock::new())).await {
        Ok(backend) => backend.ping().await.unwrap_err().to_string(),
        Err(error) => error.to_string(),
    };
    assert!(!error.contains(PASSWORD), "{error}");
    assert!(
        error.contains("invalid peer certificate: UnknownIssuer"),
        "{error}"
    );
}
