//! Just enough Markdown for the documentation tests: fenced code blocks (with the HTML comment
//! that precedes each), headings and their GitHub anchors, and link targets outside code.

use std::path::{Path, PathBuf};

/// One Markdown file, read into the parts the tests look at.
pub struct Doc {
    pub path: PathBuf,
    pub blocks: Vec<Block>,
    /// Anchors of the headings (GitHub's slugs, duplicates numbered) and of `<a id>` tags.
    pub anchors: Vec<String>,
    pub links: Vec<Link>,
}

/// A fenced code block.
pub struct Block {
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The first word of the info string (`yaml`, `sh`), empty when there is none.
    pub lang: String,
    /// The content, without the block's own indentation.
    pub text: String,
    /// The text of an HTML comment on the nearest non-blank line before the fence
    /// (`not-a-policy`), if there is one.
    pub marker: Option<String>,
}

/// A link (or image) target written outside code.
pub struct Link {
    pub line: usize,
    pub target: String,
}

impl Doc {
    pub fn read(path: &Path) -> Doc {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{} is unreadable: {e}", path.display()));
        parse(path, &text)
    }

    /// `path:line`, for messages.
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.path.display())
    }
}

pub fn parse(path: &Path, text: &str) -> Doc {
    let lines: Vec<&str> = text.lines().collect();
    let mut doc = Doc {
        path: path.to_path_buf(),
        blocks: Vec::new(),
        anchors: Vec::new(),
        links: Vec::new(),
    };
    let mut slugs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some((indent, fence, info)) = fence_open(line) {
            let marker = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| comment(l));
            let mut content = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && !fence_closes(lines[j], &fence) {
                content.push(strip_indent(lines[j], indent));
                j += 1;
            }
            let mut text = content.join("\n");
            if !content.is_empty() {
                text.push('\n');
            }
            doc.blocks.push(Block {
                line: i + 1,
                lang: info.split_whitespace().next().unwrap_or("").to_owned(),
                text,
                marker,
            });
            i = j + 1;
            continue;
        }
        if let Some(heading) = heading(line) {
            let base = slug(&heading);
            let count = slugs.iter().filter(|s| **s == base).count();
            slugs.push(base.clone());
            doc.anchors.push(if count == 0 {
                base
            } else {
                format!("{base}-{count}")
            });
        }
        doc.anchors.extend(html_ids(line));
        for target in link_targets(line) {
            doc.links.push(Link {
                line: i + 1,
                target,
            });
        }
        i += 1;
    }
    doc
}

/// An opening fence: (its indentation, the fence itself, the info string).
fn fence_open(line: &str) -> Option<(usize, String, String)> {
    // Any indentation: fences inside list items are indented, and these documents have no
    // indented (unfenced) code blocks.
    let trimmed = line.trim_start_matches(' ');
    let indent = line.len() - trimmed.len();
    let ch = trimmed.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let run = trimmed.chars().take_while(|c| *c == ch).count();
    if run < 3 {
        return None;
    }
    let info = &trimmed[run..];
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((indent, trimmed[..run].to_owned(), info.trim().to_owned()))
}

fn fence_closes(line: &str, fence: &str) -> bool {
    let trimmed = line.trim();
    let ch = fence.chars().next().unwrap_or('`');
    trimmed.len() >= fence.len() && trimmed.chars().all(|c| c == ch)
}

fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

/// The text of a line that is only an HTML comment.
fn comment(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t.strip_prefix("<!--")?.strip_suffix("-->")?;
    Some(inner.trim().to_owned())
}

/// The text of an ATX heading.
fn heading(line: &str) -> Option<String> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let level = t.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim().to_owned())
}

/// GitHub's anchor for a heading: its rendered text in lower case, punctuation dropped, spaces
/// as hyphens.
pub fn slug(heading: &str) -> String {
    let text = link_text_only(heading);
    text.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// `[text](target)` as `text`, without the code and emphasis marks.
fn link_text_only(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](") else {
            break;
        };
        let Some(end) = rest[open + close..].find(')') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..open + close]);
        rest = &rest[open + close + end + 1..];
    }
    out.push_str(rest);
    out.replace(['`', '*'], "")
}

fn html_ids(line: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for attribute in ["id=\"", "name=\""] {
        let mut rest = line;
        while let Some(start) = rest.find("<a ") {
            rest = &rest[start + 3..];
            let tag_end = rest.find('>').unwrap_or(rest.len());
            if let Some(at) = rest[..tag_end].find(attribute) {
                let value = &rest[at + attribute.len()..tag_end];
                if let Some(end) = value.find('"') {
                    ids.push(value[..end].to_owned());
                }
            }
        }
    }
    ids
}

/// Targets of inline links and images (`[x](t)`, `![x](t "title")`) and of link reference
/// definitions (`[x]: t`), ignoring inline code.
fn link_targets(line: &str) -> Vec<String> {
    let text = without_code_spans(line);
    let mut targets = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        if let Some(close) = trimmed.find("]:") {
            if let Some(target) = trimmed[close + 2..].split_whitespace().next() {
                targets.push(target.trim_matches(['<', '>']).to_owned());
            }
        }
    }
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let inside = after[..end].trim();
        let target = inside.split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            targets.push(target.trim_matches(['<', '>']).to_owned());
        }
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// The line with every inline code span blanked out.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let fence = &rest[start..start + run];
        out.push_str(&rest[..start]);
        match rest[start + run..].find(fence) {
            Some(end) => rest = &rest[start + run + end + run..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_github() {
        assert_eq!(
            slug("GET /v1/auth (forward auth)"),
            "get-v1auth-forward-auth"
        );
        assert_eq!(
            slug("Runbook: RatewardenStoreErrors"),
            "runbook-ratewardenstoreerrors"
        );
        assert_eq!(
            slug("1. Replay recorded traffic"),
            "1-replay-recorded-traffic"
        );
        assert_eq!(slug("`serve`"), "serve");
        assert_eq!(
            slug("Redis, Redis Cluster and Redis Sentinel"),
            "redis-redis-cluster-and-redis-sentinel"
        );
        assert_eq!(slug("[Link](x.md) text"), "link-text");
    }

    #[test]
    fn links_outside_code_only() {
        let doc = parse(
            Path::new("x.md"),
            "# A\n# A\nsee [b](b.md#a) and `[c](c.md)`\n```\n[d](d.md)\n```\n![i](i.png \"t\")\n[r]: r.md\n",
        );
        let targets: Vec<&str> = doc.links.iter().map(|l| l.target.as_str()).collect();
        assert_eq!(targets, ["b.md#a", "i.png", "r.md"]);
        assert_eq!(doc.anchors, ["a", "a-1"]);
    }

    #[test]
    fn blocks_keep_their_marker_and_lose_their_indent() {
        let doc = parse(
            Path::new("x.md"),
            "<!-- not-a-policy -->\n```yaml\na: 1\n```\n\n- item\n\n  ```yaml title\n  b: 2\n  ```\n",
        );
        assert_eq!(doc.blocks.len(), 2);
        assert_eq!(doc.blocks[0].marker.as_deref(), Some("not-a-policy"));
        assert_eq!(doc.blocks[0].text, "a: 1\n");
        assert_eq!(doc.blocks[1].marker, None);
        assert_eq!(doc.blocks[1].lang, "yaml");
        assert_eq!(doc.blocks[1].text, "b: 2\n");
    }
}
