//! Policy validation (policy.md): every fixture under `tests/fixtures/policies/` provokes the
//! failure it is named after and nothing else; `check-policy` prints and exits accordingly; the
//! shipped example policy compiles to what policy.md says it means.

use ratewarden::algorithm::Algorithm;
use ratewarden::policy::{KeyScope, Limit, OnError, PathPattern, Policy, StoreUrl, parse_duration};
use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Each bad fixture and exactly the lines `PolicyErrors::lines` gives for it, in order.
const BAD: &[(&str, &[&str])] = &[
    (
        "negative_requests",
        &["tiers.free.limits[1].requests: must be at least 1"],
    ),
    (
        "zero_requests",
        &["tiers.free.limits[1].requests: must be at least 1"],
    ),
    (
        "fractional_requests",
        &["tiers.free.limits[0].requests: must be a whole number"],
    ),
    (
        "unknown_algorithm",
        &[concat!(
            "tiers.free.limits[0].algorithm: unknown algorithm \"leaky_bucket\" ",
            "(expected one of sliding_log, sliding_window, fixed_window, token_bucket, gcra)"
        )],
    ),
    (
        "bad_duration",
        &[concat!(
            "tiers.free.limits[0].window: invalid duration \"1h30m\": ",
            "expected a whole number followed by ms, s, m, h or d (e.g. 30s)"
        )],
    ),
    (
        "zero_window",
        &["tiers.free.limits[0].window: must be longer than 0"],
    ),
    ("missing_default_tier", &["default_tier: is required"]),
    (
        "undefined_default_tier",
        &["default_tier: tier \"gold\" is not defined in tiers"],
    ),
    (
        "duplicate_limit_names",
        &["tiers.free.limits[1].name: duplicate limit name \"hourly\" in tiers.free"],
    ),
    (
        "duplicate_tier",
        &["tiers: duplicate entry with key \"pro\" at line 4 column 3"],
    ),
    (
        "unknown_top_level_key",
        &[concat!(
            "endpoint: unknown key (expected one of store, identity, default_tier, tiers, ",
            "endpoints, envoy_config, default_endpoint, adaptive)"
        )],
    ),
    (
        "unknown_limit_key",
        &[concat!(
            "tiers.free.limits[1].limit: unknown key ",
            "(expected one of name, algorithm, requests, window, burst, shadow, adaptive)"
        )],
    ),
    (
        "burst_on_sliding_log",
        &["tiers.free.limits[0].burst: applies only to token_bucket and gcra"],
    ),
    (
        "load_low_above_high",
        &["adaptive.load.low: must be below adaptive.load.high (0.5)"],
    ),
    (
        "anomaly_threshold_out_of_range",
        &["adaptive.anomaly.threshold: must be between 0 and 1"],
    ),
    (
        "anomaly_factor_out_of_range",
        &["adaptive.anomaly.factor: must be between 0 and 1"],
    ),
    (
        "factor_out_of_range",
        &["adaptive.load.high_factor: must be greater than 0 and at most 10"],
    ),
    (
        "bad_store_url",
        &[concat!(
            "store.url: unsupported store \"memcached://127.0.0.1:11211\" ",
            "(expected memory://, redis://, rediss://, redis+cluster:// or redis+sentinel://)"
        )],
    ),
    (
        "bad_on_error",
        &["store.on_error: unknown value \"retry\" (expected allow, deny or local)"],
    ),
    (
        "star_inside_path",
        &["endpoints[1].path: \"/api/*/export\": * is allowed only at the end"],
    ),
    (
        "path_without_slash",
        &["endpoints[0].path: \"login\" must start with /"],
    ),
    (
        "duplicate_endpoint_path",
        &["endpoints[2].path: \"/login\" is already matched by an earlier rule"],
    ),
    (
        "bad_key_scope",
        &["endpoints[0].key: unknown key scope \"session\" (expected user or ip)"],
    ),
    ("no_tiers", &["tiers: must define at least one tier"]),
    (
        "wrong_type_tiers",
        &["tiers: invalid type: integer `5`, expected a map at line 3 column 8"],
    ),
    (
        "yaml_syntax_error",
        &[concat!(
            "did not find expected ',' or '}' at line 7 column 1, ",
            "while parsing a flow mapping at line 6 column 9"
        )],
    ),
    (
        "key_prefix_with_braces",
        &[
            "store.key_prefix: must not contain spaces or braces (braces are Redis Cluster hash tags)",
        ],
    ),
    (
        "bad_header_name",
        &["identity.header: \"X Api Key\" is not a valid HTTP header name"],
    ),
    ("many_errors", MANY_ERRORS),
];

