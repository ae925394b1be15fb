//! What the shipped policy (`ratewarden.yaml`) and the valid fixtures compile to, as docs/reference/policy.md
//! says they mean: tiers, rules, limit ids, matching, durations and defaults.

use crate::{example, manifest_dir, valid_fixture};
use ratewarden::limit::Algorithm;
use ratewarden::limit::Limit;
use ratewarden::policy::{KeyScope, PathPattern, Policy, parse_duration};
use ratewarden::store::{OnError, StoreUrl};
use std::num::NonZeroU64;
use std::path::Path;
use std::time::Duration;

fn limit_of<'a>(limits: &'a [Limit], name: &str) -> &'a Limit {
    limits
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no limit {name}"))
}

/// (name, algorithm, requests, window, burst, shadow, adaptive)
type Shape = (&'static str, Algorithm, u64, Duration, u64, bool, bool);

fn shape(limit: &Limit) -> (String, Algorithm, u64, Duration, u64, bool, bool) {
    (
        limit.name.clone(),
        limit.algorithm,
        limit.requests.get(),
        limit.window,
        limit.burst.get(),
        limit.shadow,
        limit.adaptive,
    )
}

fn assert_limits(limits: &[Limit], expected: &[Shape]) {
    let got: Vec<_> = limits.iter().map(shape).collect();
    let expected: Vec<_> = expected
        .iter()
        .map(|&(n, a, r, w, b, s, ad)| (n.to_owned(), a, r, w, b, s, ad))
        .collect();
    assert_eq!(got, expected);
}

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn shipped_tiers_are_free_pro_enterprise_with_their_limits() {
    let policy = example();
    let names: Vec<&str> = policy.tiers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["free", "pro", "enterprise"]);
    assert_eq!(policy.default_tier, policy.tier_index("free").unwrap());
    assert_eq!(policy.tier_index("gold"), None);

    let [free, pro, enterprise] = &policy.tiers[..] else {
        unreachable!()
    };
    assert!(free.adaptive && pro.adaptive);
    assert!(
        !enterprise.adaptive,
        "enterprise is exempt from load scaling"
    );
    use Algorithm::*;
    assert_limits(
        &free.limits,
        &[
            ("hourly", SlidingLog, 100, HOUR, 100, false, true),
            ("burst", TokenBucket, 20, MINUTE, 20, false, true),
        ],
    );
    assert_limits(
        &pro.limits,
        &[("hourly", SlidingWindow, 1000, HOUR, 1000, false, true)],
    );
    assert_limits(
        &enterprise.limits,
        &[("hourly", Gcra, 10_000, HOUR, 500, false, true)],
    );
}

#[test]
fn shipped_sms_rule_is_ten_an_hour_exact_and_not_adaptive() {
    let policy = example();
    let rule = policy.endpoint_rule("/sms/send");
    assert_eq!(rule.pattern, PathPattern::Exact("/sms/send".into()));
    assert_eq!(rule.path_in_file, "endpoints[2]");
    assert_eq!(rule.key, KeyScope::User);
    assert!(!rule.adaptive, "never scaled up by an idle machine");
    assert_limits(
        &rule.limits,
        &[("sms", Algorithm::SlidingLog, 10, HOUR, 10, false, true)],
    );
    // Exact: neither a longer nor a shorter path is the SMS rule.
    for other in ["/sms/send/", "/sms/sendx", "/sms"] {
        assert_eq!(
            policy.endpoint_rule(other).pattern,
            PathPattern::Default,
            "{other}"
        );
    }
}

#[test]
fn shipped_login_rule_is_keyed_by_ip_with_a_shadow_limit() {
    let policy = example();
    let rule = policy.endpoint_rule("/login");
    assert_eq!(rule.pattern, PathPattern::Exact("/login".into()));
    assert_eq!(rule.key, KeyScope::Ip);
    assert!(rule.adaptive);
    assert_limits(
        &rule.limits,
        &[(
            "login",
            Algorithm::SlidingWindow,
            20,
            Duration::from_secs(300),
            20,
            true,
            true,
        )],
    );
}

