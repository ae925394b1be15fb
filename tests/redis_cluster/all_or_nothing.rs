//! A request that mixes a user and an IP subject whose keys live on two masters is all or
//! nothing: applied subject by subject, refunded when a later subject denies.

use crate::common;
use crate::common::logs::Captured;
use crate::common::redis::RedisCluster;
use crate::support::{check, engine, node_of_subject};
use ratewarden::engine::CheckRequest;
use ratewarden::limit::Algorithm;
use std::net::IpAddr;
use std::time::Duration;

/// The request mixes the user's tier limit and an IP-keyed endpoint limit, on two masters.
/// Where the IP limit denies, the user's tier usage is refunded; where the tier denies, the
/// IP limit is not consumed. For every algorithm of the tier limit (the one refunded).
// One thread: the captured log is the thread's default subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_user_and_an_ip_on_two_masters_are_all_or_nothing() {
    const TIER: u64 = 100;
    const SMALL_TIER: u64 = 2;
    const LOGIN: u64 = 3;
    const SIGNUP: u64 = 10;
    const DENIED: u64 = 5;
    let log = Captured::default();
    let _guard = log.start_at(tracing::Level::DEBUG);

    let cluster = RedisCluster::start(3);
    for (a, algorithm) in Algorithm::ALL.into_iter().enumerate() {
        let yaml = format!(
            "default_tier: big\n\
             tiers:\n  \
               big:\n    limits: [ {{ name: tier, algorithm: {algorithm}, requests: {TIER}, window: 1h }} ]\n  \
               small:\n    limits: [ {{ name: tier, algorithm: {algorithm}, requests: {SMALL_TIER}, window: 1h }} ]\n\
             endpoints:\n  \
               - path: /login\n    key: ip\n    limits: [ {{ name: login, algorithm: fixed_window, requests: {LOGIN}, window: 1h }} ]\n  \
               - path: /signup\n    key: ip\n    limits: [ {{ name: signup, algorithm: {algorithm}, requests: {SIGNUP}, window: 1h }} ]\n"
        );
        let engine = engine(&cluster, &yaml).await;
        common::clear_of_window_edge(Duration::from_secs(3600)).await;

        // A user and an address whose keys live on different masters.
        let pick = |tag: &str, ip: IpAddr| {
            let ip_node = node_of_subject(&cluster, engine.hasher().ip(ip));
            (0..)
                .map(|i| format!("{tag}-{algorithm}-{i}"))
                .find(|u| node_of_subject(&cluster, engine.hasher().user(u)) != ip_node)
                .unwrap()
        };

        // The IP limit denies: the tier usage of the denied requests is given back.
        let ip: IpAddr = format!("10.0.{a}.1").parse().unwrap();
        let user = pick("refunded", ip);
        let login = CheckRequest {
            ip: Some(ip),
            ..CheckRequest::new(&user, "/login")
        };
        for n in 1..=LOGIN {
            let d = check(&engine, login.clone()).await;
            assert!(d.allowed, "{algorithm}: login #{n}");
        }
        for n in 1..=DENIED {
            let d = check(&engine, login.clone()).await;
            assert!(!d.allowed, "{algorithm}: login #{} after the limit", n);
            assert_eq!(
                d.violated_names().collect::<Vec<_>>(),
                ["login"],
                "{algorithm}"
            );
        }
        let view = engine
            .dry_run(&engine.plan_check(&login, None).unwrap())
            .await
            .unwrap();
        assert_eq!(view.checks.len(), 2);
        assert_eq!(
            view.checks[0].outcome.remaining,
            TIER - LOGIN - 1,
            "{algorithm}: the tier counts only the {LOGIN} admitted requests"
        );
        assert!(!view.checks[1].outcome.allowed && view.checks[1].outcome.remaining == 0);
        // The same from a real request that only the tier limit applies to.
        let d = check(&engine, CheckRequest::new(&user, "/elsewhere")).await;
        assert!(d.allowed);
        assert_eq!(d.remaining, Some(TIER - LOGIN - 1), "{algorithm}");
        // Another address from the same user still passes: the user was not charged.
        let other_ip: IpAddr = format!("10.1.{a}.1").parse().unwrap();
        let d = check(
            &engine,
            CheckRequest {
                ip: Some(other_ip),
                ..CheckRequest::new(&user, "/login")
            },
        )
        .await;
        assert!(d.allowed, "{algorithm}");

        // The tier denies: the IP limit is not consumed.
        let ip: IpAddr = format!("10.2.{a}.1").parse().unwrap();
        let user = pick("spent", ip);
        let signup = CheckRequest {
            ip: Some(ip),
            tier: Some("small"),
            ..CheckRequest::new(&user, "/signup")
        };
        for n in 1..=SMALL_TIER {
            assert!(
                check(&engine, signup.clone()).await.allowed,
                "{algorithm}: signup #{n}"
            );
        }
        for _ in 0..DENIED {
            let d = check(&engine, signup.clone()).await;
            assert!(!d.allowed, "{algorithm}");
            assert_eq!(
                d.violated_names().collect::<Vec<_>>(),
                ["tier"],
                "{algorithm}"
            );
            assert!(d.retry_after.is_some());
        }
        let view = engine
            .dry_run(&engine.plan_check(&signup, None).unwrap())
            .await
            .unwrap();
        assert!(!view.checks[0].outcome.allowed, "{algorithm}");
        assert_eq!(
            view.checks[1].outcome.remaining,
            SIGNUP - SMALL_TIER - 1,
            "{algorithm}: the address counts only the {SMALL_TIER} admitted requests"
        );
        // Another user behind that address has what the first one did not use.
        let d = check(
            &engine,
            CheckRequest {
                ip: Some(ip),
                ..CheckRequest::new("someone else", "/signup")
            },
        )
        .await;
        assert!(d.allowed, "{algorithm}");
        assert_eq!(d.remaining, Some(SIGNUP - SMALL_TIER - 1), "{algorithm}");
    }
    let log = log.text();
    assert!(!log.contains("could not refund"), "refunds succeed:\n{log}");
}

