//! The decision engine on the embedded store: composition of limits, reasons, scaling,
//! shadow limits and reloads, with a manual clock.

mod common;

use common::{EXAMPLE_POLICY, check, engine, violated};
use ratewarden::engine::{CheckError, CheckRequest, Cost, Reason, SubjectStanding};
use ratewarden::policy::Policy;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

fn req<'a>(user: &'a str, endpoint: &'a str) -> CheckRequest<'a> {
    CheckRequest::new(user, endpoint)
}

#[tokio::test]
async fn burst_limit_denies_with_reason_burst_while_hourly_has_room() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    // free tier: hourly 100 (sliding_log), burst 20/1m (token_bucket); default endpoint 50/1m.
    for n in 0..20 {
        let d = check(&engine, req("alice", "/anything")).await;
        assert!(d.allowed, "request {n}");
    }
    let d = check(&engine, req("alice", "/anything")).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Burst));
    assert_eq!(violated(&d), ["burst"]);
    assert_eq!((d.limit, d.remaining), (Some(20), Some(0)));
    assert_eq!(
        d.retry_after,
        Some(3_000_000),
        "one token every 60s/20 = 3s"
    );
    assert_eq!(
        d.headline_limit().map(|l| l.label.as_str()),
        Some("tier:free/burst")
    );
}

/// A denial consumes nothing, so the limit it shows is the one with the least left *before*
/// the cost: once it was a limit that would have passed, shown with the cost already taken
/// off (`burst` with 0 left while it held 5, and `export`, which denied, held 4).
#[tokio::test]
async fn a_denial_shows_the_limit_with_the_least_left_unchanged() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let mut costly = req("dora", "/x");
    costly.cost = Cost::new(14).unwrap();
    assert!(check(&engine, req("dora", "/api/export")).await.allowed);
    assert!(check(&engine, costly).await.allowed);
    // burst: 20 - 1 - 14 = 5 left; export: 4 left; this asks 5 of each.
    let mut five = req("dora", "/api/export");
    five.cost = Cost::new(5).unwrap();
    let d = check(&engine, five).await;
    assert!(!d.allowed);
    assert_eq!(violated(&d), ["export"]);
    assert_eq!(d.headline_limit().map(|l| l.name.as_str()), Some("export"));
    assert_eq!((d.limit, d.remaining), (Some(5), Some(4)));
    // A cost no limit of 10 can fit: the hourly 100 and the burst 20 would have passed.
    let mut eleven = req("erin", "/sms/send");
    eleven.cost = Cost::new(11).unwrap();
    let d = check(&engine, eleven).await;
    assert_eq!(d.headline_limit().map(|l| l.name.as_str()), Some("sms"));
    assert_eq!((d.limit, d.remaining), (Some(10), Some(10)));
}

#[tokio::test]
async fn denied_request_consumes_nothing_from_any_limit() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    // /api/export: 5 per minute (fixed_window); the tier's burst bucket holds 20.
    for _ in 0..5 {
        assert!(check(&engine, req("bob", "/api/export")).await.allowed);
    }
    for _ in 0..10 {
        let d = check(&engine, req("bob", "/api/export")).await;
        assert!(!d.allowed);
        assert_eq!(violated(&d), ["export"]);
        // docs/reference/http-api.md, Reasons: shorter than the tier's hourly limit, which has room, so `burst`.
        assert_eq!(d.reason, Some(Reason::Burst));
    }
    // Only the 5 admitted requests were counted by the tier: 15 left of the burst of 20.
    let d = check(&engine, req("bob", "/elsewhere")).await;
    assert!(d.allowed);
    let plan = engine.plan_check(&req("bob", "/elsewhere"), None).unwrap();
    let applied = engine.dry_run(&plan).await.unwrap();
    let remaining: Vec<u64> = applied.checks.iter().map(|c| c.outcome.remaining).collect();
    // Dry run of one more: hourly 100-6-1, burst 20-6-1, endpoint 50-1-1.
    assert_eq!(remaining, [93, 13, 48]);
}

#[tokio::test]
async fn cost_above_every_limit_never_passes() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let mut r = req("carol", "/anything");
    r.cost = Cost::new(21).unwrap();
    let d = check(&engine, r).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Quota));
    assert!(d.cost_exceeds_limit);
    assert_eq!(d.retry_after, None);
    // Nothing was consumed: a cost of 20 still fits the burst.
    let mut r = req("carol", "/anything");
    r.cost = Cost::new(20).unwrap();
    assert!(check(&engine, r).await.allowed);
}

