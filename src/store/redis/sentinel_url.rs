//! `redis+sentinel://` store URLs: which Sentinels to ask, for which primary, and how to log in
//! to it.
//!
//! The form is the one other tools use for Sentinel (the `redis-sentinel-url` convention of
//! Flask-Redis-Sentinel and friends):
//! `redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/primary-name[/db]`.
//! The port defaults to Sentinel's 26379; the credentials (percent-encoded) and the database are
//! the Redis primary's, the Sentinels themselves are reached without a password.
//! `rediss+sentinel://` reaches both the Sentinels and the primary over TLS (`store.tls_ca`
//! applies to both): a deployment that encrypts one encrypts the other.

use std::fmt;

/// Sentinel's default port.
const SENTINEL_PORT: u16 = 26379;

/// A parsed `redis+sentinel://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct SentinelUrl {
    /// (host, port) of each Sentinel, in the URL's order; at least one.
    pub sentinels: Vec<(String, u16)>,
    /// The name the Sentinels monitor the primary under (`sentinel monitor <name> ...`).
    pub primary_name: String,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    /// `rediss+sentinel://`: TLS to the Sentinels and to the primary.
    pub tls: bool,
}

impl SentinelUrl {
    /// Parses a URL that starts with `redis+sentinel://` or `rediss+sentinel://`; the error
    /// names what is wrong.
    pub fn parse(url: &str) -> Result<SentinelUrl, String> {
        let (tls, rest) = match url.strip_prefix("rediss+sentinel://") {
            Some(rest) => (true, rest),
            None => (false, url.strip_prefix("redis+sentinel://").unwrap_or(url)),
        };
        if rest.contains(['?', '#']) {
            return Err("redis+sentinel:// URLs take no query or fragment".into());
        }
        let (userinfo, rest) = match rest.rsplit_once('@') {
            Some((userinfo, rest)) => (Some(userinfo), rest),
            None => (None, rest),
        };
        let (username, password) = credentials(userinfo)?;
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let sentinels = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(host_port)
            .collect::<Result<Vec<_>, _>>()?;
        if sentinels.is_empty() {
            return Err("redis+sentinel:// needs at least one sentinel host[:port]".into());
        }
        let mut segments = path.split('/');
        let primary_name = match segments.next() {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                return Err(concat!(
                    "redis+sentinel:// needs the primary's name after the hosts ",
                    "(redis+sentinel://host:26379,.../mymaster[/db])"
                )
                .into());
            }
        };
        let db = match segments.next() {
            None | Some("") => 0,
            Some(db) => db
                .parse::<i64>()
                .ok()
                .filter(|d| *d >= 0)
                .ok_or_else(|| format!("database \"{db}\" is not a number from 0 up"))?,
        };
        if segments.any(|s| !s.is_empty()) {
            return Err(format!(
                "\"/{path}\" has more than a primary name and a database after the hosts"
            ));
        }
        Ok(SentinelUrl {
            sentinels,
            primary_name,
            db,
            username,
            password,
            tls,
        })
    }

    /// The Sentinels as `redis://host:port` (or `rediss://`) URLs (what the client connects to
    /// first).
    pub fn sentinel_urls(&self) -> Vec<String> {
        let scheme = if self.tls { "rediss" } else { "redis" };
        self.sentinels
            .iter()
            .map(|(host, port)| format!("{scheme}://{}/", join_host_port(host, *port)))
            .collect()
    }
}

/// `[user]:password` or `password`, percent-decoded.
fn credentials(userinfo: Option<&str>) -> Result<(Option<String>, Option<String>), String> {
    let Some(userinfo) = userinfo else {
        return Ok((None, None));
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .map(|d| d.into_owned())
            .map_err(|_| "the credentials are not valid percent-encoded UTF-8".to_owned())
    };
    let (user, password) = userinfo.split_once(':').unwrap_or(("", userinfo));
    let user = Some(decode(user)?).filter(|u| !u.is_empty());
    let password = Some(decode(password)?).filter(|p| !p.is_empty());
    Ok((user, password))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn host_port(text: &str) -> Result<(String, u16), String> {
    let bad = || format!("\"{text}\" is not a sentinel host[:port] (port from 1 to 65535)");
    let (host, port) = match text.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or_else(bad)?)),
            }
        }
        None => match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    let port = match port {
        None => SENTINEL_PORT,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?,
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The URL back, with the password masked (for logs and errors).
impl fmt::Display for SentinelUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.tls {
            "rediss+sentinel://"
        } else {
            "redis+sentinel://"
        })?;
        match (&self.username, &self.password) {
            (Some(user), Some(_)) => write!(f, "{user}:***@")?,
            (None, Some(_)) => f.write_str(":***@")?,
            (Some(user), None) => write!(f, "{user}@")?,
            (None, None) => {}
        }
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|(h, p)| join_host_port(h, *p))
            .collect();
        write!(f, "{}/{}/{}", hosts.join(","), self.primary_name, self.db)
    }
}

impl fmt::Debug for SentinelUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SentinelUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::SentinelUrl;

    #[test]
    fn the_documented_forms_parse() {
        let url = SentinelUrl::parse("redis+sentinel://h1:26380,h2,[::1]:7/mymaster/3").unwrap();
        assert_eq!(
            url.sentinels,
            [
                ("h1".to_owned(), 26380),
                ("h2".to_owned(), 26379),
                ("::1".to_owned(), 7)
            ]
        );
        assert_eq!((url.primary_name.as_str(), url.db), ("mymaster", 3));
        assert_eq!(url.password, None);
        assert_eq!(
            url.sentinel_urls(),
            ["redis://h1:26380/", "redis://h2:26379/", "redis://[::1]:7/"]
        );

        let url = SentinelUrl::parse("redis+sentinel://app:p%40ss@h1/mymaster").unwrap();
        assert_eq!(url.username.as_deref(), Some("app"));
        assert_eq!(url.password.as_deref(), Some("p@ss"));
        assert_eq!(url.db, 0);
        assert_eq!(
            url.to_string(),
            "redis+sentinel://app:***@h1:26379/mymaster/0"
        );
        let url = SentinelUrl::parse("rediss+sentinel://app:p@h1:26380/mymaster/1").unwrap();
        assert!(url.tls);
        assert_eq!(url.sentinel_urls(), ["rediss://h1:26380/"]);
        assert_eq!(
            url.to_string(),
            "rediss+sentinel://app:***@h1:26380/mymaster/1"
        );
        let url = SentinelUrl::parse("redis+sentinel://:secret@h1/m/").unwrap();
        assert!(!url.tls);
        assert_eq!(
            (url.username, url.password.as_deref()),
            (None, Some("secret"))
        );
    }

    #[test]
    fn malformed_urls_name_their_problem() {
        for (url, message) in [
            ("redis+sentinel:///m", "needs at least one sentinel"),
            ("redis+sentinel://h1:26379", "needs the primary's name"),
            ("redis+sentinel://h1:26379/", "needs the primary's name"),
            (
                "redis+sentinel://h1:0/m",
                "\"h1:0\" is not a sentinel host[:port]",
            ),
            ("redis+sentinel://[::1/m", "is not a sentinel host[:port]"),
            (
                "redis+sentinel://h1/m/-1",
                "database \"-1\" is not a number",
            ),
            (
                "redis+sentinel://h1/m/0/x",
                "more than a primary name and a database",
            ),
            ("redis+sentinel://h1/m?db=1", "take no query"),
        ] {
            let error = SentinelUrl::parse(url).expect_err(url);
            assert!(error.contains(message), "{url}: {error}");
        }
    }
}
