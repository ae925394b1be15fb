//! The proxies and the upstream the proxy tests run: nginx and Caddy started on free loopback
//! ports with the configuration files of `examples/` (read at test time), an upstream that
//! answers every request and keeps its head.

use crate::common::daemon::{Reply, send};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// An HTTP upstream answering every request 200 `upstream PATH`, keeping each request's head.
pub struct Upstream {
    pub addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    pub fn start() -> Upstream {
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

    pub fn hits(&self) -> usize {
        self.heads.lock().unwrap().len()
    }

    pub fn last_head(&self) -> String {
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
pub struct Proxy {
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

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn get(&self, path: &str, key: &str) -> Reply {
        self.get_with(path, &[("X-Api-Key", key)])
    }

    /// A GET with the client's own `headers`.
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n",
            self.addr.port()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("Connection: close\r\n\r\n");
        send(self.addr, request.as_bytes())
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        crate::common::terminate(&mut self.child, Duration::from_secs(10));
    }
}

/// nginx with `examples/nginx/ratewarden.conf` in a server block, everything in `dir`.
pub fn nginx(dir: &Path, daemon: SocketAddr, upstream: SocketAddr) -> Proxy {
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
pub fn caddy(dir: &Path, daemon: SocketAddr, upstream: SocketAddr) -> Proxy {
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
