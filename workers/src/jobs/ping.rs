//! The ping job: a worker answers at once (the bus is alive end to end).

use common::messages::JobAnswer;

use super::Handled;

/// Pong.
pub(super) async fn handle() -> Handled {
    Handled::answer(JobAnswer::Pong)
}
