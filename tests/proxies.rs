//! Forward auth through real proxies: nginx (`auth_request`) and Caddy (`forward_auth`), each
//! started here on a free loopback port with the configuration the repository ships in
//! `examples/` (`examples/nginx/ratewarden.conf`, `examples/caddy/Caddyfile`, read at test time,
//! so the examples cannot rot), in front of a small upstream, with the real `ratewarden` binary
//! deciding. Five exports pass to the upstream with the rate limit headers on the client's
//! response, the sixth is ratewarden's 429 (its problem+json body, `Retry-After`, `RateLimit*`
//! and `X-RateLimit-*`), and another key still passes; a store failing under `on_error: deny`
//! reaches the client as ratewarden's 503, not the proxy's own error page.

mod common;

use common::daemon::{Daemon, Reply, header, send};
use common::http::structured;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml");
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// The text of `examples/<path>`.
fn example(path: &str) -> String {
    let path = Path::new(EXAMPLES).join(path);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is unreadable: {e}", path.display()))
}

/// `text` with `from` replaced by `to`, which must occur in it.
fn substitute(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "{from:?} is not in the snippet:\n{text}"
    );
    text.replace(from, to)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// An HTTP upstream answering every request 200 `upstream PATH`, keeping each request's head.
struct Upstream {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Upstream { addr, heads }
    }

    fn hits(&self) -> usize {
        self.heads.lock().unwrap().len()
    }

    fn last_head(&self) -> String {
        self.heads
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}

