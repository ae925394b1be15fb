//! A check request in domain terms, and the errors a request can have in the policy's eyes.

use crate::policy::EndpointPath;
use std::net::IpAddr;
use std::num::NonZeroU32;

/// The longest subject accepted, on every API.
pub const MAX_USER_BYTES: usize = 512;
/// The longest endpoint accepted, as sent (query included), on every API.
pub const MAX_ENDPOINT_BYTES: usize = 2048;

/// The largest cost one request may carry (Envoy's `hits_addend` goes this far in practice).
pub const MAX_COST: u32 = 1_000_000;

/// A request's cost: 1 to [`MAX_COST`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost(NonZeroU32);

impl Cost {
    pub const ONE: Cost = Cost(NonZeroU32::MIN);

    pub fn new(n: u64) -> Option<Cost> {
        u32::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_COST)
            .and_then(NonZeroU32::new)
            .map(Cost)
    }

    pub fn get(self) -> u64 {
        u64::from(self.0.get())
    }
}

/// "May this subject call this endpoint now?"
#[derive(Debug, Clone)]
pub struct CheckRequest<'a> {
    pub user: &'a str,
    /// Normalised as it is built: rules, features and logs all see the one spelling.
    pub endpoint: EndpointPath<'a>,
    /// The tier named by the caller; `None` asks the tier store, then the default tier.
    pub tier: Option<&'a str>,
    pub ip: Option<IpAddr>,
    pub cost: Cost,
}

impl<'a> CheckRequest<'a> {
    pub fn new(user: &'a str, endpoint: &'a str) -> Self {
        Self {
            user,
            endpoint: EndpointPath::new(endpoint),
            tier: None,
            ip: None,
            cost: Cost::ONE,
        }
    }
}

/// A request the policy cannot decide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("unknown tier \"{0}\"")]
    UnknownTier(String),
    #[error("rule {rule} ({path}) counts per IP address (key: ip) and the request has no `ip`")]
    MissingIp { rule: String, path: String },
}

/// The endpoint of a request URI: its path, without scheme, host, query or fragment (forward
/// auth's `X-Original-URI`, Envoy's `:path`), as sent: [`EndpointPath`] normalises it. The
/// query goes first, so a `://` in it (`/api/export?next=https://h/free`) names no origin, and
/// only a URI that starts with a scheme (not with `/`) has an origin (or a bare scheme) to drop.
pub fn path_of(uri: &str) -> &str {
    let end = uri.find(['?', '#']).unwrap_or(uri.len());
    let before_query = &uri[..end];
    let path = match before_query.split_once("://") {
        // The host ends at `\` too, as WHATWG URL parsers read `http://h\api`.
        Some((scheme, rest)) if is_scheme(scheme) => {
            rest.find(['/', '\\']).map_or("/", |i| &rest[i..])
        }
        // `http:/api` names a scheme and no host: its path is `/api`, as Go's parser reads it.
        _ => match before_query.split_once(':') {
            Some((scheme, rest)) if is_scheme(scheme) && rest.starts_with(['/', '\\']) => rest,
            _ => before_query,
        },
    };
    if path.is_empty() { "/" } else { path }
}

/// RFC 3986's `scheme`: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}