/// Many requests of one user at once, each denied by an exhausted address on another master:
/// every refund finds its own units, so the user's tier is charged nothing. (A refund that took
/// the newest entries of a log took a concurrent request's, which then found none to take and
/// left its unit charged: fifty denied requests used up most of a `sliding_log` tier.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_refunds_give_back_every_unit() {
    const TIER: u64 = 100;
    const AT_ONCE: usize = 50;
    let cluster = RedisCluster::start(3);
    for (a, algorithm) in Algorithm::ALL.into_iter().enumerate() {
        let yaml = format!(
            "default_tier: big\n\
             tiers:\n  \
               big:\n    limits: [ {{ name: tier, algorithm: {algorithm}, requests: {TIER}, window: 1h }} ]\n\
             endpoints:\n  \
               - path: /login\n    key: ip\n    limits: [ {{ name: login, algorithm: fixed_window, requests: 1, window: 1h }} ]\n"
        );
        let engine = engine(&cluster, &yaml).await;
        common::clear_of_window_edge(Duration::from_secs(3600)).await;
        let ip: IpAddr = format!("10.3.{a}.1").parse().unwrap();
        let ip_node = node_of_subject(&cluster, engine.hasher().ip(ip));
        let user = (0..)
            .map(|i| format!("raced-{algorithm}-{i}"))
            .find(|u| node_of_subject(&cluster, engine.hasher().user(u)) != ip_node)
            .unwrap();
        let login = CheckRequest {
            ip: Some(ip),
            ..CheckRequest::new("whoever", "/login")
        };
        assert!(check(&engine, login).await.allowed, "{algorithm}");

        let denied = CheckRequest {
            ip: Some(ip),
            ..CheckRequest::new(&user, "/login")
        };
        let decisions =
            futures_util::future::join_all((0..AT_ONCE).map(|_| check(&engine, denied.clone())))
                .await;
        assert!(decisions.iter().all(|d| !d.allowed), "{algorithm}");
        let d = check(&engine, CheckRequest::new(&user, "/elsewhere")).await;
        assert_eq!(
            d.remaining,
            Some(TIER - 1),
            "{algorithm}: the {AT_ONCE} denied requests were all refunded"
        );
    }
}
