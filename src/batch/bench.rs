//! The headless throughput benchmark behind `moreau bench`.
