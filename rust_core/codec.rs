//! The compact binary form roll-ups are stored in: unsigned LEB128 integers, zig-zag signed ones,
//! length-prefixed strings. Reading checks every length against what is left, so a damaged blob is an
//! error, never a panic or a huge allocation.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodecError {
    Truncated,
    Invalid,
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => write!(f, "roll-up data ends early"),
            Self::Invalid => write!(f, "roll-up data is malformed"),
        }
    }
}

impl std::error::Error for CodecError {}

#[derive(Debug, Default)]
pub struct Writer {
    out: Vec<u8>,
}

impl Writer {
    pub fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    pub fn uint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    pub fn int(&mut self, v: i64) {
        self.uint(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.uint(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    pub fn float(&mut self, v: f64) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

pub struct Reader<'a> {
    input: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Reader { input }
    }

    pub fn is_empty(&self) -> bool {
        self.input.is_empty()
    }

    pub fn byte(&mut self) -> Result<u8, CodecError> {
        let (&b, rest) = self.input.split_first().ok_or(CodecError::Truncated)?;
        self.input = rest;
        Ok(b)
    }

    pub fn uint(&mut self) -> Result<u64, CodecError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(CodecError::Invalid)
    }

    pub fn int(&mut self) -> Result<i64, CodecError> {
        let v = self.uint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A count of items that follow, each at least one byte, refused past `max` or what is left.
    pub fn len(&mut self, max: usize) -> Result<usize, CodecError> {
        let n = usize::try_from(self.uint()?).map_err(|_| CodecError::Invalid)?;
        if n > max || n > self.input.len() {
            return Err(CodecError::Invalid);
        }
        Ok(n)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.input.len() {
            return Err(CodecError::Truncated);
        }
        let (head, rest) = self.input.split_at(n);
        self.input = rest;
        Ok(head)
    }

    pub fn str(&mut self) -> Result<&'a str, CodecError> {
        let n = self.len(usize::MAX)?;
        std::str::from_utf8(self.take(n)?).map_err(|_| CodecError::Invalid)
    }

    pub fn float(&mut self) -> Result<f64, CodecError> {
        let bytes: [u8; 8] = self.take(8)?.try_into().map_err(|_| CodecError::Truncated)?;
        let v = f64::from_le_bytes(bytes);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(CodecError::Invalid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut w = Writer::default();
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            w.uint(v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            w.int(v);
        }
        w.str("héllo");
        w.float(2.5);
        let bytes = w.finish();
        let mut r = Reader::new(&bytes);
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(r.uint(), Ok(v));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(r.int(), Ok(v));
        }
        assert_eq!(r.str(), Ok("héllo"));
        assert_eq!(r.float(), Ok(2.5));
        assert!(r.is_empty());
        assert_eq!(r.byte(), Err(CodecError::Truncated));
    }

    #[test]
    fn refuses_lengths_past_the_end() {
        let mut w = Writer::default();
        w.uint(1 << 40);
        let bytes = w.finish();
        assert!(Reader::new(&bytes).str().is_err());
        assert!(Reader::new(&[0xff; 11]).uint().is_err());
    }
}
