//! A link's JSON as the API shows it, written straight to bytes from the values a database row holds: the same
//! bytes orjson gives for the dict `slugline.links.service.link_json` builds (its keys in its order, orjson's
//! escapes), so that a page of links costs no dict per link. A row in any other shape is the caller's to
//! render (`write_link` says so with `None`).

/// The values of one link row, as the readers on the event loop give them (see `link_json`).
pub struct LinkRow<'a> {
    pub id: &'a str,
    pub slug: &'a str,
    pub destination_url: &'a str,
    pub title: Option<&'a str>,
    pub description: Option<&'a str>,
    pub note: Option<&'a str>,
    pub hashtags: &'a [String],
    pub visibility: &'a str,
    pub clicks: i64,
    pub created_at: &'a str,
    pub updated_at: &'a str,
}

/// Stored hashtags (a JSON array of strings, or `null` for none), as `link_json` reads them; `None` for any
/// other JSON (which the caller renders its own way).
pub fn parse_hashtags(stored: &str) -> Option<Vec<String>> {
    serde_json::from_str::<Option<Vec<String>>>(stored)
        .ok()
        .map(Option::unwrap_or_default)
}

/// A timestamp as SQLite holds it (`2024-05-01 12:00:00.000000`) or as PostgreSQL sends it in UTC
/// (`2024-05-01 12:00:00[.f…]+00`), in the API's form (`2024-05-01T12:00:00Z`), by the rule of `loopread.iso`;
/// `None` for any other form, and where that rule would slice out anything but digits and separators.
pub fn iso_moment(stored: &str) -> Option<[u8; 20]> {
    let b = stored.as_bytes();
    let size = b.len();
    if size < 22 || !stored.is_ascii() {
        return None; // Python counts characters, this bytes: the same only for ASCII
    }
    let sqlite = size == 26 && b[19] == b'.';
    let postgres = stored.ends_with("+00") && (size == 22 || b[19] == b'.');
    // Digits where `loopread.iso` slices (it takes any character there, which orjson would then escape).
    let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
        .iter()
        .all(|&i| b[i].is_ascii_digit());
    let marks = b[4] == b'-' && b[7] == b'-' && b[10] == b' ' && b[13] == b':' && b[16] == b':';
    if !(sqlite || postgres) || !digits || !marks {
        return None;
    }
    let mut out = [0u8; 20];
    out[..10].copy_from_slice(&b[..10]);
    out[10] = b'T';
    out[11..19].copy_from_slice(&b[11..19]);
    out[19] = b'Z';
    Some(out)
}

/// Appends the link's JSON to `out`; `None` (and `out` as it was) when a timestamp is in a form `iso_moment`
/// does not take.
pub fn write_link(out: &mut Vec<u8>, row: &LinkRow<'_>, base_url: &str) -> Option<()> {
    let created = iso_moment(row.created_at)?;
    let updated = iso_moment(row.updated_at)?;
    out.extend_from_slice(b"{\"id\":");
    string(out, row.id);
    out.extend_from_slice(b",\"slug\":");
    string(out, row.slug);
    out.extend_from_slice(b",\"short_url\":");
    let mut short_url = String::with_capacity(base_url.len() + 1 + row.slug.len());
    short_url.push_str(base_url);
    short_url.push('/');
    short_url.push_str(row.slug);
    string(out, &short_url);
    out.extend_from_slice(b",\"destination_url\":");
    string(out, row.destination_url);
    out.extend_from_slice(b",\"title\":");
    optional(out, row.title);
    out.extend_from_slice(b",\"description\":");
    optional(out, row.description);
    out.extend_from_slice(b",\"note\":");
    optional(out, row.note);
    out.extend_from_slice(b",\"hashtags\":[");
    for (i, tag) in row.hashtags.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, tag);
    }
    out.extend_from_slice(b"],\"visibility\":");
    string(out, row.visibility);
    out.extend_from_slice(b",\"clicks\":");
    out.extend_from_slice(row.clicks.to_string().as_bytes());
    out.extend_from_slice(b",\"created_at\":\"");
    out.extend_from_slice(&created);
    out.extend_from_slice(b"\",\"updated_at\":\"");
    out.extend_from_slice(&updated);
    out.extend_from_slice(b"\"}");
    Some(())
}

fn optional(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => string(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON string as orjson writes it: `"` and `\` escaped, control characters as `\b \t \n \f \r` or `\u00xx`
/// (lower-case hex), everything else (DEL and all of Unicode included) as its UTF-8 bytes.
fn string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let short: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(tags: &'a [String], created: &'a str) -> LinkRow<'a> {
        LinkRow {
            id: "lnk_1",
            slug: "s\"q",
            destination_url: "https://x.example/\u{e9}",
            title: Some("a\tb\u{1}\u{7f}"),
            description: None,
            note: Some("\\"),
            hashtags: tags,
            visibility: "public",
            clicks: -3,
            created_at: created,
            updated_at: "2024-05-01 12:00:00+00",
        }
    }

    #[test]
    fn a_link_is_written_with_orjsons_escapes() {
        let tags = vec!["x".to_owned(), "y\n".to_owned()];
        let mut out = Vec::new();
        write_link(&mut out, &row(&tags, "2024-05-01 12:00:00.000000"), "http://sl.test").unwrap();
        let wanted = concat!(
            r#"{"id":"lnk_1","slug":"s\"q","short_url":"http://sl.test/s\"q","destination_url":"https://x.example/"#,
            "\u{e9}",
            r#"","title":"a\tb\u0001"#,
            "\u{7f}",
            r#"","description":null,"note":"\\","hashtags":["x","y\n"],"visibility":"public","clicks":-3,"#,
            r#""created_at":"2024-05-01T12:00:00Z","updated_at":"2024-05-01T12:00:00Z"}"#
        );
        assert_eq!(String::from_utf8(out).unwrap(), wanted);
    }

    #[test]
    fn timestamps_in_other_forms_are_left_to_the_caller() {
        for stored in [
            "2024-05-01T12:00:00.000000",
            "2024-05-01 12:00:00.000000+02",
            "2024-05-01 12:00:00",
            "2024-05-01 12:00:00.00000\u{e9}",
            "2024-05-01 12:00:0\".000000",
            "2024\n05-01 12:00:00+00",
            "2024-05-01 1\\:00:00+00",
            "abcd-ef-gh ij:kl:mn.000000",
            "",
        ] {
            assert_eq!(iso_moment(stored), None, "{stored:?}");
            let mut out = b"kept".to_vec();
            assert_eq!(write_link(&mut out, &row(&[], stored), ""), None);
            assert_eq!(out, b"kept");
        }
        assert_eq!(
            &iso_moment("2024-05-01 12:00:00.5+00").unwrap(),
            b"2024-05-01T12:00:00Z"
        );
    }

    #[test]
    fn hashtags_are_an_array_of_strings_or_null() {
        assert_eq!(
            parse_hashtags(r#"["a", "\u00e9"]"#),
            Some(vec!["a".to_owned(), "\u{e9}".to_owned()])
        );
        assert_eq!(parse_hashtags("null"), Some(vec![]));
        assert_eq!(parse_hashtags("[1]"), None);
        assert_eq!(parse_hashtags(r#"["\ud800"]"#), None);
        assert_eq!(parse_hashtags("{}"), None);
    }
}
