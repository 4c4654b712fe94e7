//! `dsa explain`: classifies a saved raw registry answer and prints the fields read.

use std::path::PathBuf;

use clap::Subcommand;

use super::read_input;

/// `dsa explain` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Explain {
    /// A WHOIS answer (raw bytes as received on port 43).
    Whois {
        /// Registry suffix the answer is for (`com`, `com.af`).
        #[arg(long)]
        suffix: String,
        /// WHOIS server that produced it (selects the marker family).
        #[arg(long)]
        server: Option<String>,
        /// Charset of the answer when not UTF-8 (e.g. iso-8859-1).
        #[arg(long)]
        charset: Option<String>,
        /// File to read; `-` or absent for standard input.
        file: Option<PathBuf>,
    },
    /// An RDAP answer body.
    Rdap {
        /// The HTTP status the server returned.
        #[arg(long, default_value_t = 200)]
        status: u16,
        /// File to read; `-` or absent for standard input.
        file: Option<PathBuf>,
    },
}

/// Runs `dsa explain`: prints the classification and the fields read, as JSON.
pub(crate) fn run(what: Explain) -> anyhow::Result<()> {
    let out = match what {
        Explain::Whois { suffix, server, charset, file } => {
            let raw = read_input(file)?;
            let suffix = suffix.trim_start_matches('.').to_ascii_lowercase();
            let r = workers::parse::whois::read_whois(&raw, server.as_deref(), &suffix, charset.as_deref());
            serde_json::json!({
                "class": r.class, "pending_delete": r.pending_delete, "marker": r.marker,
                "record": r.record, "bytes": raw.len(),
            })
        }
        Explain::Rdap { status, file } => {
            let raw = read_input(file)?;
            let r = workers::parse::rdap::read_rdap(status, &raw);
            serde_json::json!({ "class": format!("{:?}", r.class), "detail": r.detail, "record": r.record })
        }
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
