//! `dsa prices`: the price table.

use std::path::PathBuf;

use clap::Subcommand;

/// `dsa prices` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Prices {
    /// Converts a registrar's pricing export into a dsa price table.
    Import {
        /// Porkbun pricing API response (JSON).
        #[arg(long)]
        porkbun: PathBuf,
        /// Date the prices were valid (YYYY-MM-DD), recorded in the table's header.
        #[arg(long)]
        as_of: Option<String>,
        /// Output file (JSON).
        #[arg(long)]
        out: PathBuf,
    },
}

/// Runs a `dsa prices` subcommand.
pub(crate) fn run(action: Prices) -> anyhow::Result<()> {
    match action {
        Prices::Import { porkbun, as_of, out } => {
            let text = std::fs::read_to_string(&porkbun)?;
            let import = api::pricing::PriceTable::import_porkbun(&text)?;
            let mut provenance = import.table.provenance().clone();
            provenance.sample = false;
            if let Some(date) = as_of {
                let format = time::macros::format_description!("[year]-[month]-[day]");
                provenance.as_of =
                    Some(time::Date::parse(&date, &format).map_err(|e| anyhow::anyhow!("--as-of {date}: {e}"))?);
            }
            let table = import.table.with_provenance(provenance);
            std::fs::write(&out, table.to_json()?)?;
            println!(
                "wrote {} prices to {} ({} entries skipped: not in the IANA root zone)",
                table.len(),
                out.display(),
                import.skipped.len()
            );
            Ok(())
        }
    }
}
