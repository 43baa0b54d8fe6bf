//! URI templates: parsing any text, matching any URI, expanding what matched. Input: the
//! template, a newline, the URI. Nothing may panic or take more than linear time; a match
//! yields exactly the template's variables and agrees with a slow reference matcher
//! (shortest extent first, by backtracking, never cutting a percent-encoded character); and
//! a match's expansion matches again.

#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use mcp::registry::{UriTemplate, percent_decode};

enum Part<'a> {
    Lit(&'a str),
    Var(&'a str, bool),
}

/// The template's parts, read naively (only called on templates the parser accepted).
fn parts(template: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Part::Lit(&rest[..open]));
        }
        let close = open + rest[open..].find('}').expect("a parsed template");
        let expr = &rest[open + 1..close];
        out.push(match expr.strip_prefix('+') {
            Some(name) => Part::Var(name, true),
            None => Part::Var(expr, false),
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Lit(rest));
    }
    out
}

/// Whether a value may start or end at `q`: not inside a `%XX` triplet, and not before a
/// UTF-8 continuation byte (raw or percent-encoded).
fn cut(uri: &[u8], q: usize) -> bool {
    let hex = |i: usize| uri.get(i).is_some_and(u8::is_ascii_hexdigit);
    let mut i = 0;
    while i < q {
        i += if uri[i] == b'%' && hex(i + 1) && hex(i + 2) {
            3
        } else {
            1
        };
    }
    if i != q {
        return false;
    }
    let next = if uri.get(q) == Some(&b'%') && hex(q + 1) && hex(q + 2) {
        u8::from_str_radix(std::str::from_utf8(&uri[q + 1..q + 3]).unwrap(), 16).unwrap()
    } else {
        uri.get(q).copied().unwrap_or(0)
    };
    !(0x80..0xC0).contains(&next)
}

/// Where a value may start or end, for every position of the URI (`cut` once each: the
/// reference matcher asks at every step, and asking `cut` there made it quartic).
fn cuts(uri: &[u8]) -> Vec<bool> {
    (0..=uri.len()).map(|q| cut(uri, q)).collect()
}

/// Backtracking, shortest extent first; `None` when the budget (one unit per extent
/// tried) runs out.
fn reference<'u>(
    parts: &[Part<'_>],
    whole: &'u str,
    cuts: &[bool],
    at: usize,
    out: &mut Vec<&'u str>,
    budget: &mut u32,
) -> Option<bool> {
    *budget = budget.checked_sub(1)?;
    let uri = &whole[at..];
    let Some((first, rest)) = parts.split_first() else {
        return Some(uri.is_empty());
    };
    match first {
        Part::Lit(lit) => match uri.strip_prefix(lit) {
            Some(_) => reference(rest, whole, cuts, at + lit.len(), out, budget),
            None => Some(false),
        },
        Part::Var(_, reserved) => {
            if !cuts[at] {
                return Some(false);
            }
            for (start, c) in uri.char_indices() {
                *budget = budget.checked_sub(1)?;
                if !reserved && matches!(c, '/' | '?' | '#') {
                    break;
                }
                let end = start + c.len_utf8();
                let value = &uri[..end];
                if !cuts[at + end] {
                    continue;
                }
                out.push(value);
                if reference(rest, whole, cuts, at + end, out, budget)? {
                    return Some(true);
                }
                out.pop();
            }
            Some(false)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(t) = UriTemplate::parse(template) else {
        return;
    };
    assert_eq!(t.as_str(), template);
    let got = t.matches(uri);

    let parts = parts(template);
    let mut raw = Vec::new();
    let mut budget = 50_000;
    let cuts = if uri.len() <= 4096 {
        cuts(uri.as_bytes())
    } else {
        Vec::new()
    };
    let compared = if cuts.is_empty() {
        None
    } else {
        reference(&parts, uri, &cuts, 0, &mut raw, &mut budget)
    };
    if let Some(found) = compared {
        let expected: Option<HashMap<String, String>> = if found {
            let names = parts.iter().filter_map(|p| match p {
                Part::Var(name, _) => Some(*name),
                Part::Lit(_) => None,
            });
            names
                .zip(raw)
                .map(|(n, v)| percent_decode(v).map(|v| (n.to_owned(), v)))
                .collect()
        } else {
            None
        };
        assert_eq!(got, expected, "{template:?} on {uri:?}");
    }

    let Some(vars) = got else {
        return;
    };
    let mut names: Vec<&str> = vars.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = t.variables().collect();
    expected.sort_unstable();
    assert_eq!(names, expected, "{template:?} on {uri:?}");
    // Reserved expansion passes percent-encoded triplets through (RFC 6570), so a value
    // holding a '%' need not survive the round trip.
    let reserved = parts
        .iter()
        .any(|p| matches!(p, Part::Var(n, true) if vars[*n].contains('%')));
    let expanded = t.expand(&vars);
    assert!(
        reserved || t.matches(&expanded).is_some(),
        "{template:?} matched {uri:?} as {vars:?}, but not its own expansion {expanded:?}"
    );
});
