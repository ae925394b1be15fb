//! The normaliser, for any path, against a literal reading of RFC 3986 (§6.2.2.1-2 for
//! percent-encodings, §5.2.4 for dot-segments): property tests and the oracles they use.

use super::{AmbiguousPath, normalise, unambiguous};
use proptest::prelude::*;
use std::borrow::Cow;

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
            // §2.1: what a URI may not hold raw is percent-encoded.
            (byte, _) if !byte.is_ascii_graphic() || b"\"<>[]^`{|}".contains(&byte) => {
                out.extend(format!("%{byte:02X}").bytes());
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
        "%c3%a9", "a", "B", "é", "~", "-", "x", "\\", "%5c", " ", "{", "%7b",
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
    prop_assert!(normal.bytes().all(|b| b.is_ascii_graphic()), "{}", normal);
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
