//! The CLI and HTTP API references against the binary: the flags of each command's `--help`, and
//! every route of `/openapi.json`.

use crate::common::daemon::Daemon;
use crate::repo::{ratewarden, root};
use std::collections::BTreeSet;

/// The long flags (`--name`) written in `text`, as words (not inside `---` or `a--b`).
fn long_flags(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().next_back();
        let tail = &text[at + 2..];
        let len = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(tail.len());
        let word = tail[..len].trim_end_matches('-');
        let starts_a_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '-');
        if starts_a_word && word.starts_with(|c: char| c.is_ascii_lowercase()) {
            flags.insert(format!("--{word}"));
        }
    }
    flags.remove("--help");
    flags.remove("--version");
    flags
}

#[test]
fn the_cli_reference_lists_exactly_the_flags_of_each_command() {
    let (code, top) = ratewarden(&["--help"]);
    assert_eq!(code, 0);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(
        commands,
        [
            "serve",
            "check-policy",
            "simulate",
            "train",
            "replay",
            "subject-hash"
        ]
    );

    let reference = std::fs::read_to_string(root().join("docs/reference/cli.md")).unwrap();
    for command in commands {
        let heading = format!("## {command}\n");
        let start = reference
            .find(&heading)
            .unwrap_or_else(|| panic!("docs/reference/cli.md has no section {heading:?}"));
        let section = &reference[start + heading.len()..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        let (code, help) = ratewarden(&[command, "--help"]);
        assert_eq!(code, 0, "{help}");
        let options: String = help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .filter_map(|l| l.split([' ', ',']).find(|w| w.starts_with("--")))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            long_flags(section),
            long_flags(&options),
            "docs/reference/cli.md, section {command}, against `ratewarden {command} --help`"
        );
        // The contract: every flag also reads `RATEWARDEN_<FLAG>` (but `replay --log`, whose
        // variable is the log filter), and the section names each variable.
        for line in help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("--"))
        {
            let flag = line.split([' ', ',']).next().unwrap_or_default();
            if ["--help", "--version"].contains(&flag) || (command == "replay" && flag == "--log") {
                continue;
            }
            let variable = format!("RATEWARDEN_{}", flag[2..].to_uppercase().replace('-', "_"));
            let described = help
                .split("\n      --")
                .find(|part| part.starts_with(&flag[2..]) || part.starts_with(flag));
            assert!(
                described.is_some_and(|d| d.contains(&format!("[env: {variable}"))),
                "`ratewarden {command} {flag}` reads no {variable}"
            );
            assert!(
                section.contains(&format!("`{variable}`")),
                "docs/reference/cli.md, section {command}, does not name {variable}"
            );
        }
    }
}

#[test]
fn every_route_of_the_openapi_document_is_in_the_http_reference() {
    let daemon = Daemon::start(&root().join("ratewarden.yaml"), &[]);
    let (status, body) = daemon.get("/openapi.json");
    assert_eq!(status, 200);
    let document: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let paths = document["paths"].as_object().expect("paths");
    let reference = std::fs::read_to_string(root().join("docs/reference/http-api.md")).unwrap();
    let missing: Vec<&String> = paths
        .keys()
        .filter(|p| !reference.contains(p.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference/http-api.md does not mention {missing:?}"
    );
    assert!(paths.len() >= 10, "{:?}", paths.keys());
}
