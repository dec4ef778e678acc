//! Discrete-event simulation of weft fabrics on virtual time.