/// Answers the requests of one connection (none has a body: the tests send GETs).
fn serve(stream: TcpStream, heads: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().expect("clones"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut head = request_line.clone();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            head.push_str(&line);
        }
        heads.lock().unwrap().push(head);
        let path = request_line.split(' ').nth(1).unwrap_or("?");
        let body = format!("upstream {path}");
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A proxy process started here, stopped by PID (SIGTERM, then wait) when dropped.
struct Proxy {
    child: Child,
    addr: SocketAddr,
    log: std::path::PathBuf,
}

impl Proxy {
    fn start(mut command: Command, port: u16, log: std::path::PathBuf) -> Proxy {
        let out = std::fs::File::create(&log).expect("log file");
        command
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?} does not start: {e} (run scripts/test)"));
        let mut proxy = Proxy {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(proxy.addr).is_err() {
            if let Some(status) = proxy.child.try_wait().unwrap() {
                panic!("the proxy exited ({status}):\n{}", proxy.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "the proxy does not listen:\n{}",
                proxy.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        proxy
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn get(&self, path: &str, key: &str) -> Reply {
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Api-Key: {key}\r\nConnection: close\r\n\r\n",
            self.addr.port()
        );
        send(self.addr, request.as_bytes())
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx with `examples/nginx/ratewarden.conf` in a server block, everything in `dir`.
fn nginx(dir: &Path, daemon: SocketAddr, upstream: SocketAddr) -> Proxy {
    let port = free_port();
    let snippet = example("nginx/ratewarden.conf");
    let snippet = substitute(&snippet, "127.0.0.1:8080", &daemon.to_string());
    let snippet = substitute(&snippet, "http://upstream", &format!("http://{upstream}"));
    let d = dir.display();
    let conf = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n\
         access_log off;\n\
         client_body_temp_path {d}/client_body;\nproxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n\
         server {{\nlisten 127.0.0.1:{port};\n{snippet}}}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let mut command = Command::new(which("nginx"));
    command
        .arg("-c")
        .arg(&path)
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"));
    Proxy::start(command, port, dir.join("nginx.out"))
}

/// Caddy with `examples/caddy/Caddyfile` as the site, admin and automatic HTTPS off,
/// its storage in `dir`.
fn caddy(dir: &Path, daemon: SocketAddr, upstream: SocketAddr) -> Proxy {
    let port = free_port();
    let snippet = example("caddy/Caddyfile");
    let snippet = substitute(&snippet, "example.com", &format!("http://127.0.0.1:{port}"));
    let snippet = substitute(&snippet, "127.0.0.1:8080", &daemon.to_string());
    let snippet = substitute(&snippet, "upstream:8000", &upstream.to_string());
    let conf = format!("{{\n    admin off\n    auto_https off\n}}\n\n{snippet}");
    let path = dir.join("Caddyfile");
    std::fs::write(&path, conf).unwrap();
    let mut command = Command::new(which("caddy"));
    command
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&path)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"));
    Proxy::start(command, port, dir.join("caddy.log"))
}

/// `name` on PATH, or in /usr/sbin (where Debian puts nginx, off a user's PATH).
fn which(name: &str) -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([std::path::PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed: run scripts/test, which installs it"))
}

/// `/api/export` is a fixed window of an epoch-aligned minute: when it ends within a few
/// seconds, waits for the next one, so the burst falls in one window.
fn fresh_export_window(daemon: &Daemon) {
    let (status, headers, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"window-probe","endpoint":"/api/export"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let reset: u64 = header(&headers, "x-ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("x-ratelimit-reset");
    if reset <= 5 {
        std::thread::sleep(Duration::from_millis(reset * 1000 + 200));
    }
}

/// Five exports pass through `proxy` to the upstream, the sixth is ratewarden's 429 with its
/// headers, and another key passes.
fn five_then_429(proxy: &Proxy, daemon: &Daemon, upstream: &Upstream) {
    fresh_export_window(daemon);
    for n in 1..=5u64 {
        let reply = proxy.get("/api/export", "k");
        assert_eq!(reply.status, 200, "request {n}: {reply:?} {}", reply.text());
        assert_eq!(reply.text(), "upstream /api/export", "request {n}");
        // The client sees its quota on an allowed response too.
        let policy = reply.header("ratelimit-policy");
        assert_eq!(
            policy,
            Some("\"export\";q=5;w=60"),
            "request {n}: {reply:?}"
        );
        let state = structured(reply.header("ratelimit").expect("RateLimit"));
        assert_eq!(state.params[0], ("r".to_owned(), 5 - n as i64), "{reply:?}");
        assert_eq!(reply.header("x-ratelimit-limit"), Some("5"), "{reply:?}");
        let remaining = (5 - n).to_string();
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some(remaining.as_str())
        );
        assert!(reply.header("x-ratelimit-reset").is_some(), "{reply:?}");
    }
    assert_eq!(upstream.hits(), 5);

    let denied = proxy.get("/api/export", "k");
    assert_eq!(denied.status, 429, "{denied:?}\n{}", proxy.log_text());
    let retry: u64 = denied
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {denied:?}"))
        .parse()
        .expect("Retry-After is whole seconds");
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    let policy = structured(denied.header("ratelimit-policy").expect("RateLimit-Policy"));
    assert_eq!(policy.name, "export");
    assert_eq!(
        policy.params,
        [("q".to_owned(), 5), ("w".to_owned(), 60)],
        "{denied:?}"
    );
    let state = structured(denied.header("ratelimit").expect("RateLimit"));
    assert_eq!(state.name, "export");
    assert_eq!(state.params[0], ("r".to_owned(), 0), "{denied:?}");
    assert_eq!(state.params[1].0, "t");
    assert!((1..=60).contains(&state.params[1].1), "{denied:?}");
    assert_eq!(denied.header("x-ratelimit-limit"), Some("5"), "{denied:?}");
    assert_eq!(
        denied.header("x-ratelimit-remaining"),
        Some("0"),
        "{denied:?}"
    );
    let reset = state.params[1].1.to_string();
    assert_eq!(denied.header("x-ratelimit-reset"), Some(reset.as_str()));
    assert_eq!(denied.header("x-ratewarden-problem"), None, "{denied:?}");
    let problem = problem_body(&denied);
    assert_eq!(
        problem,
        json!({
            "type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
            "title": "Quota exceeded",
            "status": 429,
            "detail": format!("limit \"export\" allows 5 per 60 s; retry in {retry} s"),
            "violated-policies": ["export"],
        })
    );
    assert_eq!(upstream.hits(), 5, "a denial reached the upstream");

    let other = proxy.get("/api/export", "another-key");
    assert_eq!(other.status, 200, "{other:?}");
    assert_eq!(other.text(), "upstream /api/export");
    assert_eq!(upstream.hits(), 6);
}

/// The body of a problem reply, checked to be `application/problem+json`.
fn problem_body(reply: &Reply) -> Value {
    assert_eq!(
        reply.header("content-type"),
        Some("application/problem+json"),
        "{reply:?}"
    );
    serde_json::from_str(&reply.text())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {reply:?} {}", reply.text()))
}

/// A daemon on a Redis port nothing listens on, with `on_error: deny`: every decision is 503.
fn daemon_with_store_down(dir: &Path) -> Daemon {
    let policy = dir.join("store-down.yaml");
    let yaml = format!(
        "store: {{ url: \"redis://127.0.0.1:{}/0\", on_error: deny, timeout: 50ms }}\n\
         default_tier: free\n\
         tiers: {{ free: {{ limits: [ {{ name: hourly, algorithm: sliding_window, requests: 100, window: 1h }} ] }} }}\n",
        free_port()
    );
    std::fs::write(&policy, yaml).unwrap();
    Daemon::start(&policy, &[])
}

/// A store failing under `on_error: deny` reaches the client as ratewarden's 503 problem.
fn store_down_is_503(proxy: &Proxy, upstream: &Upstream) {
    let reply = proxy.get("/api/export", "k");
    assert_eq!(
        reply.status,
        503,
        "{reply:?} {}\n{}",
        reply.text(),
        proxy.log_text()
    );
    assert_eq!(
        problem_body(&reply),
        json!({
            "type": "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
            "title": "Temporary reduced capacity",
            "status": 503,
            "detail": "the rate limit store is unavailable and store.on_error denies",
            "violated-policies": [],
        })
    );
    assert_eq!(upstream.hits(), 0, "a denial reached the upstream");
}

#[test]
fn nginx_auth_request_snippet_turns_the_store_failing_into_ratewardens_503() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_store_down(dir.path());
    let upstream = Upstream::start();
    let proxy = nginx(dir.path(), daemon.addr, upstream.addr);
    store_down_is_503(&proxy, &upstream);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn caddy_forward_auth_snippet_passes_ratewardens_503_through() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_store_down(dir.path());
    let upstream = Upstream::start();
    let proxy = caddy(dir.path(), daemon.addr, upstream.addr);
    store_down_is_503(&proxy, &upstream);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn nginx_auth_request_snippet_passes_five_exports_then_429_with_headers() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(Path::new(SHIPPED), &[]);
    let upstream = Upstream::start();
    let proxy = nginx(dir.path(), daemon.addr, upstream.addr);
    five_then_429(&proxy, &daemon, &upstream);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn caddy_forward_auth_snippet_passes_five_exports_then_429_with_headers() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(Path::new(SHIPPED), &[]);
    let upstream = Upstream::start();
    let proxy = caddy(dir.path(), daemon.addr, upstream.addr);
    five_then_429(&proxy, &daemon, &upstream);
    // copy_headers put the allowed request's rate limit headers on the request upstream.
    let head = upstream.last_head().to_ascii_lowercase();
    assert!(
        head.contains("ratelimit-policy: \"export\";q=5;w=60\r\n")
            && head.contains("x-ratelimit-limit: 5\r\n"),
        "{head}"
    );
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
