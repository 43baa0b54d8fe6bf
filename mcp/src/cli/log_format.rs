//! The generated `main`'s log format: the line tracing-subscriber's default writes without
//! colour, at a fraction of the cost.
//!
//! The default field formatter passes every field name through an (empty) ANSI style even
//! when colour is off; with an audit line of nine fields per call that was about 5,700 of
//! the 14,600 instructions its line cost (callgrind, `bench/micro/ir.sh guarded`). The line
//! itself is unchanged: the message first as written, then `name=value` separated by
//! spaces, strings quoted and escaped as `Debug` does (so a subject or a denial reason can
//! never forge a second line), everything else as its `Debug`/`Display` says.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

use crate::auth::audit::AuditRecord;

/// Formats an event's or a span's fields as `message name=value name="text"`, without
/// styling: what the generated `main` logs with. Usable in a subscriber of your own, e.g.
/// `tracing_subscriber::fmt().fmt_fields(mcp::cli::LogFields)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogFields;

impl<'writer> FormatFields<'writer> for LogFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = Visitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

/// The whole log line of the generated `main`, byte for byte what tracing-subscriber's
/// default (`Full`) format with [`LogTime`] writes without colour: the time, the level
/// right-aligned, the spans in scope (`name{fields}:`), the target, the fields. It is
/// written as plain text instead of through padded and styled `Display` values, which cost
/// about a sixth of an audit line. With colour on (a terminal) it is the default format.
/// Usable in a subscriber of your own:
/// `tracing_subscriber::fmt().event_format(mcp::cli::LogLine::default()).fmt_fields(mcp::cli::LogFields)`.
#[derive(Debug)]
pub struct LogLine {
    coloured: Format<Full, LogTime>,
}

impl Default for LogLine {
    fn default() -> Self {
        LogLine {
            coloured: Format::default().with_timer(LogTime),
        }
    }
}

impl<S, N> FormatEvent<S, N> for LogLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        // Colour, and records of the `log` crate (whose real target is a field the default
        // format reads back), are left to the default format.
        if writer.has_ansi_escapes() || meta.target() == "log" {
            return self.coloured.format_event(ctx, writer, event);
        }
        if LogTime.format_time(&mut writer).is_err() {
            writer.write_str("<unknown time>")?;
        }
        writer.write_str(level_text(*meta.level()))?;
        if let Some(scope) = ctx.event_scope() {
            let mut seen = false;
            for span in scope.from_root() {
                writer.write_str(span.metadata().name())?;
                seen = true;
                if let Some(fields) = span.extensions().get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    writer.write_char('{')?;
                    writer.write_str(fields)?;
                    writer.write_char('}')?;
                }
                writer.write_char(':')?;
            }
            if seen {
                writer.write_char(' ')?;
            }
        }
        writer.write_str(meta.target())?;
        writer.write_str(": ")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

/// A level as a line shows it, right-aligned between spaces.
fn level_text(level: Level) -> &'static str {
    match level {
        Level::TRACE => " TRACE ",
        Level::DEBUG => " DEBUG ",
        Level::INFO => "  INFO ",
        Level::WARN => "  WARN ",
        Level::ERROR => " ERROR ",
    }
}

/// The time of a log line in UTC with microseconds, `2026-12-04T12:13:20.620693Z`, as
/// tracing-subscriber's `SystemTime` writes it; the date and time of day are formatted once
/// a second (per thread), so a line pays only for its microseconds. Usable in a subscriber
/// of your own: `tracing_subscriber::fmt().with_timer(mcp::cli::LogTime)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogTime;

thread_local! {
    /// The second last formatted on this thread, and its text up to the decimal point.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

impl FormatTime for LogTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        write_now(w)
    }
}

/// The time now, as [`LogTime`] writes it.
fn write_now(w: &mut impl fmt::Write) -> fmt::Result {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let (secs, micros) = (now.as_secs(), now.subsec_micros());
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != secs {
            text.clear();
            write_second(text, secs)?;
            *second = secs;
        }
        w.write_str(text)?;
        let mut digits = *b"000000Z";
        let mut rest = micros;
        for d in digits[..6].iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        w.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
    })
}

