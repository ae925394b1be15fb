//! The normaliser against hand-picked spellings (the property tests against RFC 3986 are in
//! `rfc_oracle`).

use super::{
    AmbiguousPath, EndpointPath, has_dot_dot_segment, is_normal_prefix, normal_prefix, normalise,
    unambiguous,
};
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
fn what_no_uri_holds_raw_is_encoded_as_clients_send_it() {
    assert_eq!(normalise("/été"), "/%C3%A9t%C3%A9");
    assert_eq!(normalise("/a b/{id}|x"), "/a%20b/%7Bid%7D%7Cx");
    assert_eq!(normalise("/tab\there\u{7f}"), "/tab%09here%7F");
    assert_eq!(normalise("/été/../x"), "/x");
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
        "/api//",
        "/%61pi/",
        "/api/./",
        "/api/%7e",
        "/api/%2f",
        "/api/%zz",
        "/a/%41",
        "/a/%2F",
        "/api\\",
        "/api\\ex",
        "/a b",
        "/caf\u{e9}",
    ] {
        assert!(!is_normal_prefix(not), "{not}");
    }
    assert_eq!(normal_prefix("/a b"), "/a%20b");
    assert_eq!(normal_prefix("/files/é%2"), "/files/%C3%A9%2");
    assert_eq!(normal_prefix("/api//%"), "/api/%");
    assert!(is_normal_prefix(&normal_prefix("/files/é%2")));
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
