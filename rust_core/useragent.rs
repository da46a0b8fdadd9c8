//! User-agent classification into (device, browser, os) by ordered substring rules. The rule tables are
//! the specification: `tests/support/reference.py` mirrors them line for line.

/// Matched case-insensitively (ASCII); the first hit names the bot's "browser".
const BOTS: &[(&str, &str)] = &[
    ("googlebot", "Googlebot"),
    ("bingbot", "bingbot"),
    ("facebookexternalhit", "facebookexternalhit"),
    ("slackbot", "Slackbot"),
    ("twitterbot", "Twitterbot"),
    ("curl/", "curl"),
    ("wget/", "Wget"),
    ("python-requests", "python-requests"),
    ("python-httpx", "httpx"),
    ("python-urllib", "urllib"),
    ("aiohttp", "aiohttp"),
    ("go-http-client", "Go-http-client"),
    ("okhttp", "okhttp"),
    ("node-fetch", "node-fetch"),
    ("axios/", "axios"),
    ("java/", "Java"),
    ("libwww-perl", "libwww-perl"),
    ("scrapy", "Scrapy"),
    ("headlesschrome", "HeadlessChrome"),
    ("whatsapp", "WhatsApp"),
    ("bot", "Other"),
    ("crawl", "Other"),
    ("spider", "Other"),
    ("slurp", "Other"),
    ("preview", "Other"),
    ("monitor", "Other"),
    ("lighthouse", "Other"),
];

/// Link-preview crawlers: the agents that fetch a pasted URL to draw its card in a chat or feed, matched as
/// case-insensitive (ASCII) substrings of the User-Agent. Search engines' crawlers are not here: they follow the
/// redirect. Most are also in `BOTS` (their clicks are not counted); this list only picks who gets a link's card.
const PREVIEW_CRAWLERS: &[&[u8]] = &[
    b"slackbot",
    b"slack-imgproxy",
    b"facebookexternalhit",
    b"facebookcatalog",
    b"meta-externalagent",
    b"twitterbot",
    b"linkedinbot",
    b"discordbot",
    b"whatsapp",
    b"telegrambot",
    b"skypeuripreview",
    b"microsoftpreview",
    b"pinterestbot",
    b"redditbot",
    b"embedly",
    b"iframely",
    b"mastodon",
    b"bitlybot",
    b"vkshare",
    b"viber",
    b"mattermost",
    b"rocket.chat",
];

/// Whether the User-Agent (the header's raw bytes) is a link-preview crawler's.
pub fn is_preview_crawler(ua: &[u8]) -> bool {
    let lower = ua.to_ascii_lowercase();
    PREVIEW_CRAWLERS
        .iter()
        .any(|needle| lower.windows(needle.len()).any(|window| window == *needle))
}

/// Matched case-sensitively, in order: the first rule with any matching token wins.
const BROWSERS: &[(&[&str], &str)] = &[
    (&["SamsungBrowser/"], "Samsung Internet"),
    (&["Edg/", "Edge/", "EdgA/", "EdgiOS/"], "Edge"),
    (&["OPR/", "Opera", "OPiOS/", "OPT/"], "Opera"),
    (&["Firefox/", "FxiOS/"], "Firefox"),
    (&["CriOS/", "Chrome/", "Chromium/"], "Chrome"),
    (&["MSIE ", "Trident/"], "IE"),
    (&["Safari/", "iPhone", "iPad"], "Safari"),
];

const SYSTEMS: &[(&[&str], &str)] = &[
    (&["Windows"], "Windows"),
    (&["iPad"], "iPadOS"),
    (&["iPhone", "iPod"], "iOS"),
    (&["CrOS"], "ChromeOS"),
    (&["Android"], "Android"),
    (&["Macintosh", "Mac OS X"], "macOS"),
    (&["Linux", "X11"], "Linux"),
];

