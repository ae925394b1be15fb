//! The limits script as a Redis function library, loaded once per server (`FUNCTION LOAD`) and
//! called with `FCALL`.
//!
//! Every `EVALSHA` runs the script from its first line, so each decision defines the script's
//! dozens of helper functions again; a library defines them once, at load. On a decision of
//! two limits that is about a sixth of the script's time. The library is named after the
//! script's hash: daemons of different versions sharing a Redis each call their own, and a
//! rolling upgrade never replaces a library that older daemons still call. Where the server
//! refuses functions (Redis 6, an ACL without `FUNCTION` or `FCALL`) the store keeps to
//! `EVALSHA` for good.

use super::super::StoreError;

/// The last line of the script's source: what runs it when it is sent by `EVAL`.
const SCRIPT_ENTRY: &str = "return run(KEYS, ARGV)";

/// The library built from the script's source.
#[derive(Debug)]
pub struct Library {
    /// The library's name, which is also its one function's name.
    pub name: String,
    /// What `FUNCTION LOAD` is sent.
    pub source: String,
}

impl Library {
    /// The library for a script whose SHA1 is `sha` and whose last line is the entry call.
    pub fn new(script: &str, sha: &str) -> Self {
        let name = format!("ratewarden_{}", &sha[..sha.len().min(16)]);
        let body = script
            .trim_end()
            .strip_suffix(SCRIPT_ENTRY)
            .unwrap_or(script);
        let source = format!("#!lua name={name}\n{body}redis.register_function('{name}', run)\n");
        Self { name, source }
    }
}

/// How one run of the script is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call<'a> {
    /// `FCALL name`.
    Function(&'a str),
    /// `EVALSHA sha`.
    Sha(&'a str),
    /// `EVAL source`: always understood.
    Source,
}

/// Whether Redis refused a call because it does not have the script in the form it was called
/// in: the function is not loaded (a new or flushed server), the script not cached (NOSCRIPT),
/// or the server does not do functions at all.
pub fn refused(error_text: &str) -> bool {
    let text = error_text.to_ascii_lowercase();
    [
        "function not found",
        "noscript",
        "unknown command",
        "noperm",
    ]
    .iter()
    .any(|sign| text.contains(sign))
}

/// What a failed `FUNCTION LOAD` means, told apart by what Redis said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadFailure {
    /// The library is there already (another daemon, or another node of a cluster, loaded it).
    AlreadyLoaded,
    /// The server will not load functions: use `EVALSHA` from now on.
    Unsupported,
    /// A timeout or a lost connection: try again at the next refusal.
    Transient,
}

impl LoadFailure {
    pub fn of(error: &StoreError) -> Self {
        match error {
            StoreError::Unavailable(text) if text.contains("already exists") => Self::AlreadyLoaded,
            // Refused outright, or a library the server cannot compile: neither passes by
            // trying again.
            StoreError::Unavailable(text)
                if refused(text) || text.to_ascii_lowercase().contains("compil") =>
            {
                Self::Unsupported
            }
            _ => Self::Transient,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_registers_the_scripts_entry_instead_of_calling_it() {
        let script = "local function run(KEYS, ARGV)\n  return 1\nend\nreturn run(KEYS, ARGV)\n";
        let library = Library::new(script, "0123456789abcdef0123456789abcdef01234567");
        assert_eq!(library.name, "ratewarden_0123456789abcdef");
        assert_eq!(
            library.source,
            "#!lua name=ratewarden_0123456789abcdef\nlocal function run(KEYS, ARGV)\n  return 1\nend\n\
             redis.register_function('ratewarden_0123456789abcdef', run)\n"
        );
    }

    #[test]
    fn the_shipped_script_ends_with_its_entry_call() {
        assert!(
            super::super::script::SOURCE
                .trim_end()
                .ends_with(SCRIPT_ENTRY)
        );
    }

    #[test]
    fn load_failures_are_told_apart_by_what_redis_said() {
        let unavailable = |t: &str| StoreError::Unavailable(t.to_owned());
        assert_eq!(
            LoadFailure::of(&unavailable("Library 'ratewarden_x' already exists")),
            LoadFailure::AlreadyLoaded
        );
        assert_eq!(
            LoadFailure::of(&unavailable("ERR unknown command 'FUNCTION'")),
            LoadFailure::Unsupported
        );
        assert_eq!(
            LoadFailure::of(&unavailable("NOPERM User rw has no permissions")),
            LoadFailure::Unsupported
        );
        assert_eq!(
            LoadFailure::of(&StoreError::Timeout),
            LoadFailure::Transient
        );
        assert_eq!(
            LoadFailure::of(&unavailable("broken pipe")),
            LoadFailure::Transient
        );
    }
}
