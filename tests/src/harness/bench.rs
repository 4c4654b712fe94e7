//! Measuring helpers shared by the benchmarks (`tests/benches/`): knobs from the environment and
//! latency percentiles, and the real TLDs the spread benches deal their names over.

use std::time::Duration;

/// The environment variable `name` parsed as `T`, else `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The `p` quantile (0.0–1.0, nearest rank) of latencies sorted ascending; zero when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Open gTLDs whose entries in dsa's catalogue (`common/data/tld-catalogue.json`) have RDAP and
/// name servers, so a name under them is checked by DNS and RDAP. Not `com`: the benches keep it
/// for their interactive checks. The benches that spread names over registries
/// (`Simulator::start_spread`) take the first few.
pub const OPEN_GTLDS: [&str; 46] = [
    "org", "net", "info", "biz", "xyz", "online", "site", "shop", "store", "top", "club", "tv", "cc", "fun", "space",
    "website", "tech", "live", "pro", "blog", "cloud", "vip", "app", "dev", "art", "bio", "cafe", "city", "email",
    "group", "guru", "life", "link", "news", "one", "page", "world", "zone", "agency", "center", "digital", "media",
    "network", "studio", "team", "today",
];
