//! A link's redirect rules: an ordered list of conditions on the visitor (country, device, OS, browser, language),
//! each with the destination it sends to. The first rule whose every condition holds wins; none: the link's own
//! destination. Compiled once per cached link (values folded to lower case), evaluated per redirect with the user
//! agent classified at most once and only when a rule asks about it.

use crate::useragent::{classify_user_agent, Agent};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// At most this many rules per link (the API's bound; the compiled form refuses more).
pub const MAX_RULES: usize = 20;
/// At most this many values per condition.
pub const MAX_VALUES: usize = 300;
/// Bytes of an `Accept-Language` header read: a longer one is cut there.
const MAX_LANGUAGE_HEADER: usize = 1024;
/// User agents whose classification is remembered (at most `MAX_REMEMBERED_AGENT` bytes each, so at most ~2.5 MB):
/// classifying took most of a rule's evaluation, and a link's visitors send few distinct agents. Full, it starts over.
const REMEMBERED_AGENTS: usize = 4096;
const MAX_REMEMBERED_AGENT: usize = 512;

static AGENTS: Mutex<Option<HashMap<Box<[u8]>, Agent>>> = Mutex::new(None);

/// `classify_user_agent` of a header's raw bytes, remembered for the next visitor who sends the same.
fn classified(user_agent: &[u8]) -> Agent {
    if let Some(&agent) = AGENTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|known| known.get(user_agent))
    {
        return agent;
    }
    let agent = classify_user_agent(&latin1(user_agent));
    if user_agent.len() <= MAX_REMEMBERED_AGENT {
        let mut known = AGENTS.lock().unwrap_or_else(PoisonError::into_inner);
        let known = known.get_or_insert_with(HashMap::new);
        if known.len() >= REMEMBERED_AGENTS {
            known.clear();
        }
        known.insert(user_agent.into(), agent);
    }
    agent
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError(pub String);

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RulesError {}

/// One rule's conditions; an empty list is no condition.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Rule {
    country: Vec<[u8; 2]>,
    device: Vec<String>,
    os: Vec<String>,
    browser: Vec<String>,
    language: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RuleSet {
    rules: Vec<Rule>,
}

/// What a visitor brings to the evaluation: the raw headers and the country, if known.
pub struct Visit<'a> {
    pub user_agent: &'a [u8],
    pub accept_language: &'a [u8],
    pub country: Option<&'a str>,
}

fn values(conditions: &serde_json::Map<String, Value>, name: &str, rule: usize) -> Result<Vec<String>, RulesError> {
    let Some(found) = conditions.get(name) else {
        return Ok(Vec::new());
    };
    let bad = || RulesError(format!("rules[{rule}].if.{name} must be a list of strings"));
    let list = found.as_array().ok_or_else(bad)?;
    if list.len() > MAX_VALUES {
        return Err(RulesError(format!(
            "rules[{rule}].if.{name} has more than {MAX_VALUES} values"
        )));
    }
    list.iter()
        .map(|value| {
            value
                .as_str()
                .map(|text| text.trim().to_ascii_lowercase())
                .ok_or_else(bad)
        })
        .collect()
}

impl RuleSet {
    /// The rules from their JSON (`[{"if": {...}, "to": "..."}, ...]`); destinations are the caller's business.
    pub fn parse(json: &str) -> Result<Self, RulesError> {
        let parsed: Value = serde_json::from_str(json).map_err(|e| RulesError(format!("rules are not JSON: {e}")))?;
        let list = parsed
            .as_array()
            .ok_or_else(|| RulesError("rules must be a list".to_owned()))?;
        if list.len() > MAX_RULES {
            return Err(RulesError(format!("at most {MAX_RULES} rules")));
        }
        let mut rules = Vec::with_capacity(list.len());
        for (n, item) in list.iter().enumerate() {
            let empty = serde_json::Map::new();
            let conditions = match item.get("if") {
                None | Some(Value::Null) => &empty,
                Some(Value::Object(map)) => map,
                Some(_) => return Err(RulesError(format!("rules[{n}].if must be an object"))),
            };
            let country = values(conditions, "country", n)?
                .iter()
                .map(|code| match code.as_bytes() {
                    [a, b] => Ok([a.to_ascii_uppercase(), b.to_ascii_uppercase()]),
                    _ => Err(RulesError(format!("rules[{n}].if.country takes two-letter codes"))),
                })
                .collect::<Result<_, _>>()?;
            rules.push(Rule {
                country,
                device: values(conditions, "device", n)?,
                os: values(conditions, "os", n)?,
                browser: values(conditions, "browser", n)?,
                language: values(conditions, "language", n)?,
            });
        }
        Ok(RuleSet { rules })
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether any rule asks for the visitor's country (the caller then looks it up before `choose`).
    pub fn needs_country(&self) -> bool {
        self.rules.iter().any(|rule| !rule.country.is_empty())
    }

    /// The index of the first rule that holds for this visit, if any.
    pub fn choose(&self, visit: &Visit<'_>) -> Option<usize> {
        let mut agent: Option<Agent> = None;
        let mut language: Option<Option<String>> = None;
        let country = visit.country.map(str::as_bytes);
        self.rules.iter().position(|rule| {
            if !rule.country.is_empty()
                && !country.is_some_and(|code| rule.country.iter().any(|c| c.eq_ignore_ascii_case(code)))
            {
                return false;
            }
            if !(rule.device.is_empty() && rule.os.is_empty() && rule.browser.is_empty()) {
                let agent = *agent.get_or_insert_with(|| classified(visit.user_agent));
                let held = |wanted: &[String], have: &str| {
                    wanted.is_empty() || wanted.iter().any(|w| w.eq_ignore_ascii_case(have))
                };
                if !(held(&rule.device, agent.device.name())
                    && held(&rule.os, agent.os)
                    && held(&rule.browser, agent.browser))
                {
                    return false;
                }
            }
            if !rule.language.is_empty() {
                let top = language.get_or_insert_with(|| preferred_language(visit.accept_language));
                return top
                    .as_deref()
                    .is_some_and(|tag| rule.language.iter().any(|want| language_matches(want, tag)));
            }
            true
        })
    }
}

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// `want` ("fr", "fr-ca") covers the visitor's tag ("fr", "fr-ca", "fr-ca-x"): equal, or a prefix up to a `-`.
fn language_matches(want: &str, tag: &str) -> bool {
    tag.len() >= want.len()
        && tag.as_bytes()[..want.len()].eq_ignore_ascii_case(want.as_bytes())
        && (tag.len() == want.len() || tag.as_bytes()[want.len()] == b'-')
}

/// The visitor's most preferred language of an `Accept-Language` header (the highest q, the first among equals;
/// `*` and q=0 are not preferences), lower-cased.
pub fn preferred_language(header: &[u8]) -> Option<String> {
    let header = &header[..header.len().min(MAX_LANGUAGE_HEADER)];
    let mut best: Option<(u32, &[u8])> = None;
    for item in header.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let tag = trim(parts.next().unwrap_or_default());
        if tag.is_empty() || tag == b"*" || !tag.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-') {
            continue;
        }
        let mut q = 1000;
        for param in parts {
            let param = trim(param);
            if let Some(value) = param.strip_prefix(b"q=").or_else(|| param.strip_prefix(b"Q=")) {
                q = quality(value);
            }
        }
        if q > 0 && best.is_none_or(|(top, _)| q > top) {
            best = Some((q, tag));
        }
    }
    best.map(|(_, tag)| String::from_utf8_lossy(tag).to_ascii_lowercase())
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end.max(start)]
}

