//! How an admin path names a subject: by its user id, or with `?hashed=true` by the keyed
//! hash that the flagged list, the subject view and the flag log lines show.
//!
//! The daemon never keeps a raw id, so an analyst who starts from a flag has only the hash;
//! every route that takes a subject takes either.

use super::check_user;
use crate::http::AppState;
use crate::http::problem::Problem;
use crate::limit::KeyHash;
use serde::Deserialize;
use utoipa::IntoParams;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SubjectName {
    /// `true`: the path names the subject by its keyed hash (32 hex digits, as listed).
    pub hashed: Option<bool>,
}

/// The subject `user` names: its keyed hash, or with `hashed` the hash it is.
pub fn named_subject(
    state: &AppState,
    user: &str,
    hashed: Option<bool>,
) -> Result<KeyHash, Problem> {
    if hashed != Some(true) {
        check_user(user)?;
        return Ok(state.engine.subject_of(user));
    }
    let digits = user.len() == 32 && user.bytes().all(|b| b.is_ascii_hexdigit());
    match u128::from_str_radix(user, 16) {
        Ok(hash) if digits => Ok(KeyHash(hash)),
        _ => Err(Problem::bad_request(format!(
            "with hashed=true the path must be a subject hash of 32 hex digits, not {user:?}"
        ))),
    }
}
