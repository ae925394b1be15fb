//! The documentation cannot rot. Over `README.md`, `CHANGELOG.md`, `docs/`, `examples/` and the
//! READMEs of `dashboards/` and `models/`:
//!
//! - every relative link resolves to a file of the repository, and a `#anchor` to a heading of
//!   that file (GitHub's slugs);
//! - every ```yaml block is a policy that `ratewarden check-policy` accepts, unless an HTML
//!   comment on the line before says otherwise: `<!-- not-a-policy -->` (skipped),
//!   `<!-- envoy-ratelimit-config -->` (checked as an envoyproxy/ratelimit folder) or
//!   `<!-- from PATH -->` (any language: the block must appear as it is in PATH, relative to
//!   the repository);
//! - the files of `examples/` parse, and its policies and envoyproxy/ratelimit folders pass
//!   `check-policy`;
//! - every metric name the documents mention is served by `/metrics` of a real daemon (after a
//!   little traffic), and every metric served is in the HTTP API reference;
//! - `docs/reference/cli.md` lists exactly the flags of each command's `--help`;
//! - every route of `/openapi.json` is in the HTTP API reference.

mod common;
#[path = "docs/markdown.rs"]
mod markdown;

use common::daemon::{Daemon, header};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry;
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use markdown::Doc;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ADMIN_TOKEN: &str = "docs test token";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `path` relative to the repository, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Files under `dir` (recursively) whose name ends with one of `extensions`.
fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{} is unreadable: {e}", dir.display()));
        for entry in entries.map(|e| e.expect("a directory entry")) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if extensions
                .iter()
                .any(|x| path.extension() == Some(OsStr::new(x)))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The Markdown files this test keeps true.
