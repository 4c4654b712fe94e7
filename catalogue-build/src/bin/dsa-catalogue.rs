//! `dsa-catalogue`: regenerates the shipped TLD catalogue from the shared input data.
//!
//! ```text
//! dsa-catalogue --data-dir tests/data --out common/data/tld-catalogue.json
//! dsa-catalogue --check      # exit 1 when the committed file is stale
//! ```
//!
//! All the logic lives in the [`catalogue_build`] library; this binary only reads arguments and
//! writes (or compares) the file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use catalogue_build::{self as build, Sources, Summary};
use clap::Parser;

/// Generate the TLD catalogue (`common/data/tld-catalogue.json`) from the IANA TLD list, the IANA
/// RDAP bootstrap (RFC 9224), zonedb, php-whois and the Public Suffix List.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Directory holding the inputs (`tests/data`: `iana/`, `tld/`, `whois-servers/`, `psl/`,
    /// `PROVENANCE.md`).
    #[arg(long, default_value = "tests/data")]
    data_dir: PathBuf,
    /// Catalogue file to write (or to compare with `--check`).
    #[arg(long, default_value = "common/data/tld-catalogue.json")]
    out: PathBuf,
    /// Regenerate in memory and fail if `--out` differs, instead of writing it.
    #[arg(long)]
    check: bool,
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let sources = Sources::read(&args.data_dir)?;
    let file = build::generate(&sources)?;
    let json = build::render(&file)?;
    eprint!("{}", Summary::of(&file.entries));

    if args.check {
        let committed =
            std::fs::read_to_string(&args.out).with_context(|| format!("cannot read {}", args.out.display()))?;
        if committed == json {
            eprintln!("{} is up to date", args.out.display());
            return Ok(ExitCode::SUCCESS);
        }
        let first_diff = committed
            .lines()
            .zip(json.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(json.lines().count()));
        eprintln!(
            "{} is stale (first difference at line {}); regenerate it with dsa-catalogue",
            args.out.display(),
            first_diff + 1
        );
        return Ok(ExitCode::FAILURE);
    }

    // Write next to the target, then rename, so a failed run never leaves half a file.
    let tmp = args.out.with_extension("json.tmp");
    std::fs::write(&tmp, &json).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &args.out).with_context(|| format!("cannot replace {}", args.out.display()))?;
    eprintln!("wrote {} ({} entries)", args.out.display(), file.entries.len());
    Ok(ExitCode::SUCCESS)
}
