//! The normaliser against hand-picked spellings and, for any path, against a literal reading
//! of RFC 3986 (§6.2.2.1-2 for percent-encodings, §5.2.4 for dot-segments).

use super::{
    AmbiguousPath, EndpointPath, has_dot_dot_segment, is_normal_prefix, normal_prefix, normalise,
    unambiguous,
};
use proptest::prelude::*;
use std::borrow::Cow;

#[test]
fn the_reviewers_spellings_are_the_rules_path() {
    for spelling in [
        "/api/%65xport",
        "/api//export",
        "/api/./export",
        "/api/x/../export",
        "//api/export",
        "/api/%2E/export",
        "/%61pi/EXPORT/../%65%78port",
        "/../../api/export",
        "/api%2Fexport",
        "/api%2fexport",
        "/x/..%2Fapi/export",
        "/api/x%2F%2E%2E%2Fexport",
        // WHATWG URL parsers and IIS read `\` as `/`.
        "/api\\export",
        "/api\\\\export",
        "/api/.\\export",
        "\\api\\export",
    ] {
        assert_eq!(normalise(spelling), "/api/export", "{spelling}");
    }
}

#[test]
fn what_a_backend_tells_apart_stays() {
    for kept in [
        "/api/export",
        "/API/Export",
        "/api/export/",
        "/",
        "/a%3Bb",
        "/a%25b",
        "/%C3%A9t%C3%A9",
        "/été",
        "/a/.b/..c/...",
        "/a;b=c,d",
        "/a%5Cb",
    ] {
        let normal = normalise(kept);
        assert!(matches!(normal, Cow::Borrowed(_)), "{kept} was copied");
        assert_eq!(normal, kept);
    }
}

#[test]
fn percent_encodings_are_decoded_or_upper_cased() {
    assert_eq!(normalise("/%7e%7E%2d%5F%2e%41%7a%30"), "/~~-_.Az0");
    assert_eq!(normalise("/a%5cb%3a"), "/a%5Cb%3A");
    // An encoded slash is read as a slash, as nginx, werkzeug and Go read it.
    assert_eq!(normalise("/a%2fb%3a"), "/a/b%3A");
    assert_eq!(normalise("/%c3%a9"), "/%C3%A9");
}

#[test]
fn a_stray_percent_becomes_an_encoded_one() {
    assert_eq!(normalise("/100%"), "/100%25");
    assert_eq!(normalise("/a%zz"), "/a%25zz");
    assert_eq!(normalise("/a%4"), "/a%254");
    // Decoding `%45` must not make `%2` + `E` a new encoding of `.`.
    assert_eq!(normalise("/%2%45"), "/%252E");
}

#[test]
fn dot_segments_and_slashes() {
    assert_eq!(normalise("/.."), "/");
    assert_eq!(normalise("/a/.."), "/");
    assert_eq!(normalise("/a/b/.."), "/a/");
    assert_eq!(normalise("/a/."), "/a/");
    assert_eq!(normalise("/a/./b/../c"), "/a/c");
    assert_eq!(normalise("/a//"), "/a/");
    assert_eq!(normalise("///"), "/");
    // Slashes merge first, as nginx and Go do: `..` climbs out of `api`, not out of ``.
    assert_eq!(normalise("/api//../export"), "/export");
}

#[test]
fn a_path_without_a_leading_slash_is_kept() {
    for kept in ["", "api//x", "a/../api/export", "%7e", "*"] {
        assert!(
            matches!(normalise(kept), Cow::Borrowed(k) if k == kept),
            "{kept}"
        );
    }
}

#[test]
fn the_type_borrows_what_needs_no_change() {
    assert!(EndpointPath::new("/api/export").is_borrowed());
    let changed = EndpointPath::new("/api//export");
    assert!(!changed.is_borrowed());
    assert_eq!(changed, "/api/export");
    assert_eq!(changed.to_string(), "/api/export");
}