#[tokio::test]
async fn load_factor_scales_limits_and_explains_denials() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    engine.scale_factors().set_load_factor(0.5);
    // /api/export is 5 a minute: floor(5 * 0.5) = 2 at this load.
    for _ in 0..2 {
        assert!(check(&engine, req("dave", "/api/export")).await.allowed);
    }
    let d = check(&engine, req("dave", "/api/export")).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Load));
    assert_eq!(d.limit, Some(2));
    assert_eq!((d.scale, d.load_factor), (0.5, 0.5));
    // Back at 1.0 the same usage leaves room: scaling never erased it, never invented it.
    engine.scale_factors().set_load_factor(1.0);
    let d = check(&engine, req("dave", "/api/export")).await;
    assert!(d.allowed);
    assert_eq!(d.remaining, Some(2), "5 - 3 counted");
}

#[tokio::test]
async fn non_adaptive_rules_and_tiers_ignore_the_load_factor() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    engine.scale_factors().set_load_factor(1.5);
    // The SMS rule sets adaptive: false: 10 an hour stays exact on an idle machine.
    for _ in 0..10 {
        assert!(
            check(&engine, req("+15551234567", "/sms/send"))
                .await
                .allowed
        );
    }
    let d = check(&engine, req("+15551234567", "/sms/send")).await;
    assert!(!d.allowed);
    assert_eq!(violated(&d), ["sms"]);
    assert_eq!(d.limit, Some(10));
    // enterprise (adaptive: false) keeps its burst of 500 at load factor 0.5.
    engine.scale_factors().set_load_factor(0.5);
    let mut r = req("ent", "/anything");
    r.tier = Some("enterprise");
    let d = check(&engine, r).await;
    assert_eq!(d.scale, 1.0);
    let hourly = d
        .resolved
        .limits()
        .position(|l| l.name == "hourly")
        .unwrap();
    let plan = engine.plan_check(&r_enterprise(), None).unwrap();
    let applied = engine.dry_run(&plan).await.unwrap();
    assert_eq!(applied.checks[hourly].outcome.limit, 500);
    // ...while its default-endpoint limit, a tier-level exemption, is not scaled either.
    assert_eq!(applied.checks[1].outcome.limit, 50);
}

fn r_enterprise() -> CheckRequest<'static> {
    let mut r = CheckRequest::new("ent", "/anything");
    r.tier = Some("enterprise");
    r
}

#[tokio::test]
async fn flagged_subject_is_scaled_by_the_anomaly_factor() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let subject = engine.hasher().user("mallory");
    engine.scale_factors().set_standing(
        subject,
        SubjectStanding {
            abuse_score: 0.93,
            held_until: 0,
            novel: false,
        },
    );
    // /api/search: gcra 10/min burst 5 -> burst floor(5 * 0.1) = 0 for a flagged subject.
    let d = check(&engine, req("mallory", "/api/search")).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Anomaly));
    assert_eq!(d.abuse_score, Some(0.93));
    assert_eq!(d.scale, 0.1);
    assert_eq!(
        d.retry_after, None,
        "a limit scaled below the cost names no time"
    );
    // Another subject is untouched.
    let d = check(&engine, req("alice", "/api/search")).await;
    assert!(d.allowed);
    assert_eq!(d.abuse_score, None);
}

#[tokio::test]
async fn anomaly_shadow_flags_without_scaling() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let mut thresholds = engine.scale_factors().thresholds();
    thresholds.anomaly_shadow = true;
    engine.scale_factors().set_thresholds(thresholds);
    let subject = engine.hasher().user("mallory");
    engine.scale_factors().set_standing(
        subject,
        SubjectStanding {
            abuse_score: 0.9,
            held_until: 0,
            novel: false,
        },
    );
    let d = check(&engine, req("mallory", "/api/search")).await;
    assert!(d.allowed);
    assert!(d.shadow, "the anomaly factor would have denied");
    assert_eq!(d.scale, 1.0);
}

