"""d2lmini: helpers for the RNN notebooks."""
