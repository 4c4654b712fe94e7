//! The portal's own state, held in the application state: its settings, sign-in and sign-up
//! limiters, the dummy hash, the hashing budget and the mailer. The handlers beside it reach it
//! through `AppState::portal`.

use super::{limits, mail};
use crate::front::policy::{ClientAddr, PortalConfig};
use crate::portal::accounts::PasswordParams;

/// The portal's own state: its settings, limiters, the dummy hash and the hashing budget.
pub struct Portal {
    pub(super) config: PortalConfig,
    pub(super) params: PasswordParams,
    pub(super) limits: limits::Limits,
    pub(super) proxy_hops: u8,
    pub(super) dummy_hash: tokio::sync::OnceCell<String>,
    /// Password hashes computed at once, one per core: each takes tens of milliseconds of CPU
    /// and `password_memory_kib` of memory. A request that finds every slot taken gets 429 at
    /// once (issue 32): a queue would let sign-ins from many addresses keep every core hashing
    /// while paying traffic waits behind them.
    pub(super) hashing: tokio::sync::Semaphore,
    /// Held from an account's key-cap check to its insert, so that concurrent posts cannot
    /// both pass the cap (per front; creations are rare).
    pub(super) key_creation: tokio::sync::Mutex<()>,
    /// Verification mail when `smtp` is set: `Some(Err(why))` when the settings could not make a
    /// mailer (sign-ups then fail rather than skip verification).
    pub(super) mailer: Option<Result<mail::Mailer, String>>,
}

impl std::fmt::Debug for Portal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Portal").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Portal {
    /// The portal for these settings.
    pub fn new(config: PortalConfig, proxy_hops: u8) -> Self {
        // The link in the mail must not come from the request's Host header, which the client
        // writes: it would send the owner's token to any host an attacker names.
        let mailer = config.smtp.as_ref().map(|smtp| {
            let made = match &config.public_url {
                Some(_) => mail::Mailer::new(smtp),
                None => Err(anyhow::anyhow!("policy.portal.smtp needs policy.portal.public_url, the base of the link")),
            };
            made.map_err(|e| {
                tracing::error!(error = format!("{e:#}"), "policy.portal.smtp: no verification mail can be sent");
                format!("{e:#}")
            })
        });
        Self {
            params: config.password_params(),
            limits: limits::Limits::new(&config),
            proxy_hops,
            config,
            dummy_hash: tokio::sync::OnceCell::new(),
            key_creation: tokio::sync::Mutex::new(()),
            mailer,
            hashing: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get),
            ),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PortalConfig {
        &self.config
    }

    /// The address a client's limits count against (IPv6: its /64).
    pub(super) fn client_ip(&self, addr: &ClientAddr) -> Option<std::net::IpAddr> {
        addr.limit_ip(self.proxy_hops)
    }
}