/// `YYYY-MM-DDTHH:MM:SS.` of a Unix time in seconds (the proleptic Gregorian calendar).
fn write_second(out: &mut String, secs: u64) -> fmt::Result {
    let days = (secs / 86_400) as i64;
    let of_day = secs % 86_400;
    // Days to a civil date: shift the epoch to 0000-03-01 so that leap days end a year,
    // then count 400-year eras, years of the era and days of the year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.",
        of_day / 3_600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// An audit event's line as [`LogLine`] and [`LogFields`] write its `tracing` event outside
/// any span, without colour: the time, the level, the target, the message and the fields.
pub(super) fn write_audit_line(out: &mut String, level: Level, event: &AuditRecord<'_>) {
    use crate::auth::audit::LineValue;
    // Writing to a `String` cannot fail.
    let _ = write_now(out);
    out.push_str(level_text(level));
    out.push_str("mcp::audit: ");
    let (message, fields) = crate::auth::audit::line_fields(event);
    out.push_str(message);
    for (name, value) in fields {
        out.push(' ');
        out.push_str(name);
        out.push('=');
        match value {
            LineValue::Shown(text) => out.push_str(text),
            LineValue::Text(text) if text.bytes().all(needs_no_escape) => {
                out.push('"');
                out.push_str(text);
                out.push('"');
            }
            LineValue::Text(text) => {
                let _ = write!(out, "{text:?}");
            }
        }
    }
    out.push('\n');
}

/// A byte `Debug` writes as it is inside a quoted `str`: printable ASCII but the quote and
/// the backslash.
fn needs_no_escape(b: u8) -> bool {
    (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\'
}

/// A field's name as written: without the `r#` of a raw identifier.
fn name_of(field: &Field) -> &'static str {
    let name = field.name();
    name.strip_prefix("r#").unwrap_or(name)
}

struct Visitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl Visitor<'_> {
    fn write(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        let separator = if std::mem::take(&mut self.first) {
            ""
        } else {
            " "
        };
        self.result = write_field(&mut self.writer, separator, field, value);
    }
}

/// `separator`, then `name=` (but for the message), then the value as `Debug` writes it:
/// plain text around one formatted value, since each piece `write!` interpolates costs about
/// as much as the value itself.
fn write_field(
    writer: &mut Writer<'_>,
    separator: &str,
    field: &Field,
    value: &dyn fmt::Debug,
) -> fmt::Result {
    writer.write_str(separator)?;
    if field.name() != "message" {
        writer.write_str(name_of(field))?;
        writer.write_char('=')?;
    }
    write!(writer, "{value:?}")
}

