//! Catalogue generation (being written).
