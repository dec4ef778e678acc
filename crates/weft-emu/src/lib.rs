//! Emulation: namespaced Linux hosts talking through weft's userspace switch.
