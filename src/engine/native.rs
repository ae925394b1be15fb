//! Native descriptors: in a domain that no envoy configuration file names, a descriptor is one
//! check request on the policy, read like forward auth.
//!
//! The subject is the entry `user`, else `api_key`, else `remote_address`, else `ip`; the
//! endpoint is `endpoint` or `path` (its path part), else the `default_endpoint` limits; `tier`
//! names the tier; `ip` or `remote_address` is the client address.

use super::{CheckRequest, Cost, EndpointPath, MAX_ENDPOINT_BYTES, MAX_USER_BYTES, path_of};
use std::net::IpAddr;

const SUBJECT_KEYS: [&str; 4] = ["user", "api_key", "remote_address", "ip"];

/// A descriptor as a check request, with whether an endpoint was named.
#[derive(Debug)]
pub(super) struct Native<'a> {
    pub request: CheckRequest<'a>,
    /// `false`: the `default_endpoint` limits apply.
    pub has_endpoint: bool,
}

/// The check request a descriptor stands for; `None` when it names no subject. The error
/// names what is wrong; the caller adds which descriptor (`descriptors[1]: `).
pub(super) fn request<'a>(
    entries: &[(&'a str, &'a str)],
    cost: Cost,
) -> Result<Option<Native<'a>>, String> {
    let find = |key: &str| entries.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let Some(user) = SUBJECT_KEYS.iter().find_map(|k| find(k)) else {
        return Ok(None);
    };
    if user.is_empty() || user.len() > MAX_USER_BYTES {
        return Err(format!("the subject must be 1 to {MAX_USER_BYTES} bytes"));
    }
    // The length is the one sent, query included, as on HTTP; normalising comes after.
    let sent = find("endpoint").or_else(|| find("path"));
    if sent.is_some_and(|e| e.len() > MAX_ENDPOINT_BYTES) {
        return Err(format!("the endpoint is over {MAX_ENDPOINT_BYTES} bytes"));
    }
    let endpoint = sent.map(path_of);
    // `ip` is the address when both are sent, but each must be one: `remote_address` may be
    // the subject, and a subject that is no address would be a new counter per junk value.
    let mut ip = None;
    for key in ["ip", "remote_address"] {
        let Some(value) = find(key) else { continue };
        let address = value
            .parse::<IpAddr>()
            .map_err(|_| format!("entry {key} \"{value}\" is not an IP address"))?;
        ip = ip.or(Some(address.to_canonical()));
    }
    // As on HTTP: an empty tier is a tier no policy names, refused, not "no tier".
    let tier = find("tier");
    Ok(Some(Native {
        request: CheckRequest {
            user,
            endpoint: EndpointPath::parse(endpoint.unwrap_or(""))
                .map_err(|e| format!("the endpoint: {e}"))?,
            tier,
            ip,
            cost,
        },
        has_endpoint: endpoint.is_some(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_prefers_user_then_api_key_then_address() {
        let entries = [
            ("remote_address", "10.0.0.1"),
            ("api_key", "k"),
            ("path", "/a?q=1"),
        ];
        let native = request(&entries, Cost::ONE).unwrap().unwrap();
        assert_eq!(native.request.user, "k");
        assert_eq!(native.request.endpoint, "/a");
        assert_eq!(native.request.ip, Some("10.0.0.1".parse().unwrap()));
        let none = request(&[("header_match", "x")], Cost::ONE).unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn the_path_is_normalised_after_its_length_is_checked() {
        let entries = [("user", "u"), ("path", "/api/./%65xport?q=1")];
        let native = request(&entries, Cost::ONE).unwrap().unwrap();
        assert_eq!(native.request.endpoint, "/api/export");
        let long = format!("/api{}", "/.".repeat(1023));
        let err = request(&[("user", "u"), ("path", &long)], Cost::ONE).unwrap_err();
        assert_eq!(err, "the endpoint is over 2048 bytes");
        // The query counts: 2040 bytes of path and 13 of query are 2053 sent.
        let long_query = format!("/{}?q=123456789a", "a".repeat(2040));
        let err = request(&[("user", "u"), ("path", &long_query)], Cost::ONE).unwrap_err();
        assert_eq!(err, "the endpoint is over 2048 bytes");
    }

    #[test]
    fn an_ambiguous_path_is_refused() {
        let err = request(&[("user", "u"), ("path", "/api//../export")], Cost::ONE).unwrap_err();
        assert!(
            err.starts_with(
                "the endpoint: the path is ambiguous: its `..` segment takes it to \"/export\""
            ),
            "{err}"
        );
    }

    #[test]
    fn a_bad_address_is_named() {
        let err = request(&[("ip", "nope")], Cost::ONE).unwrap_err();
        assert_eq!(err, "entry ip \"nope\" is not an IP address");
        // Also when `ip` is one: the other is checked, not ignored.
        let both = [("remote_address", "not-an-ip"), ("ip", "192.0.2.55")];
        let err = request(&both, Cost::ONE).unwrap_err();
        assert_eq!(
            err,
            "entry remote_address \"not-an-ip\" is not an IP address"
        );
    }
}
