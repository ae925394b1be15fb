//! The dashboards as data: every panel query of `dashboards/*.json`, with Grafana's template
//! variables substituted the way Grafana would for "All".

use serde_json::Value;
use std::path::PathBuf;

/// The dashboards, by file stem.
pub const DASHBOARDS: [&str; 2] = ["overview", "abuse"];

/// Grafana's `$__rate_interval` for a datasource scraped every second: max(interval + scrape,
/// 4 x scrape).
pub const RATE_INTERVAL: &str = "4s";

/// One PromQL query of one panel.
#[derive(Debug, Clone)]
pub struct PanelQuery {
    pub dashboard: String,
    pub panel: String,
    pub ref_id: String,
    pub expr: String,
    pub legend: String,
    /// Grafana runs it once at the end of the range (stat, bar gauge), not as a range.
    pub instant: bool,
}

impl PanelQuery {
    /// `overview/Rejection ratio/A`: how failures name a query.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.dashboard, self.panel, self.ref_id)
    }

    /// The query as Grafana sends it with every variable on "All", over a range of `range`.
    pub fn substituted(&self, range: &str) -> String {
        substitute(&self.expr, range)
    }
}

pub fn path(stem: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("dashboards/{stem}.json"))
}

pub fn load(stem: &str) -> Value {
    let text = std::fs::read_to_string(path(stem)).expect("the dashboard file is readable");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("dashboards/{stem}.json: {e}"))
}

/// Every panel, rows' nested panels included (a collapsed row keeps its panels inside).
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut all = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        all.push(panel);
        for nested in panel["panels"].as_array().into_iter().flatten() {
            all.push(nested);
        }
    }
    all
}

/// Every query of every panel of the dashboard `stem`.
pub fn queries(stem: &str) -> Vec<PanelQuery> {
    let dashboard = load(stem);
    let mut all = Vec::new();
    for panel in panels(&dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            all.push(PanelQuery {
                dashboard: stem.to_owned(),
                panel: panel["title"].as_str().unwrap_or("").to_owned(),
                ref_id: target["refId"].as_str().unwrap_or("").to_owned(),
                expr: target["expr"].as_str().unwrap_or("").to_owned(),
                legend: target["legendFormat"].as_str().unwrap_or("").to_owned(),
                instant: target["instant"].as_bool().unwrap_or(false),
            });
        }
    }
    all
}

/// Grafana's substitution with every variable on "All" (`allValue` `.*`), `$__interval` at the
/// 1 s step and `$__range` the whole time range.
pub fn substitute(expr: &str, range: &str) -> String {
    let mut out = expr.to_owned();
    for (name, value) in [
        ("__rate_interval", RATE_INTERVAL),
        ("__interval", "1s"),
        ("__range", range),
        ("rule", ".*"),
        ("tier", ".*"),
    ] {
        out = out
            .replace(&format!("${{{name}}}"), value)
            .replace(&format!("[[{name}]]"), value)
            .replace(&format!("${name}"), value);
    }
    out
}

/// The `ratewarden_*` names a query reads.
pub fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("ratewarden_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names.sort();
    names.dedup();
    names
}

/// A template variable's `label_values(SELECTOR, LABEL)`: (selector, label).
pub fn label_values(query: &str) -> Option<(String, String)> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, label) = inner.rsplit_once(',')?;
    Some((selector.trim().to_owned(), label.trim().to_owned()))
}
