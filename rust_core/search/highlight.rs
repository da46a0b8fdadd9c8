//! Highlights: a snippet of the original text of each matching field, HTML-escaped, matches in <mark>.

use super::index::Link;
use super::matching::{Term, TermKind, FIELD_NAMES, HASHTAGS, URL};
use super::normalize::{is_word_char, normalize, normalize_char};
use std::ops::Range;

const SNIPPET_CHARS: usize = 160;
/// Context kept before the first match when a long field is cut.
const LEAD_CHARS: usize = 40;
const ELLIPSIS: &str = "…";

/// Normalized text with, for each normalized char, its byte offset and the original bytes it came from.
struct Mapped {
    text: String,
    chars: Vec<(usize, Range<usize>)>,
}

impl Mapped {
    fn new(original: &str) -> Self {
        if original.is_ascii() {
            // Normalizing ASCII only lowercases it: byte i comes from byte i.
            return Mapped {
                text: original.to_ascii_lowercase(),
                chars: (0..original.len()).map(|at| (at, at..at + 1)).collect(),
            };
        }
        let mut mapped = Mapped {
            text: String::with_capacity(original.len()),
            chars: Vec::new(),
        };
        let mut piece = String::new();
        for (at, c) in original.char_indices() {
            let source = at..at + c.len_utf8();
            piece.clear();
            normalize_char(c, &mut piece);
            if piece.is_empty() {
                // A stripped combining mark belongs to the char before it.
                if let Some((_, last)) = mapped.chars.last_mut() {
                    last.end = source.end;
                }
            }
            for n in piece.chars() {
                mapped.chars.push((mapped.text.len(), source.clone()));
                mapped.text.push(n);
            }
        }
        mapped
    }

    /// Original byte range of normalized byte range `range` (which starts and ends on char boundaries).
    fn original(&self, range: Range<usize>) -> Option<Range<usize>> {
        let first = self.chars.partition_point(|(at, _)| *at < range.start);
        let last = self.chars.partition_point(|(at, _)| *at < range.end).checked_sub(1)?;
        Some(self.chars.get(first)?.1.start..self.chars.get(last)?.1.end)
    }

    /// (normalized word, original range) for every word.
    fn words(&self) -> impl Iterator<Item = (&str, Range<usize>)> + '_ {
        self.text
            .split(|c: char| !is_word_char(c))
            .filter(|w| !w.is_empty())
            .filter_map(move |w| {
                let start = w.as_ptr() as usize - self.text.as_ptr() as usize;
                Some((w, self.original(start..start + w.len())?))
            })
    }
}

/// (field name, snippet) for every field of `link` where some term matches.
pub fn highlights(link: &Link, terms: &[Term]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (field, name) in FIELD_NAMES.iter().enumerate() {
        let text = link.field(field);
        if text.is_empty() {
            continue;
        }
        let marks = field_marks(link, field, &text, terms);
        if !marks.is_empty() {
            out.push((*name, snippet(&text, marks)));
        }
    }
    out
}

fn field_marks(link: &Link, field: usize, text: &str, terms: &[Term]) -> Vec<Range<usize>> {
    let mapped = Mapped::new(text);
    let mut scratch = Vec::new();
    let mut marks: Vec<Range<usize>> = mapped
        .words()
        .filter(|(word, _)| {
            terms
                .iter()
                .any(|t| t.kind == TermKind::Word && t.quality(word, word.is_ascii(), &mut scratch).is_some())
        })
        .map(|(_, range)| range)
        .collect();
    if field == URL {
        for term in terms.iter().filter(|t| t.allows_substrings()) {
            marks.extend(
                mapped
                    .text
                    .match_indices(&term.text)
                    .filter_map(|(at, m)| mapped.original(at..at + m.len())),
            );
        }
    }
    if field == HASHTAGS {
        let mut at = 0;
        for tag in &link.hashtags {
            let norm = normalize(tag);
            if terms
                .iter()
                .any(|t| t.kind == TermKind::Tag && norm.starts_with(&t.text))
            {
                marks.push(at..at + tag.len());
            }
            at += tag.len() + 1;
        }
    }
    marks
}

/// Sorted, non-overlapping marks.
fn merge(mut marks: Vec<Range<usize>>) -> Vec<Range<usize>> {
    marks.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(marks.len());
    for mark in marks {
        match merged.last_mut() {
            Some(last) if mark.start <= last.end => last.end = last.end.max(mark.end),
            _ => merged.push(mark),
        }
    }
    merged
}

