//! dsa's availability engine.
pub mod config;
