//! A job's priority: users' lookups first, background work (watch re-checks, bulk-job checks)
//! with what they leave.
//!
//! The priority travels in the [`crate::messages::Job`] (absent on the wire for interactive
//! jobs, so older workers and fronts read each other's jobs). On the sending side it is
//! task-local, like the request id: work run inside [`background`] makes background jobs, and a
//! task spawned for a job carries the priority along by reading [`current`] before it spawns.
//! On the worker, a background job's upstream queries take their slots from the background share
//! of each host's politeness budget (`workers::politeness`).

use std::future::Future;

use serde::{Deserialize, Serialize};

/// Who waits for a job's answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// A user waits for it (an API request): the whole politeness budget.
    #[default]
    Interactive,
    /// Nobody waits right now (a watch re-check, a bulk job's check): only the background share
    /// of each upstream's budget, and a longer wait for a slot.
    Background,
}

impl Priority {
    /// Whether this is the default ([`Priority::Interactive`]); serde leaves it off the wire.
    #[must_use]
    pub fn is_interactive(&self) -> bool {
        *self == Priority::Interactive
    }
}

/// Reads a priority leniently: a value this version does not know (a newer front's, or bytes
/// from the network) is [`Priority::Interactive`], never a reason to drop the job.
///
/// # Errors
/// None of its own; only the deserializer's when the input is not a value at all.
pub fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Priority, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

tokio::task_local! {
    static CURRENT: Priority;
}

/// Runs `work` with `priority` as the current priority of its task.
pub async fn scope<F: Future>(priority: Priority, work: F) -> F::Output {
    CURRENT.scope(priority, work).await
}

/// Runs `work` as background work: the jobs it makes are [`Priority::Background`].
pub async fn background<F: Future>(work: F) -> F::Output {
    scope(Priority::Background, work).await
}

/// The priority of the task running now ([`Priority::Interactive`] outside any [`scope`]).
#[must_use]
pub fn current() -> Priority {
    CURRENT.try_with(|p| *p).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_priority_is_task_local_and_interactive_by_default() {
        assert_eq!(current(), Priority::Interactive);
        assert_eq!(background(async { current() }).await, Priority::Background);
        assert_eq!(current(), Priority::Interactive);
        let spawned = background(async { tokio::spawn(async { current() }).await.expect("task") }).await;
        assert_eq!(spawned, Priority::Interactive, "a spawned task does not inherit it");
    }
}
