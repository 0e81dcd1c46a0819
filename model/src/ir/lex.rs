//! The text format's lexer: one line at a time into tokens with columns.

use std::fmt;

/// A token of the text format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A bare word: a name, a keyword or a number (`[A-Za-z0-9_$-]+`).
    Word(String),
    /// A quoted name, unescaped.
    Str(String),
    /// `=`
    Eq,
    /// `,`
    Comma,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `..`
    DotDot,
    /// `->`
    Arrow,
    /// `@`
    At,
    /// `:`
    Colon,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "`{w}`"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Eq => f.write_str("`=`"),
            Tok::Comma => f.write_str("`,`"),
            Tok::LBracket => f.write_str("`[`"),
            Tok::RBracket => f.write_str("`]`"),
            Tok::DotDot => f.write_str("`..`"),
            Tok::Arrow => f.write_str("`->`"),
            Tok::At => f.write_str("`@`"),
            Tok::Colon => f.write_str("`:`"),
        }
    }
}

/// A token and the 1-based column where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned {
    /// The token.
    pub tok: Tok,
    /// 1-based column (in characters).
    pub col: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-'
}

/// Splits one line into tokens; `#` starts a comment. Errors carry a column.
pub fn lex_line(line: &str) -> Result<Vec<Spanned>, (usize, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c == '#' {
            break;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let simple = match c {
            '=' => Some(Tok::Eq),
            ',' => Some(Tok::Comma),
            '[' => Some(Tok::LBracket),
            ']' => Some(Tok::RBracket),
            '@' => Some(Tok::At),
            ':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(tok) = simple {
            out.push(Spanned { tok, col });
            i += 1;
        } else if c == '.' && next == Some('.') {
            out.push(Spanned { tok: Tok::DotDot, col });
            i += 2;
        } else if c == '-' && next == Some('>') {
            out.push(Spanned { tok: Tok::Arrow, col });
            i += 2;
        } else if c == '"' {
            let (s, end) = lex_string(&chars, i)?;
            out.push(Spanned { tok: Tok::Str(s), col });
            i = end;
        } else if is_word_char(c) {
            let start = i;
            while i < chars.len() && is_word_char(chars[i]) && !(chars[i] == '-' && chars.get(i + 1) == Some(&'>')) {
                i += 1;
            }
            out.push(Spanned { tok: Tok::Word(chars[start..i].iter().collect()), col });
        } else {
            return Err((col, format!("unexpected character {c:?}")));
        }
    }
    Ok(out)
}

/// Lexes a quoted string starting at `chars[start] == '"'`; returns it and the index after it.
fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), (usize, String)> {
    let mut s = String::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err((start + 1, "unterminated string".into()));
        };
        match c {
            '"' => return Ok((s, i + 1)),
            '\\' => {
                let esc = chars.get(i + 1).copied();
                match esc {
                    Some('"') => s.push('"'),
                    Some('\\') => s.push('\\'),
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('u') => {
                        let (ch, end) = lex_unicode_escape(chars, i)?;
                        s.push(ch);
                        i = end;
                        continue;
                    }
                    _ => return Err((i + 1, "bad escape in string (use \\\" \\\\ \\n \\t \\u{..})".into())),
                }
                i += 2;
            }
            c => {
                s.push(c);
                i += 1;
            }
        }
    }
}

/// Lexes `\u{hex}` at `chars[i] == '\\'`; returns the char and the index after `}`.
fn lex_unicode_escape(chars: &[char], i: usize) -> Result<(char, usize), (usize, String)> {
    let bad = || (i + 1, "bad \\u{..} escape".to_string());
    if chars.get(i + 2) != Some(&'{') {
        return Err(bad());
    }
    let mut j = i + 3;
    let mut hex = String::new();
    while let Some(&c) = chars.get(j) {
        if c == '}' {
            break;
        }
        if hex.len() >= 6 {
            return Err(bad());
        }
        hex.push(c);
        j += 1;
    }
    if chars.get(j) != Some(&'}') {
        return Err(bad());
    }
    let v = u32::from_str_radix(&hex, 16).map_err(|_| bad())?;
    let ch = char::from_u32(v).ok_or_else(bad)?;
    Ok((ch, j + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex_line(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn lexes_access_patterns_and_arrows() {
        assert_eq!(
            toks("a-b[0..16] -> c # comment"),
            vec![
                Tok::Word("a-b".into()),
                Tok::LBracket,
                Tok::Word("0".into()),
                Tok::DotDot,
                Tok::Word("16".into()),
                Tok::RBracket,
                Tok::Arrow,
                Tok::Word("c".into()),
            ]
        );
        assert_eq!(toks("x->y"), vec![Tok::Word("x".into()), Tok::Arrow, Tok::Word("y".into())]);
    }

    #[test]
    fn lexes_strings_with_escapes() {
        assert_eq!(toks(r#""a/b \"c\" \u{7f}""#), vec![Tok::Str("a/b \"c\" \u{7f}".into())]);
        assert!(lex_line("\"open").is_err());
        assert_eq!(lex_line("ok ~").unwrap_err().0, 4);
    }
}