#[test]
fn a_prefix_keeps_its_partial_segment() {
    assert_eq!(normal_prefix("/api//.."), "/api/..");
    assert_eq!(normal_prefix("/api//."), "/api/.");
    assert_eq!(normal_prefix("//%61pi/%7Euser"), "/api/~user");
}

#[test]
fn the_query_and_fragment_go_before_dot_segments() {
    assert_eq!(
        EndpointPath::new("/api/export?next=/../../free"),
        "/api/export"
    );
    assert_eq!(EndpointPath::new("/api/export#/../free"), "/api/export");
    assert_eq!(EndpointPath::new("/api/./export?q=1"), "/api/export");
    assert!(EndpointPath::new("/api/export?q=1").is_borrowed());
}

#[test]
fn prefix_rules_end_in_a_partial_segment() {
    for normal in [
        "/api/", "/api", "/api/.", "/api/..", "/api/%", "/api/%2", "/a/%3B",
    ] {
        assert!(is_normal_prefix(normal), "{normal}");
    }
    for not in [
        "/api//", "/%61pi/", "/api/./", "/api/%7e", "/api/%2f", "/api/%zz", "/a/%41", "/a/%2F",
        "/api\\", "/api\\ex",
    ] {
        assert!(!is_normal_prefix(not), "{not}");
    }
}

#[test]
fn a_dot_dot_segment_is_refused_by_name() {
    // nginx and Go serve it as `/api/x`; Express's `/api/export/*` serves it as an export.
    let err = unambiguous("/api/export/../x?y=1").unwrap_err();
    assert_eq!(
        err,
        AmbiguousPath::DotDotSegment {
            resolved: "/api/x".to_owned(),
            readers: "nginx, Go".to_owned(),
        }
    );
    assert_eq!(
        err.to_string(),
        "the path is ambiguous: its `..` segment takes it to \"/api/x\" where dot-segments are \
         removed (nginx, Go) but not where the path is routed as sent (Express); send the path \
         without `..`"
    );
    // Named where the backends that read `..;x` and `\` as `..` and `/` take it.
    for (spelling, resolved, readers) in [
        (
            "/api/export/..;x/search",
            "/api/search",
            "Tomcat and Spring, which read `..;x` as `..`",
        ),
        (
            "/api/export/..\\search",
            "/api/search",
            "WHATWG URL parsers and IIS, which read `\\` as `/`",
        ),
        ("/api/export/%2e%2E/search", "/api/search", "nginx, Go"),
        // Each spelling's readers, when the path mixes them.
        (
            "/a\\..;x/b",
            "/b",
            "Tomcat and Spring, which read `..;x` as `..`; WHATWG URL parsers and IIS, which read `\\` as `/`",
        ),
        (
            "/api/x/..\\y/../z",
            "/api/z",
            "nginx, Go; WHATWG URL parsers and IIS, which read `\\` as `/`",
        ),
    ] {
        assert_eq!(
            unambiguous(spelling),
            Err(AmbiguousPath::DotDotSegment {
                resolved: resolved.to_owned(),
                readers: readers.to_owned(),
            })
        );
    }
    assert_eq!(
        unambiguous("/api/export/..;x/search")
            .unwrap_err()
            .to_string(),
        "the path is ambiguous: its `..` segment takes it to \"/api/search\" where dot-segments \
         are removed (Tomcat and Spring, which read `..;x` as `..`) but not where the path is \
         routed as sent (Express); send the path without `..`"
    );
    for refused in [
        "/api//../export",
        "/api//%2e%2E/export",
        "/a//..",
        "/a/..",
        "/../api/export",
        "/api/x/../export",
        "/api/%2E./x",
        "/api/export/..;x/search",
        "/api/export/..\\search",
        "/api\\export\\..\\search",
        "\\api\\export\\..\\search",
        "/x/..;/api/search",
    ] {
        assert!(
            matches!(
                unambiguous(refused),
                Err(AmbiguousPath::DotDotSegment { .. })
            ),
            "{refused}"
        );
    }
}