const TABLET_TOKENS: &[&str] = &["iPad", "Tablet", "Kindle", "Silk/", "PlayBook"];
const MOBILE_TOKENS: &[&str] = &["Mobile", "iPhone", "iPod", "Windows Phone", "Opera Mini", "BlackBerry"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Device {
    Bot,
    Desktop,
    Mobile,
    Other,
    Tablet,
}

impl Device {
    pub fn name(self) -> &'static str {
        match self {
            Self::Bot => "bot",
            Self::Desktop => "desktop",
            Self::Mobile => "mobile",
            Self::Other => "other",
            Self::Tablet => "tablet",
        }
    }

    pub const ALL: [Device; 5] = [
        Device::Bot,
        Device::Desktop,
        Device::Mobile,
        Device::Other,
        Device::Tablet,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    pub device: Device,
    pub browser: &'static str,
    pub os: &'static str,
}

/// Every device, browser and OS name a classification can give a browser's user agent (bots' own names aside):
/// the values a redirect rule may ask for.
pub fn names() -> (Vec<&'static str>, Vec<&'static str>, Vec<&'static str>) {
    let devices = Device::ALL.iter().map(|d| d.name()).collect();
    let other = std::iter::once("Other");
    let browsers = BROWSERS.iter().map(|(_, name)| *name).chain(other.clone()).collect();
    let systems = SYSTEMS.iter().map(|(_, name)| *name).chain(other).collect();
    (devices, browsers, systems)
}

fn first_match(ua: &str, rules: &[(&[&str], &'static str)]) -> &'static str {
    rules
        .iter()
        .find(|(tokens, _)| tokens.iter().any(|t| ua.contains(t)))
        .map_or("Other", |(_, name)| name)
}

pub fn classify_user_agent(ua: &str) -> Agent {
    let os = first_match(ua, SYSTEMS);
    if ua.trim().is_empty() {
        return Agent {
            device: Device::Other,
            browser: "Other",
            os,
        };
    }
    let lower = ua.to_ascii_lowercase();
    if let Some((_, bot)) = BOTS.iter().find(|(needle, _)| lower.contains(needle)) {
        return Agent {
            device: Device::Bot,
            browser: bot,
            os,
        };
    }
    let browser = first_match(ua, BROWSERS);
    let has = |tokens: &[&str]| tokens.iter().any(|t| ua.contains(t));
    let device = if has(TABLET_TOKENS) || (os == "Android" && !ua.contains("Mobile")) {
        Device::Tablet
    } else if has(MOBILE_TOKENS) {
        Device::Mobile
    } else if matches!(os, "Windows" | "macOS" | "Linux" | "ChromeOS") {
        Device::Desktop
    } else {
        Device::Other
    };
    Agent { device, browser, os }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_crawlers_are_told_from_browsers_and_search_engines() {
        for ua in [
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
            "TelegramBot (like TwitterBot)",
            "WhatsApp/2.23.20.0 A",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        ] {
            assert!(is_preview_crawler(ua.as_bytes()), "{ua}");
        }
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "",
            "slack",
        ] {
            assert!(!is_preview_crawler(ua.as_bytes()), "{ua}");
        }
        assert!(
            is_preview_crawler(b"\xffSLACKBOT\xfe"),
            "bytes that are not UTF-8 are read as they are"
        );
    }

    fn classify(ua: &str) -> (&'static str, &'static str, &'static str) {
        let agent = classify_user_agent(ua);
        (agent.device.name(), agent.browser, agent.os)
    }

    #[test]
    fn browsers_and_devices() {
        let cases = [
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", ("mobile", "Safari", "iOS")),
            ("Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1", ("tablet", "Safari", "iPadOS")),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", ("desktop", "Chrome", "Windows")),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0", ("desktop", "Edge", "Windows")),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14.1; rv:121.0) Gecko/20100101 Firefox/121.0", ("desktop", "Firefox", "macOS")),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15", ("desktop", "Safari", "macOS")),
            ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36", ("mobile", "Chrome", "Android")),
            ("Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", ("tablet", "Chrome", "Android")),
            ("Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36", ("mobile", "Samsung Internet", "Android")),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0", ("desktop", "Opera", "Linux")),
            ("Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", ("desktop", "Chrome", "ChromeOS")),
            ("Mozilla/5.0 (Windows NT 6.1; Trident/7.0; rv:11.0) like Gecko", ("desktop", "IE", "Windows")),
        ];
        for (ua, expected) in cases {
            assert_eq!(classify(ua), expected, "{ua}");
        }
    }

    #[test]
    fn bots() {
        let cases = [
            (
                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
                "Googlebot",
            ),
            (
                "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
                "bingbot",
            ),
            ("curl/8.4.0", "curl"),
            ("Wget/1.21.4", "Wget"),
            ("python-requests/2.31.0", "python-requests"),
            ("python-httpx/0.27.0", "httpx"),
            ("Go-http-client/1.1", "Go-http-client"),
            (
                "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
                "facebookexternalhit",
            ),
            ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "Slackbot"),
            ("Twitterbot/1.0", "Twitterbot"),
            ("Mozilla/5.0 (compatible; YandexBot/3.0)", "Other"),
            ("SomeCrawler/1.0", "Other"),
        ];
        for (ua, browser) in cases {
            assert_eq!(classify(ua).0, "bot", "{ua}");
            assert_eq!(classify(ua).1, browser, "{ua}");
        }
    }

    #[test]
    fn device_order_is_name_order_and_discriminant_order() {
        assert!(Device::ALL.iter().enumerate().all(|(i, &d)| d as usize == i));
        assert!(Device::ALL.windows(2).all(|w| w[0].name() < w[1].name()));
    }

    #[test]
    fn empty_and_unknown() {
        assert_eq!(classify(""), ("other", "Other", "Other"));
        assert_eq!(classify("   "), ("other", "Other", "Other"));
        assert_eq!(classify("SomethingElse/1.0"), ("other", "Other", "Other"));
    }
}