/// ` name="value"` assembled in `buf`, when `value` needs no escaping (printable ASCII, no
/// quote or backslash) and the whole fits; `None` otherwise. One write of the assembled
/// field instead of five: each write through the line's `Writer` is two indirect calls and
/// a `memcpy` call, a ninth of an audit line's cost.
fn quoted_as_is<'b>(name: &str, value: &str, buf: &'b mut [u8]) -> Option<&'b str> {
    let len = name.len() + value.len() + 4;
    let out = buf.get_mut(..len)?;
    let (head, rest) = out.split_at_mut(name.len() + 3);
    head[0] = b' ';
    head[1..=name.len()].copy_from_slice(name.as_bytes());
    head[name.len() + 1..].copy_from_slice(b"=\"");
    let (body, tail) = rest.split_at_mut(value.len());
    // Checked and copied in one pass.
    for (to, &b) in body.iter_mut().zip(value.as_bytes()) {
        if !needs_no_escape(b) {
            return None;
        }
        *to = b;
    }
    tail[0] = b'"';
    // SAFETY: `out` is `name` (a `str`) and `value` (checked above to be printable ASCII)
    // between ASCII punctuation: valid UTF-8. Checking it again cost as much as the copy.
    Some(unsafe { std::str::from_utf8_unchecked(out) })
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        // Most values (tool names, seams, digests, outcomes) need no escaping: written as
        // they are between quotes, they read exactly as `Debug` would write them.
        if field.name() != "message"
            && !self.first
            && self.result.is_ok()
            && let Some(piece) = quoted_as_is(name_of(field), value, &mut [0; 160])
        {
            self.result = self.writer.write_str(piece);
            return;
        }
        self.write(field, &value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.write(field, value);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    /// A log's output, kept for a test to read.
    #[derive(Clone, Default)]
    pub(in crate::cli) struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        /// Everything written so far.
        pub(in crate::cli) fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    /// The fields of one event, as formatted by `fields` (time, level and target off).
    fn line(plain: bool) -> String {
        let out = Captured::default();
        let builder = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_ansi(false)
            .without_time()
            .with_level(false)
            .with_target(false);
        let emit = || {
            tracing::info!(
                seam = "tool",
                name = %"delete_file",
                subject = "eve\nINFO forged line",
                detail = "say \"yes\" \\ or ü",
                digest = "a1b2",
                count = 3,
                r#type = "x",
                "authorization"
            )
        };
        if plain {
            tracing::subscriber::with_default(builder.fmt_fields(LogFields).finish(), emit);
        } else {
            tracing::subscriber::with_default(builder.finish(), emit);
        }
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    /// Lines of events at every level, inside no span, a span without fields and nested
    /// spans with fields, as written by `LogLine` (`ours`) or the default format; the time
    /// (up to the first space) cut off, since two subscribers never log the same microsecond.
    fn whole_lines(ours: bool) -> Vec<String> {
        let out = Captured::default();
        let emit = || {
            tracing::error!(target: "mcp::audit", seam = "tool", count = 3, "authorization");
            let outer = tracing::info_span!("request", id = 7, method = "tools/call");
            let _outer = outer.enter();
            tracing::warn!("in one span");
            let inner = tracing::info_span!("handler");
            let _inner = inner.enter();
            tracing::info!(name = %"x y", "in two");
            tracing::debug!(flag = true);
            tracing::trace!("trace");
        };
        let builder = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .fmt_fields(LogFields);
        if ours {
            let subscriber = builder.event_format(LogLine::default()).finish();
            tracing::subscriber::with_default(subscriber, emit);
        } else {
            tracing::subscriber::with_default(builder.with_timer(LogTime).finish(), emit);
        }
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|line| {
                let (time, rest) = line.split_once(' ').unwrap();
                assert!(time.ends_with('Z') && time.len() == 27, "{line}");
                rest.to_owned()
            })
            .collect()
    }

    /// A plain value is assembled whole; one that needs escaping, or does not fit, is left
    /// to `Debug`.
    #[test]
    fn a_plain_field_is_assembled_as_debug_would_write_it() {
        let mut buf = [0; 32];
        assert_eq!(
            quoted_as_is("name", "echo tool", &mut buf),
            Some(r#" name="echo tool""#)
        );
        assert_eq!(quoted_as_is("detail", "", &mut buf), Some(r#" detail="""#));
        for needs_escaping in ["say \"hi\"", "a\\b", "line\nbreak", "caf\u{e9}"] {
            assert_eq!(
                quoted_as_is("x", needs_escaping, &mut buf),
                None,
                "{needs_escaping:?}"
            );
        }
        assert_eq!(
            quoted_as_is("x", &"y".repeat(28), &mut buf),
            None,
            "too long"
        );
        assert_eq!(
            quoted_as_is("x", &"y".repeat(27), &mut buf).map(str::len),
            Some(32)
        );
    }

    #[test]
    fn the_whole_line_is_the_default_formats() {
        let ours = whole_lines(true);
        assert_eq!(ours, whole_lines(false));
        assert_eq!(ours.len(), 5, "{ours:?}");
        assert_eq!(
            ours[0],
            "ERROR mcp::audit: authorization seam=\"tool\" count=3"
        );
        assert!(
            ours[2].starts_with(" INFO request{id=7 method=\"tools/call\"}:handler: "),
            "{}",
            ours[2]
        );
    }

    #[test]
    fn the_time_reads_as_tracing_subscribers_does() {
        let format = |secs: u64| {
            let mut s = String::new();
            write_second(&mut s, secs).unwrap();
            s
        };
        assert_eq!(format(0), "1970-01-01T00:00:00.");
        assert_eq!(format(951_782_400), "2000-02-29T00:00:00.");
        assert_eq!(format(1_796_387_599), "2026-12-04T12:33:19.");
        assert_eq!(format(4_107_542_399), "2100-02-28T23:59:59.");
        assert_eq!(format(4_107_542_400), "2100-03-01T00:00:00.");
        // Against tracing-subscriber's own formatter, now (to the minute; a second try in
        // case the minute turned between the two).
        let both = || {
            let mut ours = String::new();
            let mut theirs = String::new();
            LogTime.format_time(&mut Writer::new(&mut ours)).unwrap();
            tracing_subscriber::fmt::time::SystemTime
                .format_time(&mut Writer::new(&mut theirs))
                .unwrap();
            (ours, theirs)
        };
        let (mut ours, mut theirs) = both();
        if ours[..17] != theirs[..17] {
            (ours, theirs) = both();
        }
        assert_eq!(ours.len(), theirs.len(), "{ours} / {theirs}");
        assert_eq!(ours[..17], theirs[..17], "{ours} / {theirs}");
        assert!(ours.ends_with('Z'));
    }

    #[test]
    fn the_line_is_the_default_formatters_without_colour() {
        assert_eq!(line(true), line(false));
        assert_eq!(
            line(true),
            "authorization seam=\"tool\" name=delete_file subject=\"eve\\nINFO forged line\" detail=\"say \\\"yes\\\" \\\\ or ü\" digest=\"a1b2\" count=3 type=\"x\"\n"
        );
    }
}
