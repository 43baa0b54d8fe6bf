//! RFC 6570 URI templates, level 1 (`{var}`) plus reserved expansion (`{+var}`): parsing,
//! expansion, and the reverse: matching a concrete URI and extracting its variables.

use std::collections::HashMap;
use std::fmt;

/// A parsed URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, reserved: bool },
}

/// Why a template string is not a template this framework accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError {
    /// The template text.
    pub template: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid URI template {:?}: {}",
            self.template, self.reason
        )
    }
}

impl std::error::Error for TemplateError {}

/// The variables extracted from a URI, percent-decoded.
pub type TemplateVars = HashMap<String, String>;

impl UriTemplate {
    /// Parses a template. Operators beyond `+` (RFC 6570 levels 2-4), adjacent variables
    /// (which make matching ambiguous) and repeated names are refused.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |reason: &str| TemplateError {
            template: template.to_owned(),
            reason: reason.to_owned(),
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(i) if rest.as_bytes()[i] == b'}' => return Err(err("unmatched '}'")),
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Literal(rest[..i].to_owned()));
                    }
                    let close = rest[i..]
                        .find('}')
                        .map(|j| i + j)
                        .ok_or_else(|| err("unclosed '{'"))?;
                    let mut expr = &rest[i + 1..close];
                    let reserved = expr.starts_with('+');
                    if reserved {
                        expr = &expr[1..];
                    }
                    if expr.is_empty() {
                        return Err(err("empty variable name"));
                    }
                    if let Some(op) = expr.chars().next().filter(|c| "#./;?&=,!@|".contains(*c)) {
                        return Err(err(&format!(
                            "operator '{op}' is not supported (only {{var}} and {{+var}})"
                        )));
                    }
                    if !expr
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    {
                        return Err(err(&format!(
                            "variable {expr:?} must use only letters, digits, '_' and '.'"
                        )));
                    }
                    if matches!(parts.last(), Some(Part::Var { .. })) {
                        return Err(err("two variables in a row cannot be told apart"));
                    }
                    if parts
                        .iter()
                        .any(|p| matches!(p, Part::Var { name, .. } if name == expr))
                    {
                        return Err(err(&format!("variable {expr:?} appears twice")));
                    }
                    parts.push(Part::Var {
                        name: expr.to_owned(),
                        reserved,
                    });
                    rest = &rest[close + 1..];
                }
            }
        }
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// How many literal characters the template has: more means more specific, and more
    /// specific templates are tried first when several could match.
    pub fn literal_len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.len(),
                Part::Var { .. } => 0,
            })
            .sum()
    }

    /// Whether the template has no variables.
    pub fn is_fixed(&self) -> bool {
        self.variables().next().is_none()
    }

    /// Expands the template with the given values (missing ones expand to nothing).
    pub fn expand(&self, vars: &HashMap<String, String>) -> String {
        let mut out = String::with_capacity(self.source.len());
        for part in &self.parts {
            match part {
                Part::Literal(l) => out.push_str(l),
                Part::Var { name, reserved } => {
                    if let Some(v) = vars.get(name) {
                        encode_into(&mut out, v, *reserved);
                    }
                }
            }
        }
        out
    }

    /// Matches a concrete URI, returning the percent-decoded variables. A simple variable
    /// matches one or more characters other than `/`, `?` and `#`; a reserved one (`{+var}`)
    /// matches any run of one or more characters.
    pub fn matches(&self, uri: &str) -> Option<TemplateVars> {
        let mut raw: Vec<(&str, &str)> = Vec::new();
        if !match_parts(&self.parts, uri, &mut raw) {
            return None;
        }
        let mut vars = HashMap::with_capacity(raw.len());
        for (name, value) in raw {
            vars.insert(name.to_owned(), percent_decode(value)?);
        }
        Some(vars)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Matches `uri` against `parts` in time linear in the URI's length (times the number of
/// parts), whatever the input: first, from the end, the positions from which each suffix
/// of the template can match; then, from the start, each variable takes the shortest
/// extent after which the rest still matches. (A backtracking matcher is exponential in
/// the number of `{+var}`s on a URI made of their separators.)
fn match_parts<'t, 'u>(parts: &'t [Part], uri: &'u str, out: &mut Vec<(&'t str, &'u str)>) -> bool {
    let bytes = uri.as_bytes();
    let n = bytes.len();
    // stop[p]: the first index at or after p of a character a simple variable cannot hold.
    let stop = if parts.iter().any(|p| {
        matches!(
            p,
            Part::Var {
                reserved: false,
                ..
            }
        )
    }) {
        let mut stop = vec![n; n + 1];
        for p in (0..n).rev() {
            stop[p] = if matches!(bytes[p], b'/' | b'?' | b'#') {
                p
            } else {
                stop[p + 1]
            };
        }
        stop
    } else {
        Vec::new()
    };
    let limit = |reserved: bool, p: usize| if reserved { n } else { stop[p] };
    let cut = cuts(bytes);

    // reach[i]: the positions p from which parts[i..] can match uri[p..].
    let mut reach: Vec<Positions> = (0..=parts.len()).map(|_| Positions::new(n + 1)).collect();
    reach[parts.len()].set(n);
    for i in (0..parts.len()).rev() {
        let (head, tail) = reach.split_at_mut(i + 1);
        let (here, next) = (&mut head[i], &tail[0]);
        match &parts[i] {
            Part::Literal(lit) => {
                let finder = memchr::memmem::Finder::new(lit.as_bytes());
                let mut from = 0;
                while let Some(at) = finder.find(&bytes[from..]).map(|j| from + j) {
                    if next.get(at + lit.len()) {
                        here.set(at);
                    }
                    from = at + 1;
                }
            }
            Part::Var { reserved, .. } => {
                // Walking down, `nearest` is the smallest reachable end after p.
                let mut nearest: Option<usize> = None;
                for p in (0..n).rev() {
                    if next.get(p + 1) && cut.get(p + 1) {
                        nearest = Some(p + 1);
                    }
                    if cut.get(p) && nearest.is_some_and(|e| e <= limit(*reserved, p)) {
                        here.set(p);
                    }
                }
            }
        }
    }
    if !reach[0].get(0) {
        return false;
    }
    let mut p = 0;
    for (i, part) in parts.iter().enumerate() {
        match part {
            Part::Literal(lit) => p += lit.len(),
            Part::Var { name, reserved } => {
                let max = limit(*reserved, p);
                let Some(e) = (p + 1..=max).find(|e| reach[i + 1].get(*e) && cut.get(*e)) else {
                    return false;
                };
                out.push((name, &uri[p..e]));
                p = e;
            }
        }
    }
    p == n
}

/// The positions where a variable's value may start or end: not inside a percent-encoded
/// triplet, and not before a continuation byte of a UTF-8 character (written raw or
/// percent-encoded), so that every value decodes on its own.
fn cuts(bytes: &[u8]) -> Positions {
    let n = bytes.len();
    let mut cut = Positions::new(n + 1);
    cut.set(n);
    let mut i = 0;
    while i < n {
        let triplet = bytes[i] == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        let (byte, width) = if triplet {
            let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
            (hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]), 3)
        } else {
            (bytes[i], 1)
        };
        if !(0x80..0xC0).contains(&byte) {
            cut.set(i);
        }
        i += width;
    }
    cut
}

