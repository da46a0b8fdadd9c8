//! Slugs (the path of a short link) and link ids: generation and validation.

use crate::base62::{self, RandomError};
use std::fmt;

pub const SLUG_MAX_LEN: usize = 64;
pub const GENERATED_SLUG_LEN: usize = 7;
pub const LINK_ID_PREFIX: &str = "lnk_";
const LINK_ID_RANDOM_LEN: usize = 11;

/// Words that would shadow a route of the service or look official; compared case-insensitively.
pub const RESERVED_SLUGS: &[&str] = &[
    "_next",
    "about",
    "account",
    "admin",
    "analyze",
    "api",
    "api-key",
    "api-keys",
    "app",
    "assets",
    "auth",
    "billing",
    "blog",
    "contact",
    "dashboard",
    "docs",
    "favicon",
    "health",
    "healthz",
    "help",
    "index",
    "l",
    "links",
    "login",
    "logout",
    "mcp",
    "me",
    "metrics",
    "null",
    "openapi",
    "pricing",
    "privacy",
    "public",
    "qr",
    "redoc",
    "register",
    "robots",
    "s",
    "search",
    "settings",
    "signin",
    "signup",
    "sitemap",
    "static",
    "status",
    "support",
    "terms",
    "undefined",
    "well-known",
    "www",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlugError {
    Length { len: usize },
    Random(RandomError),
}

impl fmt::Display for SlugError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length { len } => write!(f, "slug length must be between 1 and {SLUG_MAX_LEN}, got {len}"),
            Self::Random(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SlugError {}

impl From<RandomError> for SlugError {
    fn from(e: RandomError) -> Self {
        Self::Random(e)
    }
}

pub fn generate_slug(length: usize) -> Result<String, SlugError> {
    if !(1..=SLUG_MAX_LEN).contains(&length) {
        return Err(SlugError::Length { len: length });
    }
    Ok(base62::random_string(length)?)
}

pub fn is_reserved(slug: &str) -> bool {
    RESERVED_SLUGS.iter().any(|word| word.eq_ignore_ascii_case(slug))
}

/// `None` when `slug` is acceptable, otherwise a message for a human naming the field and the rule.
pub fn slug_error(slug: &str) -> Option<String> {
    let len = slug.chars().count();
    if !(1..=SLUG_MAX_LEN).contains(&len) {
        return Some(format!("slug must be 1-{SLUG_MAX_LEN} characters long"));
    }
    if !slug
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Some("slug may contain only A-Z, a-z, 0-9, '_' and '-'".to_owned());
    }
    if is_reserved(slug) {
        return Some(format!("slug '{slug}' is reserved"));
    }
    None
}

pub fn generate_link_id() -> Result<String, RandomError> {
    Ok(format!(
        "{LINK_ID_PREFIX}{}",
        base62::random_string(LINK_ID_RANDOM_LEN)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_slugs_are_valid() {
        for _ in 0..50 {
            let slug = generate_slug(GENERATED_SLUG_LEN).expect("slug");
            assert_eq!(slug.len(), 7);
            // A random slug could in theory spell a short reserved word such as "qr"; 7 chars cannot.
            assert_eq!(slug_error(&slug), None);
        }
    }

    #[test]
    fn slug_length_bounds() {
        assert!(matches!(generate_slug(0), Err(SlugError::Length { len: 0 })));
        assert!(generate_slug(65).is_err());
        assert_eq!(generate_slug(64).map(|s| s.len()), Ok(64));
        assert_eq!(slug_error(""), Some("slug must be 1-64 characters long".into()));
        assert_eq!(
            slug_error(&"a".repeat(65)),
            Some("slug must be 1-64 characters long".into())
        );
        assert_eq!(slug_error(&"a".repeat(64)), None);
    }

    #[test]
    fn slug_alphabet() {
        assert_eq!(slug_error("rust-book_2"), None);
        for bad in ["a b", "a/b", "é", "a.b", "a%20"] {
            assert_eq!(
                slug_error(bad),
                Some("slug may contain only A-Z, a-z, 0-9, '_' and '-'".into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn reserved_words_are_case_insensitive() {
        assert_eq!(slug_error("api"), Some("slug 'api' is reserved".into()));
        assert_eq!(slug_error("API"), Some("slug 'API' is reserved".into()));
        assert!(slug_error("Api").is_some());
        assert!(slug_error("Well-Known").is_some());
        assert_eq!(slug_error("apis"), None);
        assert!(RESERVED_SLUGS.iter().all(|w| w.to_lowercase() == *w));
    }

    #[test]
    fn link_ids() {
        let id = generate_link_id().expect("id");
        assert!(id.starts_with("lnk_"));
        assert_eq!(id.len(), 15);
        assert!(id[4..].bytes().all(base62::is_base62));
    }
}
