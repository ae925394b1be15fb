//! `GET /v1/auth`: forward auth for nginx `auth_request`, Traefik `ForwardAuth` and Caddy
//! `forward_auth`. Everything comes from headers; the answer is a status and headers.

use super::AppState;
use super::check::{MAX_ENDPOINT_BYTES, MAX_USER_BYTES, endpoint_path, undecidable};
use super::decision;
use super::problem::Problem;
use crate::engine::{CheckError, CheckRequest, Cost, path_of};
use crate::metrics::Api;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use std::net::{IpAddr, SocketAddr};

const ORIGINAL_URI: &str = "X-Original-URI";
const FORWARDED_URI: &str = "X-Forwarded-Uri";
/// Set to `on` by a proxy that drops the body of a denial (nginx): the problem then comes in
/// the `X-Ratewarden-Problem` header as well.
const PROBLEM_HEADER_WANTED: &str = "X-Ratewarden-Problem-Header";

/// Decides the request a proxy is about to forward. Any method, WebDAV's and made-up ones
/// included (the router takes them all; OpenAPI can list only the standard ones): some
/// proxies send the auth subrequest with the client's method.
#[utoipa::path(
    method(get, head, post, put, delete, patch, options, trace), path = "/v1/auth", tag = "decisions",
    params(
        ("X-Original-URI" = Option<String>, Header, description = "The requested URI (nginx)"),
        ("X-Forwarded-Uri" = Option<String>, Header, description = "The requested URI (Traefik, Caddy)"),
        ("X-Api-Key" = Option<String>, Header, description = "The subject (the header named by identity.header)"),
        ("X-User-Id" = Option<String>, Header, description = "The subject when identity.header is absent"),
        ("X-Forwarded-For" = Option<String>, Header, description = "Client address, first hop, when identity.trust_forwarded"),
        ("X-Tier" = Option<String>, Header, description = "The tier, when identity.trust_tier_header"),
        ("X-Ratewarden-Problem-Header" = Option<String>, Header, description = "`on`: a denial's problem also comes as one line of JSON in the X-Ratewarden-Problem response header (nginx)"),
    ),
    responses(
        (status = 200, description = "Allowed (empty body, rate limit headers)"),
        (status = 429, description = "Denied", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The store failed and store.on_error denies", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "No URI header, an invalid header, or a path servers read two ways", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn auth(State(state): State<AppState>, request: Request) -> Response {
    // Asked for before anything can fail, so a refused request's problem reaches nginx too.
    let problem_header = request
        .headers()
        .get(PROBLEM_HEADER_WANTED)
        .is_some_and(|value| value.as_bytes().trim_ascii() == b"on");
    match decide(&state, request, problem_header).await {
        Ok(response) => response,
        Err(problem) => decision::problem_response(problem, problem_header),
    }
}

async fn decide(
    state: &AppState,
    request: Request,
    problem_header: bool,
) -> Result<Response, Problem> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_canonical());
    let headers = request.headers();
    let identity = state.engine.policy().identity.clone();

    let endpoint = match header(headers, ORIGINAL_URI)?.or(header(headers, FORWARDED_URI)?) {
        Some(uri) => path_of(uri).to_owned(),
        None => {
            return Err(Problem::bad_request(format!(
                "headers {ORIGINAL_URI} and {FORWARDED_URI} are both missing: one must name the requested URI"
            )));
        }
    };
    // The length is the one sent; the engine's request normalises the path.
    if endpoint.len() > MAX_ENDPOINT_BYTES {
        return Err(Problem::bad_request(format!(
            "the requested path is over {MAX_ENDPOINT_BYTES} bytes"
        )));
    }
    let ip = if identity.trust_forwarded {
        match first_line(headers, "X-Forwarded-For")? {
            Some(list) => Some(first_hop(list)?),
            None => peer,
        }
    } else {
        peer
    };
    let named = match header(headers, &identity.header)? {
        Some(user) => Some(user),
        None => header(headers, "X-User-Id")?,
    };
    let user = match (named, ip) {
        (Some(user), _) => user.to_owned(),
        (None, Some(ip)) => ip.to_string(),
        (None, None) => {
            return Err(Problem::bad_request(format!(
                "no subject: neither {} nor X-User-Id is set and the client address is unknown",
                identity.header
            )));
        }
    };
    if user.len() > MAX_USER_BYTES {
        return Err(Problem::bad_request(format!(
            "the subject is over {MAX_USER_BYTES} bytes"
        )));
    }
    let tier = if identity.trust_tier_header {
        header(headers, "X-Tier")?
    } else {
        None
    };

    let check = CheckRequest {
        user: &user,
        endpoint: endpoint_path(&endpoint, "the requested path: ")?,
        tier,
        ip,
        cost: Cost::ONE,
    };
    let decision = state
        .engine
        .check_via(Api::Auth, &check)
        .await
        .map_err(|e| match e {
            // The tier came from a header here, not from a JSON field.
            CheckError::UnknownTier(_) => Problem::bad_request(format!("header X-Tier: {e}")),
            _ => undecidable(&e, ""),
        })?;
    Ok(decision::auth_response(&decision, problem_header))
}

