//! [`ResponseCache`]: answers to reads and lists, kept per caller.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Change, Layer, Method, Next, Pending, Request};

/// Keeps successful answers to `resources/read`, `prompts/get` and the list methods for
/// `ttl`, and answers a repeat of the same request from memory.
///
/// The key holds everything that can change an answer: the caller (verified principal,
/// transport and connection: one user's answer never reaches another, which is the leak
/// other frameworks shipped), the protocol revision and the client's capabilities for the
/// request, the method and its params (without `_meta`). Entries go when they expire and
/// whenever a list or resource changes ([`Change`]). Tool calls are never cached: they
/// act. Since layers run after the seams, a cached answer is only given to a caller the
/// read authorizer allowed just now.
#[derive(Debug)]
pub struct ResponseCache {
    ttl: Duration,
    max_entries: usize,
    entries: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    result_json: String,
    at: Instant,
}

impl ResponseCache {
    /// Answers kept for `ttl`, at most 10,000 of them.
    pub fn new(ttl: Duration) -> Self {
        ResponseCache {
            ttl,
            max_entries: 10_000,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// At most `max` answers kept (the oldest go first).
    pub fn max_entries(mut self, max: usize) -> Self {
        self.max_entries = max.max(1);
        self
    }

    /// How many answers are kept now.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether no answer is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn cacheable(method: Method) -> bool {
        matches!(method, Method::ResourcesRead | Method::PromptsGet) || method.spec().list.is_some()
    }

    /// The key of a request: who asks, in which revision with which capabilities, and what.
    fn key(req: &Request<'_>) -> String {
        let params = req
            .params()
            .map(|p| match serde_json::from_str::<serde_json::Value>(p) {
                Ok(serde_json::Value::Object(mut map)) => {
                    map.remove("_meta");
                    serde_json::Value::Object(map).to_string()
                }
                _ => p.to_owned(),
            })
            .unwrap_or_default();
        let capabilities = req
            .caller
            .capabilities()
            .and_then(|c| serde_json::to_string(&*c).ok())
            .unwrap_or_default();
        let principal = req
            .principal()
            .map(|p| {
                format!(
                    "{}|{}|{}",
                    p.subject,
                    p.issuer.as_deref().unwrap_or(""),
                    p.scopes.join(" ")
                )
            })
            .unwrap_or_default();
        // Every part is length-prefixed, so no two different requests share a key.
        let mut key = String::new();
        for part in [
            principal.as_str(),
            req.transport().as_str(),
            req.conn_id().as_str(),
            req.protocol_version().as_str(),
            capabilities.as_str(),
            req.method().name(),
            params.as_str(),
        ] {
            key.push_str(&part.len().to_string());
            key.push(':');
            key.push_str(part);
        }
        key
    }
}

impl Layer for ResponseCache {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        if !Self::cacheable(req.method()) {
            return next.run(req);
        }
        Pending::new(async move {
            let key = Self::key(req);
            let now = Instant::now();
            if let Some(hit) = self
                .entries
                .lock()
                .get(&key)
                .filter(|e| now.duration_since(e.at) < self.ttl)
                .map(|e| e.result_json.clone())
            {
                return req.answer_json(&hit);
            }
            let answer = next.run(req).await;
            // An input-required result is a question for this round, not an answer.
            if let Some(json) = answer
                .result_json()
                .filter(|j| !j.contains("\"resultType\":\"input_required\""))
            {
                let mut entries = self.entries.lock();
                if entries.len() >= self.max_entries {
                    entries.retain(|_, e| now.duration_since(e.at) < self.ttl);
                    if entries.len() >= self.max_entries
                        && let Some(oldest) = entries
                            .iter()
                            .min_by_key(|(_, e)| e.at)
                            .map(|(k, _)| k.clone())
                    {
                        entries.remove(&oldest);
                    }
                }
                entries.insert(
                    key,
                    Entry {
                        result_json: json.to_owned(),
                        at: now,
                    },
                );
            }
            answer
        })
    }

    fn on_change(&self, change: &Change) {
        // Which cached answers a change touches is not worth working out: all go.
        let _ = change;
        self.entries.lock().clear();
    }
}
