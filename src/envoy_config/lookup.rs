//! Which configured descriptor a request descriptor falls under, as envoyproxy/ratelimit
//! decides it.
//!
//! The request's entries walk the tree one level each: an exact `value` first, then a value
//! prefix (`/api/*`), then the key-only wildcard. A limit applies only when the last entry
//! lands on a descriptor with a `rate_limit`: a request with more or fewer entries than such a
//! path matches nothing.

use super::{Domain, Node, Rule};
use smallvec::SmallVec;

/// A request descriptor's place in the tree.
#[derive(Debug, Clone)]
pub struct Matched<'a> {
    pub node: &'a Node,
    pub rule: &'a Rule,
    /// Per entry, the prefix whose matches share one counter (`share_threshold`), else `None`
    /// (the counter is per value).
    pub shared: SmallVec<[Option<&'a str>; 4]>,
}

impl Domain {
    pub fn lookup<'a>(&'a self, entries: &[(&str, &str)]) -> Option<Matched<'a>> {
        let mut level = &self.root;
        let mut shared = SmallVec::new();
        let mut last: Option<&Node> = None;
        for (key, value) in entries {
            if let Some(previous) = last {
                level = &previous.children;
            }
            let nodes = level.by_key.get(*key)?;
            let (node, prefix) = match nodes.exact.get(*value) {
                Some(node) => (node, None),
                None => match nodes.prefixes.iter().find(|(p, _)| value.starts_with(p)) {
                    Some((prefix, node)) => (node, Some(prefix.as_str())),
                    None => (nodes.any.as_deref()?, None),
                },
            };
            shared.push(prefix.filter(|_| node.share_threshold));
            last = Some(node);
        }
        let node = last?;
        Some(Matched {
            node,
            rule: node.rule.as_ref()?,
            shared,
        })
    }
}
