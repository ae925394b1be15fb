//! The policy file: any text compiles into a policy or into errors, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratewarden::policy::Policy;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A folder with nothing in it: a fuzzed `envoy_config` or `model` path names nothing real.
    match Policy::from_yaml(text, Path::new("/nonexistent/ratewarden-fuzz")) {
        Ok(policy) => {
            // A compiled policy answers lookups for any path.
            let _ = policy.endpoint_rule("/api/search");
            let _ = policy.endpoint_rule(text);
        }
        Err(errors) => {
            // Every error says where and what.
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
