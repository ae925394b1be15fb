//! The files of `dashboards/` on their own: `promtool` checks and unit-tests the rules, every
//! alert links by absolute URL to its runbook section in docs/guides/runbooks.md, and the dashboards are importable Grafana JSON whose panels
//! follow the `rule` and `tier` variables and include every panel issue 6 asks for.

use crate::{panels, repo};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

fn promtool(args: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("promtool runs (scripts/test installs Debian's prometheus package)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

#[test]
fn alert_rules_pass_promtool_check_and_their_unit_tests() {
    let checked = promtool(&["check", "rules", "dashboards/alerts.yml"]);
    assert!(checked.contains("SUCCESS: 12 rules found"), "{checked}");
    let tested = promtool(&["test", "rules", "dashboards/alerts_test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
    let config = promtool(&["check", "config", "dashboards/prometheus.yml"]);
    assert!(config.contains("SUCCESS"), "{config}");
    // Every alert has a summary, a description and an absolute runbook URL (to the repository
    // of Cargo.toml, so it works from someone else's Prometheus) whose anchor is a section of
    // docs/guides/runbooks.md.
    let rules: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo("dashboards/alerts.yml")).expect("alerts.yml is readable"),
    )
    .expect("alerts.yml is YAML");
    let runbooks = std::fs::read_to_string(repo("docs/guides/runbooks.md"))
        .expect("docs/guides/runbooks.md is readable");
    let anchors: BTreeSet<String> = runbooks
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|heading| heading.trim().to_lowercase())
        .collect();
    let base = format!(
        "{}/blob/main/docs/guides/runbooks.md#",
        env!("CARGO_PKG_REPOSITORY")
    );
    assert!(base.starts_with("https://"), "{base}");
    for rule in rules["groups"][0]["rules"].as_array().expect("rules") {
        let name = rule["alert"].as_str().expect("an alert name");
        for annotation in ["summary", "description", "runbook_url"] {
            assert!(
                rule["annotations"][annotation].is_string(),
                "{name} has no {annotation}"
            );
        }
        let url = rule["annotations"]["runbook_url"].as_str().unwrap_or("");
        let anchor = url
            .strip_prefix(&base)
            .unwrap_or_else(|| panic!("{name}: runbook_url {url:?} does not start with {base}"));
        assert_eq!(anchor, name.to_lowercase(), "{name}: {url}");
        assert!(
            anchors.contains(anchor),
            "{name}: docs/guides/runbooks.md has no section \"## {name}\""
        );
    }
}

#[test]
fn dashboards_are_importable_grafana_json_with_rule_and_tier_variables() {
    let mut titles = BTreeSet::new();
    for stem in panels::DASHBOARDS {
        let d = panels::load(stem);
        let input = &d["__inputs"][0];
        assert_eq!(input["name"], "DS_PROMETHEUS", "{stem}");
        assert_eq!(input["pluginId"], "prometheus", "{stem}");
        assert!(d["schemaVersion"].as_u64().unwrap_or(0) >= 39, "{stem}");
        assert!(d["id"].is_null(), "{stem}: an exported dashboard has no id");
        assert!(d["uid"].as_str().is_some_and(|u| !u.is_empty()), "{stem}");
        assert!(titles.insert(d["title"].as_str().unwrap().to_owned()));
        let variables: Vec<&Value> = d["templating"]["list"].as_array().unwrap().iter().collect();
        for name in ["rule", "tier"] {
            let v = variables
                .iter()
                .find(|v| v["name"] == name)
                .unwrap_or_else(|| panic!("{stem} has no {name} variable"));
            assert_eq!(v["includeAll"], true, "{stem} {name}");
            assert_eq!(v["multi"], true, "{stem} {name}");
            assert_eq!(v["allValue"], ".*", "{stem} {name}");
            assert_eq!(v["datasource"]["uid"], "${DS_PROMETHEUS}", "{stem} {name}");
        }
        let mut ids = BTreeSet::new();
        for panel in panels::panels(&d) {
            let title = panel["title"].as_str().unwrap_or("");
            assert!(
                ids.insert(panel["id"].as_u64().unwrap()),
                "{stem}: id of {title}"
            );
            let grid = &panel["gridPos"];
            let (x, w) = (grid["x"].as_u64().unwrap(), grid["w"].as_u64().unwrap());
            assert!(x + w <= 24, "{stem}/{title} is wider than the grid");
            if panel["type"] == "row" {
                continue;
            }
            assert!(
                panel["description"].as_str().is_some_and(|s| !s.is_empty()),
                "{stem}/{title}"
            );
            assert_eq!(
                panel["datasource"]["uid"], "${DS_PROMETHEUS}",
                "{stem}/{title}"
            );
            let defaults = &panel["fieldConfig"]["defaults"];
            assert!(
                defaults["unit"].as_str().is_some_and(|u| !u.is_empty()),
                "{stem}/{title} has no unit"
            );
            assert!(
                defaults["thresholds"]["steps"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty()),
                "{stem}/{title} has no thresholds"
            );
            for target in panel["targets"].as_array().expect("targets") {
                assert_eq!(
                    target["datasource"]["uid"], "${DS_PROMETHEUS}",
                    "{stem}/{title}"
                );
                let expr = target["expr"].as_str().unwrap_or("");
                // A multi-value or All selection is a regex: `=~` only.
                assert!(!expr.contains("=\"$"), "{stem}/{title}: {expr}");
                // Panels of per-rule metrics follow both variables (every selector the tier;
                // a denominator of all decisions may leave out the rule).
                let per_rule = [
                    "ratewarden_decisions_total",
                    "ratewarden_rejections_total",
                    "ratewarden_bursts_total",
                    "ratewarden_near_limit_total",
                ];
                if per_rule.iter().any(|m| expr.contains(m)) {
                    assert!(
                        expr.contains("rule=~\"$rule\""),
                        "{stem}/{title} ignores $rule: {expr}"
                    );
                    for metric in per_rule {
                        for rest in expr.split(metric).skip(1) {
                            let selector = rest.strip_prefix('{').and_then(|r| r.split_once('}'));
                            assert!(
                                selector.is_some_and(|(s, _)| s.contains("tier=~\"$tier\"")),
                                "{stem}/{title} ignores $tier: {expr}"
                            );
                        }
                    }
                }
            }
        }
    }
    // The panels issue 6 lists, by title.
    let queries: Vec<panels::PanelQuery> = panels::DASHBOARDS
        .iter()
        .flat_map(|s| panels::queries(s))
        .collect();
    for (stem, title) in [
        ("overview", "Decision rate"),
        ("overview", "Decisions: allowed / denied"),
        ("overview", "Rejections by reason"),
        ("overview", "Rejections by rule and tier"),
        ("overview", "Bursts"),
        ("overview", "Near limit"),
        ("overview", "Decision latency by API"),
        ("overview", "Store latency"),
        ("overview", "Store errors by action"),
        ("overview", "Load factor and CPU"),
        ("overview", "Control cycle time"),
        ("overview", "Config and model reloads"),
        // Issue 17: each load source's signal, target and factor.
        ("overview", "Load signal and target by scope"),
        ("overview", "Load factor by source scope"),
        ("overview", "Load query errors"),
        ("overview", "Upstream latency against target"),
        ("overview", "Upstream 5xx share against target"),
        ("abuse", "Flagged subjects over time"),
        ("abuse", "Abuse score distribution"),
        ("abuse", "Anomaly rejections by rule"),
        ("abuse", "Shadow-mode would-be rejections per rule"),
        ("abuse", "Top rules by rejection ratio"),
    ] {
        assert!(
            queries
                .iter()
                .any(|q| q.dashboard == stem && q.panel == title),
            "{stem} has no panel {title:?}"
        );
    }
}
