//! One measurement and the arithmetic over several.

/// What one phase measured against one server.
#[derive(Clone, Debug, Default)]
pub struct Measure {
    pub requests: u64,
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub cpu_us_per_req: f64,
    pub peak_rss_kib: u64,
    pub errors: u64,
}

/// The `q` quantile of sorted nanosecond samples.
pub fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

/// The median of some values.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}