#[test]
fn shipped_api_rules_and_default_endpoint() {
    let policy = example();
    let patterns: Vec<String> = policy
        .endpoints
        .iter()
        .map(|r| r.pattern.display())
        .collect();
    assert_eq!(
        patterns,
        ["/api/search", "/api/export", "/sms/send", "/login"]
    );
    use Algorithm::*;
    assert_limits(
        &policy.endpoint_rule("/api/search").limits,
        &[("search", Gcra, 10, MINUTE, 5, false, true)],
    );
    assert_limits(
        &policy.endpoint_rule("/api/export").limits,
        &[("export", FixedWindow, 5, MINUTE, 5, false, true)],
    );

    let default = &policy.default_endpoint;
    assert_eq!(default.pattern, PathPattern::Default);
    assert_eq!(default.key, KeyScope::User);
    assert!(default.adaptive);
    assert_limits(
        &default.limits,
        &[("endpoint", SlidingWindow, 50, MINUTE, 50, false, true)],
    );
    for unmatched in ["/", "/api", "/api/other", "/logout", ""] {
        assert!(
            std::ptr::eq(policy.endpoint_rule(unmatched), default),
            "{unmatched:?} falls through to default_endpoint"
        );
    }
}

#[test]
fn limit_ids_and_labels_name_tier_endpoint_and_default() {
    let policy = example();
    let hourly = limit_of(&policy.tiers[0].limits, "hourly");
    assert_eq!(hourly.id, "t:free:hourly");
    assert_eq!(hourly.label, "tier:free/hourly");
    let sms = &policy.endpoint_rule("/sms/send").limits[0];
    assert_eq!(sms.id, "e:/sms/send:sms");
    assert_eq!(sms.label, "endpoint:/sms/send/sms");
    let endpoint = &policy.default_endpoint.limits[0];
    assert_eq!(endpoint.id, "d:endpoint");
    assert_eq!(endpoint.label, "endpoint:default/endpoint");
    // Same name in two tiers: two counters.
    assert_ne!(
        limit_of(&policy.tiers[0].limits, "hourly").id_hash,
        limit_of(&policy.tiers[1].limits, "hourly").id_hash
    );
}

#[test]
fn burst_defaults_to_requests() {
    let policy = example();
    // free/hourly and pro/hourly state no burst; enterprise/hourly and search state one.
    for limit in [&policy.tiers[0].limits[0], &policy.tiers[1].limits[0]] {
        assert_eq!(limit.burst, limit.requests, "{}", limit.label);
    }
    assert_eq!(
        policy.tiers[2].limits[0].burst,
        NonZeroU64::new(500).unwrap()
    );
    let minimal = valid_fixture("minimal");
    let only = &minimal.tiers[0].limits[0];
    assert_eq!((only.requests.get(), only.burst.get()), (1, 1));
    let rate = policy.tiers[1].limits[0].base_rate();
    assert_eq!((rate.requests, rate.burst), (1000, 1000));
}

#[test]
fn prefix_rules_match_paths_under_them_but_not_the_bare_prefix() {
    let policy = valid_fixture("prefix_endpoints");
    let api = &policy.endpoints[1];
    assert_eq!(api.pattern, PathPattern::Prefix("/api/".into()));
    assert_eq!(api.pattern.display(), "/api/*");
    assert_eq!(api.key, KeyScope::Ip);
    assert!(api.pattern.matches("/api/x"));
    assert!(api.pattern.matches("/api/"));
    assert!(api.pattern.matches("/api/x/y"));
    assert!(!api.pattern.matches("/api"));
    assert!(!api.pattern.matches("/apix"));

    // `/static*` has no slash before the star: it is a plain string prefix.
    let stat = &policy.endpoints[2];
    assert_eq!(stat.pattern, PathPattern::Prefix("/static".into()));
    assert!(stat.pattern.matches("/static"));
    assert!(stat.pattern.matches("/static/app.js"));
    assert!(stat.pattern.matches("/staticfiles"));
    assert_eq!(stat.limits[0].burst.get(), 200);
}

