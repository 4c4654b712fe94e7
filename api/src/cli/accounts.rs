//! `dsa accounts`: portal accounts (`/account`).

use api::config::Settings;
use api::store::Store;
use clap::Subcommand;

use super::keys::key_json;
use super::usage::{Usage, this_month};
use super::{open_store, print_json};

/// `dsa accounts` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Accounts {
    /// Lists every account.
    List,
    /// Shows an account and its keys with this month's usage.
    Show {
        /// Id or e-mail address.
        account: String,
    },
    /// Disables an account: it cannot sign in, its sessions end and its keys answer as disabled
    /// keys (403) until it is enabled again.
    Disable {
        /// Id or e-mail address.
        account: String,
    },
    /// Enables a disabled account again.
    Enable {
        /// Id or e-mail address.
        account: String,
    },
    /// Sets how many active keys of each kind the account may hold in the portal, instead of its
    /// plan's cap (`policy.portal.key_caps`); `default` goes back to the plan's.
    SetKeyCap {
        /// Id or e-mail address.
        account: String,
        /// Active keys of each kind (embed, server), or `default`.
        cap: String,
    },
    /// Prints a one-time password-reset link (valid `policy.portal.reset_token_secs`). Give it to
    /// the account's owner over a channel you trust; dsa sends no e-mail.
    ResetLink {
        /// Id or e-mail address.
        account: String,
    },
}

/// The account an operator named by id or e-mail address.
async fn find_account(store: &dyn Store, who: &str) -> anyhow::Result<api::accounts::Account> {
    store
        .find_account(&who.trim().to_lowercase())
        .await?
        .ok_or_else(|| anyhow::anyhow!("no account {who:?} (give its id or e-mail address; `dsa accounts list`)"))
}

/// Runs a `dsa accounts` subcommand.
pub(crate) async fn run(settings: Settings, action: Accounts, json: bool) -> anyhow::Result<()> {
    use api::accounts::AccountState;
    let store = open_store(&settings).await?;
    match action {
        Accounts::List => {
            let accounts = store.list_accounts().await?;
            let keys = store.list_keys().await?;
            let count = |id: &str| keys.iter().filter(|k| k.account_id.as_deref() == Some(id)).count();
            if json {
                let list = accounts
                    .iter()
                    .map(|a| {
                        let mut v = serde_json::to_value(a).unwrap_or_default();
                        v["keys"] = count(&a.id).into();
                        v
                    })
                    .collect();
                return print_json(&serde_json::Value::Array(list));
            }
            println!("{:<36} {:<32} {:<9} {:>4}  {:<10}  name", "id", "e-mail", "state", "keys", "created");
            for a in &accounts {
                println!(
                    "{:<36} {:<32} {:<9} {:>4}  {:<10}  {}",
                    a.id,
                    a.email,
                    a.state.as_str(),
                    count(&a.id),
                    a.created_at.get(..10).unwrap_or(&a.created_at),
                    a.display_name
                );
            }
            if accounts.is_empty() {
                eprintln!("no accounts yet; owners sign up at /account/signup");
            }
        }
        Accounts::Show { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            let keys = store.account_keys(&a.id).await?;
            let mut usages = Vec::new();
            for k in &keys {
                usages.push(Usage::of(store.as_ref(), k, this_month()).await?);
            }
            if json {
                let mut v = serde_json::to_value(&a)?;
                v["keys"] = keys
                    .iter()
                    .zip(&usages)
                    .map(|(k, u)| {
                        let mut kv = key_json(k);
                        kv["usage"] = u.json();
                        kv
                    })
                    .collect();
                return print_json(&v);
            }
            println!("account   {}", a.id);
            println!("e-mail    {}", a.email);
            println!("name      {}", a.display_name);
            println!("state     {}", a.state.as_str());
            println!("verified  {}", if a.email_verified { "yes" } else { "no (the mailed link was not followed)" });
            match a.key_cap {
                Some(cap) => println!("key cap   {cap} active keys of each kind (set by the operator)"),
                None => println!("key cap   the plan's (policy.portal.key_caps)"),
            }
            println!("created   {}", a.created_at);
            for (k, u) in keys.iter().zip(&usages) {
                println!(
                    "key       {} {:<6} {:<9} {:<8} used {} of {} this month",
                    k.fingerprint,
                    k.kind.as_str(),
                    k.state.as_str(),
                    k.plan.as_str(),
                    u.used,
                    k.monthly_allowance
                );
            }
        }
        Accounts::Disable { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            store.set_account_state(&a.id, AccountState::Disabled).await?;
            eprintln!("account {} ({}) disabled; its sessions ended", a.id, a.email);
        }
        Accounts::Enable { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            store.set_account_state(&a.id, AccountState::Active).await?;
            eprintln!("account {} ({}) enabled", a.id, a.email);
        }
        Accounts::SetKeyCap { account, cap } => {
            let cap = match cap.trim() {
                "default" => None,
                n => Some(n.parse::<u32>().map_err(|_| {
                    anyhow::anyhow!("the cap must be a number of keys (0 or more) or `default`, not {n:?}")
                })?),
            };
            let a = find_account(store.as_ref(), &account).await?;
            store.set_account_key_cap(&a.id, cap.map(i64::from)).await?;
            match cap {
                Some(n) => eprintln!("account {} ({}) may hold {n} active keys of each kind", a.id, a.email),
                None => eprintln!("account {} ({}) has its plan's key cap again", a.id, a.email),
            }
        }
        Accounts::ResetLink { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            let base = settings
                .policy
                .portal
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{}", settings.server.listen));
            let link = api::portal::reset_link(store.as_ref(), &settings.policy.portal, &base, &a.id).await?;
            println!("{link}");
            eprintln!(
                "one-time reset link for {} valid {} s; it ends every session of the account when used",
                a.email, settings.policy.portal.reset_token_secs
            );
        }
    }
    Ok(())
}
