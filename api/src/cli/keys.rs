//! `dsa keys`: client keys and their settings, over the same store and configuration as `serve`.

use api::config::Settings;
use api::keys::{KeyKind, KeyRecord, KeyState, Plan};
use api::store::{KeyUpdate, NewKey, Store};
use clap::Subcommand;

use super::usage::{Usage, this_month};
use super::{open_store, print_json, resolve};

/// `dsa keys` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Keys {
    /// Creates a key and prints it once on standard output (details on standard error).
    Create {
        /// embed (browser-side) or server (secret).
        #[arg(long, default_value = "server", value_parser = parse_kind)]
        kind: KeyKind,
        /// free, starter, pro or reseller.
        #[arg(long, default_value = "free", value_parser = parse_plan)]
        plan: Plan,
        /// Responses carry pricing.
        #[arg(long)]
        pricing: bool,
        /// Responses carry a purchase button (needs --purchase-url or redirect_url).
        #[arg(long)]
        purchase_button: bool,
        /// Default commission, percent (0 to 1000).
        #[arg(long, value_parser = parse_commission)]
        commission: Option<f64>,
        /// Checkout URL (absolute http or https).
        #[arg(long, value_parser = parse_purchase_url)]
        purchase_url: Option<String>,
        /// Allowed origin, `scheme://host[:port]` or `scheme://*.domain[:port]` (repeatable).
        #[arg(long = "origin", value_name = "ORIGIN", value_parser = parse_origin)]
        origins: Vec<String>,
        /// Label.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Lists keys (fingerprints, never the keys).
    List,
    /// Shows a key's settings and this month's usage.
    Show {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
    /// Changes a key's settings.
    Set {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
        /// New plan (free, starter, pro, reseller); also sets the monthly allowance to its credits.
        #[arg(long, value_parser = parse_plan)]
        plan: Option<Plan>,
        /// Responses carry pricing.
        #[arg(long, value_name = "on|off", value_parser = parse_switch)]
        pricing: Option<bool>,
        /// Responses carry a purchase button.
        #[arg(long, value_name = "on|off", value_parser = parse_switch)]
        purchase_button: Option<bool>,
        /// Default commission, percent (0 to 1000), or none.
        #[arg(long, value_name = "N|none", value_parser = parse_commission_or_none)]
        commission: Option<Clearable<f64>>,
        /// Checkout URL (absolute http or https), or none.
        #[arg(long, value_name = "URL|none", value_parser = parse_purchase_url_or_none)]
        purchase_url: Option<Clearable<String>>,
        /// Adds an allowed origin, `scheme://host[:port]` or `scheme://*.domain[:port]` (repeatable).
        #[arg(long = "origin", value_name = "ORIGIN", value_parser = parse_origin)]
        origins: Vec<String>,
        /// Removes an allowed origin (repeatable).
        #[arg(long = "remove-origin", value_name = "ORIGIN", value_parser = parse_origin)]
        remove_origins: Vec<String>,
        /// Empties the allowed-origins list first (--origin then adds to the empty list).
        #[arg(long)]
        clear_origins: bool,
        /// Label.
        #[arg(long)]
        label: Option<String>,
    },
    /// Disables a key (turned off by its owner or the operator).
    Disable {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
    /// Suspends a key (turned off by the operator: abuse, unpaid).
    Suspend {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
    /// Re-enables a key.
    Enable {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
}

/// Runs a `dsa keys` subcommand.
pub(crate) async fn run(settings: Settings, action: Keys, json: bool) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    match action {
        Keys::Create { kind, plan, pricing, purchase_button, commission, purchase_url, origins, label } => {
            if kind == KeyKind::Server && !origins.is_empty() {
                eprintln!(
                    "note: server keys are refused from browsers whatever their allowed origins; --origin matters for embed keys"
                );
            }
            let mut allowed_origins: Vec<String> = Vec::new();
            for origin in origins {
                if !allowed_origins.contains(&origin) {
                    allowed_origins.push(origin);
                }
            }
            let (key, key_hash) = api::keys::generate(kind);
            let record = store
                .create_key(NewKey {
                    key_hash,
                    kind,
                    plan,
                    pricing_enabled: pricing,
                    show_purchase_button: purchase_button,
                    default_commission_percent: commission,
                    purchase_url,
                    allowed_origins,
                    label,
                })
                .await?;
            if json {
                let mut value = key_json(&record);
                value["key"] = key.into();
                print_json(&value)?;
            } else {
                println!("{key}");
            }
            eprintln!(
                "created {} key {} ({} plan, {} credits a month); the key is shown only now",
                kind.as_str(),
                record.fingerprint,
                plan.as_str(),
                record.monthly_allowance
            );
        }
        Keys::List => {
            let keys = store.list_keys().await?;
            if json {
                return print_json(&keys.iter().map(key_json).collect());
            }
            // The owning account's e-mail address ("-": an operator key).
            let owners: std::collections::HashMap<String, String> = match store.list_accounts().await {
                Ok(accounts) => accounts.into_iter().map(|a| (a.id, a.email)).collect(),
                Err(_) => std::collections::HashMap::new(),
            };
            println!(
                "{:<10} {:<7} {:<10} {:<9} {:>9}  {:<10}  {:<28}  label",
                "key", "kind", "state", "plan", "allowance", "created", "account"
            );
            for k in &keys {
                let created = k.created_at.get(..10).unwrap_or(&k.created_at);
                let owner = k.account_id.as_ref().map_or("-", |id| owners.get(id).map_or(id.as_str(), String::as_str));
                println!(
                    "{:<10} {:<7} {:<10} {:<9} {:>9}  {:<10}  {:<28}  {}",
                    k.fingerprint,
                    k.kind.as_str(),
                    k.state.as_str(),
                    k.plan.as_str(),
                    k.monthly_allowance,
                    created,
                    owner,
                    k.label
                );
            }
            if keys.is_empty() {
                eprintln!("no keys yet; create one with `dsa keys create`");
            }
        }
        Keys::Show { key } => {
            let record = resolve(store.as_ref(), &key).await?;
            let usage = Usage::of(store.as_ref(), &record, this_month()).await?;
            if json {
                let mut value = key_json(&record);
                value["usage"] = usage.json();
                print_json(&value)?;
            } else {
                print_key(&record);
                usage.print(&record);
            }
        }
        Keys::Set {
            key,
            plan,
            pricing,
            purchase_button,
            commission,
            purchase_url,
            origins,
            remove_origins,
            clear_origins,
            label,
        } => {
            let record = resolve(store.as_ref(), &key).await?;
            let allowed_origins = if clear_origins || !origins.is_empty() || !remove_origins.is_empty() {
                // Entries stored before origins were validated are compared in normalised form.
                let same =
                    |have: &String, want: &String| api::keys::parse_origin(have).as_ref().unwrap_or(have) == want;
                let mut list = if clear_origins { Vec::new() } else { record.allowed_origins.clone() };
                for gone in &remove_origins {
                    let before = list.len();
                    list.retain(|have| !same(have, gone));
                    if list.len() == before && !clear_origins {
                        anyhow::bail!("--remove-origin {gone}: not in the key's allowed origins");
                    }
                }
                for origin in origins {
                    if !list.iter().any(|have| same(have, &origin)) {
                        list.push(origin);
                    }
                }
                if record.kind == KeyKind::Server && !list.is_empty() {
                    eprintln!(
                        "note: server keys are refused from browsers whatever their allowed origins; --origin matters for embed keys"
                    );
                }
                Some(list)
            } else {
                None
            };
            let update = KeyUpdate {
                plan,
                pricing_enabled: pricing,
                show_purchase_button: purchase_button,
                default_commission_percent: commission.map(Clearable::into_option),
                purchase_url: purchase_url.map(Clearable::into_option),
                allowed_origins,
                label,
            };
            if update.is_empty() {
                anyhow::bail!(
                    "nothing to change: give at least one of --plan, --pricing, --purchase-button, --commission, --purchase-url, --origin, --remove-origin, --clear-origins, --label"
                );
            }
            let updated = store
                .update_key(&record.id, update)
                .await?
                .ok_or_else(|| anyhow::anyhow!("key {} was deleted meanwhile", record.fingerprint))?;
            if json {
                print_json(&key_json(&updated))?;
            } else {
                print_changes(&record, &updated);
            }
        }
        Keys::Disable { key } => set_state(store.as_ref(), &key, KeyState::Disabled, json).await?,
        Keys::Suspend { key } => set_state(store.as_ref(), &key, KeyState::Suspended, json).await?,
        Keys::Enable { key } => set_state(store.as_ref(), &key, KeyState::Active, json).await?,
    }
    Ok(())
}

/// Prints `fingerprint: field old → new` for every setting that changed.
fn print_changes(before: &KeyRecord, after: &KeyRecord) {
    let (old, new) = (key_json(before), key_json(after));
    let mut changed = false;
    if let (Some(old), Some(new)) = (old.as_object(), new.as_object()) {
        for (field, value) in new {
            let was = old.get(field).unwrap_or(&serde_json::Value::Null);
            if was != value {
                changed = true;
                println!("{}: {field} {was} → {value}", after.fingerprint);
            }
        }
    }
    if !changed {
        println!("{}: no change", after.fingerprint);
    }
}

/// Sets a key's state (`disable`, `suspend`, `enable`) and prints the change.
async fn set_state(store: &dyn Store, key: &str, state: KeyState, json: bool) -> anyhow::Result<()> {
    let record = resolve(store, key).await?;
    // By id, so a fingerprint shared by two keys can never change both.
    if !store.set_key_state(&record.id, state).await? {
        anyhow::bail!("key {} was deleted meanwhile", record.fingerprint);
    }
    if json {
        let updated = store
            .find_key_by_ref(&record.id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("key {} was deleted meanwhile", record.fingerprint))?;
        print_json(&key_json(&updated))
    } else {
        println!(
            "{}: {} → {} (a running server notices within 5 s)",
            record.fingerprint,
            record.state.as_str(),
            state.as_str()
        );
        Ok(())
    }
}

/// `on` or `off`, as `dsa keys show` prints a switch.
fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// Prints a key's settings as `dsa keys show` does.
fn print_key(k: &KeyRecord) {
    println!("{:<20}{}", "key", k.fingerprint);
    println!("{:<20}{}", "id", k.id);
    println!("{:<20}{}", "kind", k.kind.as_str());
    println!("{:<20}{}", "state", k.state.as_str());
    println!("{:<20}{}", "plan", k.plan.as_str());
    println!("{:<20}{} credits", "monthly allowance", k.monthly_allowance);
    println!("{:<20}{}", "pricing", on_off(k.pricing_enabled));
    println!("{:<20}{}", "purchase button", on_off(k.show_purchase_button));
    println!(
        "{:<20}{}",
        "default commission",
        k.default_commission_percent.map_or_else(|| "none".to_owned(), |c| format!("{c}%"))
    );
    println!("{:<20}{}", "purchase url", k.purchase_url.as_deref().unwrap_or("none"));
    match (k.allowed_origins.as_slice(), k.kind) {
        ([], KeyKind::Embed) => println!("{:<20}none: any origin is accepted", "allowed origins"),
        ([], KeyKind::Server) => println!("{:<20}none (server keys are refused from browsers)", "allowed origins"),
        (origins, _) => {
            for (i, origin) in origins.iter().enumerate() {
                println!("{:<20}{origin}", if i == 0 { "allowed origins" } else { "" });
            }
        }
    }
    println!("{:<20}{}", "label", k.label);
    println!("{:<20}{}", "created", k.created_at);
}

/// The stable JSON form of a key for scripts: every setting, never the key or its hash.
pub(crate) fn key_json(k: &KeyRecord) -> serde_json::Value {
    serde_json::json!({
        "id": k.id,
        "fingerprint": k.fingerprint,
        "kind": k.kind.as_str(),
        "state": k.state.as_str(),
        "plan": k.plan.as_str(),
        "monthly_allowance": k.monthly_allowance,
        "pricing_enabled": k.pricing_enabled,
        "show_purchase_button": k.show_purchase_button,
        "default_commission_percent": k.default_commission_percent,
        "purchase_url": k.purchase_url,
        "allowed_origins": k.allowed_origins,
        "label": k.label,
        "created_at": k.created_at,
        "account_id": k.account_id,
    })
}

/// A setting that `dsa keys set` can change or remove (`none`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clearable<T> {
    /// Remove the setting.
    Clear,
    /// Set it to this value.
    Set(T),
}

impl<T> Clearable<T> {
    /// `None` for [`Clearable::Clear`].
    fn into_option(self) -> Option<T> {
        match self {
            Clearable::Clear => None,
            Clearable::Set(value) => Some(value),
        }
    }
}

// Argument parsers: clap reports their errors with the argument's name and exits with status 2.

fn parse_kind(text: &str) -> Result<KeyKind, String> {
    KeyKind::parse(&text.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown key kind {text:?}; expected embed or server"))
}

fn parse_plan(text: &str) -> Result<Plan, String> {
    Plan::parse(text).ok_or_else(|| format!("unknown plan {text:?}; expected free, starter, pro or reseller"))
}

fn parse_switch(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("{text:?}: expected on or off")),
    }
}

fn parse_commission(text: &str) -> Result<f64, String> {
    api::pricing::CommissionPercent::parse(text)
        .map(api::pricing::CommissionPercent::value)
        .map_err(|_| format!("{text:?}: the commission must be a number of percent from 0 to 1000"))
}

fn parse_commission_or_none(text: &str) -> Result<Clearable<f64>, String> {
    if text.eq_ignore_ascii_case("none") { Ok(Clearable::Clear) } else { parse_commission(text).map(Clearable::Set) }
}

/// Stores the URL as [`api::purchase::CheckoutUrl`] serialises it, the form responses use.
fn parse_purchase_url(text: &str) -> Result<String, String> {
    match api::purchase::CheckoutUrl::parse(text) {
        Ok(url) => Ok(url.as_str().to_owned()),
        Err(api::purchase::PurchaseError::InvalidCheckoutUrl { reason }) => {
            Err(format!("must be an absolute http(s) URL: it {reason}"))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn parse_purchase_url_or_none(text: &str) -> Result<Clearable<String>, String> {
    if text.eq_ignore_ascii_case("none") { Ok(Clearable::Clear) } else { parse_purchase_url(text).map(Clearable::Set) }
}

fn parse_origin(text: &str) -> Result<String, String> {
    api::keys::parse_origin(text)
}