/// A set of positions in a URI, one bit each.
struct Positions(Vec<u64>);

impl Positions {
    fn new(len: usize) -> Self {
        Positions(vec![0; len.div_ceil(64)])
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn encode_into(out: &mut String, value: &str, reserved: bool) {
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        // Reserved expansion keeps reserved characters and percent-encoded triplets; a
        // '%' that starts no triplet is data and is encoded like any other.
        let triplet = b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        let keep = unreserved || (reserved && (b":/?#[]@!$&'()*+,;=".contains(&b) || triplet));
        if keep {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// Decodes `%XX` escapes; `None` when an escape is malformed or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = (*bytes.get(i + 1)? as char).to_digit(16)?;
            let lo = (*bytes.get(i + 2)? as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> TemplateVars {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn matches_simple_variables() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(vars(&[("id", "123")]))
        );
        assert_eq!(t.matches("test://template//data"), None);
        assert_eq!(t.matches("test://template/1/2/data"), None);
        assert_eq!(t.matches("test://template/123/datax"), None);
    }

    #[test]
    fn reserved_variables_span_slashes() {
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(
            t.matches("file:///a/b/c.txt"),
            Some(vars(&[("path", "a/b/c.txt")]))
        );
        let t = UriTemplate::parse("repo://{owner}/{+path}/raw").unwrap();
        assert_eq!(
            t.matches("repo://me/src/raw/x/raw"),
            Some(vars(&[("owner", "me"), ("path", "src/raw/x")]))
        );
    }

    #[test]
    fn values_are_percent_decoded_and_expansion_encodes() {
        let t = UriTemplate::parse("greeting://{name}").unwrap();
        assert_eq!(
            t.matches("greeting://J%C3%BCrgen%20K"),
            Some(vars(&[("name", "Jürgen K")]))
        );
        assert_eq!(t.matches("greeting://bad%zz"), None);
        assert_eq!(
            t.expand(&vars(&[("name", "a b/c")])),
            "greeting://a%20b%2Fc"
        );
        let r = UriTemplate::parse("file:///{+p}").unwrap();
        assert_eq!(r.expand(&vars(&[("p", "a b/c")])), "file:///a%20b/c");
    }

    #[test]
    fn refuses_what_it_cannot_match_unambiguously() {
        for bad in [
            "x://{a}{b}",
            "x://{a",
            "x://a}",
            "x://{}",
            "x://{?q}",
            "x://{a}/{a}",
            "x://{a-b}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_variables_and_specificity() {
        let t = UriTemplate::parse("a://{x}/lit/{+y}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), vec!["x", "y"]);
        assert_eq!(t.literal_len(), "a:///lit/".len());
        assert!(UriTemplate::parse("a://fixed").unwrap().is_fixed());
    }

    #[test]
    fn multibyte_input_never_panics() {
        let t = UriTemplate::parse("x://{a}é{+b}").unwrap();
        assert_eq!(t.matches("x://ééé"), Some(vars(&[("a", "é"), ("b", "é")])));
        assert_eq!(t.matches("x://é"), None);
    }

    #[test]
    fn reserved_expansion_encodes_a_lone_percent() {
        let t = UriTemplate::parse("x://{+p}").unwrap();
        let vars = t.matches("x://%25zz%2541").unwrap();
        assert_eq!(vars["p"], "%zz%41");
        let expanded = t.expand(&vars);
        assert_eq!(expanded, "x://%25zz%41");
        // A percent-encoded triplet is kept as it is, a lone '%' is encoded.
        assert!(t.matches(&expanded).is_some());
    }

    #[test]
    fn a_value_never_ends_inside_a_percent_encoded_character() {
        // The literal "2" also occurs inside "%02", and "B" inside "%C3%BC"'s second byte.
        let t = UriTemplate::parse("a://{x}2{y}").unwrap();
        let values = vars(&[("x", "\u{2}\0"), ("y", "2z")]);
        assert_eq!(t.expand(&values), "a://%02%0022z");
        assert_eq!(t.matches("a://%02%0022z"), Some(values));
        let t = UriTemplate::parse("a://{x}B{y}").unwrap();
        assert_eq!(
            t.matches("a://%C3%BCBz"),
            Some(vars(&[("x", "ü"), ("y", "z")]))
        );
    }

    #[test]
    fn matching_stays_fast_on_adversarial_input() {
        let t = UriTemplate::parse("x://{+a}/{+b}/{+c}/{+d}!").unwrap();
        let uri = format!("x://{}", "/".repeat(20_000));
        let start = std::time::Instant::now();
        assert_eq!(t.matches(&uri), None);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }
}
