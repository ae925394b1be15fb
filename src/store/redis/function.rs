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

/// Why Redis turned a call away before running it, so that running it by EVAL counts nothing
/// twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server does not have the script in that form: the function is not loaded (a new
    /// or flushed server), or the script not cached (NOSCRIPT). Load the library again.
    Missing,
    /// The server will not take FCALL at all (Redis 6, an ACL without it): EVALSHA from now on.
    Unsupported,
    /// Over `maxmemory` with `noeviction`, Redis turns away a function that may write before
    /// it runs; EVAL runs as the script always has (a denial or a dry run is still answered,
    /// only a write fails).
    OutOfMemory,
}

impl Refusal {
    /// The refusal `error_text` reports for `call`, or `None` for any other error (one raised
    /// inside a script that ran says "script", never these; it must not run again).
    pub fn of(error_text: &str, call: Call<'_>) -> Option<Self> {
        let text = error_text.to_ascii_lowercase();
        let names_the_call = text.contains("fcall") || text.contains("evalsha");
        if text.contains("function not found") || text.contains("noscript") {
            Some(Self::Missing)
        } else if names_the_call && (text.contains("unknown command") || text.contains("noperm")) {
            Some(Self::Unsupported)
        } else if matches!(call, Call::Function(_))
            && text.contains("command not allowed when used memory")
        {
            Some(Self::OutOfMemory)
        } else {
            None
        }
    }
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
                if text.to_ascii_lowercase().contains("unknown command")
                    || text.to_ascii_lowercase().contains("noperm")
                    || text.to_ascii_lowercase().contains("compil") =>
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
    fn refusals_are_told_apart_from_errors_of_a_script_that_ran() {
        let function = Call::Function("ratewarden_x");
        let refusal = |text: &str, call| Refusal::of(text, call);
        assert_eq!(
            refusal("ERR Function not found", function),
            Some(Refusal::Missing)
        );
        assert_eq!(
            refusal(
                "NOSCRIPT No matching script. Please use EVAL.",
                Call::Sha("ab")
            ),
            Some(Refusal::Missing)
        );
        assert_eq!(
            refusal(
                "ERR unknown command `FCALL`, with args beginning with:",
                function
            ),
            Some(Refusal::Unsupported)
        );
        assert_eq!(
            refusal(
                "NOPERM this user has no permissions to run the 'fcall' command",
                function
            ),
            Some(Refusal::Unsupported)
        );
        assert_eq!(
            refusal(
                "OOM command not allowed when used memory > 'maxmemory'.",
                function
            ),
            Some(Refusal::OutOfMemory)
        );
        // Raised inside a script that ran (a write may have landed): never run again.
        for text in [
            "OOM command not allowed when used memory > 'maxmemory'. script: 88c9, on @user_script:1.",
            "ERR Unknown Redis command called from script script: fc28, on @user_script:1.",
            "ERR The user executing the script can't run this command or subcommand script: 88c9",
        ] {
            assert_eq!(refusal(text, Call::Sha("88c9")), None, "{text}");
        }
        assert_eq!(refusal("OOM command not allowed", Call::Sha("88c9")), None);
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
