//! A request's endpoint in the one spelling endpoint rules are matched against.
//!
//! Backends (Go's net/http, werkzeug, nginx's `location`) serve `/api/%65xport`,
//! `/api//export`, `/api/./export` and `/api/x/../export` as `/api/export`; matched as sent,
//! each spelling would dodge the rule for `/api/export`. So every path ratewarden interprets is
//! normalised once, when a request is built, and features, logs and reports see the same path:
//!
//! - percent-encoded unreserved characters (`A-Z a-z 0-9 - . _ ~`, RFC 3986 §2.3) are decoded,
//!   other percent-encodings get upper-case hex (§6.2.2.1-2), and a `%` that starts no
//!   percent-encoding becomes `%25` (what a lenient server reads it as; a strict one refuses
//!   it), so that no decoding can make a new encoding appear;
//! - `%2F` is read as the `/` it encodes, as nginx's `location` matching, werkzeug and Go's
//!   `URL.Path` read it: a backend that keeps it encoded serves such a path as some other
//!   (usually unknown) resource, so this reading can charge a request to a rule it does not
//!   reach, but never lets `/api%2Fexport` dodge the rule for `/api/export`;
//! - a `\` is read as `/` for the same reason: WHATWG URL parsers (the `URL` of Deno, Bun,
//!   Cloudflare Workers and Node) and IIS serve `/api\export` as `/api/export` (RFC 3986 has
//!   no raw `\` in a path, so no client means anything else by it; `%5C` is kept);
//! - a byte no URI holds raw (a control, a space, a non-ASCII byte, a backtick, `"<>[]^{|}`) is
//!   percent-encoded (§2.1), as browsers and proxies send it, so `/café` and `/caf%C3%A9` are
//!   one endpoint (a rule is written in the encoded form, which matches both);
//! - runs of `/` are merged into one, then dot-segments are removed (§5.2.4; a `..` above the
//!   root stays at the root), as nginx's `merge_slashes` and Go's `path.Clean` do.
//!
//! Servers part over `..`: nginx and Go remove it with the segment before it, a backend that
//! routes the raw path (Express's `/api/export/*`) serves `/api/export/../x` under
//! `/api/export/`, and RFC 3986 and Go part again after an empty segment (`/api//../export`).
//! Which one the backend does cannot be known here, and browsers and HTTP libraries never send
//! a `..`, so the adapters refuse every path with one ([`EndpointPath::parse`]) instead of
//! guessing; `normalise` still resolves it for recorded traffic (`replay`, `train`). A final
//! `.` segment parts them too (`/api/export/.` is `/api/export/` to nginx and the RFC,
//! `/api/export` to Go's `path.Clean` and Python), and is refused alike.
//!
//! Anything else is kept: case, other encodings such as `%3B`, a trailing slash. A path that
//! does not start with `/` (or a `\`) is kept as it is: no rule can match it (rule paths start with `/`),
//! and normalising `a/../api/export` would root it at a rule the client never named. A path
//! with nothing to change is borrowed, not copied: this runs on every decision.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

mod percent;
use percent::{Escape, escape_at, needs_encoding, push_percent_normalised};

/// An endpoint path in normal form; built only through [`EndpointPath::new`] or
/// [`EndpointPath::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPath<'a>(Cow<'a, str>);

impl<'a> EndpointPath<'a> {
    /// The normal form of `raw`'s path, without its query and fragment (borrowed when that
    /// path is in normal form already). The query goes before dot-segments are resolved, so
    /// `/api/export?next=/../../free` is `/api/export`, not `/free`.
    pub fn new(raw: &'a str) -> Self {
        let end = raw.find(['?', '#']).unwrap_or(raw.len());
        Self(normalise(&raw[..end]))
    }

    /// As [`EndpointPath::new`], refusing a path servers read as two endpoints
    /// (`/api/export/../x`): what the adapters use on a request's path.
    pub fn parse(raw: &'a str) -> Result<Self, AmbiguousPath> {
        unambiguous(raw)?;
        Ok(Self::new(raw))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the path was taken as sent, without a copy.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.0, Cow::Borrowed(_))
    }
}

impl<'a> From<&'a str> for EndpointPath<'a> {
    fn from(raw: &'a str) -> Self {
        Self::new(raw)
    }
}