#[test]
fn a_final_dot_segment_is_refused_by_name() {
    // Go's path.Clean and Python's http.server serve it as the exact `/api/export`; nginx and
    // the RFC as `/api/export/`, under a prefix rule `/api/export/*`.
    let err = unambiguous("/api/export/.?x=1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the path is ambiguous: its final `.` segment makes it \"/api/export/\" (nginx, RFC \
         3986) and \"/api/export\" (Go's path.Clean, Python's http.server); send the one you mean"
    );
    for refused in [
        "/api/export/%2e",
        "/api/export/%2E",
        "/api/export//.",
        "/api/./export/./.",
        "/api/export\\.",
        "/api/ex%70ort/.",
    ] {
        assert_eq!(
            unambiguous(refused),
            Err(AmbiguousPath::FinalDotSegment {
                with_slash: "/api/export/".to_owned(),
                without: "/api/export".to_owned(),
            }),
            "{refused}"
        );
    }
    // Read alike everywhere: the root, a `.` before other segments, a name with a dot.
    for passed in [
        "/.",
        "//.",
        "/./api/export",
        "/api/./export",
        "/api/export.",
        "/api/.x",
    ] {
        assert_eq!(unambiguous(passed), Ok(()), "{passed}");
    }
}

#[test]
fn an_encoded_slash_that_makes_a_dot_segment_is_refused_by_name() {
    // Read with `%2F` as `/`, the `..` climb out of the prefix rule's folder; kept encoded,
    // a backend routing on the raw path serves it under `/api/export/`.
    let err = unambiguous("/api/export/..%2F..%2Fx").unwrap_err();
    assert_eq!(
        err,
        AmbiguousPath::EncodedSlash {
            decoded: "/x".to_owned(),
            encoded: "/api/export/..%2F..%2Fx".to_owned(),
        }
    );
    assert_eq!(
        err.to_string(),
        "the path is ambiguous: with `%2F` read as `/` it is \"/x\" (nginx, werkzeug, Go) and \
         \"/api/export/..%2F..%2Fx\" where `%2F` stays in its segment (Express, Rails); send \
         the one you mean"
    );
    assert!(unambiguous("/api/export/%2e%2e%2F%2e%2e%2Fx").is_err());
    assert!(unambiguous("/x/..%2Fapi/export").is_err());
    // Where both readings name the same path, only the spelling differs: fine.
    for fine in [
        "/api%2Fexport",
        "/projects/group%2Fname/issues",
        "/a%2F%2Fb",
        "%2Fa%2F%2F..%2Fb",
    ] {
        assert_eq!(unambiguous(fine), Ok(()), "{fine}");
    }
}

#[test]
fn a_prefix_with_an_encoded_slash_is_suggested_in_normal_form() {
    assert_eq!(normal_prefix("/files/%2F"), "/files/");
    assert_eq!(normal_prefix("/api/x%2F.%2F"), "/api/x/");
    assert_eq!(normal_prefix("/a/b%2F..%2F"), "/a/");
    assert_eq!(normal_prefix("/api\\ex"), "/api/ex");
    assert_eq!(normal_prefix("/api\\.\\x"), "/api/x");
    for suggested in ["/files/", "/api/x/", "/a/"] {
        assert!(is_normal_prefix(suggested), "{suggested}");
    }
}

#[test]
fn paths_both_readings_agree_on_pass() {
    for fine in [
        "/api/export",
        "/api//export",
        "//api/export",
        "/api/./export",
        "/api//./export",
        "/a/.b/..c/...",
        "/a/..x;y/.;z",
        "/a\\b/c",
        "/api/export?next=//../free",
        "api//../x",
    ] {
        assert_eq!(unambiguous(fine), Ok(()), "{fine}");
    }
}

/// RFC 3986 §6.2.2.1-2, one triplet at a time, with `%2F` read as `/` as nginx reads it; a `%`
/// starting none is `%25`.
fn percent_oracle(path: &str) -> String {
    percent_oracle_with(path, true)
}

