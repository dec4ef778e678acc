//! Bulk transfer over UDP with a TCP control channel: SBTP, MBTP and a reliable mode.
