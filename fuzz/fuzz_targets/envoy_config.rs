//! One envoyproxy/ratelimit configuration file: any text compiles into a domain or into
//! errors, never a panic; a compiled domain answers lookups.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratewarden::envoy_config::Domain;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Domain::from_yaml(text, "fuzz.yaml") {
        Ok(domain) => {
            // Look up descriptors made of the input's own words, so lookups reach its keys.
            let words: Vec<&str> = text
                .split(|c: char| c.is_whitespace() || c == ':' || c == '"')
                .filter(|w| !w.is_empty())
                .take(8)
                .collect();
            let entries: Vec<(&str, &str)> = words
                .chunks(2)
                .map(|pair| (pair[0], pair.get(1).copied().unwrap_or("")))
                .collect();
            let _ = domain.lookup(&entries);
            let _ = domain.lookup(&[]);
        }
        Err(errors) => {
            for e in &errors.0 {
                assert!(
                    !e.message.is_empty(),
                    "an error without a message: {errors:?}"
                );
            }
            let _ = errors.to_string();
        }
    }
});
