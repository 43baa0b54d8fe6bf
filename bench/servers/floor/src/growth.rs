//! `BENCH_TOOLS=N` (see bench/README.md, "Growth"): N generated tools (`gen_00000` ...),
//! the same names, descriptions and schemas as the other two servers generate. The whole
//! listing is one page, serialized once at the first `tools/list`.

use std::sync::OnceLock;

fn count() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("BENCH_TOOLS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

/// The `tools/list` result: the two entries' tools, then the generated ones.
pub fn tools_list() -> &'static str {
    static LIST: OnceLock<String> = OnceLock::new();
    LIST.get_or_init(|| {
        let n = count();
        let mut s = crate::TOOLS.strip_suffix("]}").expect("a tool list").to_owned();
        s.reserve(n * 260);
        for i in 0..n {
            s.push_str(&format!(
                r#",{{"name":"gen_{i:05}","description":"Generated tool number {i} of the growth benchmark; returns ok.","inputSchema":{{"type":"object","properties":{{"text":{{"type":"string","description":"Any text for gen_{i:05}."}}}},"required":["text"]}},"annotations":{{"readOnlyHint":true}}}}"#
            ));
        }
        s.push_str("]}");
        s
    })
}

/// Whether `name` is one of the generated tools (a call answers "ok").
pub fn is_generated(name: &str) -> bool {
    name.strip_prefix("gen_")
        .and_then(|i| i.parse::<usize>().ok())
        .is_some_and(|i| i < count())
}
