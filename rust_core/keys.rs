//! API keys and session tokens: prefix + 32 random base62 + a 6-char base62 CRC32 of everything before it,
//! so a mistyped or truncated key is rejected without a database read; plus keyed hashes for storage.

use crate::base62::{self, RandomError};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use subtle::ConstantTimeEq;

const RANDOM_LEN: usize = 32;
const CHECKSUM_LEN: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Full,
    Public,
    Session,
}

impl KeyKind {
    pub const ALL: [KeyKind; 3] = [KeyKind::Full, KeyKind::Public, KeyKind::Session];

    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Public => "public",
            Self::Session => "session",
        }
    }

    pub fn prefix(self) -> &'static str {
        match self {
            Self::Full => "svc_live_",
            Self::Public => "svc_pub_",
            Self::Session => "svc_sess_",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    UnknownKind(String),
    Random(RandomError),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownKind(kind) => {
                write!(f, "key kind must be one of 'full', 'public', 'session', got {kind:?}")
            }
            Self::Random(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for KeyError {}

fn checksum(body: &[u8]) -> [u8; CHECKSUM_LEN] {
    base62::encode_fixed::<CHECKSUM_LEN>(u64::from(crc32fast::hash(body)))
}

pub fn generate_key(kind: &str) -> Result<String, KeyError> {
    let kind = KeyKind::from_name(kind).ok_or_else(|| KeyError::UnknownKind(kind.to_owned()))?;
    let random = base62::random_string(RANDOM_LEN).map_err(KeyError::Random)?;
    let mut token = format!("{}{random}", kind.prefix());
    let sum = checksum(token.as_bytes());
    token.extend(sum.iter().map(|&b| char::from(b)));
    Ok(token)
}

/// The kind of a well-formed token (prefix, length, alphabet and checksum all right), else `None`.
pub fn key_kind(token: &str) -> Option<KeyKind> {
    let kind = KeyKind::ALL.into_iter().find(|kind| token.starts_with(kind.prefix()))?;
    let bytes = token.as_bytes();
    let prefix_len = kind.prefix().len();
    if bytes.len() != prefix_len + RANDOM_LEN + CHECKSUM_LEN {
        return None;
    }
    let (body, sum) = bytes.split_at(prefix_len + RANDOM_LEN);
    if !bytes[prefix_len..].iter().all(|&b| base62::is_base62(b)) {
        return None;
    }
    (checksum(body) == sum).then_some(kind)
}

fn hmac_sha256(secret: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length, so the error branch is unreachable; an empty key is still a key.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC-SHA256 takes keys of any length"),
    };
    mac.update(message);
    mac.finalize().into_bytes().into()
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if bytes.len() % 2 != 0 {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

/// Lowercase hex HMAC-SHA256 of `message` under `secret`.
pub fn keyed_hash(secret: &[u8], message: &str) -> String {
    to_hex(&hmac_sha256(secret, message.as_bytes()))
}

/// The first hex chars of `keyed_hash` for many messages under one secret: the secret's part of the work is done
/// once, and a message may come in pieces (hashed as if joined).
#[derive(Clone)]
pub struct KeyedHasher(Hmac<Sha256>);

impl KeyedHasher {
    pub fn new(secret: &[u8]) -> Self {
        match Hmac::<Sha256>::new_from_slice(secret) {
            Ok(mac) => KeyedHasher(mac),
            Err(_) => unreachable!("HMAC-SHA256 takes keys of any length"),
        }
    }

    /// The first `N` hex chars of the keyed hash of `parts` joined; `N` is at most 64.
    pub fn hex_prefix<const N: usize>(&self, parts: &[&[u8]]) -> [u8; N] {
        let mut mac = self.0.clone();
        for part in parts {
            mac.update(part);
        }
        let digest: [u8; 32] = mac.finalize().into_bytes().into();
        let mut out = [b'0'; N];
        for (i, slot) in out.iter_mut().enumerate() {
            let byte = digest[i / 2];
            *slot = HEX[usize::from(if i % 2 == 0 { byte >> 4 } else { byte & 0xf })];
        }
        out
    }
}

/// What is stored for a key: its keyed hash (the key itself is shown once and never kept).
pub fn hash_key(secret: &[u8], token: &str) -> String {
    keyed_hash(secret, token)
}

/// Constant-time check of `token` against a stored `hash_key` value; malformed hex is simply a mismatch.
pub fn verify_key(secret: &[u8], token: &str, expected_hex: &str) -> bool {
    let Some(expected) = from_hex(expected_hex) else {
        return false;
    };
    let actual = hmac_sha256(secret, token.as_bytes());
    expected.len() == actual.len() && bool::from(actual.ct_eq(expected.as_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_hasher_matches_keyed_hash() {
        let hasher = KeyedHasher::new(b"salt");
        let hex: [u8; 32] = hasher.hex_prefix(&[b"203.0.113.7", b"\n", b"curl/8"]);
        assert_eq!(
            hex.as_slice(),
            &keyed_hash(b"salt", "203.0.113.7\ncurl/8").as_bytes()[..32]
        );
        let whole: [u8; 64] = hasher.hex_prefix(&[b"x"]);
        assert_eq!(whole.as_slice(), keyed_hash(b"salt", "x").as_bytes());
    }

    #[test]
    fn generated_keys_roundtrip() {
        for kind in KeyKind::ALL {
            let key = generate_key(kind.name()).expect("key");
            assert!(key.starts_with(kind.prefix()));
            assert_eq!(key.len(), kind.prefix().len() + 38);
            assert_eq!(key_kind(&key), Some(kind));
        }
    }

    #[test]
    fn unknown_kind_is_an_error() {
        assert_eq!(generate_key("admin"), Err(KeyError::UnknownKind("admin".into())));
    }

    #[test]
    fn any_single_char_corruption_is_rejected() {
        let key = generate_key("full").expect("key");
        let prefix_len = KeyKind::Full.prefix().len();
        for i in prefix_len..key.len() {
            for replacement in ['0', 'a', 'Z', '_'] {
                let mut bytes = key.clone().into_bytes();
                if bytes[i] == replacement as u8 {
                    continue;
                }
                bytes[i] = replacement as u8;
                let corrupted = String::from_utf8(bytes).expect("ascii");
                assert_eq!(key_kind(&corrupted), None, "{corrupted}");
            }
        }
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        let key = generate_key("public").expect("key");
        assert_eq!(key_kind(&key[..key.len() - 1]), None);
        assert_eq!(key_kind(&format!("{key}0")), None);
        assert_eq!(key_kind(&key.replacen("svc_pub_", "svc_live_", 1)), None);
        assert_eq!(key_kind(""), None);
        assert_eq!(key_kind("svc_pub_é"), None);
        assert_eq!(key_kind(&format!("svc_pub_{}", "é".repeat(19))), None);
    }

    #[test]
    fn keyed_hashes() {
        // RFC 4231 test case 2.
        assert_eq!(
            keyed_hash(b"Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let prefix: [u8; 32] = KeyedHasher::new(b"Jefe").hex_prefix(&[b"what do ya want for nothing?"]);
        assert_eq!(prefix.as_slice(), b"5bdcc146bf60754e6a042426089575c7");
        let stored = hash_key(b"secret", "svc_live_x");
        assert!(verify_key(b"secret", "svc_live_x", &stored));
        assert!(verify_key(b"secret", "svc_live_x", &stored.to_uppercase()));
        assert!(!verify_key(b"other", "svc_live_x", &stored));
        assert!(!verify_key(b"secret", "svc_live_y", &stored));
        assert!(!verify_key(b"secret", "svc_live_x", "zz"));
        assert!(!verify_key(b"secret", "svc_live_x", &stored[..62]));
        assert!(!verify_key(b"secret", "svc_live_x", ""));
    }
}