/// A q-value in thousandths (RFC 9110: 0 to 1 with up to three decimals); anything else counts as 0.
fn quality(value: &[u8]) -> u32 {
    let text = std::str::from_utf8(value).unwrap_or("");
    match text.parse::<f64>() {
        Ok(q) if (0.0..=1.0).contains(&q) => (q * 1000.0).round() as u32,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IPHONE: &[u8] = b"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
    const WINDOWS: &[u8] = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

    fn visit<'a>(user_agent: &'a [u8], language: &'a [u8], country: Option<&'a str>) -> Visit<'a> {
        Visit {
            user_agent,
            accept_language: language,
            country,
        }
    }

    #[test]
    fn the_first_rule_that_holds_wins() {
        let rules = RuleSet::parse(
            r#"[{"if": {"country": ["fr"], "device": ["mobile"]}, "to": "a"},
                {"if": {"country": ["DE", "AT"], "device": ["desktop"]}, "to": "b"},
                {"if": {"language": ["fr"]}, "to": "c"},
                {"if": {"os": ["ios"], "browser": ["Safari"]}, "to": "d"}]"#,
        )
        .expect("rules");
        assert!(rules.needs_country());
        assert_eq!(rules.choose(&visit(IPHONE, b"", Some("FR"))), Some(0));
        assert_eq!(rules.choose(&visit(WINDOWS, b"", Some("DE"))), Some(1));
        assert_eq!(rules.choose(&visit(WINDOWS, b"", Some("FR"))), None);
        assert_eq!(rules.choose(&visit(WINDOWS, b"en-GB, fr-CA;q=0.9", None)), None);
        assert_eq!(rules.choose(&visit(WINDOWS, b"fr-CA, en;q=0.5", None)), Some(2));
        assert_eq!(rules.choose(&visit(IPHONE, b"en", None)), Some(3));
        assert_eq!(rules.choose(&visit(b"", b"", None)), None);
    }

    #[test]
    fn a_rule_without_conditions_always_holds() {
        let rules = RuleSet::parse(r#"[{"if": {}, "to": "a"}]"#).expect("rules");
        assert_eq!(rules.choose(&visit(b"", b"", None)), Some(0));
        assert!(!rules.needs_country());
    }

    #[test]
    fn malformed_rules_are_refused() {
        for bad in [
            "{}",
            r#"[{"if": 3}]"#,
            r#"[{"if": {"country": "FR"}}]"#,
            r#"[{"if": {"country": ["FRA"]}}]"#,
            r#"[{"if": {"device": [1]}}]"#,
            "not json",
        ] {
            assert!(RuleSet::parse(bad).is_err(), "{bad}");
        }
        let many = format!("[{}]", vec![r#"{"if": {}}"#; MAX_RULES + 1].join(","));
        assert!(RuleSet::parse(&many).is_err());
    }

    #[test]
    fn the_preferred_language_is_the_highest_q() {
        assert_eq!(preferred_language(b"de-DE,de;q=0.9,en;q=0.8").as_deref(), Some("de-de"));
        assert_eq!(preferred_language(b"en;q=0.5, fr ;q=0.9").as_deref(), Some("fr"));
        assert_eq!(preferred_language(b"*, es;q=0").as_deref(), None);
        assert_eq!(preferred_language(b"").as_deref(), None);
        assert_eq!(preferred_language(b"\xff\xfe, it").as_deref(), Some("it"));
        assert!(language_matches("fr", "fr-ca") && language_matches("fr-ca", "fr-ca"));
        assert!(!language_matches("fr", "fry") && !language_matches("fr-ca", "fr"));
    }
}