/// As [`percent_oracle`], `%2F` kept (in upper case) unless `decode_slash`.
fn percent_oracle_with(path: &str, decode_slash: bool) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let triplet = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        match (bytes[i], triplet) {
            (b'%', Some(hex)) => {
                let text = std::str::from_utf8(hex).unwrap();
                let byte = u8::from_str_radix(text, 16).unwrap();
                if byte.is_ascii_alphanumeric()
                    || b"-._~".contains(&byte)
                    || (byte == b'/' && decode_slash)
                {
                    out.push(byte);
                } else {
                    out.extend(format!("%{byte:02X}").bytes());
                }
                i += 3;
            }
            (b'%', None) => {
                out.extend(b"%25");
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// RFC 3986 §5.2.4, step by step.
fn remove_dot_segments_oracle(path: &str) -> String {
    let mut input = path.to_owned();
    let mut output = String::new();
    let pop = |output: &mut String| output.truncate(output.rfind('/').unwrap_or(0));
    while !input.is_empty() {
        if input.starts_with("../") {
            input.drain(..3);
        } else if input.starts_with("./") {
            input.drain(..2);
        } else if input.starts_with("/./") {
            input.replace_range(..3, "/");
        } else if input == "/." {
            input = "/".to_owned();
        } else if input.starts_with("/../") {
            input.replace_range(..4, "/");
            pop(&mut output);
        } else if input == "/.." {
            input = "/".to_owned();
            pop(&mut output);
        } else if input == "." || input == ".." {
            input.clear();
        } else {
            let end = input[1..].find('/').map_or(input.len(), |i| i + 1);
            output.extend(input.drain(..end));
        }
    }
    output
}

fn merge_slashes(path: &str) -> String {
    let mut merged = path.to_owned();
    while merged.contains("//") {
        merged = merged.replace("//", "/");
    }
    merged
}

/// Every reading: a `\` is a `/` (WHATWG, IIS), then percent-encodings, slashes and dots.
fn oracle(path: &str) -> String {
    remove_dot_segments_oracle(&merge_slashes(&percent_oracle(&path.replace('\\', "/"))))
}

/// The RFC's reading, where an empty segment is one a `..` removes.
fn dots_first_oracle(path: &str) -> String {
    merge_slashes(&remove_dot_segments_oracle(&percent_oracle(
        &path.replace('\\', "/"),
    )))
}

/// Paths built from the pieces normalising is about.
fn tricky_path() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "/", "/", "/", ".", "..", "%", "%2e", "%2E", "%2f", "%2F", "%41", "%7e", "%zz", "%4",
        "%c3%a9", "a", "B", "é", "~", "-", "x", "\\", "%5c",
    ]);
    prop::collection::vec(piece, 0..12).prop_map(|pieces| format!("/{}", pieces.concat()))
}

/// A tricky path, then perhaps a query or fragment made of the same pieces.
fn tricky_uri() -> impl Strategy<Value = String> {
    let tail = prop::option::of((prop::sample::select(vec!["?", "#"]), tricky_path()));
    (tricky_path(), tail).prop_map(|(path, tail)| match tail {
        Some((mark, rest)) => format!("{path}{mark}{rest}"),
        None => path,
    })
}

