"""Probes: small functions that read the machine and return facts for tree rules."""
