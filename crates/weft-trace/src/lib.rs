//! Capture reading and traffic analysis.