fn byte_at_char(text: &str, char_index: usize) -> usize {
    text.char_indices().nth(char_index).map_or(text.len(), |(at, _)| at)
}

/// About `SNIPPET_CHARS` of `text` around the first mark, escaped, with `<mark>` around each mark.
fn snippet(text: &str, marks: Vec<Range<usize>>) -> String {
    let marks = merge(marks);
    let total = text.chars().count();
    let (mut start, mut end) = (0, text.len());
    if total > SNIPPET_CHARS {
        let first = text[..marks.first().map_or(0, |m| m.start)].chars().count();
        let end_char = (first.saturating_sub(LEAD_CHARS) + SNIPPET_CHARS).min(total);
        start = byte_at_char(text, end_char.saturating_sub(SNIPPET_CHARS));
        end = byte_at_char(text, end_char);
        end = marks
            .iter()
            .find(|m| m.start < end && m.end > end)
            .map_or(end, |m| m.end);
    }
    let mut out = String::with_capacity(end - start + 32);
    if start > 0 {
        out.push_str(ELLIPSIS);
    }
    let mut at = start;
    for mark in marks.iter().filter(|m| m.start >= start && m.end <= end) {
        escape_into(&text[at..mark.start], &mut out);
        out.push_str("<mark>");
        escape_into(&text[mark.clone()], &mut out);
        out.push_str("</mark>");
        at = mark.end;
    }
    escape_into(&text[at..end], &mut out);
    if end < text.len() {
        out.push_str(ELLIPSIS);
    }
    out
}

/// Escapes like Python's `html.escape(text, quote=True)`.
pub fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::matching::search_terms;

    fn link(title: &str) -> Link {
        Link {
            slug: "s1".into(),
            destination_url: "https://example.com/".into(),
            title: Some(title.into()),
            ..Link::default()
        }
    }

    fn title_highlight(title: &str, query: &str) -> Option<String> {
        highlights(&link(title), &search_terms(query))
            .into_iter()
            .find(|(f, _)| *f == "title")
            .map(|(_, s)| s)
    }

    #[test]
    fn escapes_and_marks() {
        assert_eq!(
            title_highlight("<script>alert('x')</script> Rust & \"Go\"", "rust").as_deref(),
            Some("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; <mark>Rust</mark> &amp; &quot;Go&quot;")
        );
        assert_eq!(
            title_highlight("<script>", "script").as_deref(),
            Some("&lt;<mark>script</mark>&gt;")
        );
    }

    #[test]
    fn marks_whole_words_of_the_original_text() {
        assert_eq!(
            title_highlight("Crème brûlée recipes", "creme rec").as_deref(),
            Some("<mark>Crème</mark> brûlée <mark>recipes</mark>")
        );
        assert_eq!(
            title_highlight("Cafe\u{301} time", "cafe").as_deref(),
            Some("<mark>Cafe\u{301}</mark> time")
        );
        assert_eq!(title_highlight("nothing here", "rust"), None);
    }

    #[test]
    fn long_text_is_cut_around_the_first_match() {
        let title = format!("{} needle {}", "a ".repeat(200), "b ".repeat(200));
        let s = title_highlight(&title, "needle").expect("match");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("<mark>needle</mark>"));
        let visible = s.replace("<mark>", "").replace("</mark>", "");
        assert!(
            visible.chars().count() <= SNIPPET_CHARS + 2,
            "{}",
            visible.chars().count()
        );
    }

    #[test]
    fn url_substrings_and_hashtags() {
        let mut l = link("t");
        l.destination_url = "https://doc.rust-lang.org/".into();
        l.hashtags = vec!["rust-lang".into(), "books".into()];
        let h = highlights(&l, &search_terms("lang #book"));
        assert!(
            h.contains(&("destination_url", "https://doc.rust-<mark>lang</mark>.org/".into())),
            "{h:?}"
        );
        assert!(
            h.contains(&("hashtags", "rust-<mark>lang</mark> <mark>books</mark>".into())),
            "{h:?}"
        );
        assert_eq!(
            highlights(&l, &search_terms("ust")),
            [("destination_url", "https://doc.r<mark>ust</mark>-lang.org/".into())]
        );
    }
}
