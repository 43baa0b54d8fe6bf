//! [`RateLimit`]: a token bucket per caller.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::json;

use super::{Layer, Method, Next, Pending, Request, codes};
use crate::conn::ConnId;
use crate::protocol::{CallToolResult, ErrorObject};

/// Limits how fast each caller may send requests: a token bucket of `burst` requests,
/// refilled at `per_second`. The caller is the verified principal; a caller without one is
/// its connection (a per-IP key would lump together everyone behind one egress, as hosted
/// clients are).
///
/// Over the limit, a tool call gets an `isError` result the model can read (it says when to
/// retry); any other request gets the JSON-RPC error [`codes::RATE_LIMITED`] with
/// `data.retryAfterMs`.
#[derive(Debug)]
pub struct RateLimit {
    burst: f64,
    per_second: f64,
    max_callers: usize,
    buckets: Mutex<Buckets>,
}

/// One bucket per principal subject, and per connection for callers without one.
#[derive(Debug, Default)]
struct Buckets {
    principals: HashMap<String, Bucket, Fnv>,
    conns: HashMap<ConnId, Bucket, Fnv>,
}

/// FNV-1a: keys are short ids the server derived (a subject, a connection id), not
/// chosen freely by a client, and SipHash was a tenth of a guarded call's cost here.
#[derive(Debug, Default, Clone, Copy)]
struct Fnv;

impl std::hash::BuildHasher for Fnv {
    type Hasher = FnvHasher;
    fn build_hasher(&self) -> FnvHasher {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

/// The running FNV-1a state.
struct FnvHasher(u64);

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Whose bucket a request draws from.
enum Caller<'a> {
    Principal(&'a str),
    Conn(&'a ConnId),
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimit {
    /// `burst` requests at once, refilled at `per_second` requests a second, per principal.
    pub fn per_principal(burst: u32, per_second: f64) -> Self {
        RateLimit {
            burst: f64::from(burst.max(1)),
            per_second: per_second.max(f64::MIN_POSITIVE),
            max_callers: 100_000,
            buckets: Mutex::new(Buckets::default()),
        }
    }

    /// Takes a token for `caller`, or says how long until one is free.
    fn take(&self, caller: Caller<'_>, now: Instant) -> Result<(), Duration> {
        let mut guard = self.buckets.lock();
        let buckets = &mut *guard;
        // The common case, a caller seen before, is one lookup.
        match caller {
            Caller::Principal(subject) => {
                if let Some(bucket) = buckets.principals.get_mut(subject) {
                    return self.draw(bucket, now);
                }
            }
            Caller::Conn(id) => {
                if let Some(bucket) = buckets.conns.get_mut(id) {
                    return self.draw(bucket, now);
                }
            }
        }
        let mut fresh = Bucket {
            tokens: self.burst,
            at: now,
        };
        let drawn = self.draw(&mut fresh, now);
        let (burst, rate) = (self.burst, self.per_second);
        // Full buckets carry no information: forget them before growing.
        let full = |b: &Bucket| b.tokens + now.duration_since(b.at).as_secs_f64() * rate >= burst;
        match caller {
            Caller::Principal(subject) => {
                if buckets.principals.len() >= self.max_callers {
                    buckets.principals.retain(|_, b| !full(b));
                }
                buckets.principals.insert(subject.to_owned(), fresh);
            }
            Caller::Conn(id) => {
                if buckets.conns.len() >= self.max_callers {
                    buckets.conns.retain(|_, b| !full(b));
                }
                buckets.conns.insert(id.clone(), fresh);
            }
        }
        drawn
    }

    /// Refills `bucket` up to now and takes a token from it.
    fn draw(&self, bucket: &mut Bucket, now: Instant) -> Result<(), Duration> {
        let refill = now.saturating_duration_since(bucket.at).as_secs_f64() * self.per_second;
        bucket.tokens = (bucket.tokens + refill).min(self.burst);
        bucket.at = bucket.at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_second,
            ))
        }
    }
}

impl Layer for RateLimit {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        let caller = match req.principal() {
            Some(p) => Caller::Principal(&p.subject),
            None => Caller::Conn(req.conn_id()),
        };
        match self.take(caller, req.received()) {
            Ok(()) => next.run(req),
            Err(wait) => {
                let ms = wait.as_millis().max(1) as u64;
                #[cfg(feature = "otel")]
                crate::telemetry::count_refusal(req.method().name());
                tracing::info!(target: "mcp::layers", subject = req.principal().map_or("", |p| p.subject.as_str()), conn_id = %req.conn_id(), method = req.method().name(), retry_after_ms = ms, "rate limited");
                let message = format!(
                    "rate_limited: too many requests from this caller; retry after {ms} ms"
                );
                let answer = if req.method() == Method::ToolsCall {
                    req.answer_tool(CallToolResult::error(message))
                } else {
                    req.refuse(
                        ErrorObject::new(codes::RATE_LIMITED, message)
                            .with_data(json!({"retryAfterMs": ms})),
                    )
                };
                Pending::ready(answer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_refills_at_its_rate() {
        let limit = RateLimit::per_principal(2, 10.0);
        let t0 = Instant::now();
        let a = || Caller::Principal("a");
        assert!(limit.take(a(), t0).is_ok());
        assert!(limit.take(a(), t0).is_ok());
        let wait = limit.take(a(), t0).unwrap_err();
        assert!(wait <= Duration::from_millis(100) && wait > Duration::from_millis(90));
        // Another caller has a bucket of its own, and so does a connection.
        assert!(limit.take(Caller::Principal("b"), t0).is_ok());
        let conn = ConnId::new("a");
        assert!(limit.take(Caller::Conn(&conn), t0).is_ok());
        assert!(limit.take(a(), t0 + Duration::from_millis(100)).is_ok());
    }
}
