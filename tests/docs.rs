//! The documentation cannot rot. Over `README.md`, `CHANGELOG.md`, `docs/`, `examples/` and the
//! READMEs of `dashboards/` and `models/`:
//!
//! - every relative link resolves to a file of the repository, and a `#anchor` to a heading of
//!   that file (GitHub's slugs);
//! - every ```yaml block is a policy that `ratewarden check-policy` accepts, unless an HTML
//!   comment on the line before says otherwise: `<!-- not-a-policy -->` (skipped),
//!   `<!-- envoy-ratelimit-config -->` (checked as an envoyproxy/ratelimit folder) or
//!   `<!-- from PATH -->` (any language: the block must appear as it is in PATH, relative to
//!   the repository);
//! - the files of `examples/` parse, and its policies and envoyproxy/ratelimit folders pass
//!   `check-policy`;
//! - every metric name the documents mention is served by `/metrics` of a real daemon (after a
//!   little traffic), and every metric served is in the HTTP API reference;
//! - `docs/reference/cli.md` lists exactly the flags of each command's `--help`;
//! - every route of `/openapi.json` is in the HTTP API reference.
//!
//! `tests/docs/` holds the parts: `markdown` (the parser), `repo` (the documents, the binary),
//! `links`, `snippets`, `metrics` and `reference` (CLI flags, OpenAPI routes).

mod common;
#[path = "docs/links.rs"]
mod links;
#[path = "docs/markdown.rs"]
mod markdown;
#[path = "docs/metrics.rs"]
mod metrics;
#[path = "docs/reference.rs"]
mod reference;
#[path = "docs/repo.rs"]
mod repo;
#[path = "docs/snippets.rs"]
mod snippets;
