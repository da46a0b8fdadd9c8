//! Referrers and click sources: the host of an http(s) referrer, and the source a click is counted under.
//!
//! Both come from the request (query string, `Referer` header) and end up in database rows, so control
//! characters (`char::is_control`, Unicode category Cc, NUL included) are dropped from them first: PostgreSQL
//! refuses NUL in text, and none of them means anything in a host name or a source label.

use std::borrow::Cow;

const MAX_SOURCE_CHARS: usize = 64;

/// `text` without its control characters; borrowed (no allocation) when it has none.
fn without_controls(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        Cow::Owned(text.chars().filter(|c| !c.is_control()).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// The host of an absolute http(s) URL: lowercased, without userinfo, port or trailing dot, with a leading
/// `www.` or `m.` removed; control characters anywhere in the URL are dropped first. `None` when absent or
/// not such a URL.
pub fn referrer_host(referrer: Option<&str>) -> Option<String> {
    let cleaned = without_controls(referrer?);
    let url = cleaned.trim();
    let scheme_end = url.find("://")?;
    if !matches!(url[..scheme_end].to_ascii_lowercase().as_str(), "http" | "https") {
        return None;
    }
    let rest = &url[scheme_end + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if let Some(inner) = host_port.strip_prefix('[') {
        let (address, after) = inner.split_once(']')?;
        valid_port(after)?;
        if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return None;
        }
        address
    } else {
        let host = host_port.split_once(':').map_or(host_port, |(host, _)| host);
        valid_port(&host_port[host.len()..])?;
        host
    };
    let host = host.strip_suffix('.').unwrap_or(host).to_lowercase();
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'))
    {
        return None;
    }
    let stripped = host
        .strip_prefix("www.")
        .or_else(|| host.strip_prefix("m."))
        .unwrap_or(&host);
    (!stripped.is_empty()).then(|| stripped.to_owned())
}

/// `Some(())` when `after_host` is empty or `:` followed by up to 5 digits.
fn valid_port(after_host: &str) -> Option<()> {
    match after_host.strip_prefix(':') {
        None if after_host.is_empty() => Some(()),
        Some(port) if port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()) => Some(()),
        _ => None,
    }
}

/// The source a click counts under: `utm_source` (control characters dropped, trimmed, lowercased, at most
/// 64 chars) if non-empty, else `qr` for QR scans, else the referrer's host, else `direct`.
pub fn classify_source(utm_source: Option<&str>, via_qr: bool, referrer: Option<&str>) -> String {
    let utm: String = without_controls(utm_source.unwrap_or_default())
        .trim()
        .to_lowercase()
        .chars()
        .take(MAX_SOURCE_CHARS)
        .collect();
    if !utm.is_empty() {
        return utm;
    }
    if via_qr {
        return "qr".to_owned();
    }
    referrer_host(referrer).unwrap_or_else(|| "direct".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(url: &str) -> Option<String> {
        referrer_host(Some(url))
    }

    #[test]
    fn hosts() {
        assert_eq!(host("https://www.Google.com/search?q=x").as_deref(), Some("google.com"));
        assert_eq!(host("http://m.facebook.com:8080/path").as_deref(), Some("facebook.com"));
        assert_eq!(
            host("https://user:pw@news.ycombinator.com/item?id=1").as_deref(),
            Some("news.ycombinator.com")
        );
        assert_eq!(host("HTTPS://t.co").as_deref(), Some("t.co"));
        assert_eq!(host("https://example.com.").as_deref(), Some("example.com"));
        assert_eq!(host("https://www.m.example.com").as_deref(), Some("m.example.com"));
        assert_eq!(host("http://[::1]:8000/").as_deref(), Some("::1"));
        assert_eq!(
            host("https://mobile.twitter.com/").as_deref(),
            Some("mobile.twitter.com")
        );
        for bad in [
            "",
            "example.com",
            "ftp://example.com",
            "https://",
            "https://:80/",
            "https://a b.com/",
            "https://x.com:port/",
            "android-app://com.google",
        ] {
            assert_eq!(host(bad), None, "{bad}");
        }
        assert_eq!(referrer_host(None), None);
    }

    #[test]
    fn sources() {
        assert_eq!(
            classify_source(Some("  NewsLetter "), true, Some("https://www.google.com/")),
            "newsletter"
        );
        assert_eq!(classify_source(Some(&"x".repeat(100)), false, None).len(), 64);
        assert_eq!(
            classify_source(Some("   "), true, Some("https://www.google.com/")),
            "qr"
        );
        assert_eq!(
            classify_source(None, false, Some("https://www.google.com/")),
            "google.com"
        );
        assert_eq!(classify_source(None, false, Some("not a url")), "direct");
        assert_eq!(classify_source(None, false, None), "direct");
    }

    #[test]
    fn control_characters_are_dropped() {
        assert_eq!(classify_source(Some("\0"), false, None), "direct");
        assert_eq!(classify_source(Some("\0\u{1}\u{7f}\u{9f}"), true, None), "qr");
        assert_eq!(
            classify_source(Some("\0 News\u{0}Letter\t\r\n"), false, None),
            "newsletter"
        );
        // 64 characters are kept after the drop, not before.
        let padded = format!("{}{}", "\0".repeat(10), "x".repeat(100));
        assert_eq!(classify_source(Some(&padded), false, None), "x".repeat(64));
        assert_eq!(host("https://exa\0mple.com\u{1b}/p\0").as_deref(), Some("example.com"));
        assert_eq!(
            host("\0https://www.news.example\u{85}:80\u{7}/").as_deref(),
            Some("news.example")
        );
        assert_eq!(host("https://\0\u{1}/"), None);
        assert_eq!(
            classify_source(Some("\0"), false, Some("https://a\0.example/")),
            "a.example"
        );
        for text in ["\0", "a\0b", "\u{1}\u{1f}\u{7f}\u{80}\u{9f}x"] {
            let source = classify_source(Some(text), false, Some(&format!("https://{text}.example/")));
            assert!(!source.chars().any(char::is_control), "{source:?}");
            let found = host(&format!("https://{text}.example/")).unwrap_or_default();
            assert!(!found.chars().any(char::is_control), "{found:?}");
        }
    }
}
