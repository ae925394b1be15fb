//! Every relative link of the documents resolves to a file of the repository, and a `#anchor` to
//! a heading of that file (GitHub's slugs).

use crate::markdown::Doc;
use crate::repo::{documents, root, shown};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

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
