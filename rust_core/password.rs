//! Password hashing with argon2id (OWASP parameters), stored as a PHC string.

use argon2::password_hash::{self, phc::PasswordHash, PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use std::fmt;

const MEMORY_KIB: u32 = 19 * 1024;
const ITERATIONS: u32 = 2;
const PARALLELISM: u32 = 1;
const SALT_LEN: usize = 16;
/// A stored hash asking for more than this would let a corrupted row exhaust the server's memory.
const MAX_VERIFY_MEMORY_KIB: u32 = 1024 * 1024;
const MAX_VERIFY_ITERATIONS: u32 = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordError {
    Malformed(String),
    Unsupported(String),
    Hashing(String),
}

impl fmt::Display for PasswordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(why) => write!(f, "encoded password hash is malformed: {why}"),
            Self::Unsupported(why) => write!(f, "encoded password hash is not supported: {why}"),
            Self::Hashing(why) => write!(f, "password hashing failed: {why}"),
        }
    }
}

impl std::error::Error for PasswordError {}

fn hasher() -> Result<Argon2<'static>, PasswordError> {
    let params =
        Params::new(MEMORY_KIB, ITERATIONS, PARALLELISM, None).map_err(|e| PasswordError::Hashing(e.to_string()))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) with a fresh 16-byte salt.
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    let mut salt = [0u8; SALT_LEN];
    getrandom::fill(&mut salt).map_err(|e| PasswordError::Hashing(e.to_string()))?;
    let hash = hasher()?
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map_err(|e| PasswordError::Hashing(e.to_string()))?;
    Ok(hash.to_string())
}

/// `Ok(false)` for a wrong password; an error only when `encoded` is not a usable argon2 PHC string.
pub fn verify_password(password: &str, encoded: &str) -> Result<bool, PasswordError> {
    let parsed = PasswordHash::new(encoded).map_err(|e| PasswordError::Malformed(e.to_string()))?;
    if !parsed.algorithm.as_str().starts_with("argon2") {
        return Err(PasswordError::Unsupported(format!(
            "algorithm {}",
            parsed.algorithm.as_str()
        )));
    }
    let params = Params::try_from(&parsed).map_err(|e| PasswordError::Malformed(e.to_string()))?;
    if params.m_cost() > MAX_VERIFY_MEMORY_KIB || params.t_cost() > MAX_VERIFY_ITERATIONS {
        return Err(PasswordError::Unsupported("cost parameters are too large".into()));
    }
    match Argon2::default().verify_password(password.as_bytes(), &parsed) {
        Ok(()) => Ok(true),
        Err(password_hash::Error::PasswordInvalid) => Ok(false),
        Err(e) => Err(PasswordError::Malformed(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let encoded = hash_password("correct horse").expect("hash");
        assert!(encoded.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{encoded}");
        assert_eq!(verify_password("correct horse", &encoded), Ok(true));
        assert_eq!(verify_password("correct horsE", &encoded), Ok(false));
        assert_eq!(verify_password("", &encoded), Ok(false));
    }

    #[test]
    fn salts_differ() {
        assert_ne!(hash_password("x").ok(), hash_password("x").ok());
    }

    #[test]
    fn malformed_hashes_are_errors() {
        for bad in ["", "plain", "$argon2id$v=19$m=19456,t=2,p=1$", "$bcrypt$abc"] {
            assert!(verify_password("x", bad).is_err(), "{bad:?}");
        }
        let huge = "$argon2id$v=19$m=4000000,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g";
        assert!(matches!(verify_password("x", huge), Err(PasswordError::Unsupported(_))));
    }
}
