//! Every English string of the portal's pages, in one table, so a translation (fa, ps) is one
//! more table of the same keys. Templates read them as `t.<key>`; handlers through [`t`].

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The English strings.
pub const EN: &[(&str, &str)] = &[
    ("portal", "Account"),
    ("watches_heading", "Watches"),
    (
        "watches_lead",
        "Names this key watches. Each change of a name's lifecycle (expiring, redemption, pending delete, available) is recorded as an event, readable with GET /v1/watches/{id}/events and sent to the key's webhooks. Credits a watch costs each month:",
    ),
    ("watches_none", "No watches yet."),
    ("check_heading", "Check a name, then watch it"),
    (
        "check_lead",
        "Checks a name with this key (1 credit, as the API). When it is taken, watch it from here to hear when it comes free.",
    ),
    ("check_domain", "Domain to check"),
    ("check_button", "Check"),
    ("check_refused_title", "Name not checked"),
    ("checked_available", "is available: register it now, there is nothing to watch."),
    ("checked_not_available", "cannot be registered now. Its verdict:"),
    ("checked_credits_left", "Credits left this month:"),
    ("watch_this_button", "Watch this name"),
    ("credits_a_month", "credits a month"),
    ("watch_not_checked_yet", "first check pending"),
    ("watch_domain", "Domain to watch (a taken name you want)"),
    ("watch_add_button", "Watch this name"),
    ("watches_server_only", "Only server keys hold watches."),
    ("col_watch_domain", "Domain"),
    ("col_watch_state", "State"),
    ("col_watch_expires", "Registry expiry"),
    ("col_watch_next", "Next check"),
    ("watch_refused_title", "Watch not added"),
    ("nav_dashboard", "Dashboard"),
    ("nav_signout", "Sign out"),
    ("signin_title", "Sign in"),
    ("signin_lead", "Sign in to see your keys, their usage and their settings."),
    ("signin_button", "Sign in"),
    ("signin_no_account", "No account yet?"),
    ("signin_to_signup", "Create one (free Developer plan)"),
    ("signin_failed", "The e-mail address or the password is wrong."),
    ("signin_disabled", "This account is disabled. Ask the operator of this dsa server."),
    ("signin_limited", "Too many sign-in attempts. Wait a minute, then try again."),
    (
        "signin_backoff",
        "Too many failed sign-ins for this e-mail address from your network. Wait a moment, then try again.",
    ),
    ("signup_limited", "Too many accounts were created from your network today. Try again tomorrow."),
    ("busy_title", "Busy"),
    ("busy", "Too many passwords are being checked right now. Wait a moment, then try again."),
    ("key_limit_title", "Key limit reached"),
    ("key_rate_limited", "You created several keys in the last hour. Wait a while, then try again."),
    ("verify_sent_title", "Check your mail"),
    (
        "verify_sent",
        "We sent a link to your e-mail address. Follow it to confirm the address, then sign in: your keys are made at your first sign-in.",
    ),
    (
        "verify_first",
        "Confirm your e-mail address first: follow the link we sent you (we send a new one at most every 10 minutes when you sign in).",
    ),
    ("verify_send_failed", "We could not send the confirmation e-mail right now. Sign in later to get a new link."),
    ("verify_invalid", "This confirmation link is invalid, used or expired. Sign in to get a new one."),
    ("verify_done", "Your e-mail address is confirmed. Sign in to get your keys."),
    ("signup_title", "Create an account"),
    (
        "signup_lead",
        "You get a free Developer plan: an embed key for your web pages and a server key for your back end.",
    ),
    ("signup_button", "Create account"),
    ("signup_have_account", "Already have an account?"),
    (
        "signup_taken",
        "An account with this e-mail address exists. Sign in, or ask the operator for a password-reset link.",
    ),
    ("field_email", "E-mail address"),
    ("field_password", "Password"),
    ("field_new_password", "New password"),
    ("field_display_name", "Display name"),
    ("password_hint", "At least 10 characters. Very common passwords are refused."),
    ("password_too_short", "Use at least 10 characters for the password."),
    ("password_too_long", "Use at most 256 characters for the password."),
    ("password_common", "This password is one of the most common ones; choose another."),
    ("password_is_email", "Do not use your e-mail address as the password."),
    ("password_repeated", "Do not repeat a single character as the password."),
    ("email_invalid", "Enter an e-mail address such as name@example.com."),
    ("display_name_invalid", "Use at most 80 characters for the display name."),
    ("csrf_title", "Form expired"),
    ("csrf_failed", "This form expired or did not come from this site. Go back, reload the page and try again."),
    ("keys_shown_title", "Your new keys"),
    (
        "keys_shown_once",
        "Copy these keys now. They are shown only this once: dsa keeps only a hash of each key, so nobody can show them again. If you lose one, roll it.",
    ),
    ("keys_continue", "I have copied them — go to the dashboard"),
    ("dashboard_title", "Dashboard"),
    ("dashboard_hello", "Signed in as"),
    ("keys_heading", "Keys"),
    ("col_key", "Key"),
    ("col_kind", "Kind"),
    ("col_state", "State"),
    ("col_plan", "Plan"),
    ("col_used", "Credits used"),
    ("col_remaining", "Remaining"),
    ("col_resets", "Resets"),
    ("col_per_minute", "Per minute"),
    ("col_when", "When (UTC)"),
    ("col_endpoint", "Endpoint"),
    ("col_status", "Result"),
    ("col_cost", "Credits"),
    ("col_day", "Day"),
    ("charged", "answered, charged"),
    ("settings_link", "Settings"),
    ("new_key_heading", "Another key"),
    ("new_key_button", "Create key"),
    ("kind_embed", "embed (web pages)"),
    ("kind_server", "server (secret)"),
    ("usage_heading", "Usage this month"),
    ("usage_empty", "No charges this month yet."),
    ("chart_title", "Credits charged per day, by endpoint"),
    ("recent_heading", "Latest requests"),
    (
        "recent_note",
        "Charged requests as the ledger recorded them (requests refused before the charge cost nothing and are not listed). Keys appear by fingerprint only.",
    ),
    ("key_title", "Key"),
    ("key_created", "Created"),
    ("key_fingerprint", "Fingerprint"),
    ("settings_heading", "Settings"),
    ("field_label", "Label"),
    ("field_origins", "Allowed origins"),
    (
        "origins_hint",
        "One per line: scheme://host[:port], no path. https://*.example.com allows every subdomain of example.com. An embed key with no origin is refused from browsers.",
    ),
    ("field_pricing", "Show prices in answers"),
    ("field_purchase_button", "Show a purchase button for available names"),
    ("field_commission", "Default commission, percent (0–1000)"),
    ("field_purchase_url", "Purchase URL (absolute http or https)"),
    ("commission_invalid", "The commission must be a number from 0 to 1000."),
    ("purchase_url_invalid", "The purchase URL must be an absolute http:// or https:// URL."),
    ("label_invalid", "Use at most 80 characters for the label."),
    ("save_button", "Save settings"),
    ("saved", "Settings saved."),
    ("webhooks_heading", "Webhooks"),
    ("webhooks_none", "No webhooks. Register one with POST /v1/webhooks (see the API documentation, \"Webhooks\")."),
    ("webhook_active", "active"),
    ("webhook_disabled", "disabled"),
    ("webhook_disabled_note", "Deliveries to this endpoint stopped:"),
    ("webhook_no_deliveries", "Nothing delivered yet."),
    ("webhook_col_created", "Created"),
    ("webhook_col_event", "Event"),
    ("webhook_col_attempts", "Attempts"),
    ("webhook_col_last", "Last answer"),
    ("roll_heading", "Roll the key"),
    (
        "roll_lead",
        "Rolling gives the key a new secret. The old secret keeps working for the grace period, then stops; usage and settings stay.",
    ),
    ("roll_button", "Roll key"),
    ("rolled_title", "Your rolled key"),
    ("rolled_grace", "The old secret stops working at"),
    ("disable_button", "Disable key"),
    ("enable_button", "Enable key"),
    ("state_heading", "On or off"),
    ("suspended_note", "The operator suspended this key; only the operator can lift it."),
    ("suspended_refused", "This key is suspended by the operator; you cannot change its state."),
    ("jobs_heading", "Bulk jobs"),
    ("jobs_lead", "The key's latest bulk jobs (POST /v1/jobs/bulk-check), newest first."),
    ("jobs_none", "No bulk job yet."),
    ("jobs_submitted", "Submitted"),
    ("jobs_state", "State"),
    ("jobs_checked", "Checked"),
    ("jobs_charged", "Credits charged"),
    ("snippet_heading", "Widget snippet"),
    ("snippet_lead", "Put these two lines in your page. The page's origin must be in the embed key's allowed origins."),
    ("snippet_placeholder", "PASTE_YOUR_EMBED_KEY_HERE"),
    (
        "snippet_placeholder_note",
        "The full key is shown only once; replace PASTE_YOUR_EMBED_KEY_HERE with the embed key you copied (or roll the key to get a new one).",
    ),
    ("reset_title", "Choose a new password"),
    ("reset_button", "Set password"),
    ("reset_invalid", "This reset link is invalid, used or expired. Ask the operator for a new one."),
    ("reset_done", "Your password is changed and every session of the account ended. Sign in with the new password."),
    ("signed_out", "You are signed out."),
    ("not_found_title", "Not found"),
    ("not_found", "There is no such key in your account."),
    ("back_dashboard", "Back to the dashboard"),
    ("state_active", "active"),
    ("state_disabled", "disabled"),
    ("state_suspended", "suspended"),
];

/// The strings as a template value (`t`).
pub fn strings() -> minijinja::Value {
    static MAP: OnceLock<minijinja::Value> = OnceLock::new();
    MAP.get_or_init(|| minijinja::Value::from(minijinja::value::Serde(EN.iter().copied().collect::<BTreeMap<_, _>>())))
        .clone()
}

/// One string; the key itself when missing (a test checks every key used exists).
pub fn t(key: &'static str) -> &'static str {
    EN.iter().find(|(k, _)| *k == key).map_or(key, |(_, v)| v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_unique() {
        let mut keys: Vec<_> = super::EN.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(n, keys.len(), "duplicate string key");
    }
}
