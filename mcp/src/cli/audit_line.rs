//! The generated `main`'s audit lines, written straight into its log.
//!
//! With an authorizer set, every call writes an audit line at INFO. Through `tracing`, the
//! line is an event dispatched to the subscriber, whose layers visit its nine fields one
//! `dyn` call at a time and write each piece through a `dyn` writer. The generated `main`
//! knows its log (the subscriber it installed, its filter, its format), so it writes the
//! same bytes itself whenever it can vouch for them, and leaves the event to `tracing` when
//! it cannot. Guarded stdio, alternating runs: 2.04 → 1.89 µs of server CPU per call (and
//! 1.84 with the event no longer copied into an `AuditEvent` when no sink wants one).

use std::cell::RefCell;

use tracing::{Dispatch, Level};
use tracing_subscriber::filter::Targets;

use super::log_format::write_audit_line;
use super::log_writer::Logs;
use crate::auth::audit::{AuditRecord, LineWriter};

/// Writes audit lines into the generated `main`'s log.
pub(super) struct DirectAudit {
    logs: Logs,
    /// Whether the log's filter lets `mcp::audit` through, by level (ERROR first).
    enabled: [bool; 5],
    /// Whether a dispatcher is the subscriber the generated `main` installed (and not a
    /// scoped one someone set for a while).
    is_ours: fn(&Dispatch) -> bool,
}

impl DirectAudit {
    /// Audit lines for `logs`, filtered by `filter`, when `is_ours` says the dispatcher at
    /// hand is the one writing to `logs` through [`LogLine`](super::LogLine) and
    /// [`LogFields`](super::LogFields) without colour.
    pub(super) fn new(logs: Logs, filter: &Targets, is_ours: fn(&Dispatch) -> bool) -> Self {
        let enabled = [
            Level::ERROR,
            Level::WARN,
            Level::INFO,
            Level::DEBUG,
            Level::TRACE,
        ]
        .map(|level| filter.would_enable("mcp::audit", &level));
        DirectAudit {
            logs,
            enabled,
            is_ours,
        }
    }
}