/// A header that decides something, when present and not empty; a 400 naming it when it is not
/// text or comes more than once: ratewarden and the backend could each read another copy (the
/// first here, the last in many frameworks) and count one client as a fresh subject each time.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, Problem> {
    // CGI and WSGI backends read `X_Api_Key`, `X-Api_Key` and `X-Api-Key` as one header (each
    // becomes HTTP_X_API_KEY), and Caddy passes them on: a copy by another spelling.
    if let Some(other) = headers.keys().find(|other| {
        other.as_str() != name.to_ascii_lowercase() && same_for_cgi(other.as_str(), name)
    }) {
        return Err(Problem::bad_request(format!(
            "header {other} is refused: backends may read it as {name}; send {name} only"
        )));
    }
    let mut copies = headers.get_all(name).iter();
    let first = copies.next();
    if first.is_some() && copies.next().is_some() {
        return Err(Problem::bad_request(format!(
            "header {name} is sent more than once: send one"
        )));
    }
    first.map_or(Ok(None), |value| text(name, value))
}

/// Header names a CGI gateway maps to one variable: alike but for case, `-` and `_`.
fn same_for_cgi(a: &str, b: &str) -> bool {
    let fold = |c: u8| {
        if c == b'_' {
            b'-'
        } else {
            c.to_ascii_lowercase()
        }
    };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| fold(x) == fold(y))
}

/// The first line of a list header that may come in several lines (RFC 9110 §5.3: they read as
/// one list, in order), when present and not empty.
fn first_line<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, Problem> {
    headers
        .get(name)
        .map_or(Ok(None), |value| text(name, value))
}

fn text<'a>(name: &str, value: &'a HeaderValue) -> Result<Option<&'a str>, Problem> {
    value
        .to_str()
        .map(|s| Some(s.trim()).filter(|s| !s.is_empty()))
        .map_err(|_| Problem::bad_request(format!("header {name} is not visible ASCII text")))
}

/// The first hop of `X-Forwarded-For`: an address, with or without a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:80`, as some load balancers write it) or brackets.
fn first_hop(list: &str) -> Result<IpAddr, Problem> {
    let first = list.split(',').next().unwrap_or("").trim();
    let bracketed = || first.strip_prefix('[')?.strip_suffix(']')?.parse().ok();
    first
        .parse::<IpAddr>()
        .ok()
        .or_else(|| first.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(bracketed)
        .map(|ip| ip.to_canonical())
        .ok_or_else(|| {
            Problem::bad_request(format!(
                "header X-Forwarded-For: first hop {first:?} is not an IP address"
            ))
        })
}

#[cfg(test)]
mod tests {
    use crate::engine::path_of;

    #[test]
    fn paths_lose_origin_query_and_fragment() {
        assert_eq!(path_of("/api/search?q=1"), "/api/search");
        assert_eq!(path_of("https://example.com/a/b#frag"), "/a/b");
        assert_eq!(path_of("https://example.com"), "/");
        assert_eq!(path_of("?x"), "/");
        // A URL in the query or in the path names no origin.
        assert_eq!(
            path_of("/api/export?next=https://evil.example/free"),
            "/api/export"
        );
        assert_eq!(path_of("/api/export?u=a://b/"), "/api/export");
        assert_eq!(path_of("/proxy/http://x/y"), "/proxy/http://x/y");
        assert_eq!(path_of("/a#https://h/b"), "/a");
        // WHATWG URL parsers end the host at a `\` too.
        assert_eq!(path_of("http://x\\api\\export"), "\\api\\export");
        // A scheme with no host: the rest is the path (Go's parser reads it so).
        assert_eq!(path_of("http:/api/export"), "/api/export");
        assert_eq!(path_of("x:\\api/export?y"), "\\api/export");
        assert_eq!(path_of("/api/a:/b"), "/api/a:/b");
        assert_eq!(path_of("1x:/api/export"), "1x:/api/export");
    }
}