/// `many_errors.yaml`: nine independent mistakes, all reported, in file order.
const MANY_ERRORS: &[&str] = &[
    concat!(
        "store.url: unsupported store \"memcached://localhost\" ",
        "(expected memory://, redis://, rediss://, redis+cluster:// or redis+sentinel://)"
    ),
    "store.on_error: unknown value \"retry\" (expected allow, deny or local)",
    "tiers.free.limits[0].requests: must be at least 1",
    concat!(
        "tiers.free.limits[1].algorithm: unknown algorithm \"leaky_bucket\" ",
        "(expected one of sliding_log, sliding_window, fixed_window, token_bucket, gcra)"
    ),
    "tiers.pro.limits[0].window: must be a duration such as 500ms, 30s, 5m, 1h or 1d",
    "endpoints[0].path: \"api/search\" must start with /",
    "endpoints[1].key: unknown key scope \"phone\" (expected user or ip)",
    "endpoints[1].limits[0].burst: applies only to token_bucket and gcra",
    "adaptive.anomaly.threshold: must be between 0 and 1",
];

const VALID: &[&str] = &["minimal", "prefix_endpoints", "range_edges"];

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    manifest_dir().join("tests/fixtures/policies")
}

fn bad_fixture(name: &str) -> PathBuf {
    fixtures().join(format!("{name}.yaml"))
}

fn valid_fixture(name: &str) -> Policy {
    let path = fixtures().join("valid").join(format!("{name}.yaml"));
    Policy::load(&path).unwrap_or_else(|e| panic!("{}:\n{e}", path.display()))
}

fn example_path() -> PathBuf {
    manifest_dir().join("ratewarden.yaml")
}

fn example() -> Policy {
    Policy::load(&example_path()).unwrap_or_else(|e| panic!("ratewarden.yaml:\n{e}"))
}

fn yaml_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// (a) The library: each fixture's exact errors.

