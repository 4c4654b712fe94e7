//! The reader's time per answer over every labelled WHOIS sample (issue 32: the reader runs on
//! every port-43 answer and under the fuzzer). Ignored by default: a timing, not a check; run it
//! in release with `cargo test -p dsa-workers --release --test whois_timing -- --ignored --nocapture`.

mod samples;

use std::time::Instant;

use workers::parse::whois::read_whois;

#[test]
#[ignore = "a timing: run by hand in release"]
fn reader_time_per_answer() {
    let samples = samples::whois_samples(&samples::data_dir());
    // One warm-up pass builds the lexicon's tables; then the best of five passes.
    let read_all = || {
        samples.iter().map(|s| read_whois(&s.raw, s.server.as_deref(), &s.suffix, None).class as usize).sum::<usize>()
    };
    let check = read_all();
    let best = (0..5)
        .map(|_| {
            let t = Instant::now();
            assert_eq!(std::hint::black_box(read_all()), check);
            t.elapsed()
        })
        .min()
        .unwrap_or_default();
    println!(
        "whois reader: {} answers, best pass {:.1} ms, {:.1} µs per answer",
        samples.len(),
        best.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e6 / samples.len() as f64
    );
}