fn documents() -> Vec<Doc> {
    let mut paths: Vec<PathBuf> = [
        "README.md",
        "CHANGELOG.md",
        "dashboards/README.md",
        "models/README.md",
    ]
    .iter()
    .map(|p| root().join(p))
    .collect();
    paths.extend(files_under(&root().join("docs"), &["md"]));
    paths.extend(files_under(&root().join("examples"), &["md"]));
    paths.iter().map(|p| Doc::read(p)).collect()
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Runs the real binary; (exit code, stdout and stderr).
fn ratewarden<S: AsRef<OsStr>>(args: &[S]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("ratewarden runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("exited, not killed"), text)
}

/// `check-policy` on a file or folder: `None` when it is accepted, else what it printed.
fn check_policy(path: &Path) -> Option<String> {
    let (code, text) = ratewarden(&[OsStr::new("check-policy"), path.as_os_str()]);
    (code != 0 || !text.contains(": ok (")).then_some(text)
}

#[test]
fn relative_links_and_anchors_resolve() {
    let mut anchors: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        for link in &doc.links {
            let target = link.target.as_str();
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let at = doc.at(link.line);
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target, None),
            };
            let path = if file.is_empty() {
                doc.path.clone()
            } else {
                normalize(&doc.path.parent().unwrap().join(file))
            };
            if !path.starts_with(root()) {
                problems.push(format!("{at}: {target} leaves the repository"));
                continue;
            }
            if !path.exists() {
                problems.push(format!("{at}: {target}: no such file ({})", shown(&path)));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if path.extension() != Some(OsStr::new("md")) {
                problems.push(format!(
                    "{at}: {target}: an anchor into a file that is not Markdown"
                ));
                continue;
            }
            let known = anchors
                .entry(path.clone())
                .or_insert_with(|| Doc::read(&path).anchors);
            if !known.iter().any(|a| a == anchor) {
                problems.push(format!(
                    "{at}: {target}: {} has no heading with anchor #{anchor} (it has: {})",
                    shown(&path),
                    known.join(", ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
    assert!(
        checked > 100,
        "only {checked} relative links found: is the parser broken?"
    );
}

#[test]
fn yaml_snippets_are_policies_that_check_policy_accepts() {
    let dir = tempfile::tempdir().unwrap();
    // Snippets name the shipped model as `models/abuse.json`, beside the policy, and
    // `check-policy` loads the model a policy names.
    std::fs::create_dir(dir.path().join("models")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json"),
        dir.path().join("models/abuse.json"),
    )
    .unwrap();
    let mut problems = Vec::new();
    let (mut policies, mut envoy) = (0, 0);
    for doc in documents() {
        for block in doc
            .blocks
            .iter()
            .filter(|b| matches!(b.lang.as_str(), "yaml" | "yml"))
        {
            let at = doc.at(block.line);
            let n = policies + envoy;
            let refused = match block.marker.as_deref() {
                Some(m) if m.starts_with("not-a-policy") || m.starts_with("from ") => continue,
                Some(m) if m.starts_with("envoy-ratelimit-config") => {
                    envoy += 1;
                    let folder = dir.path().join(format!("envoy-{n}"));
                    std::fs::create_dir(&folder).unwrap();
                    std::fs::write(folder.join("snippet.yaml"), &block.text).unwrap();
                    check_policy(&folder)
                }
                Some(other) => Some(format!(
                    "unknown marker <!-- {other} --> (expected not-a-policy, envoy-ratelimit-config or from PATH)"
                )),
                None => {
                    policies += 1;
                    let file = dir.path().join(format!("policy-{n}.yaml"));
                    std::fs::write(&file, &block.text).unwrap();
                    check_policy(&file)
                }
            };
            if let Some(output) = refused {
                problems.push(format!(
                    "{at}: this yaml block is refused (mark it <!-- not-a-policy --> if it is not meant to be a whole policy):\n{output}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(policies >= 5, "only {policies} policy snippets found");
    assert!(
        envoy >= 2,
        "only {envoy} envoyproxy/ratelimit snippets found"
    );
}

#[test]
fn snippets_copied_from_a_file_match_it() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        for block in &doc.blocks {
            let Some(source) = block
                .marker
                .as_deref()
                .and_then(|m| m.strip_prefix("from "))
            else {
                continue;
            };
            checked += 1;
            let path = root().join(source.trim());
            match std::fs::read_to_string(&path) {
                Ok(text) if text.contains(&block.text) => {}
                Ok(_) => problems.push(format!(
                    "{}: the block is not (or no longer) in {}:\n{}",
                    doc.at(block.line),
                    source.trim(),
                    block.text
                )),
                Err(e) => problems.push(format!("{}: {}: {e}", doc.at(block.line), source.trim())),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(checked >= 5, "only {checked} copied snippets found");
}

#[test]
fn examples_parse_and_their_policies_pass_check_policy() {
    let mut policies = vec![root().join("ratewarden.yaml")];
    let mut envoy_folders = BTreeSet::new();
    let mut problems = Vec::new();
    for file in files_under(&root().join("examples"), &["yaml", "yml"]) {
        let text = std::fs::read_to_string(&file).unwrap();
        let documents: Result<Vec<serde_yaml_ng::Value>, _> =
            serde_yaml_ng::Deserializer::from_str(&text)
                .map(serde_yaml_ng::Value::deserialize)
                .collect();
        match documents {
            Err(e) => problems.push(format!("{}: not YAML: {e}", shown(&file))),
            Ok(documents) => {
                for value in documents {
                    if value.get("tiers").is_some() {
                        policies.push(file.clone());
                    } else if value.get("domain").is_some() && value.get("descriptors").is_some() {
                        envoy_folders.insert(file.parent().unwrap().to_path_buf());
                    }
                }
            }
        }
    }
    let checked = policies.len() + envoy_folders.len();
    for path in policies.iter().chain(&envoy_folders) {
        if let Some(output) = check_policy(path) {
            problems.push(format!("{} is refused:\n{output}", shown(path)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(
        policies.len() >= 2 && !envoy_folders.is_empty(),
        "{checked} checked"
    );
}

/// Every `ratewarden_...` name the documents mention, with where it is first mentioned.
fn documented_metrics() -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc.path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("ratewarden_") {
                let previous = line[..at].chars().next_back();
                let tail = &line[at + "ratewarden_".len()..];
                let len = tail
                    .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(tail.len());
                let name = format!("ratewarden_{}", &tail[..len]);
                let part_of_a_word = previous
                    .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
                if len > 0 && !name.ends_with('_') && !part_of_a_word {
                    names.entry(name).or_insert_with(|| doc.at(n + 1));
                }
            }
        }
    }
    names
}

/// Metric names in a `/metrics` text: sample names, and every family with, for histograms,
/// its `_bucket`, `_sum` and `_count` series. Families go to `families` too.
fn served_names(text: &str, names: &mut BTreeSet<String>, families: &mut BTreeSet<String>) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            families.insert(name.to_owned());
            names.insert(name.to_owned());
            if kind == "histogram" {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let name = line.split(['{', ' ']).next().unwrap_or("");
            names.insert(name.to_owned());
        }
    }
}

/// The gRPC address from the daemon's "listening" log line.
fn grpc_addr(daemon: &mut Daemon) -> std::net::SocketAddr {
    let line = daemon.wait_for("ratewarden listening", Duration::from_secs(20));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("grpc="))
        .expect("the listening line names the gRPC address")
        .parse()
        .expect("a socket address")
}

fn post(daemon: &Daemon, path: &str, body: &str) -> u16 {
    daemon.post_json(path, body).0
}

/// Two real daemons with some traffic each, so that every metric has a series: the shipped
/// policy (checks, a burst denial, a batch, forward auth, a report, a stored tier and the tier
/// lookups it starts, an unmatched gRPC descriptor) and a tiny embedded store that fills up
/// (store errors). Returns every name served, and the families.
fn served_metrics() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut shipped = Daemon::start(
        &root().join("ratewarden.yaml"),
        &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    let grpc = grpc_addr(&mut shipped);
    // `/api/search` is a GCRA limit with a burst of 5 under the hourly tier limit: the sixth
    // quick request is denied with reason `burst`, the ones before it come near the limit.
    let statuses: Vec<u16> = (0..6)
        .map(|_| {
            post(
                &shipped,
                "/v1/check",
                r#"{"user":"docs-a","endpoint":"/api/search"}"#,
            )
        })
        .collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429]);
    assert_eq!(
        post(
            &shipped,
            "/v1/check/batch",
            r#"{"requests":[{"user":"docs-b","endpoint":"/x"}]}"#
        ),
        200
    );
    let (status, _, body) = shipped.request(
        "GET",
        "/v1/auth",
        &[("X-Original-URI", "/api/export"), ("X-Api-Key", "docs-c")],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        post(
            &shipped,
            "/v1/report",
            r#"{"user":"docs-a","endpoint":"/login","status":401}"#
        ),
        202
    );
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let (status, _, body) = shipped.request(
        "PUT",
        "/v1/admin/subjects/docs-d/tier",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        r#"{"tier":"pro"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        post(
            &shipped,
            "/v1/check",
            r#"{"user":"docs-e","endpoint":"/x"}"#
        ),
        200
    );
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut client = RateLimitServiceClient::connect(format!("http://{grpc}"))
            .await
            .expect("the gRPC server accepts connections");
        let descriptor = RateLimitDescriptor {
            entries: vec![Entry {
                key: "path".to_owned(),
                value: "/x".to_owned(),
            }],
            ..Default::default()
        };
        client
            .should_rate_limit(RateLimitRequest {
                domain: "docs".to_owned(),
                descriptors: vec![descriptor],
                hits_addend: 0,
            })
            .await
            .expect("a descriptor without a subject passes");
    });

    // 256 shards of one key each: a batch of 1000 new users overflows some of them.
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.yaml");
    std::fs::write(
        &tiny,
        "store: { max_keys: 1 }\ndefault_tier: free\ntiers:\n  free:\n    limits: [ { name: hourly, algorithm: fixed_window, requests: 10, window: 1h } ]\n",
    )
    .unwrap();
    let full = Daemon::start(&tiny, &[]);
    let items: Vec<String> = (0..1000)
        .map(|i| format!(r#"{{"user":"docs-{i}","endpoint":"/x"}}"#))
        .collect();
    full.post_json(
        "/v1/check/batch",
        &format!(r#"{{"requests":[{}]}}"#, items.join(",")),
    );

    let (mut names, mut families) = (BTreeSet::new(), BTreeSet::new());
    for daemon in [&shipped, &full] {
        let (status, headers, text) = daemon.get_full("/metrics");
        assert_eq!(status, 200);
        assert!(header(&headers, "content-type").is_some_and(|c| c.starts_with("text/plain")));
        served_names(&text, &mut names, &mut families);
    }
    (names, families)
}

#[test]
fn metric_names_in_the_docs_are_served_and_every_metric_is_documented() {
    let documented = documented_metrics();
    let (served, families) = served_metrics();
    let unknown: Vec<String> = documented
        .iter()
        .filter(|(name, _)| !served.contains(*name))
        .map(|(name, at)| format!("{at}: {name}"))
        .collect();
    assert!(
        unknown.is_empty(),
        "the docs name metrics that /metrics does not serve:\n{}\nserved: {served:?}",
        unknown.join("\n")
    );
    let reference = std::fs::read_to_string(root().join("docs/reference/http-api.md")).unwrap();
    let undocumented: Vec<&String> = families
        .iter()
        .filter(|f| !reference.contains(&format!("`{f}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "docs/reference/http-api.md does not list {undocumented:?}"
    );
    assert!(
        documented.len() >= 17,
        "only {} metric names found",
        documented.len()
    );
}

/// The long flags (`--name`) written in `text`, as words (not inside `---` or `a--b`).
fn long_flags(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().next_back();
        let tail = &text[at + 2..];
        let len = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(tail.len());
        let word = tail[..len].trim_end_matches('-');
        let starts_a_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '-');
        if starts_a_word && word.starts_with(|c: char| c.is_ascii_lowercase()) {
            flags.insert(format!("--{word}"));
        }
    }
    flags.remove("--help");
    flags.remove("--version");
    flags
}

#[test]
fn the_cli_reference_lists_exactly_the_flags_of_each_command() {
    let (code, top) = ratewarden(&["--help"]);
    assert_eq!(code, 0);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(
        commands,
        ["serve", "check-policy", "simulate", "train", "replay"]
    );

    let reference = std::fs::read_to_string(root().join("docs/reference/cli.md")).unwrap();
    for command in commands {
        let heading = format!("## {command}\n");
        let start = reference
            .find(&heading)
            .unwrap_or_else(|| panic!("docs/reference/cli.md has no section {heading:?}"));
        let section = &reference[start + heading.len()..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        let (code, help) = ratewarden(&[command, "--help"]);
        assert_eq!(code, 0, "{help}");
        let options: String = help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .filter_map(|l| l.split([' ', ',']).find(|w| w.starts_with("--")))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            long_flags(section),
            long_flags(&options),
            "docs/reference/cli.md, section {command}, against `ratewarden {command} --help`"
        );
    }
}

#[test]
fn every_route_of_the_openapi_document_is_in_the_http_reference() {
    let daemon = Daemon::start(&root().join("ratewarden.yaml"), &[]);
    let (status, body) = daemon.get("/openapi.json");
    assert_eq!(status, 200);
    let document: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let paths = document["paths"].as_object().expect("paths");
    let reference = std::fs::read_to_string(root().join("docs/reference/http-api.md")).unwrap();
    let missing: Vec<&String> = paths
        .keys()
        .filter(|p| !reference.contains(p.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference/http-api.md does not mention {missing:?}"
    );
    assert!(paths.len() >= 10, "{:?}", paths.keys());
}
