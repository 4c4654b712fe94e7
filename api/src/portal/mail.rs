//! Verification mail (issue 32): when `[policy.portal.smtp]` is set, a new account gets no key
//! until its owner follows a one-time link sent to the address, so an address that cannot
//! receive mail cannot collect a Free allowance.
//!
//! Sent with `lettre` over SMTP (RFC 5321): STARTTLS required (RFC 3207), implicit TLS
//! (RFC 8314) or, for a relay on loopback, plain text; rustls with the workspace's ring provider.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::front::policy::{SmtpConfig, SmtpSecurity};

/// The portal's outgoing mail: one SMTP relay and one sender.
pub(super) struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// The mailer for these settings.
    ///
    /// # Errors
    /// A sender that is not an address (`from`), or TLS parameters that cannot be built.
    pub(super) fn new(config: &SmtpConfig) -> anyhow::Result<Self> {
        let from: Mailbox = config
            .from
            .parse()
            .map_err(|e| anyhow::anyhow!("policy.portal.smtp.from {:?} is not an address: {e}", config.from))?;
        let tls = match config.security {
            SmtpSecurity::None => Tls::None,
            SmtpSecurity::Starttls => Tls::Required(TlsParameters::new(config.host.clone())?),
            SmtpSecurity::Tls => Tls::Wrapper(TlsParameters::new(config.host.clone())?),
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(config.host.as_str())
            .port(config.port)
            .tls(tls)
            .timeout(Some(Duration::from_secs(config.timeout_secs.max(1))));
        if let (Some(user), Some(password)) = (&config.username, &config.password) {
            builder = builder.credentials(Credentials::new(user.clone(), password.expose().to_owned()));
        }
        Ok(Self { transport: builder.build(), from })
    }

    /// Sends the verification link for `to`.
    ///
    /// # Errors
    /// An address the relay or lettre refuses, or the relay failing or not answering in time.
    pub(super) async fn send_verification(&self, to: &str, link: &str, valid_secs: u64) -> anyhow::Result<()> {
        let to: Mailbox = to.parse()?;
        let hours = valid_secs.div_ceil(3_600).max(1);
        let body = format!(
            "Someone (hopefully you) created an account with this e-mail address.\n\n\
             Follow this link to confirm the address and activate the account:\n\n{link}\n\n\
             Then sign in: your keys are made at your first sign-in. The link works once, for\n\
             {hours} h. If you did not sign up, ignore this message.\n"
        );
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject("Confirm your e-mail address")
            .header(ContentType::TEXT_PLAIN)
            .body(body)?;
        self.transport.send(message).await?;
        Ok(())
    }

    /// Tells the owner of `to` that someone tried to sign up again with the address, instead of
    /// telling the person at the sign-up form that the address has an account (which would let
    /// anyone find out who has one). `signin` is the sign-in page's address.
    ///
    /// # Errors
    /// An address the relay or lettre refuses, or the relay failing or not answering in time.
    pub(super) async fn send_account_exists(&self, to: &str, signin: &str) -> anyhow::Result<()> {
        let to: Mailbox = to.parse()?;
        let body = format!(
            "Someone (hopefully you) tried to create an account with this e-mail address, but it\n\
             already has one. Sign in here:\n\n{signin}\n\n\
             If you forgot your password, ask the operator of this service for a reset link.\n\
             If it was not you, ignore this message: nothing was changed.\n"
        );
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject("You already have an account")
            .header(ContentType::TEXT_PLAIN)
            .body(body)?;
        self.transport.send(message).await?;
        Ok(())
    }
}
