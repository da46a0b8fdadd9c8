//! The few JSON shapes a click batch is handed to the database in: arrays of strings and numbers, written
//! straight into one buffer (the database parses them with `json_each` / `json_array_elements`).

use std::fmt::Write;

/// One JSON array of arrays, written element by element.
pub struct JsonRows {
    out: String,
    first_row: bool,
    first_cell: bool,
}

impl JsonRows {
    pub fn with_capacity(bytes: usize) -> Self {
        let mut out = String::with_capacity(bytes);
        out.push('[');
        JsonRows {
            out,
            first_row: true,
            first_cell: true,
        }
    }

    pub fn row(&mut self) -> &mut Self {
        if self.first_row {
            self.first_row = false;
        } else {
            self.out.push_str("],");
        }
        self.out.push('[');
        self.first_cell = true;
        self
    }

    fn cell(&mut self) {
        if self.first_cell {
            self.first_cell = false;
        } else {
            self.out.push(',');
        }
    }

    pub fn str(&mut self, value: &str) -> &mut Self {
        self.cell();
        push_string(&mut self.out, value);
        self
    }

    pub fn int(&mut self, value: i64) -> &mut Self {
        self.cell();
        let _ = write!(self.out, "{value}");
        self
    }

    pub fn finish(mut self) -> String {
        if !self.first_row {
            self.out.push(']');
        }
        self.out.push(']');
        self.out
    }
}

/// A JSON string literal: quotes, backslashes and control characters escaped; everything else as UTF-8.
fn push_string(out: &mut String, value: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, byte) in value.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f | 0x7f => "",
            _ => continue,
        };
        out.push_str(&value[plain..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        plain = i + 1;
    }
    out.push_str(&value[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_escapes() {
        let mut rows = JsonRows::with_capacity(16);
        rows.row().str("a\"b\\c\n\u{1}é").int(-3);
        rows.row().str("x");
        assert_eq!(rows.finish(), r#"[["a\"b\\c\n\u0001é",-3],["x"]]"#);
        assert_eq!(JsonRows::with_capacity(0).finish(), "[]");
    }
}