#[test]
fn every_bad_fixture_reports_exactly_its_errors() {
    let mut failures = Vec::new();
    for (name, expected) in BAD {
        let path = bad_fixture(name);
        match Policy::load(&path) {
            Ok(_) => failures.push(format!("{name}: compiled, expected {expected:#?}")),
            Err(errors) => {
                if errors.lines() != *expected {
                    failures.push(format!(
                        "{name}:\n  got      {:#?}\n  expected {expected:#?}",
                        errors.lines()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_file_is_in_a_table_and_every_table_entry_has_a_file() {
    let on_disk = yaml_names(&fixtures());
    let listed: BTreeSet<String> = BAD.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(on_disk, listed, "tests/fixtures/policies/*.yaml vs BAD");
    let on_disk = yaml_names(&fixtures().join("valid"));
    let listed: BTreeSet<String> = VALID.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(
        on_disk, listed,
        "tests/fixtures/policies/valid/*.yaml vs VALID"
    );
}

#[test]
fn single_failure_fixtures_fail_once_and_many_errors_many_times() {
    for (name, expected) in BAD {
        if *name == "many_errors" {
            assert!(expected.len() >= 5, "many_errors has several errors");
        } else {
            assert_eq!(expected.len(), 1, "{name} provokes exactly one failure");
        }
    }
}

#[test]
fn the_spec_example_message_is_produced_verbatim() {
    let errors = Policy::load(&bad_fixture("zero_requests")).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].path, "tiers.free.limits[1].requests");
    assert_eq!(errors.0[0].message, "must be at least 1");
    assert_eq!(
        errors.to_string(),
        "tiers.free.limits[1].requests: must be at least 1"
    );
}

#[test]
fn syntax_errors_have_no_path_and_type_errors_name_theirs_once() {
    let syntax = Policy::load(&bad_fixture("yaml_syntax_error")).unwrap_err();
    assert_eq!(syntax.0[0].path, "");
    let typed = Policy::load(&bad_fixture("wrong_type_tiers")).unwrap_err();
    assert_eq!(typed.0[0].path, "tiers");
    assert!(
        !typed.0[0].message.contains("tiers"),
        "{}",
        typed.0[0].message
    );
    assert!(
        !typed.0[0].message.contains("Raw"),
        "no internal type names"
    );
}

#[test]
fn many_errors_names_each_path_in_file_order() {
    let errors = Policy::load(&bad_fixture("many_errors")).unwrap_err();
    assert_eq!(errors.lines(), MANY_ERRORS);
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "store.url",
            "store.on_error",
            "tiers.free.limits[0].requests",
            "tiers.free.limits[1].algorithm",
            "tiers.pro.limits[0].window",
            "endpoints[0].path",
            "endpoints[1].key",
            "endpoints[1].limits[0].burst",
            "adaptive.anomaly.threshold",
        ]
    );
}

#[test]
fn a_refused_range_value_does_not_cause_a_second_error() {
    // high is out of range; low = 0.9 must not also be compared with high's default (0.8).
    let yaml = "default_tier: free
tiers: { free: { limits: [ { name: h, algorithm: sliding_log, requests: 1, window: 1h } ] } }
adaptive: { load: { high: 1.5, low: 0.9 } }
";
    let errors = Policy::from_yaml(yaml, Path::new(".")).unwrap_err();
    assert_eq!(
        errors.lines(),
        ["adaptive.load.high: must be between 0 and 1"]
    );
}

#[test]
fn a_missing_file_is_one_error_without_a_path() {
    let path = fixtures().join("does_not_exist.yaml");
    let errors = Policy::load(&path).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].path, "");
    assert!(
        errors.0[0]
            .message
            .starts_with(&format!("cannot read {}: ", path.display())),
        "{}",
        errors.0[0].message
    );
}

#[test]
fn valid_fixtures_compile() {
    for name in VALID {
        valid_fixture(name);
    }
}

// ---------------------------------------------------------------------------------------------
// (b) The binary: `ratewarden check-policy FILE`.

fn check_policy(path: &Path) -> (i32, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .arg("check-policy")
        .arg(path)
        .output()
        .expect("ratewarden runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let code = out.status.code().expect("exited, not killed");
    (code, stdout.lines().map(str::to_owned).collect())
}

fn prefixed(path: &Path, lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .map(|l| format!("{}: {l}", path.display()))
        .collect()
}

#[test]
fn binary_accepts_the_shipped_policy() {
    let path = example_path();
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        [format!(
            "{}: ok (3 tiers, 4 endpoint rules)",
            path.display()
        )]
    );
}

#[test]
fn binary_accepts_the_valid_fixtures() {
    for (name, summary) in [
        ("minimal", "ok (1 tier, 0 endpoint rules)"),
        ("prefix_endpoints", "ok (1 tier, 4 endpoint rules)"),
        ("range_edges", "ok (1 tier, 0 endpoint rules)"),
    ] {
        let path = fixtures().join("valid").join(format!("{name}.yaml"));
        let (code, stdout) = check_policy(&path);
        assert_eq!((code, stdout), (0, prefixed(&path, &[summary])), "{name}");
    }
}

#[test]
fn binary_refuses_zero_requests_with_the_spec_message() {
    let path = bad_fixture("zero_requests");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        prefixed(
            &path,
            &["tiers.free.limits[1].requests: must be at least 1"]
        )
    );
}

#[test]
fn binary_reports_every_error_of_many_errors_in_order() {
    let path = bad_fixture("many_errors");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(stdout, prefixed(&path, MANY_ERRORS));
}

#[test]
fn binary_refuses_a_yaml_syntax_error() {
    let path = bad_fixture("yaml_syntax_error");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        prefixed(
            &path,
            &[
                "did not find expected ',' or '}' at line 7 column 1, while parsing a flow mapping at line 6 column 9"
            ]
        )
    );
}

#[test]
fn binary_refuses_a_missing_file() {
    let path = fixtures().join("does_not_exist.yaml");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let expected = format!("{0}: cannot read {0}: ", path.display());
    assert!(stdout[0].starts_with(&expected), "{stdout:?}");
}

// ---------------------------------------------------------------------------------------------
// (c) What the shipped policy means.

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
    assert_eq!(policy.adaptive.anomaly.window, Duration::from_secs(600));
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
envoy_config: envoy/
adaptive: { anomaly: { model: models/m.json } }
";
    let policy = Policy::from_yaml(yaml, Path::new("/etc/ratewarden")).unwrap();
    assert_eq!(
        policy.adaptive.anomaly.model.as_deref(),
        Some(Path::new("/etc/ratewarden/models/m.json"))
    );
    assert_eq!(
        policy.envoy_config.as_deref(),
        Some(Path::new("/etc/ratewarden/envoy/"))
    );

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