impl Deref for EndpointPath<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for EndpointPath<'_> {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl fmt::Display for EndpointPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The normal form of `path` (see the module's documentation); borrowed when it is `path`.
pub fn normalise(path: &str) -> Cow<'_, str> {
    if !rooted(path) || is_normal(path) {
        return Cow::Borrowed(path);
    }
    Cow::Owned(resolve(
        &encoded_slashes_decoded(&backslashes_as_slashes(path)),
        EncodedSlash::Decoded,
    ))
}

/// Whether `path` starts at the root: with `/`, or a `\` that reads as one.
fn rooted(path: &str) -> bool {
    path.starts_with(['/', '\\'])
}

/// `path` with every `\` replaced by `/`, as WHATWG URL parsers and IIS read it.
fn backslashes_as_slashes(path: &str) -> Cow<'_, str> {
    match path.contains('\\') {
        true => Cow::Owned(path.replace('\\', "/")),
        false => Cow::Borrowed(path),
    }
}

/// `path` with every `%2F` (either case) replaced by `/`, before segments are split, so that
/// `/a%2F..%2Fb` loses its dot-segment as `/a/../b` does.
fn encoded_slashes_decoded(path: &str) -> Cow<'_, str> {
    if !path.contains("%2F") && !path.contains("%2f") {
        return Cow::Borrowed(path);
    }
    Cow::Owned(path.replace("%2F", "/").replace("%2f", "/"))
}

/// A path that servers read as two different endpoints: see [`EndpointPath::parse`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmbiguousPath {
    #[error(
        "the path is ambiguous: its `..` segment takes it to {resolved:?} where dot-segments are \
         removed ({readers}) but not where the path is routed as sent (Express); send the path \
         without `..`"
    )]
    DotDotSegment {
        /// The path's normal form here: dot-segments removed.
        resolved: String,
        /// The servers that read the spellings of `..` the path uses as dot-segments.
        readers: String,
    },
    #[error(
        "the path is ambiguous: with `%2F` read as `/` it is {decoded:?} (nginx, werkzeug, Go) \
         and {encoded:?} where `%2F` stays in its segment (Express, Rails); send the one you mean"
    )]
    EncodedSlash {
        /// The path's normal form here, `%2F` read as `/`.
        decoded: String,
        /// Its normal form with `%2F` kept inside its segment.
        encoded: String,
    },
    #[error(
        "the path is ambiguous: its final `.` segment makes it {with_slash:?} (nginx, RFC 3986) \
         and {without:?} (Go's path.Clean, Python's http.server); send the one you mean"
    )]
    FinalDotSegment {
        /// The path's normal form here: the `.` removed, its `/` kept.
        with_slash: String,
        /// The same without its final `/`.
        without: String,
    },
}

/// `Ok` unless `raw`'s path (before any query or fragment) reads as two endpoints: a `..`
/// segment in any spelling (`/api/export/../x` is `/api/x` to nginx and Go, and under
/// `/api/export/` to a backend routing the raw path: a prefix rule must not be dodged either
/// way; `..;x` and `..\x` too), a `%2F` that makes or removes a segment when read as `/`
/// (`/a/.%2Fb`), or a final `.` segment (`/api/export/.` is `/api/export/` to nginx and the
/// RFC, `/api/export` to Go's `path.Clean` and Python's `http.server`: an exact rule on one and
/// a prefix rule on the other must not be dodged either way).
fn unambiguous(raw: &str) -> Result<(), AmbiguousPath> {
    let raw_path = &raw[..raw.find(['?', '#']).unwrap_or(raw.len())];
    if !rooted(raw_path) {
        return Ok(());
    }
    let path = encoded_slashes_decoded(raw_path);
    if matches!(path, Cow::Owned(_)) {
        let decoded = normalise(&path);
        // Both readings take `\` as `/`: only `%2F` tells them apart here.
        let encoded = resolve(&backslashes_as_slashes(raw_path), EncodedSlash::Kept);
        // Equal once each `%2F` is a `/` (runs of them merged): only the spelling differs.
        if merge_slash_runs(&encoded.replace("%2F", "/")) != *decoded {
            return Err(AmbiguousPath::EncodedSlash {
                decoded: decoded.into_owned(),
                encoded,
            });
        }
    }
    if (path.contains("..") || path.contains("%2")) && path.split(['/', '\\']).any(is_dot_dot) {
        return Err(AmbiguousPath::DotDotSegment {
            resolved: normalise(&dot_dots_spelt_plainly(&path)).into_owned(),
            readers: dot_dot_readers(&path),
        });
    }
    if path.rsplit(['/', '\\']).next().is_some_and(is_dot) {
        let with_slash = normalise(&path).into_owned();
        let without = with_slash.trim_end_matches('/');
        if !without.is_empty() {
            return Err(AmbiguousPath::FinalDotSegment {
                without: without.to_owned(),
                with_slash,
            });
        }
    }
    Ok(())
}