thread_local! {
    /// Where each thread assembles its line (kept between lines: no allocation per line).
    static LINE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// A line buffer grown past this by a long detail is given back after its line.
const KEPT_CAPACITY: usize = 4 << 10;

fn level_index(level: Level) -> usize {
    match level {
        Level::ERROR => 0,
        Level::WARN => 1,
        Level::INFO => 2,
        Level::DEBUG => 3,
        Level::TRACE => 4,
    }
}

impl LineWriter for DirectAudit {
    fn write(&self, level: Level, event: &AuditRecord<'_>) -> bool {
        if !self.enabled[level_index(level)] {
            return false;
        }
        // The OpenTelemetry layer records events on its spans.
        #[cfg(feature = "otel")]
        if crate::telemetry::active() {
            return false;
        }
        // A span in scope is written before the target; `tracing` knows which and how.
        let plain = tracing::dispatcher::get_default(|d| {
            (self.is_ours)(d) && d.current_span().id().is_none()
        });
        if !plain {
            return false;
        }
        LINE.with_borrow_mut(|line| {
            line.clear();
            write_audit_line(line, level, event);
            self.logs.append(line.as_bytes());
            if line.capacity() > KEPT_CAPACITY {
                *line = String::new();
            }
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::Seam;
    use crate::auth::audit::{AuditOutcome, trace_line};
    use crate::cli::log_format::tests::Captured;
    use crate::cli::{LogFields, LogLine};
    use crate::conn::{ConnId, Transport};

    /// The generated `main`'s subscriber, writing to `out`.
    fn subscriber(out: Captured) -> impl tracing::Subscriber + Send + Sync {
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(Level::TRACE)
            .with_writer(out)
            .fmt_fields(LogFields)
            .event_format(LogLine::default())
            .finish()
    }

    /// A line without its time (27 bytes and a space: no two lines share a microsecond).
    fn untimed(line: &str) -> &str {
        assert!(line.as_bytes().get(26) == Some(&b'Z'), "{line}");
        &line[27..]
    }

    /// Records whose values take every path of the line: plain text, text `Debug` escapes
    /// (quotes, backslashes, line breaks, control and non-ASCII characters), shown values,
    /// empty and absent values, a detail longer than any buffer.
    fn with_records(mut each: impl FnMut(&AuditRecord<'_>)) {
        let conn = ConnId::new("sN9O23PGd6PYq8RGm9VCV41Jp6SI9SB-");
        let long = "a reason ".repeat(40);
        let outcomes = [
            AuditOutcome::Served,
            AuditOutcome::Denied,
            AuditOutcome::NotApproved("the human said \"no\"\n".into()),
        ];
        let cases: [(Option<&str>, Option<&str>, &str); 5] = [
            (None, None, "echo"),
            (Some("alice@example.com"), Some("fine"), "delete_file"),
            (
                Some("eve\nINFO forged line"),
                Some("say \"yes\" \\ or ü"),
                "café",
            ),
            (Some("\u{7}\t\r\u{200b}"), Some(""), "x y"),
            (Some(""), Some(long.as_str()), "files://a/b?c=d"),
        ];
        for (i, (subject, detail, name)) in cases.into_iter().enumerate() {
            each(&AuditRecord {
                seam: if i % 2 == 0 { Seam::Tool } else { Seam::Read },
                name,
                conn_id: &conn,
                transport: if i % 2 == 0 {
                    Transport::Stdio
                } else {
                    Transport::Http
                },
                subject,
                argument_digest: "214fd2d0c78e5994589fb09fb67acdc14671e54b0274f286ae50442988b87a6d",
                decision: ["allow", "deny", "ask", "url", "allow"][i],
                detail,
                outcome: &outcomes[i % outcomes.len()],
            });
        }
    }

    #[test]
    fn a_direct_audit_line_is_the_tracing_line() {
        let levels = [
            Level::ERROR,
            Level::WARN,
            Level::INFO,
            Level::DEBUG,
            Level::TRACE,
        ];
        let out = Captured::default();
        let mut direct = Vec::new();
        tracing::subscriber::with_default(subscriber(out.clone()), || {
            with_records(|record| {
                for level in levels {
                    trace_line(level, record);
                    let mut line = String::new();
                    write_audit_line(&mut line, level, record);
                    direct.push(line);
                }
            });
        });
        let traced = out.text();
        let traced: Vec<&str> = traced.split_inclusive('\n').collect();
        assert_eq!(traced.len(), direct.len());
        assert_eq!(traced.len(), 25);
        for (traced, direct) in traced.iter().zip(&direct) {
            assert_eq!(untimed(direct), untimed(traced));
        }
        assert!(
            direct[12].contains(r#"subject="eve\nINFO forged line""#),
            "escaped as Debug does: {}",
            direct[12]
        );
    }

    /// Writes one line through a `DirectAudit` for `logs`, filtered at INFO, inside
    /// `subscriber` (which `is_ours` recognises or not), within a span or not.
    fn written<S>(subscriber: S, ours: bool, in_span: bool, level: Level, logs: &Logs) -> bool
    where
        S: tracing::Subscriber + Send + Sync + 'static,
    {
        let is_ours: fn(&Dispatch) -> bool = if ours { |d| d.is::<S>() } else { |_| false };
        let filter = Targets::new().with_default(Level::INFO);
        let direct = DirectAudit::new(logs.clone(), &filter, is_ours);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request");
            let _entered = in_span.then(|| span.enter());
            let mut wrote = false;
            with_records(|record| {
                if record.name == "echo" {
                    wrote = direct.write(level, record);
                }
            });
            wrote
        })
    }

    #[test]
    fn the_line_is_left_to_tracing_when_the_log_cannot_vouch_for_it() {
        let out = Captured::default();
        let logs = Logs::start_with(out.clone(), || {}, Duration::from_millis(1));
        let ours = || subscriber(Captured::default());
        assert!(written(ours(), true, false, Level::INFO, &logs));
        assert!(written(ours(), true, false, Level::WARN, &logs));
        assert!(
            !written(ours(), true, false, Level::DEBUG, &logs),
            "filtered"
        );
        assert!(
            !written(ours(), true, true, Level::INFO, &logs),
            "in a span"
        );
        assert!(
            !written(ours(), false, false, Level::INFO, &logs),
            "not ours"
        );
        logs.flush();
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            untimed(lines[0])
                .starts_with("  INFO mcp::audit: authorization seam=\"tool\" name=echo "),
            "{text}"
        );
        assert!(untimed(lines[1]).starts_with("  WARN "), "{text}");
    }
}
