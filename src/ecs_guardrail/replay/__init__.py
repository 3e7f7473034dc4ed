"""The replay side: one clock for events and minute samples, engines, healthy-hosts CSV, sweeps."""

__all__ = ["clock", "engine", "healthy_hosts", "sweep", "sampling"]