#[test]
fn first_matching_rule_wins() {
    let policy = valid_fixture("prefix_endpoints");
    let rule_for = |path: &str| policy.endpoint_rule(path).pattern.display();
    // /api/search matches rules 0, 1 and 3: rule 0.
    assert_eq!(rule_for("/api/search"), "/api/search");
    // /api/search/x and /api/searchx are not the exact rule: the prefix rule after it.
    assert_eq!(rule_for("/api/search/x"), "/api/*");
    assert_eq!(rule_for("/api/searchx"), "/api/*");
    assert_eq!(rule_for("/api/x"), "/api/*");
    // /api matches neither /api/search nor /api/*, but /* (rule 3).
    assert_eq!(rule_for("/api"), "/*");
    assert_eq!(rule_for("/static/a.css"), "/static*");
    assert_eq!(rule_for("/"), "/*");
    assert!(!policy.endpoint_rule("/x").adaptive);
    // Only what starts without / reaches default_endpoint.
    assert_eq!(rule_for("x"), "default");
    assert_eq!(rule_for(""), "default");
}

#[test]
fn durations_of_the_shipped_policy() {
    let policy = example();
    assert_eq!(policy.store.timeout, Duration::from_millis(20));
    assert_eq!(policy.adaptive.interval, Duration::from_secs(1));
    assert_eq!(policy.adaptive.anomaly.window, Duration::from_secs(1800));
    assert_eq!(policy.adaptive.anomaly.hold, Duration::from_secs(300));
    assert_eq!(
        policy.endpoint_rule("/login").limits[0].window,
        Duration::from_secs(300)
    );
    assert_eq!(policy.tiers[0].limits[0].window_micros(), 3_600_000_000);

    for (text, expected) in [
        ("500ms", Duration::from_millis(500)),
        ("30s", Duration::from_secs(30)),
        ("5m", Duration::from_secs(300)),
        ("1h", Duration::from_secs(3600)),
        ("1d", Duration::from_secs(86_400)),
        ("0s", Duration::ZERO),
    ] {
        assert_eq!(parse_duration(text), Ok(expected), "{text}");
    }
    for bad in ["1h30m", "1.5h", "30", "s", "30 s", "-1s", "1w", ""] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_rest_of_the_shipped_policy() {
    let policy = example();
    assert_eq!(policy.store.url, StoreUrl::Memory);
    assert_eq!(policy.store.on_error, OnError::Local);
    assert_eq!(policy.store.key_prefix, "rw");
    assert_eq!(policy.identity.header, "X-Api-Key");
    assert!(!policy.identity.trust_forwarded);
    assert!(!policy.identity.trust_tier_header);
    assert_eq!(policy.envoy_config, None);
    let load = policy.adaptive.load;
    assert_eq!(
        (
            load.high,
            load.low,
            load.high_factor,
            load.low_factor,
            load.smoothing
        ),
        (0.8, 0.3, 0.5, 1.5, 0.3)
    );
    let anomaly = &policy.adaptive.anomaly;
    assert_eq!((anomaly.threshold, anomaly.factor), (0.8, 0.1));
    assert_eq!(anomaly.min_requests.get(), 20);
    assert!(!anomaly.shadow);
}

#[test]
fn relative_model_path_resolves_against_the_policy_folder() {
    let policy = example();
    assert_eq!(
        policy.adaptive.anomaly.model,
        Some(manifest_dir().join("models/abuse.json"))
    );

    let yaml = "default_tier: free
tiers: { free: { limits: [ { name: h, algorithm: sliding_log, requests: 1, window: 1h } ] } }
adaptive: { anomaly: { model: models/m.json } }
";
    let policy = Policy::from_yaml(yaml, Path::new("/etc/ratewarden")).unwrap();
    assert_eq!(
        policy.adaptive.anomaly.model.as_deref(),
        Some(Path::new("/etc/ratewarden/models/m.json"))
    );
    // The envoy folder is loaded from beside the policy (it must exist: docs/reference/envoy.md).
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir(base.path().join("envoy")).unwrap();
    std::fs::write(base.path().join("envoy/edge.yaml"), "domain: edge\n").unwrap();
    let with_envoy = format!("{yaml}envoy_config: envoy/\n");
    std::fs::write(base.path().join("policy.yaml"), &with_envoy).unwrap();
    let rules = ratewarden::rules::load(&base.path().join("policy.yaml"), None).unwrap();
    assert_eq!(rules.policy.envoy_config, Some(base.path().join("envoy/")));
    assert!(rules.envoy.unwrap().domain("edge").is_some());

    let absolute = yaml.replace("models/m.json", "/var/lib/rw/m.json");
    let policy = Policy::from_yaml(&absolute, Path::new("/etc/ratewarden")).unwrap();
    assert_eq!(
        policy.adaptive.anomaly.model.as_deref(),
        Some(Path::new("/var/lib/rw/m.json"))
    );

    // No model: no anomaly scaling, and no error.
    assert_eq!(valid_fixture("minimal").adaptive.anomaly.model, None);
}

#[test]
fn minimal_policy_takes_every_default() {
    let policy = valid_fixture("minimal");
    assert_eq!(policy.store.url, StoreUrl::Memory);
    assert_eq!(policy.store.on_error, OnError::Local);
    assert_eq!(policy.store.timeout, Duration::from_millis(20));
    assert_eq!(policy.store.key_prefix, "rw");
    assert_eq!(policy.identity.header, "X-Api-Key");
    assert!(policy.endpoints.is_empty());
    assert!(policy.default_endpoint.limits.is_empty());
    // The example's adaptive section states the defaults; it adds only a model.
    let mut expected = example().adaptive;
    expected.anomaly.model = None;
    assert_eq!(policy.adaptive, expected);
}

#[test]
fn range_edges_are_inclusive_where_policy_md_says_so() {
    let policy = valid_fixture("range_edges");
    assert_eq!(
        policy.store.url,
        StoreUrl::RedisCluster(vec!["redis://h1:7000".into(), "redis://h2:7001".into()])
    );
    assert_eq!(policy.store.on_error, OnError::Deny);
    assert_eq!(policy.store.timeout, Duration::from_millis(500));
    let load = policy.adaptive.load;
    assert_eq!(
        (
            load.low,
            load.high,
            load.high_factor,
            load.low_factor,
            load.smoothing
        ),
        (0.0, 1.0, 10.0, 10.0, 1.0)
    );
    let anomaly = &policy.adaptive.anomaly;
    assert_eq!((anomaly.threshold, anomaly.factor), (0.0, 0.0));
    assert_eq!(anomaly.hold, Duration::ZERO);
    use Algorithm::*;
    assert_limits(
        &policy.tiers[0].limits,
        &[
            (
                "max",
                Gcra,
                1_000_000_000,
                Duration::from_secs(366 * 86_400),
                1_000_000_000,
                false,
                true,
            ),
            (
                "min",
                TokenBucket,
                1,
                Duration::from_millis(1),
                1,
                false,
                true,
            ),
        ],
    );
}

#[test]
fn a_sentinel_url_names_the_sentinels_the_primary_and_its_login() {
    let policy = valid_fixture("redis_sentinel");
    let StoreUrl::RedisSentinel(url) = &policy.store.url else {
        panic!("{:?}", policy.store.url);
    };
    assert_eq!(
        url.sentinels,
        [
            ("10.0.0.1".to_owned(), 26380),
            ("10.0.0.2".to_owned(), 26379),
            ("fd00::3".to_owned(), 26379)
        ]
    );
    assert_eq!((url.primary_name.as_str(), url.db), ("mymaster", 2));
    assert_eq!(
        (url.username.as_deref(), url.password.as_deref()),
        (None, Some("s3cr@t"))
    );
    // Logs and errors show the URL without its password.
    assert_eq!(
        url.to_string(),
        "redis+sentinel://:***@10.0.0.1:26380,10.0.0.2:26379,[fd00::3]:26379/mymaster/2"
    );
    assert!(!format!("{:?}", policy.store).contains("s3cr"));
}