/// Whether `path` holds a percent-encoding normalising would rewrite or a stray `%`.
fn has_unnormal_escape(path: &str) -> bool {
    let bytes = path.as_bytes();
    (0..bytes.len())
        .filter(|&i| bytes[i] == b'%')
        .any(|i| match bytes.get(i + 1..i + 3) {
            Some(&[h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                let byte = u8::from_str_radix(std::str::from_utf8(&[h, l]).unwrap(), 16).unwrap();
                h.is_ascii_lowercase()
                    || l.is_ascii_lowercase()
                    || byte.is_ascii_alphanumeric()
                    || b"-._~/".contains(&byte)
            }
            _ => true,
        })
}

fn check_normal_form(path: &str) -> Result<(), TestCaseError> {
    let normal = normalise(path);
    let expected = oracle(path);
    prop_assert_eq!(&*normal, expected.as_str());
    prop_assert_eq!(normalise(&normal), normal.clone(), "not idempotent");
    prop_assert!(matches!(normalise(&normal), Cow::Borrowed(_)));
    prop_assert_eq!(matches!(normal, Cow::Borrowed(_)), normal == path);
    prop_assert!(normal.starts_with('/'));
    for bad in ["//", "/./", "/../"] {
        prop_assert!(!normal.contains(bad), "{} holds {}", normal, bad);
    }
    prop_assert!(!normal.ends_with("/.") && !normal.ends_with("/.."));
    prop_assert!(!has_unnormal_escape(&normal), "{}", normal);
    Ok(())
}

proptest! {
    #[test]
    fn tricky_paths_normalise_as_the_rfc_says(path in tricky_path()) {
        check_normal_form(&path)?;
    }

    #[test]
    fn any_rooted_text_normalises_as_the_rfc_says(text in any::<String>()) {
        check_normal_form(&format!("/{text}"))?;
    }

    #[test]
    fn a_path_is_refused_exactly_when_the_two_readings_part(uri in tricky_uri()) {
        let sent = &uri[..uri.find(['?', '#']).unwrap_or(uri.len())];
        let merged = oracle(sent);
        // Both readings below take `\` as `/`, as the normal form does.
        let path = &sent.replace('\\', "/");
        let kept = dots_first_oracle(path);
        let encoded =
            remove_dot_segments_oracle(&merge_slashes(&percent_oracle_with(path, false)));
        let slash_parts = path.to_ascii_uppercase().contains("%2F")
            && merge_slashes(&encoded.replace("%2F", "/")) != merged;
        let dot_dot = percent_oracle(path).split('/').any(|segment| segment == "..");
        // Go's path.Clean drops the `/` a final `.` leaves; the RFC keeps it.
        let final_dot = percent_oracle(path).rsplit('/').next() == Some(".") && merged != "/";
        match unambiguous(&uri) {
            Ok(()) => {
                prop_assert!(!slash_parts, "{} is {} and {}", path, merged, encoded);
                prop_assert!(!dot_dot, "{}", path);
                prop_assert!(!final_dot, "{}", path);
                prop_assert_eq!(merged, kept);
            }
            Err(AmbiguousPath::FinalDotSegment { with_slash, without }) => {
                prop_assert!(!slash_parts && !dot_dot, "{}", path);
                prop_assert!(final_dot, "{}", path);
                prop_assert_eq!(&without, merged.trim_end_matches('/'));
                prop_assert_eq!(with_slash, merged);
            }
            Err(AmbiguousPath::EncodedSlash { decoded, encoded: shown }) => {
                prop_assert!(slash_parts);
                prop_assert_eq!(decoded, merged);
                prop_assert_eq!(shown, encoded);
            }
            Err(AmbiguousPath::DotDotSegment { resolved, .. }) => {
                prop_assert!(!slash_parts);
                prop_assert!(dot_dot, "{}", path);
                prop_assert_eq!(resolved, merged);
            }
        }
    }

    #[test]
    fn unrooted_text_is_kept(text in "[^/\\\\].*") {
        prop_assert!(matches!(normalise(&text), Cow::Borrowed(t) if t == text));
    }
}

#[test]
fn a_rule_with_a_complete_dot_dot_segment_is_found() {
    for (body, prefix) in [
        ("/api/..;v1/export", false),
        ("/api/..;v1/", true),
        ("/api\\..\\export", false),
        ("/api/x\\..", false),
        ("/api/..;", true),
    ] {
        assert!(has_dot_dot_segment(body, prefix), "{body}");
    }
    // A prefix's last segment may go on as a name; `..data` and `x..` are names.
    for (body, prefix) in [
        ("/api/..", true),
        ("/api/..data", false),
        ("/api/x../", true),
    ] {
        assert!(!has_dot_dot_segment(body, prefix), "{body}");
    }
}
