//! The benchmark tool set as a library (no `main`), for in-process micro-benchmarks, and a
//! server with many tools for the list benchmark.

use mcp::prelude::*;

#[path = "../../servers/ours/src/entries.rs"]
mod entries;

use entries::*;

mcp::server! {
    name: "bench-ours",
    tools: [echo, add],
    resources: [about],
    prompts: [greet],
    main: false,
}

/// The benchmark server plus `n` more tools (`tool_0` .. `tool_{n-1}`), each with a
/// two-argument schema like `add`'s.
pub fn server_with_tools(n: usize) -> Server {
    tools_builder(n, n + 10).build().expect("server")
}

/// [`server_with_tools`], listed `page` tools per page.
pub fn server_with_tools_paged(n: usize, page: usize) -> Server {
    tools_builder(n, page).build().expect("server")
}

fn tools_builder(n: usize, page: usize) -> mcp::server::ServerBuilder {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// The first addend.
        a: i64,
        /// The second addend.
        b: i64,
    }
    let mut builder = server_builder().page_size(page);
    for i in 0..n {
        builder = builder.tool(
            ToolDef::from_fn::<Args, _, _, _>(
                format!("tool_{i}"),
                "Adds two integers.",
                |_ctx, args: Args| async move { args.a + args.b },
            )
            .read_only(),
        );
    }
    builder
}

/// The benchmark server behind three layers (timing, a rate limit that never trips, a size
/// limit that never trips): what middleware costs per call.
pub fn server_with_layers() -> Server {
    use mcp::layers::{RateLimit, SizeLimit, Timing};
    server_builder()
        .layer(Timing::new())
        .layer(RateLimit::per_principal(u32::MAX, 1e12))
        .layer(SizeLimit::new(1 << 20))
        .build()
        .expect("server")
}

/// The benchmark server as the README says to deploy it: a tool authorizer (ask before
/// anything sensitive) and a read authorizer set, so every call is decided and audited.
/// Pair it with [`default_logging`] for the generated main's default log output.
pub fn server_guarded() -> Server {
    guarded(server_builder())
}

/// [`server_with_tools`], guarded as [`server_guarded`] is: every listing decides each
/// tool's visibility.
pub fn server_with_tools_guarded(n: usize, page: usize) -> Server {
    guarded(tools_builder(n, page))
}

fn guarded(builder: mcp::server::ServerBuilder) -> Server {
    // BENCH_AUDIT_ROUTINE=debug: routine audit events (read-only tools allowed and served)
    // below the INFO log, as an operator may choose.
    let routine = match std::env::var("BENCH_AUDIT_ROUTINE").as_deref() {
        Ok("debug") => tracing::Level::DEBUG,
        _ => tracing::Level::INFO,
    };
    builder
        .audit_routine_level(routine)
        .authorizer(mcp::auth::ask_before_sensitive())
        .read_authorizer(mcp::auth::allow_all())
        .build()
        .expect("server")
}

/// Logs as the generated `main` does by default (INFO, the fmt layer, one line per audit
/// event), to `path` instead of stderr.
pub fn default_logging(path: &str) {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("a log file");
    tracing_subscriber::fmt()
        .with_ansi(false)
        .event_format(mcp::cli::LogLine::default())
        .fmt_fields(mcp::cli::LogFields)
        .with_writer(std::sync::Mutex::new(file))
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .init();
}

/// Telemetry as with export on, to an exporter that drops what it is given.
#[cfg(feature = "otel")]
pub mod telemetry {
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

    /// Takes spans and forgets them.
    #[derive(Debug)]
    struct Drop;

    impl SpanExporter for Drop {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            std::hint::black_box(batch);
            Ok(())
        }
    }

    /// Installs tracing and metrics pipelines (the SDK's batch span processor, a periodic
    /// metric reader) as the process's subscriber, and returns them.
    pub fn install() -> mcp::telemetry::Telemetry {
        use tracing_subscriber::layer::SubscriberExt as _;
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(Drop)
            .build();
        let metrics = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
        let meter = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics).build())
            .build();
        let telemetry = mcp::telemetry::Telemetry::new(tracer, meter);
        let subscriber = tracing_subscriber::registry().with(telemetry.install());
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        telemetry
    }
}