/// Whether `segment` is `.` once percent-normalised (`%2e` too).
fn is_dot(segment: &str) -> bool {
    segment == "." || segment.eq_ignore_ascii_case("%2e")
}

/// Who reads the spellings of `..` in `path` (which holds one) as dot-segments: a plain or
/// percent-encoded `..` is read so nearly everywhere; `..;x` and `..` set off by `\` only by
/// some servers, which the message names so the client sees why its path counts. `resolved`
/// reads every spelling the path uses, so each reader of one is named.
fn dot_dot_readers(path: &str) -> String {
    let slash_split = || path.split('/').filter(|segment| is_dot_dot(segment));
    let plain = slash_split().any(|segment| !segment.contains(';'));
    // `a\..;x` too: a server that reads both `\` and `;x` so takes it as `..`.
    let parameter = path
        .split(['/', '\\'])
        .any(|segment| segment.contains(';') && is_dot_dot(segment));
    let backslash =
        path.split(['/', '\\']).filter(|s| is_dot_dot(s)).count() > slash_split().count();
    let readers: Vec<&str> = [
        (plain, "nginx, Go"),
        (parameter, "Tomcat and Spring, which read `..;x` as `..`"),
        (
            backslash,
            "WHATWG URL parsers and IIS, which read `\\` as `/`",
        ),
    ]
    .into_iter()
    .filter_map(|(used, readers)| used.then_some(readers))
    .collect();
    readers.join("; ")
}

/// Whether a rule's `body` (a prefix rule's without its `*`) holds a complete segment that is
/// a `..` in some spelling, `..;x` or one set off by `\`: requests with one are refused
/// ([`EndpointPath::parse`]), so such a rule never matches. A prefix's last, partial segment
/// may go on as a name (`/api/..*` matches `/api/..data`), unless its `;` has ended the `..`
/// already (`/api/..;*`).
pub fn has_dot_dot_segment(body: &str, prefix: bool) -> bool {
    let (complete, partial) = match prefix {
        true => body.split_at(body.rfind(['/', '\\']).unwrap_or(0)),
        false => (body, ""),
    };
    complete.split(['/', '\\']).any(is_dot_dot)
        || (partial.contains(';') && is_dot_dot(partial.get(1..).unwrap_or_default()))
}

/// `path` with `\` read as `/` and every `..;x` segment as `..`, as the backends that read
/// them so do: where the refused path leads them.
fn dot_dots_spelt_plainly(path: &str) -> Cow<'_, str> {
    if !path.contains(['\\', ';']) {
        return Cow::Borrowed(path);
    }
    let segments: Vec<&str> = path
        .split(['/', '\\'])
        .map(|segment| if is_dot_dot(segment) { ".." } else { segment })
        .collect();
    Cow::Owned(segments.join("/"))
}

/// Whether `segment` is `..` once percent-normalised (`%2e%2E` too) and stripped of `;`
/// parameters (`..;x`, which Tomcat and Spring read as `..`). The caller splits at `\` too,
/// which WHATWG URL parsers read as `/`.
fn is_dot_dot(segment: &str) -> bool {
    let segment = segment.split(';').next().unwrap_or_default();
    if segment == ".." {
        return true;
    }
    if !segment.contains('%') || segment.len() > "%2E%2E".len() {
        return false;
    }
    let mut normal = String::with_capacity(segment.len());
    push_percent_normalised(&mut normal, segment, EncodedSlash::Decoded);
    normal == ".."
}