/// Scaling changes limits, never the usage already counted, and a shadowed anomaly factor
/// counts what it would deny, on every algorithm. `gcra` once read its usage in the scaled
/// emission interval: 20 requests of a 100-an-hour limit read as 2 under a factor of 0.1, so
/// a flag let the subject go on and shadow mode reported nothing.
#[tokio::test]
async fn a_flag_after_usage_denies_on_every_algorithm_shadowed_or_enforced() {
    for algorithm in [
        "sliding_log",
        "sliding_window",
        "fixed_window",
        "token_bucket",
        "gcra",
    ] {
        for shadow in [true, false] {
            let yaml = format!(
                "default_tier: t\ntiers:\n  t:\n    limits:\n      - {{ name: hourly, \
                 algorithm: {algorithm}, requests: 100, window: 1h }}\n"
            );
            let (engine, _clock) = engine(&yaml);
            let scale = engine.scale_factors();
            let mut thresholds = scale.thresholds();
            thresholds.anomaly_shadow = shadow;
            scale.set_thresholds(thresholds);
            for n in 0..20 {
                let d = check(&engine, req("mallory", "/x")).await;
                assert!(d.allowed && !d.shadow, "{algorithm}: request {n}");
            }
            scale.set_standing(
                engine.hasher().user("mallory"),
                SubjectStanding {
                    abuse_score: 0.9,
                    held_until: 0,
                    novel: false,
                },
            );
            // The limit is now 10 an hour, and 20 are counted.
            let d = check(&engine, req("mallory", "/x")).await;
            let what = format!("{algorithm}, shadow {shadow}: {d:?}");
            if shadow {
                assert!(d.allowed && d.shadow, "{what}");
            } else {
                assert!(!d.allowed, "{what}");
                assert_eq!(d.reason, Some(Reason::Anomaly), "{what}");
            }
        }
    }
}

#[tokio::test]
async fn shadow_limit_never_denies_but_says_so() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let ip: IpAddr = "203.0.113.7".parse().unwrap();
    // /login: 20 per 5 minutes per IP, in shadow mode; the tier's burst of 20 is per user,
    // so spread the attempts over users.
    let users: Vec<String> = (0..25).map(|i| format!("user{i}")).collect();
    for (i, user) in users.iter().enumerate() {
        let mut r = req(user, "/login");
        r.ip = Some(ip);
        let d = check(&engine, r).await;
        assert!(d.allowed, "shadow limits never deny");
        assert_eq!(d.shadow, i >= 20, "attempt {i}");
        assert!(
            d.headline_limit().is_some_and(|l| !l.shadow),
            "shadow limits are never shown"
        );
    }
}

#[tokio::test]
async fn ip_keyed_rule_without_ip_names_the_rule() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let error = engine.check(&req("eve", "/login")).await.unwrap_err();
    assert_eq!(
        error,
        CheckError::MissingIp {
            rule: "endpoints[3]".into(),
            path: "/login".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "rule endpoints[3] (/login) counts per IP address (key: ip) and the request has no `ip`"
    );
}

#[tokio::test]
async fn unknown_tier_is_refused() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let mut r = req("eve", "/x");
    r.tier = Some("platinum");
    assert_eq!(
        engine.check(&r).await.unwrap_err(),
        CheckError::UnknownTier("platinum".into())
    );
}

