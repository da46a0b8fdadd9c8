//! Slugline's core: pure functions and small structs behind the Python package `slugline._core`.
//! Only `py/` (the `python` feature) knows about Python; everything else builds and tests without it.

pub mod base62;
pub mod clickqueue;
pub mod codec;
pub mod cube;
pub mod fasthash;
pub mod geo;
pub mod hll;
pub mod keys;
pub mod linkjson;
pub mod password;
pub mod redirect_rules;
pub mod referrer;
pub mod rollup;
pub mod search;
pub mod slug;
pub mod useragent;
pub mod variants;

#[cfg(feature = "python")]
mod py;
