//! Search over one account's links: the `q` filter of `GET /links` and the ranked `GET /search`.

mod corpus;
mod filter;
mod frozen;
mod highlight;
mod index;
mod matching;
mod normalize;
mod rank;
mod vocab;

pub use index::{Link, SearchIndex};
pub use normalize::normalize;
pub use rank::Hit;