#[tokio::test]
async fn endpoint_rules_match_first_and_by_prefix() {
    let yaml = r#"
default_tier: t
tiers: { t: { limits: [] } }
endpoints:
  - { path: /api/search, limits: [ { name: exact, algorithm: fixed_window, requests: 1, window: 1m } ] }
  - { path: /api/*, limits: [ { name: prefix, algorithm: fixed_window, requests: 2, window: 1m } ] }
default_endpoint: { limits: [ { name: other, algorithm: fixed_window, requests: 3, window: 1m } ] }
"#;
    let (engine, _clock) = engine(yaml);
    let name = |d: &ratewarden::engine::Decision| d.headline_limit().unwrap().name.clone();
    assert_eq!(
        name(&check(&engine, req("u", "/api/search")).await),
        "exact"
    );
    assert_eq!(
        name(&check(&engine, req("u", "/api/users")).await),
        "prefix"
    );
    assert_eq!(
        name(&check(&engine, req("u", "/api")).await),
        "other",
        "/api/* needs the slash"
    );
    // default_endpoint is one counter per subject for every path it catches.
    let d = check(&engine, req("u", "/elsewhere")).await;
    assert_eq!(d.remaining, Some(1));
}

#[tokio::test]
async fn usage_survives_a_reload_that_keeps_the_limit_name() {
    let (engine, clock) = engine(EXAMPLE_POLICY);
    for _ in 0..4 {
        assert!(check(&engine, req("frank", "/api/export")).await.allowed);
    }
    // Raise export to 6 a minute; the 4 counted stay counted.
    let edited = EXAMPLE_POLICY.replace("requests: 5, window: 1m", "requests: 6, window: 1m");
    assert_ne!(edited, EXAMPLE_POLICY);
    engine.reload(Policy::from_yaml(&edited, Path::new(".")).unwrap());
    let d = check(&engine, req("frank", "/api/export")).await;
    assert_eq!((d.limit, d.remaining), (Some(6), Some(1)));
    // Renaming the limit starts it afresh.
    let renamed = edited.replace("name: export", "name: export2");
    engine.reload(Policy::from_yaml(&renamed, Path::new(".")).unwrap());
    let d = check(&engine, req("frank", "/api/export")).await;
    assert_eq!(d.remaining, Some(5));
    clock.advance(Duration::from_secs(60));
}

#[tokio::test]
async fn reload_resets_live_thresholds_to_the_file() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let mut t = engine.scale_factors().thresholds();
    t.load_factor_override = Some(0.2);
    t.anomaly_threshold = 0.5;
    engine.scale_factors().set_thresholds(t);
    assert_eq!(engine.scale_factors().load_factor(), 0.2);
    engine.reload(Policy::from_yaml(EXAMPLE_POLICY, Path::new(".")).unwrap());
    let t = engine.scale_factors().thresholds();
    assert_eq!((t.load_factor_override, t.anomaly_threshold), (None, 0.8));
    assert_eq!(engine.scale_factors().load_factor(), 1.0);
}

#[tokio::test]
async fn batch_decides_in_order_as_if_alone() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    let requests: Vec<_> = (0..7).map(|_| req("gina", "/api/export")).collect();
    let decisions = engine.check_batch(&requests).await.unwrap();
    let allowed: Vec<bool> = decisions.iter().map(|d| d.allowed).collect();
    assert_eq!(allowed, [true, true, true, true, true, false, false]);
    let remaining: Vec<_> = decisions.iter().map(|d| d.remaining).collect();
    assert_eq!(
        remaining[..5],
        [Some(4), Some(3), Some(2), Some(1), Some(0)]
    );
    // One undecidable item fails the whole batch, naming its position, and consumes nothing.
    let mut bad = vec![req("hank", "/api/export"), req("hank", "/login")];
    bad[0].cost = Cost::ONE;
    let error = engine.check_batch(&bad).await.unwrap_err();
    assert_eq!(error.index, 1);
    let d = check(&engine, req("hank", "/api/export")).await;
    assert_eq!(d.remaining, Some(4));
}

/// A denial's `limit_overflow` (what `limit_demand` adds up) is the share of the denying
/// limit's allowance over the 30-minute anomaly window, counted only for a limit that denies
/// as written: one shrunk by the load factor alone says nothing of the subject.
#[tokio::test]
async fn only_a_limit_that_denies_as_written_counts_in_the_overflow() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    // /api/export allows 5 a minute: 150 over the window, so one denied request asks 1/150.
    for _ in 0..5 {
        let d = check(&engine, req("grace", "/api/export")).await;
        assert_eq!(d.limit_overflow, 0.0, "allowed");
    }
    let d = check(&engine, req("grace", "/api/export")).await;
    assert!(!d.allowed);
    assert_eq!(d.limit_overflow, 1.0 / 150.0);

    // At load factor 0.5 the same rule allows 2 a minute: the third is denied by the load
    // factor alone, and asks nothing of the limit as written.
    let mut t = engine.scale_factors().thresholds();
    t.load_factor_override = Some(0.5);
    engine.scale_factors().set_thresholds(t);
    for _ in 0..2 {
        assert!(check(&engine, req("heidi", "/api/export")).await.allowed);
    }
    let d = check(&engine, req("heidi", "/api/export")).await;
    assert!(!d.allowed);
    assert_eq!(violated(&d), ["export"]);
    assert_eq!(d.limit_overflow, 0.0);
}
