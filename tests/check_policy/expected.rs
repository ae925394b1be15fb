//! What each fixture under `tests/fixtures/policies/` must produce: the exact error lines of
//! each bad one, and the names of the valid ones.
//!
//! Tables rather than one test per fixture, so a test can check that every file is listed and
//! every listed name has a file.

/// Each bad fixture and exactly the lines `PolicyErrors::lines` gives for it, in order.
pub const BAD: &[(&str, &[&str])] = &[
    (
        "limit_name_with_colon",
        &[
            "tiers.free.limits[0].name: \"per:minute\" may contain only ASCII letters, digits, '_', '-' and '.'",
        ],
    ),
    (
        "yaml_merge_key",
        &["tiers.free.limits[1].<<: YAML merge keys (<<) are not supported: write the keys out"],
    ),
    (
        "limit_named_none",
        &[
            "tiers.free.limits[0].name: \"none\" is reserved: metrics label decisions no \
             limit applied to rule=\"none\"",
        ],
    ),
    (
        "limit_name_too_long",
        &["tiers.free.limits[0].name: is 65 characters long; a name has at most 64"],
    ),
    (
        "interval_below_100ms",
        &["adaptive.interval: must be at least 100ms"],
    ),
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
        "requests_out_of_range_written_as_a_decimal",
        &["tiers.free.limits[0].requests: must be at most 1000000000"],
    ),
    (
        "null_tier",
        &["tiers.pro: null where the file needs a map at line 6 column 8"],
    ),
    (
        "load_low_left_out_above_high",
        &[
            "adaptive.load.low: is 0.3 when not given, which is not below adaptive.load.high \
             (0.2): set a lower adaptive.load.low",
        ],
    ),
    (
        "requests_written_as_a_decimal",
        &[
            "tiers.free.limits[0].requests: must be written as the whole number 1000, without a \
             decimal point or exponent",
        ],
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
        "tier_named_twice_as_string_and_number",
        &[
            "tiers: duplicate entry with key \"1\" (two keys name the tier \"1\") at line 5 column 3",
        ],
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
        "factor_override_out_of_range",
        &["adaptive.load.factor_override: must be between 0 and 10"],
    ),
    (
        "load_source_unknown",
        &["adaptive.load.source: must be one of cpu, upstream, prometheus"],
    ),
    (
        "upstream_without_latency_target",
        &[
            "adaptive.load.upstream.latency_target: is required when adaptive.load.source is upstream",
        ],
    ),
    (
        "upstream_percentile_as_percentage",
        &["adaptive.load.upstream.percentile: must be greater than 0 and at most 1"],
    ),
    (
        "prometheus_without_url",
        &["adaptive.load.prometheus.url: is required"],
    ),
    (
        "prometheus_url_with_query",
        &[concat!(
            "adaptive.load.prometheus.url: \"http://prometheus:9090/api?x=1\": a Prometheus URL ",
            "has no user, query or fragment (only http://host[:port][/prefix]; the query goes in ",
            "adaptive.load.prometheus.query)"
        )],
    ),
    (
        "prometheus_url_port_out_of_range",
        &[concat!(
            "adaptive.load.prometheus.url: \"http://prometheus:99999\": the port must be a ",
            "number from 1 to 65535 (it is \"99999\")"
        )],
    ),
    (
        "prometheus_https_url",
        &[concat!(
            "adaptive.load.prometheus.url: \"https://prometheus.example:9090\" is not an http:// ",
            "URL with a host (such as http://prometheus:9090; https is not supported: reach a TLS ",
            "Prometheus through a local proxy)"
        )],
    ),
    (
        "prometheus_timeout_not_below_interval",
        &["adaptive.load.prometheus.timeout: must be shorter than adaptive.interval (2s)"],
    ),
    (
        "prometheus_settings_without_source",
        &[
            "adaptive.load.prometheus: applies only when adaptive.load.source is prometheus (it is cpu)",
        ],
    ),
    (
        "rule_load_without_source",
        &["endpoints[0].load.source: is required"],
    ),
    (
        "rule_load_on_a_rule_exempt_from_load",
        &[
            "endpoints[0].load: has no effect with adaptive: false (the rule's limits are not scaled by load)",
        ],
    ),
    (
        "rule_prometheus_without_query",
        &["endpoints[1].load.prometheus.query: is required"],
    ),
    (
        "bad_store_url",
        &[concat!(
            "store.url: unsupported store \"memcached://127.0.0.1:11211\" ",
            "(expected memory://, redis://, redis+cluster:// or redis+sentinel://; ",
            "rediss://, rediss+cluster:// or rediss+sentinel:// for TLS)"
        )],
    ),
    (
        "sentinel_url_without_primary_name",
        &[concat!(
            "store.url: redis+sentinel:// needs the primary's name after the hosts ",
            "(redis+sentinel://host:26379,.../mymaster[/db])"
        )],
    ),
    (
        "sentinel_url_bad_port",
        &["store.url: \"10.0.0.2:2637x\" is not a sentinel host[:port] (port from 1 to 65535)"],
    ),
    (
        "sentinel_url_bad_database",
        &["store.url: database \"cache\" is not a number from 0 up"],
    ),
    (
        "tls_ca_missing_file",
        &[
            "store.tls_ca: \"no-such-ca.pem\" cannot be read: No such file or directory (os error 2)",
        ],
    ),
    (
        "tls_ca_not_pem",
        &[
            "store.tls_ca: \"tls_ca_not_pem.yaml\" holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ],
    ),
    (
        "tls_ca_without_tls_url",
        &[concat!(
            "store.tls_ca: applies only to TLS store URLs ",
            "(rediss://, rediss+cluster:// or rediss+sentinel://)"
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
        "query_in_path",
        &[concat!(
            "endpoints[0].path: \"/api/search?q=export\" can never match: ",
            "a request's query and fragment are dropped before matching"
        )],
    ),
    (
        "fragment_in_path",
        &[concat!(
            "endpoints[0].path: \"/docs#intro\" can never match: ",
            "a request's query and fragment are dropped before matching"
        )],
    ),
    (
        "unopenable_redis_url",
        &[concat!(
            "store.url: \"redis://app:***@127.0.0.1:6379/cache\" is no Redis URL the client ",
            "can open: Invalid database number"
        )],
    ),
    (
        "empty_tier_name",
        &["tiers: a tier's name must not be empty"],
    ),
    (
        "backslash_in_path",
        &[concat!(
            "endpoints[0].path: \"/api\\export\" can never match: ",
            "request paths are normalised first (write \"/api/export\")"
        )],
    ),
    (
        "doubled_slash_in_path",
        &[concat!(
            "endpoints[0].path: \"/api//export\" can never match: ",
            "request paths are normalised first (write \"/api/export\")"
        )],
    ),
    (
        "raw_non_ascii_in_path",
        &[concat!(
            "endpoints[0].path: \"/café\" can never match: ",
            "request paths are normalised first (write \"/caf%C3%A9\")"
        )],
    ),
    (
        "dot_segment_in_prefix_path",
        &[concat!(
            "endpoints[1].path: \"/%61pi/./v1/*\" can never match: ",
            "request paths are normalised first (write \"/api/v1/*\")"
        )],
    ),
    (
        "dot_dot_with_parameter_in_path",
        &[concat!(
            "endpoints[1].path: \"/api/..;v1/export\" can never match: a request path with a ",
            "`..` segment (`..;x` and `..` set off by `\\` too) is refused"
        )],
    ),
    (
        "path_without_slash",
        &["endpoints[0].path: \"login\" must start with /"],
    ),
    (
        "duplicate_endpoint_path",
        &["endpoints[2].path: \"/login\" is already matched by an earlier rule (endpoints[0])"],
    ),
    (
        "rule_behind_an_earlier_prefix_rule",
        &[
            "endpoints[1].path: \"/api/export\" is already matched by an earlier rule \
             (endpoints[0], \"/api/*\"): first match wins, so put it before that rule",
        ],
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

/// `many_errors.yaml`: eleven independent mistakes, all reported, in file order.
pub const MANY_ERRORS: &[&str] = &[
    concat!(
        "store.url: unsupported store \"memcached://localhost\" ",
        "(expected memory://, redis://, redis+cluster:// or redis+sentinel://; ",
        "rediss://, rediss+cluster:// or rediss+sentinel:// for TLS)"
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
    "adaptive.load.upstream.latency_target: is required when adaptive.load.source is upstream",
    "adaptive.load.upstream.error_target: must be greater than 0 and at most 1",
    "adaptive.anomaly.threshold: must be between 0 and 1",
];

pub const VALID: &[&str] = &[
    "buckets_faster_than_whole_microseconds",
    "byte_order_mark",
    "minimal",
    "prefix_endpoints",
    "prometheus_load",
    "range_edges",
    "redis_sentinel",
    "redis_tls",
    "rule_load_source",
    "upstream_load",
];
