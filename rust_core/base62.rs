//! The base62 alphabet (0-9A-Za-z): random strings from OS randomness and fixed-width number encoding.

use std::fmt;

pub const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The operating system could not supply random bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomError(pub String);

impl fmt::Display for RandomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the operating system random source failed: {}", self.0)
    }
}

impl std::error::Error for RandomError {}

pub fn is_base62(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
}

/// `len` uniformly distributed base62 characters from the OS random source.
pub fn random_string(len: usize) -> Result<String, RandomError> {
    // 248 = 4 * 62: bytes at or above it are rejected so that every character is equally likely.
    const LIMIT: u8 = 248;
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        getrandom::fill(&mut buf).map_err(|e| RandomError(e.to_string()))?;
        for &b in buf.iter().filter(|&&b| b < LIMIT) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(b % 62)]));
        }
    }
    Ok(out)
}

/// `value` in base62 as exactly `N` digits, most significant first (higher digits are dropped), written
/// into an array so the hot key check does not allocate.
pub fn encode_fixed<const N: usize>(mut value: u64) -> [u8; N] {
    let mut out = [b'0'; N];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(value % 62) as usize];
        value /= 62;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_strings_have_the_requested_length_and_alphabet() {
        for len in [0, 1, 7, 64, 200] {
            let s = random_string(len).expect("os randomness");
            assert_eq!(s.len(), len);
            assert!(s.bytes().all(is_base62));
        }
    }

    #[test]
    fn random_strings_differ() {
        assert_ne!(random_string(32).ok(), random_string(32).ok());
    }

    #[test]
    fn fixed_width_encoding() {
        assert_eq!(&encode_fixed::<6>(0), b"000000");
        assert_eq!(&encode_fixed::<6>(61), b"00000z");
        assert_eq!(&encode_fixed::<2>(62), b"10");
        assert_eq!(&encode_fixed::<6>(u64::from(u32::MAX)), b"4gfFC3");
        assert_eq!(&encode_fixed::<2>(62 * 62 + 1), b"01");
    }
}