/// `path` with every run of `/` merged into one.
fn merge_slash_runs(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

/// Whether a `%2F` left in a segment is decoded there (a prefix rule's partial segment) or
/// kept (the reading of a backend that does not decode it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum EncodedSlash {
    Decoded,
    Kept,
}

/// `path` (starting with `/`) percent-normalised segment by segment (so `%2E%2E` is `..`),
/// with runs of `/` merged, then dot-segments removed.
fn resolve(path: &str, encoded_slash: EncodedSlash) -> String {
    let mut out = String::with_capacity(path.len());
    let mut ends_in_slash = false;
    for segment in path[1..].split('/') {
        let start = out.len();
        out.push('/');
        push_percent_normalised(&mut out, segment, encoded_slash);
        let pushed = &out[start + 1..];
        let merged = pushed.is_empty();
        ends_in_slash = merged || matches!(pushed, "." | "..");
        match pushed {
            _ if merged => out.truncate(start),
            "." => out.truncate(start),
            ".." => {
                out.truncate(start);
                out.truncate(out.rfind('/').unwrap_or(0));
            }
            _ => {}
        }
    }
    if out.is_empty() || ends_in_slash {
        out.push('/');
    }
    out
}

/// Whether `body`, the path of a prefix rule without its `*`, can begin a normalised path:
/// its complete segments are normal, and its last, partial one has no percent-encoding to
/// change (an unfinished one at its end, `%2`, may go on in a request: `%25`).
pub fn is_normal_prefix(body: &str) -> bool {
    if body.contains('\\') {
        return false;
    }
    let Some(last_slash) = body.rfind('/') else {
        return false;
    };
    let (complete, partial) = body.split_at(last_slash + 1);
    let bytes = partial.as_bytes();
    normalise(complete) == complete
        && !bytes.iter().any(|&b| needs_encoding(b))
        && (0..bytes.len())
            .filter(|&i| bytes[i] == b'%')
            .all(|i| match escape_at(bytes, i) {
                Escape::Unfinished => true,
                escape => escape == Escape::Normal,
            })
}

/// The prefix to write for a prefix rule's `body` that no normalised path could begin with:
/// its complete segments normalised, its last, partial one only percent-normalised (a partial
/// `.` or `..` is the start of a name such as `.well-known`, not a dot-segment).
pub fn normal_prefix(body: &str) -> String {
    // A `%2F` or `\` is a `/` in requests: it ends a segment here too.
    let body = encoded_slashes_decoded(&backslashes_as_slashes(body)).into_owned();
    let Some(last_slash) = body.rfind('/') else {
        return body;
    };
    let (complete, partial) = body.split_at(last_slash + 1);
    let mut out = normalise(complete).into_owned();
    // An unfinished percent-encoding at the end (`%2`) may go on in a request: it stays.
    let bytes = partial.as_bytes();
    let unfinished = (0..bytes.len())
        .rev()
        .find(|&i| bytes[i] == b'%')
        .filter(|&i| escape_at(bytes, i) == Escape::Unfinished)
        .unwrap_or(bytes.len());
    push_percent_normalised(&mut out, &partial[..unfinished], EncodedSlash::Decoded);
    out.push_str(&partial[unfinished..].to_ascii_uppercase());
    out
}

/// Whether normalising `path` (starting with `/`) would change nothing.
fn is_normal(path: &str) -> bool {
    let bytes = path.as_bytes();
    for (i, &byte) in bytes.iter().enumerate() {
        let fine = match byte {
            b'%' => escape_at(bytes, i) == Escape::Normal,
            b'/' => !starts_dot_or_empty_segment(&bytes[i + 1..]),
            b'\\' => false,
            _ => !needs_encoding(byte),
        };
        if !fine {
            return false;
        }
    }
    true
}

/// Whether the segment after a `/` is empty (the `/` is followed by another) or `.` or `..`;
/// the empty segment at the very end is a trailing slash, and stays.
fn starts_dot_or_empty_segment(after_slash: &[u8]) -> bool {
    let segment_end = |rest: &[u8]| matches!(rest.first(), None | Some(b'/'));
    match after_slash {
        [b'/', ..] => true,
        [b'.', b'.', rest @ ..] => segment_end(rest),
        [b'.', rest @ ..] => segment_end(rest),
        _ => false,
    }
}

#[cfg(test)]
mod rfc_oracle;
#[cfg(test)]
mod tests;
