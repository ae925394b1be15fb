//! One request as bytes on the wire: method, target, version, headers, body and its framing.
//!
//! Written by hand rather than with an HTTP client, which would refuse to send most of what
//! the fuzzer wants to send (broken framing, invalid header bytes, bogus lengths).

/// How the body's length is framed.
#[derive(Debug)]
pub enum Length {
    Exact,
    /// `Content-Length` shorter than the body: the rest is left on the connection.
    Short(usize),
    /// No `Content-Length` at all (on a POST: an empty body, the rest left on the connection).
    Omit,
    /// An invalid `Content-Length` value (never one larger than the body).
    Bogus(&'static [u8]),
    /// `Transfer-Encoding: chunked`, properly encoded.
    Chunked,
    /// `Transfer-Encoding: chunked` with a broken chunk size.
    BadChunked(&'static [u8]),
    /// `Transfer-Encoding` other than chunked (400 for a request).
    OtherEncoding,
}

pub struct Request {
    pub method: Vec<u8>,
    pub target: Vec<u8>,
    pub version: &'static [u8],
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    pub body: Vec<u8>,
    pub length: Length,
    /// Whether this is well-formed HTTP/1.1 that hyper must hand to axum.
    pub wellformed: bool,
    /// For a request valid in every way: the statuses it may get.
    pub expect: Option<&'static [u16]>,
    pub kind: &'static str,
}

impl Request {
    pub fn new(kind: &'static str, method: &str, target: &str) -> Request {
        Request {
            method: method.as_bytes().to_vec(),
            target: target.as_bytes().to_vec(),
            version: b"HTTP/1.1",
            headers: vec![(b"Host".to_vec(), b"ratewarden".to_vec())],
            body: Vec::new(),
            length: Length::Exact,
            wellformed: true,
            expect: None,
            kind,
        }
    }

    /// The body length the server is told of, when it is told one.
    pub fn payload_len(&self) -> Option<usize> {
        match self.length {
            Length::Exact | Length::Chunked => Some(self.body.len()),
            Length::Short(n) => Some(n),
            Length::Omit => Some(0),
            Length::BadChunked(_) => Some(self.body.len() + 32),
            Length::Bogus(_) | Length::OtherEncoding => None,
        }
    }

    pub fn header(&mut self, name: &str, value: impl Into<Vec<u8>>) {
        self.headers.push((name.as_bytes().to_vec(), value.into()));
    }

    /// The bytes on the wire, and whether to send them on a connection of their own (left
    /// data or a broken framing make the connection unusable afterwards).
    pub fn encode(&self) -> (Vec<u8>, bool) {
        let mut raw = Vec::with_capacity(self.body.len() + 512);
        raw.extend_from_slice(&self.method);
        raw.push(b' ');
        raw.extend_from_slice(&self.target);
        raw.push(b' ');
        raw.extend_from_slice(self.version);
        raw.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            raw.extend_from_slice(name);
            raw.extend_from_slice(b": ");
            raw.extend_from_slice(value);
            raw.extend_from_slice(b"\r\n");
        }
        let mut own_connection = false;
        let body: Vec<u8> = match &self.length {
            Length::Exact => {
                if !self.body.is_empty() || self.method == b"POST" || self.method == b"PUT" {
                    raw.extend_from_slice(
                        format!("Content-Length: {}\r\n", self.body.len()).as_bytes(),
                    );
                }
                self.body.clone()
            }
            Length::Short(n) => {
                raw.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
                own_connection = true;
                self.body.clone()
            }
            Length::Omit => {
                own_connection = !self.body.is_empty();
                self.body.clone()
            }
            Length::Bogus(value) => {
                raw.extend_from_slice(b"Content-Length: ");
                raw.extend_from_slice(value);
                raw.extend_from_slice(b"\r\n");
                own_connection = true;
                self.body.clone()
            }
            Length::Chunked => {
                raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                let mut encoded = Vec::new();
                let mut rest = &self.body[..];
                let mut size = 1;
                while !rest.is_empty() {
                    let n = size.min(rest.len());
                    encoded.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                    encoded.extend_from_slice(&rest[..n]);
                    encoded.extend_from_slice(b"\r\n");
                    rest = &rest[n..];
                    size = size * 7 + 3;
                }
                encoded.extend_from_slice(b"0\r\n\r\n");
                encoded
            }
            Length::BadChunked(first) => {
                raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                own_connection = true;
                let mut encoded = first.to_vec();
                encoded.extend_from_slice(&self.body);
                encoded
            }
            Length::OtherEncoding => {
                raw.extend_from_slice(b"Transfer-Encoding: gzip\r\n");
                own_connection = true;
                self.body.clone()
            }
        };
        raw.extend_from_slice(b"\r\n");
        raw.extend_from_slice(&body);
        (raw, own_connection || self.version != b"HTTP/1.1")
    }
}
